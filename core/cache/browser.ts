/**
 * Persistent content caches for browsers (SPEC §7 "Cache"), one per storage API:
 * `IndexedDBCache`, `CacheStorageCache` and `OpfsCache` (Origin Private File System). Each maps
 * a lowercase hex SHA-256 to bytes, returns a fresh copy of exactly the bytes put, and does not
 * verify them: the reader re-checks every entry it gets back.
 *
 * `FallbackCache` keeps a load going when storage fails: a put that throws (a full quota, a
 * private-mode store, a broken profile) goes to an in-memory LRU instead, and a get that throws
 * is a miss. `openBrowserCache()` picks the first backend that opens, fastest first (see
 * BENCHMARKS.md "Browser cache"), behind a `FallbackCache`.
 *
 * `CacheStorageCache`, `OpfsCache` and `createBrowserCache` are in browser-stores.ts, which
 * `openBrowserCache()` (open-browser-cache.ts) imports only when it tries one of them.
 *
 * Browser-safe: no dependencies and no `node:` imports; nothing touches a browser global until a
 * cache is first used, so importing this module in Node is harmless.
 */
import { checkKey } from './cache-key.js';
import type { ContentCache } from './content-cache.js';
import {
  clearEntries,
  closeStore,
  countEntries,
  deleteEntries,
  getEntries,
  hasEntries,
  openStore,
  putEntries,
  type WorkerStoreAccess,
} from './idb-store.js';
import { MemoryCache } from './memory.js';

export type BrowserCacheBackend = 'opfs' | 'indexeddb' | 'cache-storage';

export interface BrowserCacheOptions {
  /** The database, Cache Storage cache or OPFS folder name; 'awake-bundle' unless given. */
  name?: string;
}

/** What every cache in this module offers beyond `ContentCache`'s two required methods. */
export interface ClearableContentCache extends ContentCache {
  has(sha256: string): Promise<boolean>;
  delete(sha256: string): Promise<void>;
  /** Drops every entry. */
  clear(): Promise<void>;
}

export const DEFAULT_BROWSER_CACHE_NAME = 'awake-bundle';

// ---------------------------------------------------------------------------------------------
// IndexedDB

const IDB_STORE = 'entries';

/**
 * Entries in an IndexedDB database `name`, object store 'entries', key = SHA-256, value = the
 * bytes as a Uint8Array. Writes use relaxed durability: a cache may lose its last entries in a
 * power cut, and the reader re-fetches what is missing. The store itself is `idb-store.ts`,
 * which a worker can import too; this class checks keys and copies the bytes put.
 */
export class IndexedDBCache implements ClearableContentCache {
  readonly backend = 'indexeddb' as const;
  readonly name: string;
  readonly copiesBytes = true;
  /** Readers' workers open the same database to read and write entries off the main thread. */
  readonly workerAccess: WorkerStoreAccess;

  constructor(options: BrowserCacheOptions = {}) {
    this.name = options.name ?? DEFAULT_BROWSER_CACHE_NAME;
    this.workerAccess = { database: this.name, objectStore: IDB_STORE };
  }

  static isAvailable(): boolean {
    return typeof indexedDB !== 'undefined';
  }

  /**
   * Opens the database; rejects where IndexedDB is missing or refused. Called by every method.
   * The connection is this page's one to the database, shared with every IndexedDBCache of the
   * same name; another tab's upgrade or delete closes it, and the next call opens it again.
   */
  open(): Promise<IDBDatabase> {
    return openStore(this.workerAccess).then(async (database) => {
      rememberOpened(this.name);
      // Known empty until now (see `start`): a database there before (made by an earlier version,
      // without the mark) may hold entries. A count failing leaves it known empty: misses only.
      if (knownEmpty.has(this.name) && (await countEntries(this.workerAccess).catch(() => 0)) > 0) knownEmpty.delete(this.name);
      return database;
    });
  }

  /** True while this page knows the database holds no entry (see `start`): readers then ask it nothing. */
  get holdsNothing(): boolean {
    return knownEmpty.has(this.name);
  }

  expectWrites(): void {
    knownEmpty.delete(this.name);
  }

  /**
   * Opens the database, as `open` does, and resolves with nothing; or, where this browser has
   * never opened it (no mark of it in `localStorage`: a first visit), marks it, starts opening it
   * and resolves at once with that open (`opening`, which rejects if it fails). The cache then
   * holds nothing until its first write, and says so (`holdsNothing`), so that a reader's first
   * lookups do not wait for the database to be created: 20–130 ms in Chromium, more than a
   * preloaded index takes to arrive (BENCHMARKS.md, "Start"). Where `localStorage` cannot say (a
   * worker, a blocked store) or cannot take the mark (full: game saves), it waits for the open,
   * since no later visit could tell it from a first one.
   */
  async start(): Promise<{ opening: Promise<unknown> } | undefined> {
    if (openedBefore(this.name) !== false || !rememberOpened(this.name)) {
      await this.open();
      return undefined;
    }
    knownEmpty.add(this.name);
    const opening = this.open();
    opening.catch(() => undefined); // each later call opens again and names the failure
    return { opening };
  }

  /**
   * Closes the connection (the next call reopens it), for every IndexedDBCache of this name on
   * the page; lets `indexedDB.deleteDatabase` proceed at once.
   */
  close(): void {
    closeStore(this.workerAccess);
  }

  async get(sha256: string): Promise<Uint8Array | undefined> {
    return (await this.getMany([sha256]))[0];
  }

  /** Every key in one read transaction. */
  async getMany(sha256s: readonly string[]): Promise<(Uint8Array | undefined)[]> {
    sha256s.forEach(checkKey);
    return getEntries(this.workerAccess, sha256s);
  }

  async put(sha256: string, bytes: Uint8Array): Promise<void> {
    return this.putMany([[sha256, bytes]]);
  }

  /**
   * Every entry in one write transaction. The bytes are copied before this returns (a memcpy);
   * IndexedDB's own serialisation, which costs several times more on the page's thread, then
   * runs a slice of about 1 MiB per task, so a 16 MiB bundle never blocks the page for long.
   */
  putMany(entries: readonly (readonly [string, Uint8Array])[]): Promise<void> {
    knownEmpty.delete(this.name);
    try {
      entries.forEach(([sha256]) => checkKey(sha256));
    } catch (error) {
      return Promise.reject(error);
    }
    const copies = entries.map(([sha256, bytes]) => [sha256, bytes.slice()] as const);
    // Entries stored: the next visit's openBrowserCache() waits for the open (see `start`), also
    // when this cache was made directly rather than by openBrowserCache().
    return putEntries(this.workerAccess, copies).then(() => void rememberOpened(this.name));
  }

  async has(sha256: string): Promise<boolean> {
    return (await this.hasMany([sha256]))[0]!;
  }

  /** Every key in one read transaction. */
  async hasMany(sha256s: readonly string[]): Promise<boolean[]> {
    sha256s.forEach(checkKey);
    return hasEntries(this.workerAccess, sha256s);
  }

  async delete(sha256: string): Promise<void> {
    checkKey(sha256);
    await deleteEntries(this.workerAccess, [sha256]);
  }

  async clear(): Promise<void> {
    await clearEntries(this.workerAccess);
  }
}

/**
 * Databases this page knows to hold no entry: opened by `IndexedDBCache.start` on a first visit,
 * and written to by none of the IndexedDBCaches of that name since (shared by them all, as the
 * database is).
 */
const knownEmpty = new Set<string>();

/** The `localStorage` key that says this browser has opened IndexedDB database `name` before. */
const openedMark = (name: string) => `awake-bundle:indexeddb-opened:${name}`;

/** Whether this browser has opened database `name` before: `undefined` where `localStorage` cannot say. */
function openedBefore(name: string): boolean | undefined {
  try {
    return globalThis.localStorage === undefined ? undefined : globalThis.localStorage.getItem(openedMark(name)) !== null;
  } catch {
    return undefined; // storage blocked: ask the database itself
  }
}

/** Databases this page has marked as opened (or found marked): each is marked once. */
const marked = new Set<string>();

/** Marks database `name` as opened, before it is (see `start`); false where `localStorage` refuses (full or blocked). */
function rememberOpened(name: string): boolean {
  if (marked.has(name)) return true;
  try {
    if (openedBefore(name) === false) globalThis.localStorage.setItem(openedMark(name), '1');
    marked.add(name);
    return true;
  } catch {
    return false; // full or blocked: the next visit cannot tell it from a first one
  }
}

// ---------------------------------------------------------------------------------------------
// Falling back to memory

export type CacheOperation = 'open' | 'get' | 'put' | 'has' | 'delete' | 'clear';

export interface FallbackCacheOptions<Primary extends ContentCache> {
  /** The persistent store; without one, everything lives in `memory`. */
  primary?: Primary;
  /** Where entries go when the primary refuses them; a 64 MiB MemoryCache unless given. */
  memory?: MemoryCache;
  /** Told of every storage error the cache absorbed (a full quota, a failed read, …). */
  onError?: (error: unknown, operation: CacheOperation, sha256?: string) => void;
  /**
   * The primary is still opening (`openBrowserCache` on a first visit): until this settles,
   * calls wait for it (puts copy their bytes first), then go to the store it gives, which
   * becomes the primary (the next backend where the first failed to open; undefined: memory).
   */
  choosing?: Promise<Primary | undefined>;
}

/**
 * A cache that never fails a load: a put the primary refuses (QuotaExceededError or any other
 * storage error) is kept in an in-memory LRU instead, and a get, has or delete that the primary
 * fails on counts as a miss. Entries in memory are looked up first.
 */
export class FallbackCache<Primary extends ContentCache = ContentCache> implements ClearableContentCache {
  #primary: Primary | undefined;
  /** Set while the primary is being chosen (see `choosing`). */
  #choosing: Promise<unknown> | undefined;
  readonly memory: MemoryCache;
  readonly copiesBytes: boolean;
  readonly #onError: FallbackCacheOptions<Primary>['onError'];

  constructor(options: FallbackCacheOptions<Primary> = {}) {
    this.#primary = options.primary;
    this.memory = options.memory ?? new MemoryCache();
    this.#onError = options.onError;
    this.copiesBytes = this.#primary === undefined || this.#primary.copiesBytes === true;
    // Memory alone if choosing fails (a throwing onError): calls must not fail for it.
    this.#choosing = options.choosing
      ?.then(
        (chosen) => void (this.#primary = chosen),
        () => void (this.#primary = undefined),
      )
      .finally(() => (this.#choosing = undefined));
  }

  /** The persistent store; undefined where everything lives in `memory`. */
  get primary(): Primary | undefined {
    return this.#primary;
  }

  /**
   * The primary's, while no entry lives in memory instead (a worker cannot see those), once it is
   * chosen: a worker's write to a store that then fails to open would be lost.
   */
  get workerAccess(): WorkerStoreAccess | undefined {
    return this.memory.size === 0 && !this.#choosing ? this.primary?.workerAccess : undefined;
  }

  /** Nothing in memory, and a primary known to hold nothing (or none). */
  get holdsNothing(): boolean {
    return this.memory.size === 0 && (this.primary === undefined || this.primary.holdsNothing === true);
  }

  expectWrites(): void {
    this.primary?.expectWrites?.();
  }

  async getMany(sha256s: readonly string[]): Promise<(Uint8Array | undefined)[]> {
    await this.#choosing;
    const answers = await this.memory.getMany(sha256s);
    const missing = sha256s.filter((_, i) => answers[i] === undefined);
    if (missing.length === 0 || this.primary === undefined) return answers;
    let found: (Uint8Array | undefined)[];
    try {
      found = this.primary.getMany
        ? await this.primary.getMany(missing)
        : await Promise.all(missing.map((sha256) => this.primary!.get(sha256)));
    } catch (error) {
      this.#report(error, 'get', missing[0]);
      return answers;
    }
    let next = 0;
    return answers.map((answer) => answer ?? found[next++]);
  }

  async hasMany(sha256s: readonly string[]): Promise<boolean[]> {
    await this.#choosing;
    const answers = await this.memory.hasMany(sha256s);
    const missing = sha256s.filter((_, i) => !answers[i]);
    if (missing.length === 0 || this.primary === undefined) return answers;
    let found: boolean[];
    try {
      found = this.primary.hasMany
        ? await this.primary.hasMany(missing)
        : await Promise.all(
            missing.map(async (sha256) =>
              this.primary!.has ? this.primary!.has(sha256) : (await this.primary!.get(sha256)) !== undefined,
            ),
          );
    } catch (error) {
      this.#report(error, 'has', missing[0]);
      return answers;
    }
    let next = 0;
    return answers.map((answer) => answer || found[next++]!);
  }

  /** One call to the primary (one transaction); entries it refuses go to memory. */
  async putMany(entries: readonly (readonly [string, Uint8Array])[]): Promise<void> {
    if (this.#choosing) {
      const copies = entries.map(([sha256, bytes]) => [sha256, bytes.slice()] as const);
      await this.#choosing;
      return this.putMany(copies);
    }
    if (this.primary === undefined) return this.memory.putMany(entries);
    // Called before any await, so a primary that copies on put has its copies before this returns.
    const stored = this.primary.putMany
      ? this.primary.putMany(entries)
      : Promise.all(entries.map(([sha256, bytes]) => this.primary!.put(sha256, bytes)));
    try {
      await stored;
      await Promise.all(entries.map(([sha256]) => this.memory.delete(sha256)));
    } catch (error) {
      this.#report(error, 'put', entries[0]?.[0]);
      // A refused batch goes to memory. Bytes the caller has since moved elsewhere (transferred)
      // arrive empty and fail the reader's re-check later: a miss, never wrong bytes.
      await this.memory.putMany(entries);
    }
  }

  async get(sha256: string): Promise<Uint8Array | undefined> {
    await this.#choosing;
    const remembered = await this.memory.get(sha256);
    if (remembered !== undefined || this.primary === undefined) return remembered;
    try {
      return await this.primary.get(sha256);
    } catch (error) {
      this.#report(error, 'get', sha256);
      return undefined;
    }
  }

  async put(sha256: string, bytes: Uint8Array): Promise<void> {
    if (this.#choosing) return this.putMany([[sha256, bytes]]);
    if (this.primary !== undefined) {
      try {
        await this.primary.put(sha256, bytes);
        await this.memory.delete(sha256);
        return;
      } catch (error) {
        this.#report(error, 'put', sha256);
      }
    }
    await this.memory.put(sha256, bytes);
  }

  async has(sha256: string): Promise<boolean> {
    await this.#choosing;
    if (await this.memory.has(sha256)) return true;
    if (this.primary === undefined) return false;
    try {
      if (this.primary.has) return await this.primary.has(sha256);
      return (await this.primary.get(sha256)) !== undefined;
    } catch (error) {
      this.#report(error, 'has', sha256);
      return false;
    }
  }

  async delete(sha256: string): Promise<void> {
    await this.#choosing;
    await this.memory.delete(sha256);
    try {
      await this.primary?.delete?.(sha256);
    } catch (error) {
      this.#report(error, 'delete', sha256);
    }
  }

  async clear(): Promise<void> {
    await this.#choosing;
    await this.memory.clear();
    try {
      await (this.primary as Partial<ClearableContentCache> | undefined)?.clear?.();
    } catch (error) {
      this.#report(error, 'clear');
    }
  }

  #report(error: unknown, operation: CacheOperation, sha256?: string): void {
    try {
      this.#onError?.(error, operation, sha256);
    } catch {
      // A failing listener must not fail the load either.
    }
  }
}
