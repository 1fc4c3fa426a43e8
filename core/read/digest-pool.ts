/**
 * Work off the page's main thread (SPEC §7 "Verified"): hashing, and reading response bodies.
 *
 * In Chromium `crypto.subtle.digest` runs on the calling thread, and a body read with
 * `arrayBuffer()` is copied in on the calling thread too, ~1 ms per MB each: on the page, both
 * block the game. `WorkerDigestPool` runs a few Web Workers that
 * - digest the ranges they are sent (buffers transferred, not copied), optionally cut each range
 *   into a buffer of its own (that copy happens in the worker as well), and transfer it all back;
 * - fetch a URL and read its whole body, reporting progress, for the transport (`fetchBody`).
 *
 * Where workers cannot run (Node, a Content-Security-Policy without `worker-src blob:`, a page
 * with no `crypto.subtle` such as plain HTTP off localhost) `InThreadDigests` does the hashing on
 * the calling thread (in Node that is WebCrypto on libuv's thread pool, already off the event
 * loop) and the transport reads bodies itself. Browser-safe: no `node:` imports.
 */
import type { WorkerStoreAccess } from '../cache/idb-store.js';
import { sha256Hex } from '../hash.js';

/** A range of one of a job's inputs: `input` indexes `DigestJob.inputs`. */
export interface DigestRange {
  input: number;
  offset: number;
  length: number;
}

export interface DigestJob {
  /**
   * The bytes to hash. With `transfer`, the pool may move their buffers to a worker: the caller
   * must not touch them until the result, which hands back views onto the same bytes.
   */
  inputs: Uint8Array[];
  /** What to hash, relative to each input; by default every input whole. */
  ranges?: DigestRange[];
  /** Also return each range as a `Uint8Array` over a buffer of its own. */
  split?: boolean;
  /** The caller owns the inputs' whole buffers and gives them up for the job (no copy). */
  transfer?: boolean;
  /**
   * Also write each range into this IndexedDB store under `keys[i]`, from the worker (see
   * `WorkerStoreAccess`), if and only if every range's SHA-256 equals its key: a job with one
   * mismatch stores nothing. `DigestResult.stored` tells how it went.
   */
  store?: WorkerStoreAccess & { keys: string[] };
}

export type { WorkerStoreAccess } from '../cache/idb-store.js';

export interface DigestResult {
  /** The inputs again (views onto the bytes, which may live in a new buffer after a transfer). */
  inputs: Uint8Array[];
  /** Lowercase hex SHA-256 of each range, in order. */
  digests: string[];
  /** With `split`: each range's bytes in a buffer no one else holds. */
  parts?: Uint8Array[];
  /** With `store`: settles when the write has committed; rejects with the store's error. */
  stored?: Promise<void>;
}

export interface DigestPool {
  digest(job: DigestJob): Promise<DigestResult>;
  /** Stops the pool's workers (jobs in flight reject). */
  terminate(): void;
}

/** What a body read in a worker gives the transport: the response's head and its whole body. */
export interface FetchedBody {
  status: number;
  statusText: string;
  type: ResponseType;
  headers: Headers;
  /** The whole body (empty for a status outside 2xx, whose body is not read, and with `overLimit`). */
  bytes: Uint8Array;
  /** Set when the worker refused the body for its size (see `FetchBodyInit.expectedBytes`): what it saw. */
  overLimit?: { declaredBytes?: number; receivedBytes?: number };
}

export interface FetchBodyInit {
  headers: Record<string, string>;
  signal: AbortSignal;
  onProgress?: (receivedBytes: number, totalBytes: number | undefined) => void;
  /**
   * The most body bytes to read for an answer other than a 206 (a bundle's listed size): a
   * `Content-Length` that differs, or more bytes, stop the read there (`overLimit`).
   */
  expectedBytes?: number;
  /** The same bound for a 206 answer: the range's size. */
  rangeBytes?: number;
  /** `rangeBytes` is the most a 206 may hold, not its exact size (several ranges asked for). */
  rangeBytesAtMost?: boolean;
  /** The bound for a 206 `multipart/byteranges` answer (at most). */
  multipartBytes?: number;
}

/**
 * A GET whose body is read elsewhere than the calling thread. Rejects with a `TypeError` for a
 * network failure, like `fetch`; resolves `undefined` when it cannot run here at all (no
 * workers), so the caller reads the body itself.
 */
export type BodyFetcher = (url: string, init: FetchBodyInit) => Promise<FetchedBody | undefined>;

function rangesOf(job: DigestJob): DigestRange[] {
  return job.ranges ?? job.inputs.map((bytes, input) => ({ input, offset: 0, length: bytes.length }));
}

/** The same hashing on the calling thread. */
export class InThreadDigests implements DigestPool {
  async digest(job: DigestJob): Promise<DigestResult> {
    const ranges = rangesOf(job);
    const views = ranges.map(({ input, offset, length }) => job.inputs[input]!.subarray(offset, offset + length));
    const digests = await Promise.all(views.map((view) => sha256Hex(view)));
    return { inputs: job.inputs, digests, ...(job.split ? { parts: views.map((view) => view.slice()) } : {}) };
  }

  terminate(): void {}
}

/**
 * The worker's whole program, run from a `blob:` URL so that no bundler setup is needed. It
 * answers a ping (so the pool knows it runs and has WebCrypto before it trusts it with buffers),
 * then digests and cuts, or fetches, and transfers every buffer back.
 */
const WORKER_SOURCE = `'use strict';
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const hex = (buffer) => { const b = new Uint8Array(buffer); let s = ''; for (let i = 0; i < b.length; i++) s += HEX[b[i]]; return s; };
const fetches = new Map();
const databases = new Map();
const describe = (error) => String((error && (error.name ? error.name + ': ' + error.message : error.message)) || error);
function openDatabase(name, storeName) {
  let opening = databases.get(name);
  if (!opening) {
    opening = new Promise((resolve, reject) => {
      const request = indexedDB.open(name, 1);
      request.onupgradeneeded = () => { if (!request.result.objectStoreNames.contains(storeName)) request.result.createObjectStore(storeName); };
      request.onsuccess = () => {
        const database = request.result;
        // Let the page upgrade or delete the database; the next job opens it again.
        database.onversionchange = () => { database.close(); databases.delete(name); };
        database.onclose = () => databases.delete(name);
        resolve(database);
      };
      request.onerror = () => { databases.delete(name); reject(request.error); };
    });
    databases.set(name, opening);
  }
  return opening;
}
function transaction(database, storeName, mode, work) {
  return new Promise((resolve, reject) => {
    const tx = database.transaction(storeName, mode, { durability: 'relaxed' });
    const result = work(tx.objectStore(storeName));
    tx.oncomplete = () => resolve(result);
    tx.onabort = () => reject(tx.error || new Error('transaction aborted'));
  });
}
// Writes wait until the page says its loads are done (or too much waits): IndexedDB's work then
// does not compete with fetching and hashing for the cores.
const queued = [];
let queuedBytes = 0;
function flush() {
  const jobs = queued.splice(0);
  queuedBytes = 0;
  for (const job of jobs) write(...job);
}
function store(id, target, entries) {
  queued.push([id, target, entries]);
  for (const entry of entries) queuedBytes += entry[1].length;
  if (queuedBytes > 67108864) flush();
}
async function write(id, target, entries) {
  try {
    const database = await openDatabase(target.database, target.objectStore);
    await transaction(database, target.objectStore, 'readwrite', (os) => { for (const [key, value] of entries) os.put(value, key); });
    postMessage({ id, stored: true });
  } catch (error) {
    postMessage({ id, storeError: describe(error) });
  }
}
async function digest({ id, buffers, ranges, split, store: target }) {
  try {
    const digests = await Promise.all(ranges.map((r) => crypto.subtle.digest('SHA-256', new Uint8Array(buffers[r[0]], r[1], r[2])).then(hex)));
    const parts = split ? ranges.map((r) => buffers[r[0]].slice(r[1], r[1] + r[2])) : undefined;
    // Copies for the store, taken before the buffers go back; written after, off the reply's path.
    // All or nothing: one range that does not match its key, and nothing is stored (SPEC §7).
    const whole = target !== undefined && digests.every((d, i) => d === target.keys[i]);
    const entries = whole ? ranges.map((r, i) => [target.keys[i], new Uint8Array(buffers[r[0]].slice(r[1], r[1] + r[2]))]) : [];
    postMessage({ id, buffers, digests, parts }, parts ? buffers.concat(parts) : buffers);
    if (target) store(id, target, entries);
  } catch (error) {
    postMessage({ id, buffers, error: String((error && error.message) || error) }, buffers);
    if (target) postMessage({ id, storeError: describe(error) });
  }
}
async function hasStored({ id, has }) {
  try {
    const database = await openDatabase(has.database, has.objectStore);
    const requests = await transaction(database, has.objectStore, 'readonly', (os) => has.keys.map((key) => os.getKey(key)));
    postMessage({ id, present: requests.map((request) => request.result !== undefined) });
  } catch (error) {
    postMessage({ id, readError: describe(error) });
  }
}
async function readStored({ id, read }) {
  try {
    const database = await openDatabase(read.database, read.objectStore);
    const requests = await transaction(database, read.objectStore, 'readonly', (os) => read.keys.map((key) => os.get(key)));
    const found = [], bad = [];
    await Promise.all(requests.map(async (request, i) => {
      const value = request.result, key = read.keys[i];
      let bytes = value instanceof Uint8Array ? value : value instanceof ArrayBuffer ? new Uint8Array(value) : value instanceof Blob ? new Uint8Array(await value.arrayBuffer()) : undefined;
      if (bytes === undefined) return;
      if (bytes.length !== read.sizes[i] || hex(await crypto.subtle.digest('SHA-256', bytes)) !== key) return void bad.push(key);
      if (bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) bytes = bytes.slice();
      found.push([key, bytes.buffer]);
    }));
    postMessage({ id, found, bad }, found.map((f) => f[1]));
  } catch (error) {
    postMessage({ id, readError: describe(error) });
  }
}
function declaredLength(response) {
  const encoded = (response.headers.get('content-encoding') || 'identity').trim().toLowerCase() !== 'identity';
  const value = response.headers.get('content-length');
  return !encoded && value !== null && /^\\s*\\d+\\s*$/.test(value) ? Number(value) : undefined;
}
// Reads at most \`limit\` bytes (when given): past it, the body is cancelled and { over } says how many arrived.
async function readAll(id, response, limit) {
  const declared = declaredLength(response);
  const size = declared !== undefined ? declared : limit;
  const target = size !== undefined ? new Uint8Array(size) : undefined;
  const chunks = [];
  let received = 0, reported = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (limit !== undefined && received + value.length > limit) { reader.cancel().catch(() => {}); return { over: received + value.length }; }
    if (target && received + value.length <= target.length) target.set(value, received); else chunks.push(value);
    received += value.length;
    if (received - reported >= 262144) { reported = received; postMessage({ id, progress: received, total: target ? target.length : undefined }); }
  }
  if (target && received === target.length) return { buffer: target.buffer };
  const whole = new Uint8Array(received);
  let at = 0;
  if (target) { whole.set(target.subarray(0, Math.min(received, target.length))); at = Math.min(received, target.length); }
  for (const chunk of chunks) { whole.set(chunk, at); at += chunk.length; }
  return { buffer: whole.buffer };
}
async function get({ id, url, headers, progress, expectedBytes, rangeBytes, rangeBytesAtMost, multipartBytes }) {
  const controller = new AbortController();
  fetches.set(id, controller);
  try {
    const response = await fetch(url, { headers, signal: controller.signal });
    const head = { status: response.status, statusText: response.statusText, type: response.type, headers: [...response.headers] };
    if (response.status < 200 || response.status > 299 || !response.body) {
      if (response.body) response.body.cancel().catch(() => {});
      return postMessage({ id, head, buffer: new ArrayBuffer(0) });
    }
    // The transport's limitFor and exactFor: a multipart/byteranges 206 has a bound of its own.
    const multipart = response.status === 206 && multipartBytes !== undefined && /^\\s*multipart\\/byteranges\\s*(;|$)/i.test(response.headers.get('content-type') || '');
    const limit = multipart ? multipartBytes : response.status === 206 && rangeBytes !== undefined ? rangeBytes : expectedBytes;
    const exact = response.status === 206 && !multipart && !rangeBytesAtMost;
    const declared = declaredLength(response);
    // Refused at the headers as the transport does (refusedLength): more than the limit, or a 206 of another length.
    if (limit !== undefined && declared !== undefined && (exact ? declared !== limit : declared > limit)) {
      response.body.cancel().catch(() => {});
      return postMessage({ id, head, buffer: new ArrayBuffer(0), over: { declaredBytes: declared } });
    }
    // arrayBuffer() only where the platform itself stops at a Content-Length within the limit.
    const read = progress || (limit !== undefined && declared === undefined) ? await readAll(id, response, limit) : { buffer: await response.arrayBuffer() };
    if (read.over !== undefined) return postMessage({ id, head, buffer: new ArrayBuffer(0), over: { receivedBytes: read.over } });
    postMessage({ id, head, buffer: read.buffer }, [read.buffer]);
  } catch (error) {
    postMessage({ id, failure: String((error && error.message) || error), aborted: controller.signal.aborted });
  } finally {
    fetches.delete(id);
  }
}
onmessage = ({ data }) => {
  if (data.ping) return postMessage({ pong: true, subtle: !!(self.crypto && crypto.subtle && crypto.subtle.digest), fetch: typeof fetch === 'function' });
  if (data.abort) { const c = fetches.get(data.abort); if (c) c.abort(); return; }
  if (data.url) return get(data);
  if (data.read) return readStored(data);
  if (data.has) return hasStored(data);
  if (data.open) return void openDatabase(data.open.database, data.open.objectStore).catch(() => {});
  if (data.flush) return flush();
  digest(data);
};
`;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  onMessage?: (data: WorkerReply) => void;
  bytes: number;
}

interface WorkerReply {
  id: number;
  buffers?: ArrayBuffer[];
  digests?: string[];
  parts?: ArrayBuffer[];
  error?: string;
  progress?: number;
  total?: number;
  head?: { status: number; statusText: string; type: ResponseType; headers: [string, string][] };
  buffer?: ArrayBuffer;
  failure?: string;
  aborted?: boolean;
  over?: { declaredBytes?: number; receivedBytes?: number };
  stored?: boolean;
  storeError?: string;
  found?: [string, ArrayBuffer][];
  present?: boolean[];
  bad?: string[];
  readError?: string;
}

interface PoolWorker {
  worker: Worker;
  ready: Promise<boolean>;
  pending: Map<number, Pending>;
  /** Bytes sent and not answered yet, plus requests in flight: the next job goes to the least loaded worker. */
  load: number;
}

export interface WorkerDigestPoolOptions {
  /** How many workers; default min(4, navigator.hardwareConcurrency). */
  size?: number;
}

/** Whether this platform can run the worker pool at all (browsers; not Node 20). */
export function workersAvailable(): boolean {
  return typeof Worker === 'function' && typeof Blob === 'function' && typeof URL.createObjectURL === 'function';
}

/**
 * Digests (and reads bodies) in Web Workers. If a worker cannot start or has no WebCrypto, the
 * pool turns to `InThreadDigests` for good; no buffer is ever sent to a worker that has not
 * answered its ping.
 */
export class WorkerDigestPool implements DigestPool {
  readonly size: number;
  #workers: PoolWorker[] | undefined;
  #fallback: InThreadDigests | undefined;
  #ready: boolean | undefined;
  #nextId = 1;
  #scriptUrl: string | undefined;
  /** Store writes in flight, answered after their digest job. */
  readonly #stores = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();

  constructor(options: WorkerDigestPoolOptions = {}) {
    const cores = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 2;
    this.size = Math.max(1, Math.floor(options.size ?? Math.min(4, cores)));
  }

  /** Whether jobs go to workers: undefined until the first job has found out, false after a fallback. */
  get usingWorkers(): boolean | undefined {
    if (this.#fallback) return false;
    return this.#ready;
  }

  async digest(job: DigestJob): Promise<DigestResult> {
    const worker = this.#fallback ? undefined : await this.#pick(job.inputs.reduce((sum, input) => sum + input.length, 0));
    if (!worker) return this.#inThread().digest(job);
    return this.#sendDigest(worker, job);
  }

  /** A `BodyFetcher` that reads bodies in this pool's workers (see `BodyFetcher`). */
  readonly fetchBody: BodyFetcher = async (url, init) => {
    if (init.signal.aborted) throw init.signal.reason;
    const worker = this.#fallback ? undefined : await this.#pick(0);
    if (!worker) return undefined;
    return this.#sendFetch(worker, url, init);
  };

  /**
   * Reads cached entries in a worker from an IndexedDB store (see `WorkerStoreAccess`), checks
   * each against its size and SHA-256 there, and hands back the ones that pass (`found`, bytes
   * the caller owns) and the ones that failed (`bad`). `undefined` when workers cannot run here.
   */
  async readStored(access: WorkerStoreAccess, wanted: readonly { sha256: string; sizeBytes: number }[]): Promise<{ found: Map<string, Uint8Array>; bad: string[] } | undefined> {
    const worker = this.#fallback ? undefined : await this.#pick(0);
    if (!worker) return undefined;
    const { id, result } = this.#track<{ found: Map<string, Uint8Array>; bad: string[] }>(worker, 1, (data, resolve, reject) => {
      if (data.readError !== undefined) return reject(new Error(data.readError));
      resolve({ found: new Map(data.found!.map(([key, buffer]) => [key, new Uint8Array(buffer)])), bad: data.bad! });
    });
    worker.worker.postMessage({ id, read: { ...access, keys: wanted.map((w) => w.sha256), sizes: wanted.map((w) => w.sizeBytes) } });
    return result;
  }

  /**
   * Which of `keys` an IndexedDB store holds, asked in a worker (one read transaction, no bytes
   * read). `undefined` when workers cannot run here.
   */
  async hasStored(access: WorkerStoreAccess, keys: readonly string[]): Promise<boolean[] | undefined> {
    const worker = this.#fallback ? undefined : await this.#pick(0);
    if (!worker) return undefined;
    const { id, result } = this.#track<boolean[]>(worker, 1, (data, resolve, reject) => (data.readError !== undefined ? reject(new Error(data.readError)) : resolve(data.present!)));
    worker.worker.postMessage({ id, has: { ...access, keys } });
    return result;
  }

  /**
   * Lets the workers write what they hold for their stores. Writes wait for this (or for 64 MiB
   * to pile up) so that IndexedDB's work comes after a load rather than competing with it.
   */
  flushStores(): void {
    for (const entry of this.#workers ?? []) void entry.ready.then((ready) => ready && entry.worker.postMessage({ flush: true }));
  }

  /** Lets every worker open the store now, so the first read or write does not wait for it. */
  prepareStore(access: WorkerStoreAccess): void {
    if (this.#fallback) return;
    this.#workers ??= this.#start();
    for (const entry of this.#workers) void entry.ready.then((ready) => ready && entry.worker.postMessage({ open: access }));
  }

  // The plain Errors of this pool never reach a read: a fetch's failure becomes a NetworkError in
  // Transport, and a store's goes to the cache's error handling (`onCacheError`) as the platform's do.
  terminate(): void {
    for (const waiter of this.#stores.values()) waiter.reject(new Error('the worker pool was terminated'));
    this.#stores.clear();
    for (const entry of this.#workers ?? []) {
      entry.worker.terminate();
      for (const pending of entry.pending.values()) pending.reject(new Error('the worker pool was terminated'));
      entry.pending.clear();
    }
    this.#workers = undefined;
    this.#ready = undefined;
    if (this.#scriptUrl) URL.revokeObjectURL(this.#scriptUrl);
    this.#scriptUrl = undefined;
  }

  #inThread(): InThreadDigests {
    this.#fallback ??= new InThreadDigests();
    return this.#fallback;
  }

  /** The least loaded worker that answered its ping; none (and the fallback set) when workers fail. */
  async #pick(bytes: number): Promise<PoolWorker | undefined> {
    this.#workers ??= this.#start();
    if (this.#workers.length === 0) return void this.#inThread();
    const entry = this.#workers.reduce((best, next) => (next.load < best.load ? next : best));
    // Reserve it while waiting for readiness, so that concurrent jobs spread out.
    const reserved = bytes + 1;
    entry.load += reserved;
    const ready = await entry.ready;
    entry.load -= reserved;
    if (!ready) return void this.#inThread();
    this.#ready = true;
    return entry;
  }

  #start(): PoolWorker[] {
    if (!workersAvailable()) return [];
    const workers: PoolWorker[] = [];
    try {
      this.#scriptUrl = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: 'text/javascript' }));
      for (let i = 0; i < this.size; i++) workers.push(this.#spawn(this.#scriptUrl));
    } catch {
      // A CSP that forbids blob: workers may throw here: work on this thread instead.
      for (const entry of workers) entry.worker.terminate();
      return [];
    }
    return workers;
  }

  #spawn(scriptUrl: string): PoolWorker {
    const worker = new Worker(scriptUrl);
    const entry: PoolWorker = { worker, pending: new Map(), load: 0, ready: Promise.resolve(false) };
    entry.ready = new Promise<boolean>((resolve) => {
      worker.onmessage = ({ data }: MessageEvent) => {
        if (data?.pong) return resolve(Boolean(data.subtle && data.fetch));
        if (data.stored !== undefined || data.storeError !== undefined) {
          const waiter = this.#stores.get(data.id);
          this.#stores.delete(data.id);
          return data.storeError === undefined ? waiter?.resolve() : waiter?.reject(new Error(data.storeError));
        }
        const pending = entry.pending.get(data.id);
        if (!pending) return;
        if (data.progress === undefined) {
          entry.pending.delete(data.id);
          entry.load -= pending.bytes;
        }
        pending.onMessage?.(data);
      };
      // A worker that cannot load (a CSP refusing it shows up here) or dies: its jobs fail.
      worker.onerror = (event: ErrorEvent) => {
        event.preventDefault?.();
        resolve(false);
        for (const pending of entry.pending.values()) pending.reject(new Error(`worker failed: ${event.message ?? 'error'}`));
        entry.pending.clear();
      };
    });
    worker.postMessage({ ping: true });
    return entry;
  }

  #track<T>(entry: PoolWorker, bytes: number, onMessage: (data: WorkerReply, resolve: (value: T) => void, reject: (error: Error) => void) => void): { id: number; result: Promise<T> } {
    const id = this.#nextId++;
    const result = new Promise<T>((resolve, reject) => {
      const pending: Pending = { resolve: resolve as (value: unknown) => void, reject, bytes, onMessage: (data) => onMessage(data, resolve, reject) };
      entry.pending.set(id, pending);
      entry.load += bytes;
    });
    return { id, result };
  }

  #sendDigest(entry: PoolWorker, job: DigestJob): Promise<DigestResult> {
    const ranges = rangesOf(job);
    // Distinct buffers, each sent once; an input that is a view keeps its place inside its buffer.
    const buffers: ArrayBuffer[] = [];
    const where: { buffer: number; byteOffset: number; length: number }[] = [];
    for (const input of job.inputs) {
      if (job.transfer && input.buffer instanceof ArrayBuffer) {
        let at = buffers.indexOf(input.buffer);
        if (at === -1) at = buffers.push(input.buffer) - 1;
        where.push({ buffer: at, byteOffset: input.byteOffset, length: input.length });
      } else {
        // Not ours to give away: send a copy of just the viewed bytes.
        where.push({ buffer: buffers.push(input.slice().buffer as ArrayBuffer) - 1, byteOffset: 0, length: input.length });
      }
    }
    const rebuild = (returned: ArrayBuffer[]) => where.map(({ buffer, byteOffset, length }) => new Uint8Array(returned[buffer]!, byteOffset, length));
    const bytes = job.inputs.reduce((sum, input) => sum + input.length, 0);
    const { id, result } = this.#track<DigestResult>(entry, bytes, (data, resolve, reject) => {
      const inputs = rebuild(data.buffers!);
      // The bytes came back: hash them here rather than fail a load over a worker's trouble.
      if (data.error !== undefined) return void new InThreadDigests().digest({ ...job, inputs }).then(resolve, reject);
      resolve({ inputs, digests: data.digests!, ...(data.parts ? { parts: data.parts.map((part) => new Uint8Array(part)) } : {}) });
    });
    const message = {
      id, buffers, split: Boolean(job.split),
      ranges: ranges.map(({ input, offset, length }) => [where[input]!.buffer, where[input]!.byteOffset + offset, length]),
      ...(job.store ? { store: job.store } : {}),
    };
    const stored = job.store ? new Promise<void>((resolve, reject) => this.#stores.set(id, { resolve, reject })) : undefined;
    stored?.catch(() => undefined); // the caller may never look
    entry.worker.postMessage(message, buffers);
    return stored ? result.then((answer) => ({ ...answer, stored })) : result;
  }

  #sendFetch(entry: PoolWorker, url: string, init: FetchBodyInit): Promise<FetchedBody> {
    const { id, result } = this.#track<FetchedBody>(entry, 1, (data, resolve, reject) => {
      if (data.progress !== undefined) return init.onProgress?.(data.progress, data.total);
      init.signal.removeEventListener('abort', abort);
      // Rejects as fetch would (a TypeError); Transport turns it into a NetworkError for the caller.
      if (data.failure !== undefined) return reject(data.aborted ? init.signal.reason : new TypeError(`fetch failed in a worker: ${data.failure}`));
      const head = data.head!;
      resolve({ status: head.status, statusText: head.statusText, type: head.type, headers: new Headers(head.headers), bytes: new Uint8Array(data.buffer!), ...(data.over ? { overLimit: data.over } : {}) });
    });
    const abort = () => entry.worker.postMessage({ abort: id });
    init.signal.addEventListener('abort', abort, { once: true });
    // A worker made from a blob: URL resolves relative URLs against that, not the page: resolve here.
    const absolute = new URL(url, (globalThis as { location?: { href: string } }).location?.href).href;
    const limits = {
      ...(init.expectedBytes !== undefined ? { expectedBytes: init.expectedBytes } : {}),
      ...(init.rangeBytes !== undefined ? { rangeBytes: init.rangeBytes } : {}),
      ...(init.rangeBytesAtMost ? { rangeBytesAtMost: true } : {}),
      ...(init.multipartBytes !== undefined ? { multipartBytes: init.multipartBytes } : {}),
    };
    entry.worker.postMessage({ id, url: absolute, headers: init.headers, progress: Boolean(init.onProgress), ...limits });
    return result;
  }
}

let shared: WorkerDigestPool | InThreadDigests | undefined;

/**
 * The pool readers share by default: Web Workers where the platform has them, else the calling
 * thread. Created on first use; its workers idle between jobs.
 */
export function sharedDigestPool(): WorkerDigestPool | InThreadDigests {
  shared ??= workersAvailable() ? new WorkerDigestPool() : new InThreadDigests();
  return shared;
}
