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
}

export interface DigestResult {
  /** The inputs again (views onto the bytes, which may live in a new buffer after a transfer). */
  inputs: Uint8Array[];
  /** Lowercase hex SHA-256 of each range, in order. */
  digests: string[];
  /** With `split`: each range's bytes in a buffer no one else holds. */
  parts?: Uint8Array[];
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
  /** The whole body (empty for a status outside 2xx, whose body is not read). */
  bytes: Uint8Array;
}

export interface FetchBodyInit {
  headers: Record<string, string>;
  signal: AbortSignal;
  onProgress?: (receivedBytes: number, totalBytes: number | undefined) => void;
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
async function digest({ id, buffers, ranges, split }) {
  try {
    const digests = await Promise.all(ranges.map((r) => crypto.subtle.digest('SHA-256', new Uint8Array(buffers[r[0]], r[1], r[2])).then(hex)));
    const parts = split ? ranges.map((r) => buffers[r[0]].slice(r[1], r[1] + r[2])) : undefined;
    postMessage({ id, buffers, digests, parts }, parts ? buffers.concat(parts) : buffers);
  } catch (error) {
    postMessage({ id, buffers, error: String((error && error.message) || error) }, buffers);
  }
}
async function readAll(id, response) {
  const encoded = (response.headers.get('content-encoding') || 'identity').trim().toLowerCase() !== 'identity';
  const declared = encoded ? NaN : Number(response.headers.get('content-length'));
  const target = Number.isSafeInteger(declared) && declared >= 0 ? new Uint8Array(declared) : undefined;
  const chunks = [];
  let received = 0, reported = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (target && received + value.length <= target.length) target.set(value, received); else chunks.push(value);
    received += value.length;
    if (received - reported >= 262144) { reported = received; postMessage({ id, progress: received, total: target ? target.length : undefined }); }
  }
  if (target && received === target.length) return target.buffer;
  const whole = new Uint8Array(received);
  let at = 0;
  if (target) { whole.set(target.subarray(0, Math.min(received, target.length))); at = Math.min(received, target.length); }
  for (const chunk of chunks) { whole.set(chunk, at); at += chunk.length; }
  return whole.buffer;
}
async function get({ id, url, headers, progress }) {
  const controller = new AbortController();
  fetches.set(id, controller);
  try {
    const response = await fetch(url, { headers, signal: controller.signal });
    const head = { status: response.status, statusText: response.statusText, type: response.type, headers: [...response.headers] };
    if (response.status < 200 || response.status > 299 || !response.body) {
      if (response.body) response.body.cancel().catch(() => {});
      return postMessage({ id, head, buffer: new ArrayBuffer(0) });
    }
    const buffer = progress ? await readAll(id, response) : await response.arrayBuffer();
    postMessage({ id, head, buffer }, [buffer]);
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

  terminate(): void {
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
    const message = { id, buffers, split: Boolean(job.split), ranges: ranges.map(({ input, offset, length }) => [where[input]!.buffer, where[input]!.byteOffset + offset, length]) };
    entry.worker.postMessage(message, buffers);
    return result;
  }

  #sendFetch(entry: PoolWorker, url: string, init: FetchBodyInit): Promise<FetchedBody> {
    const { id, result } = this.#track<FetchedBody>(entry, 1, (data, resolve, reject) => {
      if (data.progress !== undefined) return init.onProgress?.(data.progress, data.total);
      init.signal.removeEventListener('abort', abort);
      if (data.failure !== undefined) return reject(data.aborted ? init.signal.reason : new TypeError(`fetch failed in a worker: ${data.failure}`));
      const head = data.head!;
      resolve({ status: head.status, statusText: head.statusText, type: head.type, headers: new Headers(head.headers), bytes: new Uint8Array(data.buffer!) });
    });
    const abort = () => entry.worker.postMessage({ abort: id });
    init.signal.addEventListener('abort', abort, { once: true });
    entry.worker.postMessage({ id, url, headers: init.headers, progress: Boolean(init.onProgress) });
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
