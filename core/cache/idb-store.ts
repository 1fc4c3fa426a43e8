/**
 * The IndexedDB store of cache entries (key: SHA-256, value: the bytes), written once: opening the
 * database, and reading, asking for, writing and deleting entries. `IndexedDBCache` runs these
 * functions on the page, and the reader's worker is meant to import the same module rather than
 * keep a copy; each realm opens its own connection to the same database. Keys are not checked
 * here (`IndexedDBCache` checks them at its boundary).
 *
 * Browser-safe and worker-safe: no `node:` imports, no DOM, and no global touched until a
 * function is called. Connections are per realm, as the browser's own are.
 */
import { UnsupportedOperationError } from '../errors.js';

/**
 * An IndexedDB object store that a worker can open itself (same origin, same database), so the
 * page's main thread never serialises or deserialises cache entries. `IndexedDBCache` offers it
 * as `workerAccess`; entries are keyed by SHA-256 and hold the bytes as a `Uint8Array`.
 */
export interface WorkerStoreAccess {
  database: string;
  objectStore: string;
}

export interface PutEntriesOptions {
  /**
   * About how many bytes IndexedDB serialises per task; 1 MiB unless given. IndexedDB clones
   * each value on the calling thread as it is put: on a page, a big batch put at once would block
   * the game for as long as all of it takes. A worker may pass `Infinity`.
   */
  sliceBytes?: number;
}

const PUT_SLICE_BYTES = 1024 * 1024;

/** One connection per database name, shared by every caller in this realm. */
const connections = new Map<string, Promise<IDBDatabase>>();

/**
 * The connection to `access.database` (version 1; the object store is created on upgrade),
 * opened on first use and shared. It is closed and forgotten when another connection wants to
 * upgrade or delete the database (so a page can), and forgotten when the browser closes it or the
 * open fails: the next call opens it again.
 */
export function openStore(access: WorkerStoreAccess): Promise<IDBDatabase> {
  const name = access.database;
  const existing = connections.get(name);
  if (existing !== undefined) return existing;
  const opening = new Promise<IDBDatabase>((resolve, reject) => {
    if (typeof indexedDB === 'undefined') return reject(new UnsupportedOperationError('IndexedDB is not available here'));
    // open() itself may throw (a SecurityError on an opaque origin): the executor turns that into a rejection.
    const request = indexedDB.open(name, 1);
    request.onupgradeneeded = () => {
      if (!request.result.objectStoreNames.contains(access.objectStore)) request.result.createObjectStore(access.objectStore);
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  const forget = () => {
    if (connections.get(name) === opening) connections.delete(name);
  };
  opening.then((database) => {
    database.onversionchange = () => {
      database.close();
      forget();
    };
    database.onclose = forget;
  }, forget);
  connections.set(name, opening);
  return opening;
}

/**
 * Closes this realm's connection to `access.database` once it has opened, and forgets it (the
 * next call opens it again). Transactions already started finish first.
 */
export function closeStore(access: WorkerStoreAccess): void {
  const opening = connections.get(access.database);
  connections.delete(access.database);
  opening?.then(
    (database) => database.close(),
    () => undefined,
  );
}

/**
 * The bytes stored under each key (`undefined` where none), read in one transaction. A value
 * stored as a `Uint8Array`, an `ArrayBuffer` or a `Blob` comes back as a `Uint8Array` over a
 * buffer of its own; any other value counts as missing.
 */
export async function getEntries(access: WorkerStoreAccess, keys: readonly string[]): Promise<(Uint8Array | undefined)[]> {
  const values = await inTransaction(access, 'readonly', (store) => keys.map((key) => store.get(key)));
  // Structured clone gave us values no one else holds.
  return Promise.all(values.map(asOwnBytes));
}

/** Whether each key is stored, asked in one transaction that reads no values. */
export async function hasEntries(access: WorkerStoreAccess, keys: readonly string[]): Promise<boolean[]> {
  const found = await inTransaction(access, 'readonly', (store) => keys.map((key) => store.getKey(key)));
  return found.map((key) => key !== undefined);
}

/** How many entries the store holds (one key-only transaction). */
export async function countEntries(access: WorkerStoreAccess): Promise<number> {
  const [count] = await inTransaction(access, 'readonly', (store) => [store.count()]);
  return count!;
}

/**
 * Every entry in one write transaction, with relaxed durability (a cache may lose its last entries
 * in a power cut; the reader fetches again what is missing). The bytes are stored as given, not
 * copied: the caller hands over bytes it owns. A view into a larger buffer is cut out first, as
 * IndexedDB would store its whole buffer. Rejects with the transaction's error, such as a
 * `QuotaExceededError` when storage is full; then nothing of the batch is stored.
 *
 * Values are put a slice at a time (`sliceBytes`), the next slice from the last one's success
 * event, where the transaction is still active.
 */
export async function putEntries(
  access: WorkerStoreAccess,
  entries: readonly (readonly [string, Uint8Array])[],
  options: PutEntriesOptions = {},
): Promise<void> {
  const owned = entries.map(([key, bytes]) => [key, spanningItsBuffer(bytes)] as const);
  const sliceBytes = options.sliceBytes ?? PUT_SLICE_BYTES;
  await inTransaction(access, 'readwrite', (store) => {
    let next = 0;
    const putSlice = (): void => {
      let bytes = 0;
      let last: IDBRequest | undefined;
      while (next < owned.length && (bytes === 0 || bytes + owned[next]![1].length <= sliceBytes)) {
        const [key, value] = owned[next++]!;
        bytes += value.length + 1;
        last = store.put(value, key);
      }
      if (last && next < owned.length) last.onsuccess = putSlice;
    };
    putSlice();
    return [];
  });
}

/** Removes the entries under `keys` (absent keys are no error), in one transaction. */
export async function deleteEntries(access: WorkerStoreAccess, keys: readonly string[]): Promise<void> {
  await inTransaction(access, 'readwrite', (store) => keys.map((key) => store.delete(key)));
}

/** Removes every entry of the object store. */
export async function clearEntries(access: WorkerStoreAccess): Promise<void> {
  await inTransaction(access, 'readwrite', (store) => [store.clear()]);
}

/**
 * The results of the requests `make` starts in one transaction on the shared connection, once it
 * commits; rejects with the transaction's error if it aborts. A connection closed while this call
 * waited for it (`closeStore`, a `versionchange`, or `close()` by whoever called `openStore`)
 * refuses new transactions with an InvalidStateError: it is forgotten and another opened, once.
 */
async function inTransaction<T>(
  access: WorkerStoreAccess,
  mode: IDBTransactionMode,
  make: (store: IDBObjectStore) => IDBRequest<T>[],
): Promise<T[]> {
  for (let attempt = 1; ; attempt++) {
    const opening = openStore(access);
    const database = await opening;
    let transaction: IDBTransaction;
    try {
      // Durability matters only to writes; reads accept the option and ignore it.
      transaction = database.transaction(access.objectStore, mode, { durability: 'relaxed' });
    } catch (error) {
      if (attempt > 1 || !isDomError(error, 'InvalidStateError')) throw error;
      if (connections.get(access.database) === opening) connections.delete(access.database);
      continue;
    }
    return settled(transaction, transaction.objectStore(access.objectStore), make);
  }
}

/**
 * Starts `make`'s requests in `transaction` and settles with their results. Each result is read
 * in its own success event, so values are deserialised one task at a time rather than all in the
 * last one.
 */
function settled<T>(transaction: IDBTransaction, store: IDBObjectStore, make: (store: IDBObjectStore) => IDBRequest<T>[]): Promise<T[]> {
  return new Promise<T[]>((resolve, reject) => {
    // A full quota shows up here, as a QuotaExceededError on the aborted transaction.
    transaction.onabort = () => reject(transaction.error ?? new DOMException('IndexedDB transaction aborted', 'AbortError'));
    let requests: IDBRequest<T>[];
    try {
      requests = make(store);
    } catch (error) {
      // A request that could not start (a value that cannot be cloned): keep none of the batch.
      try {
        transaction.abort();
      } catch {
        // Already finished: nothing to undo.
      }
      return reject(error);
    }
    const results: T[] = new Array(requests.length);
    requests.forEach((request, i) => request.addEventListener('success', () => (results[i] = request.result)));
    transaction.oncomplete = () => resolve(results);
  });
}

async function asOwnBytes(value: unknown): Promise<Uint8Array | undefined> {
  if (value instanceof Uint8Array) return spanningItsBuffer(value);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (value instanceof Blob) return new Uint8Array(await value.arrayBuffer());
  return undefined;
}

/** `view` itself when it spans an ArrayBuffer of its own, else a copy of just its bytes. */
function spanningItsBuffer(view: Uint8Array): Uint8Array {
  const whole = view.byteOffset === 0 && view.byteLength === view.buffer.byteLength && view.buffer instanceof ArrayBuffer;
  return whole ? view : view.slice();
}

function isDomError(error: unknown, name: string): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === name;
}
