/**
 * The browser caches other than IndexedDB: `CacheStorageCache` and `OpfsCache` (Origin Private
 * File System), and `createBrowserCache` for any backend. `openBrowserCache()` (browser.ts)
 * imports this module only when it tries one of these: IndexedDB opens on most pages.
 */
import { UnsupportedOperationError } from '../errors.js';
import {
  DEFAULT_BROWSER_CACHE_NAME,
  IndexedDBCache,
  type BrowserCacheBackend,
  type BrowserCacheOptions,
  type ClearableContentCache,
} from './browser.js';
import { checkKey } from './cache-key.js';

function isDomError(error: unknown, name: string): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === name;
}

/**
 * The batch methods for a store with no transactions to put them in (Cache Storage, OPFS): the
 * single calls, in parallel. Each `put` copies its bytes before it returns, so `putMany` does too.
 */
abstract class UnbatchedStore implements ClearableContentCache {
  abstract get(sha256: string): Promise<Uint8Array | undefined>;
  abstract put(sha256: string, bytes: Uint8Array): Promise<void>;
  abstract has(sha256: string): Promise<boolean>;
  abstract delete(sha256: string): Promise<void>;
  abstract clear(): Promise<void>;

  async hasMany(sha256s: readonly string[]): Promise<boolean[]> {
    return Promise.all(sha256s.map((sha256) => this.has(sha256)));
  }

  async getMany(sha256s: readonly string[]): Promise<(Uint8Array | undefined)[]> {
    return Promise.all(sha256s.map((sha256) => this.get(sha256)));
  }

  async putMany(entries: readonly (readonly [string, Uint8Array])[]): Promise<void> {
    await Promise.all(entries.map(([sha256, bytes]) => this.put(sha256, bytes)));
  }
}

// ---------------------------------------------------------------------------------------------
// Cache Storage

/**
 * Entries in the Cache Storage cache `name`, each a response stored under a synthetic URL on the
 * page's own origin: `<origin>/.awake-bundle-cache/<name>/<sha256>`. Nothing is ever fetched
 * from that URL; the Cache API just needs an http(s) request as the key.
 */
export class CacheStorageCache extends UnbatchedStore {
  readonly backend = 'cache-storage' as const;
  readonly name: string;
  readonly copiesBytes = true;
  #cache?: Promise<Cache>;

  constructor(options: BrowserCacheOptions = {}) {
    super();
    this.name = options.name ?? DEFAULT_BROWSER_CACHE_NAME;
  }

  static isAvailable(): boolean {
    // Cache Storage exists only in secure contexts, and keys need an http(s) origin.
    return typeof caches !== 'undefined' && /^https?:$/.test(globalThis.location?.protocol ?? '');
  }

  /** Opens the cache; rejects where Cache Storage is missing or refused. Called by every method. */
  open(): Promise<Cache> {
    this.#cache ??= (async () => {
      if (!CacheStorageCache.isAvailable())
        throw new UnsupportedOperationError('Cache Storage is not available here (it needs a secure http(s) page)');
      return caches.open(this.name);
    })().catch((error: unknown) => {
      this.#cache = undefined;
      throw error;
    });
    return this.#cache;
  }

  /** The synthetic same-origin URL an entry is stored under. */
  urlFor(sha256: string): string {
    checkKey(sha256);
    return new URL(`/.awake-bundle-cache/${encodeURIComponent(this.name)}/${sha256}`, globalThis.location.origin).href;
  }

  async get(sha256: string): Promise<Uint8Array | undefined> {
    const url = this.urlFor(sha256);
    const response = await (await this.open()).match(url);
    return response === undefined ? undefined : new Uint8Array(await response.arrayBuffer());
  }

  async put(sha256: string, bytes: Uint8Array): Promise<void> {
    const url = this.urlFor(sha256);
    // The Response constructor copies the viewed bytes, so a view into a larger buffer is fine.
    // Bytes, never a stream: Firefox keeps a streamed body that a page close cuts short as if it
    // were whole, an entry `has` would find (SPEC §7 "Cache"); a body given whole is stored whole.
    const response = new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(bytes.byteLength) },
    });
    await (await this.open()).put(url, response);
  }

  async has(sha256: string): Promise<boolean> {
    const url = this.urlFor(sha256);
    return (await (await this.open()).match(url)) !== undefined;
  }

  async delete(sha256: string): Promise<void> {
    const url = this.urlFor(sha256);
    await (await this.open()).delete(url);
  }

  async clear(): Promise<void> {
    if (!CacheStorageCache.isAvailable()) return;
    // Entry by entry rather than caches.delete(name): another CacheStorageCache of this name
    // holding the open Cache would go on writing into a cache that no longer has a name.
    const cache = await this.open();
    await Promise.all((await cache.keys()).map((request) => cache.delete(request)));
  }
}

// ---------------------------------------------------------------------------------------------
// Origin Private File System

/** The backends `openBrowserCache` may choose. */
export type BrowserStorageCache = IndexedDBCache | CacheStorageCache | OpfsCache;

/** `move`, which OpfsCache uses and TypeScript's DOM types do not declare yet. */
interface MovableFileHandle extends FileSystemFileHandle {
  move(newName: string): Promise<void>;
}

/** A temporary's name: `<sha256>.<uuid>.partial`, never an entry's (a key is 64 hex digits alone). */
const TEMPORARY = /^[0-9a-f]{64}\.[0-9a-f-]{36}\.partial$/;

/**
 * Entries as files in the OPFS folder `name`, one file per entry, named by its SHA-256. Works on
 * the main thread and in workers alike.
 *
 * A file is there from the moment it is made, empty until its writable closes; a page closed
 * mid-write leaves it so, empty under its entry's name. So each entry is written under a
 * temporary name and renamed (`move`) to its SHA-256 once its writable has closed: a name that
 * is a key always holds whole bytes, and `has` says yes to nothing else (SPEC §7 "Cache").
 *
 * A temporary left by a closed page is no entry, and the next cache of that name to open removes
 * it once no one is writing it: each write holds a Web Lock named by its temporary until it is
 * renamed, and the browser lets go of the lock when the page or worker goes. (A lock held only
 * while writing, not for the page's life, keeps the page fit for the back/forward cache.)
 */
export class OpfsCache extends UnbatchedStore {
  readonly backend = 'opfs' as const;
  readonly name: string;
  readonly copiesBytes = true;
  #folder?: Promise<FileSystemDirectoryHandle>;
  // A get or has of an entry being written here waits for that write, so a put is seen by the
  // calls made after it, as with the other stores.
  readonly #writing = new Map<string, Promise<void>>();

  constructor(options: BrowserCacheOptions = {}) {
    super();
    this.name = options.name ?? DEFAULT_BROWSER_CACHE_NAME;
  }

  static isAvailable(): boolean {
    return (
      typeof navigator !== 'undefined' &&
      typeof navigator.storage?.getDirectory === 'function' &&
      typeof FileSystemFileHandle !== 'undefined' &&
      typeof FileSystemFileHandle.prototype.createWritable === 'function' &&
      typeof (FileSystemFileHandle.prototype as MovableFileHandle).move === 'function'
    );
  }

  /**
   * Opens (creating) the folder; rejects where OPFS is missing or refused. Called by every method.
   * Once open, temporaries that closed pages left are removed beside the cache's calls.
   */
  open(): Promise<FileSystemDirectoryHandle> {
    this.#folder ??= (async () => {
      if (!OpfsCache.isAvailable()) throw new UnsupportedOperationError('the Origin Private File System is not available here');
      const root = await navigator.storage.getDirectory();
      const folder = await root.getDirectoryHandle(this.name, { create: true });
      void removeAbandonedTemporaries(folder).catch(() => undefined); // left, they only take space
      return folder;
    })().catch((error: unknown) => {
      this.#folder = undefined;
      throw error;
    });
    return this.#folder;
  }

  async get(sha256: string): Promise<Uint8Array | undefined> {
    const handle = await this.#existing(sha256);
    if (handle === undefined) return undefined;
    try {
      return new Uint8Array(await (await handle.getFile()).arrayBuffer());
    } catch (error) {
      if (isDomError(error, 'NotFoundError')) return undefined; // deleted since
      throw error;
    }
  }

  async put(sha256: string, bytes: Uint8Array): Promise<void> {
    checkKey(sha256);
    // The write happens later; take the copy now, so the caller may reuse or transfer `bytes`.
    const own = bytes.slice();
    const previous = this.#writing.get(sha256);
    const write = (previous ?? Promise.resolve()).catch(() => undefined).then(() => this.#write(sha256, own));
    this.#writing.set(sha256, write);
    try {
      await write;
    } finally {
      if (this.#writing.get(sha256) === write) this.#writing.delete(sha256);
    }
  }

  async has(sha256: string): Promise<boolean> {
    return (await this.#existing(sha256)) !== undefined;
  }

  async delete(sha256: string): Promise<void> {
    checkKey(sha256);
    await this.#writing.get(sha256)?.catch(() => undefined);
    try {
      await (await this.open()).removeEntry(sha256);
    } catch (error) {
      if (!isDomError(error, 'NotFoundError')) throw error;
    }
  }

  async clear(): Promise<void> {
    if (!OpfsCache.isAvailable()) return;
    await Promise.all([...this.#writing.values()].map((write) => write.catch(() => undefined)));
    const root = await navigator.storage.getDirectory();
    try {
      await root.removeEntry(this.name, { recursive: true });
    } catch (error) {
      if (!isDomError(error, 'NotFoundError')) throw error;
    }
    this.#folder = undefined;
  }

  async #write(sha256: string, bytes: Uint8Array): Promise<void> {
    const temporary = `${sha256}.${crypto.randomUUID()}.partial`;
    // Held before the temporary exists, so no sweep takes it for abandoned.
    await whileLocked(lockFor(temporary), () => this.#writeThrough(temporary, sha256, bytes));
  }

  /** Writes `bytes` to the file `temporary`, then renames it `sha256`; removes it on failure. */
  async #writeThrough(temporary: string, sha256: string, bytes: Uint8Array): Promise<void> {
    let folder = await this.open();
    let handle: FileSystemFileHandle;
    try {
      handle = await folder.getFileHandle(temporary, { create: true });
    } catch (error) {
      if (!isDomError(error, 'NotFoundError')) throw error;
      // Another OpfsCache of this name cleared the folder under us: make it again, once.
      this.#folder = undefined;
      folder = await this.open();
      handle = await folder.getFileHandle(temporary, { create: true });
    }
    let writable: FileSystemWritableFileStream | undefined;
    try {
      writable = await handle.createWritable();
      await writable.write(bytes as Uint8Array<ArrayBuffer>);
      await writable.close();
      writable = undefined;
      // Replaces an entry already there (the same bytes, put again or by another page).
      await (handle as MovableFileHandle).move(sha256);
    } catch (error) {
      // Leave no temporary behind (a full quota fails here).
      await writable?.abort().catch(() => undefined);
      await folder.removeEntry(temporary).catch(() => undefined);
      throw error;
    }
  }

  async #existing(sha256: string): Promise<FileSystemFileHandle | undefined> {
    checkKey(sha256);
    await this.#writing.get(sha256)?.catch(() => undefined);
    try {
      return await (await this.open()).getFileHandle(sha256);
    } catch (error) {
      if (isDomError(error, 'NotFoundError') || isDomError(error, 'TypeMismatchError')) return undefined;
      throw error;
    }
  }
}

/** The Web Lock held while `temporary` is written and renamed. */
const lockFor = (temporary: string) => `awake-bundle:opfs-write:${temporary}`;

/** `work`, holding the Web Lock `name` until it settles; just `work` where Web Locks are missing. */
function whileLocked<T>(name: string, work: () => Promise<T>): Promise<T> {
  return typeof navigator === 'undefined' || navigator.locks === undefined ? work() : navigator.locks.request(name, work);
}

/**
 * Removes the temporaries in `folder` whose lock is free: their write has gone with its page or
 * worker, or has renamed them already. The folder is listed before a lock is asked, so a
 * temporary seen there had its lock taken before it was made. Without Web Locks nothing is
 * removed, as a write in progress could not be told from an abandoned one: a temporary is no
 * entry, only space.
 */
async function removeAbandonedTemporaries(folder: FileSystemDirectoryHandle): Promise<void> {
  if (typeof navigator === 'undefined' || navigator.locks === undefined) return;
  const temporaries: string[] = [];
  for await (const name of folder.keys()) if (TEMPORARY.test(name)) temporaries.push(name);
  for (const temporary of temporaries) {
    await navigator.locks.request(lockFor(temporary), { ifAvailable: true }, async (lock) => {
      if (lock !== null) await folder.removeEntry(temporary).catch(() => undefined); // gone already: renamed
    });
  }
}

export function createBrowserCache(backend: BrowserCacheBackend, options: BrowserCacheOptions = {}): BrowserStorageCache {
  switch (backend) {
    case 'opfs':
      return new OpfsCache(options);
    case 'indexeddb':
      return new IndexedDBCache(options);
    case 'cache-storage':
      return new CacheStorageCache(options);
  }
}
