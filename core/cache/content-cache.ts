/**
 * The content cache (SPEC §7 "Cache"): SHA-256 (lowercase hex) → bytes. Any object with `get`
 * and `put` serves, so users can plug in their own store. Members and loose files are stored
 * under their own SHA-256, so loose and bundled indexes, and versions of a project, share one
 * cache. Readers re-check every entry they get back; a store need not verify.
 *
 * The optional batch methods let a reader ask for many entries in one call (one IndexedDB
 * transaction instead of one per entry); without them the reader makes the single calls in
 * parallel.
 */
import type { WorkerStoreAccess } from './idb-store.js';

export interface ContentCache {
  get(sha256: string): Promise<Uint8Array | undefined>;
  put(sha256: string, bytes: Uint8Array): Promise<void>;
  /** Optional: drop an entry that failed its check on read. */
  delete?(sha256: string): Promise<void>;
  /** Optional: whether an entry is present, without reading it. */
  has?(sha256: string): Promise<boolean>;
  /** Optional: `has` for many keys in one call, answers in the keys' order. */
  hasMany?(sha256s: readonly string[]): Promise<boolean[]>;
  /** Optional: `get` for many keys in one call, answers in the keys' order. */
  getMany?(sha256s: readonly string[]): Promise<(Uint8Array | undefined)[]>;
  /** Optional: `put` for many entries in one call (one transaction where the store has them). */
  putMany?(entries: readonly (readonly [sha256: string, bytes: Uint8Array])[]): Promise<void>;
  /**
   * Optional promise about ownership, which lets a reader skip copies: `put`/`putMany` take
   * their own copy of the bytes before they return (synchronously), and `get`/`getMany` return
   * bytes that no one else holds. A reader hands the bytes it stored to its caller right away,
   * and may move (transfer) the bytes it got to a worker. Without it, the reader copies.
   */
  readonly copiesBytes?: boolean;
  /**
   * Optional: an IndexedDB object store holding this cache's entries (key: SHA-256, value: the
   * bytes), which a reader's Web Workers may open to read and write entries off the page's main
   * thread. Offered only while that store holds every entry of the cache: a reader then asks it
   * alone. `IndexedDBCache` offers it; `openBrowserCache()`'s cache too while nothing has had to
   * fall back to memory.
   */
  readonly workerAccess?: WorkerStoreAccess;
  /**
   * Optional: `true` while the cache is known to hold no entry, so a reader answers its lookups
   * "not cached" without asking it. `openBrowserCache()`'s cache says so on a visit where this
   * browser had never opened its database (which is still being created), until a write.
   */
  readonly holdsNothing?: boolean;
  /**
   * Optional: told that entries are about to be written (a reader calls it before its writes,
   * its workers' through `workerAccess` included), so that `holdsNothing` turns false.
   */
  expectWrites?(): void;
}
