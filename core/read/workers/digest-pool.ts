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
import type { WorkerStoreAccess } from '../../cache/idb-store.js';
import { MemberDecodeError } from '../../errors.js';
import {
  bodyToRead,
  responseHead,
  type BodyFetcher,
  type FetchBodyInit,
  type FetchedBody,
  type ResponseHead,
  type StreamedAnswer,
  type StreamElsewhere,
} from '../../net/body.js';
import { refusalError, type BundleStreamPlan, type DecodeFailure, type StreamFailure } from '../verify/stream-check.js';
import { InThreadDigests, rangesOf, type DigestJob, type DigestPool, type DigestResult } from './digest-jobs.js';
import { WORKER_SCRIPT } from './worker-script.js';

export type { BodyFetcher, FetchBodyInit, FetchedBody } from '../../net/body.js';

export * from './digest-jobs.js';

/**
 * How many decoded bytes of encoded members a bundle or member may have and still be decoded on
 * the calling thread (`WorkerDigestPool` `#decodeLimit`): with a worker up (a preloaded bundle; a
 * member a load waits on, which is also hashed here up to that size), 256 KiB; on a cold page,
 * whose workers have not answered yet, 2 MiB. A worker's start on a page busy with its engine's
 * first frame took 100–200 ms (traced in the Phaser example), where
 * inflating and hashing 2 MiB on the page takes 7–14 ms (`DecompressionStream` in 16 KiB pieces,
 * Chromium).
 */
const IN_THREAD_DECODE_BYTES = 256 * 1024;
const COLD_PAGE_DECODE_BYTES = 2 * 1024 * 1024;

function decodesOver(plan: BundleStreamPlan, limit: number): boolean {
  let bytes = 0;
  for (const content of plan.contents) if (content.encoding !== undefined) bytes += content.sizeBytes;
  return bytes > limit;
}

/**
 * A bundle's request sent from this thread, for a worker to read (see `streamBundle`): its own
 * abort, tied to the attempt's, so that a body the worker stops reading ends its request here.
 */
async function fetchOnThisThread(
  url: string,
  init: { headers: Record<string, string>; signal: AbortSignal },
): Promise<{ response: Response; stop: () => void }> {
  const controller = new AbortController();
  const stop = () => controller.abort(init.signal.reason);
  if (init.signal.aborted) throw init.signal.reason;
  init.signal.addEventListener('abort', stop, { once: true });
  const response = await fetch(absoluteUrl(url), { headers: init.headers, signal: controller.signal });
  return { response, stop };
}

/**
 * Reads `body` on this thread and posts each chunk to job `id` of `worker` as it comes, its buffer
 * transferred (worker-main.ts `PageFetched`): each free moment of this thread sends what arrived,
 * with no round trip per chunk. Stops once the job has settled (it read what it needed).
 */
function feedBody(worker: Worker, id: number, body: ReadableStream<Uint8Array>, settled: Promise<unknown>): void {
  const reader = body.getReader();
  let done = false;
  const stop = () => {
    if (done) return;
    done = true;
    reader.cancel().catch(() => undefined);
  };
  settled.then(stop, stop);
  void (async () => {
    try {
      for (;;) {
        const { done: ended, value } = await reader.read();
        if (done) return;
        if (ended) return worker.postMessage({ id, fedEnd: true });
        const buffer = (
          value.byteOffset === 0 && value.byteLength === value.buffer.byteLength ? value.buffer : value.slice().buffer
        ) as ArrayBuffer;
        worker.postMessage({ id, fed: buffer }, [buffer]);
      }
    } catch (error) {
      if (!done) worker.postMessage({ id, fedError: error instanceof Error ? error.message : String(error) });
    } finally {
      done = true;
    }
  })();
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  /** How the job is answered should its worker be lost (default: `reject`). */
  lost?: (error: WorkerLostError) => void;
  onMessage?: (data: WorkerReply) => void;
  bytes: number;
  /**
   * When a job that is bounded by its bytes, not by a network, is late (`performance.now()`):
   * its worker is lost then, however it answers pings.
   */
  due?: number;
}

interface WorkerReply {
  id: number;
  member?: number;
  end?: {
    head: ResponseHead;
    received: number;
    over?: { declaredBytes?: number; receivedBytes?: number };
    refusal?: StreamFailure;
  };
  buffers?: ArrayBuffer[];
  digests?: string[];
  parts?: ArrayBuffer[];
  decodeErrors?: (DecodeFailure | null)[];
  error?: string;
  progress?: number;
  total?: number;
  head?: ResponseHead;
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
  /** Store writes of its jobs not answered yet (ids in the pool's `#stores`). */
  stores: Set<number>;
  /** Bytes sent and not answered yet, plus requests in flight: the next job goes to the least loaded worker. */
  load: number;
  /** When it last said anything (`performance.now()`), and when it was last pinged for want of it. */
  heard: number;
  pinged?: number;
  /** It answered its first ping (its script runs). */
  started?: boolean;
  /** It died, was stopped, or stopped answering: out of the pool, its jobs answered without it. */
  lost?: boolean;
  resolveReady?: (up: boolean) => void;
}

const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

export interface WorkerDigestPoolOptions {
  /** How many workers; default min(4, navigator.hardwareConcurrency). */
  size?: number;
  /**
   * How long a worker with jobs may stay silent before it counts as dead (default 10 s): after half
   * of it the pool pings it, and a live worker answers between any two steps of its work (its
   * hashing, decoding and IndexedDB calls all yield). A worker that dies without an `error`
   * event (stopped) is found so; one that lost a job (out of memory inside it, in Firefox) and
   * still answers pings is found when that job is late (SLOWEST_BYTES_PER_MS).
   */
  livenessMs?: number;
}

/** Default `livenessMs`. */
const LIVENESS_MS = 10_000;

/**
 * The slowest a worker may digest, decode or read from IndexedDB (bytes per ms: 10 MB/s, a
 * hundredth of what a desktop hashes): a job of N bytes is late after `livenessMs` + N / this.
 * A worker can run out of memory inside a job's asynchronous work (Firefox: no `error` event, the
 * job's promise never settles) and still answer pings: such a job is found late.
 */
const SLOWEST_BYTES_PER_MS = 10_000;

/** Why a job a lost worker held failed: the pool goes on without that worker. */
export class WorkerLostError extends Error {
  constructor(why: string) {
    super(`a reader worker was lost (${why}): the pool goes on without it`);
    this.name = 'WorkerLostError';
  }
}

/** Whether this platform can run the worker pool at all (browsers; not Node 20). */
export function workersAvailable(): boolean {
  return (
    WORKER_SCRIPT !== undefined && typeof Worker === 'function' && typeof Blob === 'function' && typeof URL.createObjectURL === 'function'
  );
}

/**
 * Digests (and reads bodies) in Web Workers. If a worker cannot start or has no WebCrypto, the
 * pool turns to `InThreadDigests` for good; no buffer is ever sent to a worker that has not
 * answered its ping.
 */
export class WorkerDigestPool implements DigestPool {
  readonly size: number;
  readonly #livenessMs: number;
  /** The watchdog's next look at the workers with jobs, while there are any. */
  #watch: ReturnType<typeof setTimeout> | undefined;
  #workers: PoolWorker[] | undefined;
  /** The task `warm` started them in, until it runs. */
  #warming: ReturnType<typeof setTimeout> | undefined;
  /** Stores to open in the workers once they are started (`prepareStore` before they were). */
  readonly #opening: WorkerStoreAccess[] = [];
  #fallback: InThreadDigests | undefined;
  #ready: boolean | undefined;
  #nextId = 1;
  #scriptUrl: string | undefined;
  /** Store writes in flight, answered after their digest job. */
  readonly #stores = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();

  constructor(options: WorkerDigestPoolOptions = {}) {
    const cores = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 2;
    this.size = Math.max(1, Math.floor(options.size ?? Math.min(4, cores)));
    this.#livenessMs = Math.max(1, options.livenessMs ?? LIVENESS_MS);
  }

  /** Whether jobs go to workers: undefined until the first job has found out, false after a fallback. */
  get usingWorkers(): boolean | undefined {
    if (this.#fallback) return false;
    return this.#ready;
  }

  async digest(job: DigestJob): Promise<DigestResult> {
    const bytes = job.inputs.reduce((sum, input) => sum + input.length, 0);
    const limit = this.#decodeLimit();
    // What a load waits on is done here: on a cold page up to COLD_PAGE_DECODE_BYTES decoded (a
    // larger encoded member is decoded in a worker even then); with workers up, a small one too,
    // unless the worker is to store it: a worker's answer reaches this thread only at its next
    // free moment, behind the engine's own tasks (a Phaser game's music waited 80 ms behind an
    // image decode for its digest, traced), where 256 KiB hash here in ~0.3 ms.
    const here =
      job.now &&
      !job.ranges?.some((range) => range.decode && range.decode.sizeBytes > limit) &&
      (this.#ready !== true || (!job.store && bytes <= IN_THREAD_DECODE_BYTES));
    if (here && !this.#fallback) {
      // Not `#inThread()`: that gives up on workers for good. These start for the next jobs.
      this.warm();
      return new InThreadDigests().digest(job);
    }
    const worker = this.#fallback ? undefined : await this.#pick(bytes);
    if (!worker) return this.#inThread().digest(job);
    return this.#sendDigest(worker, job);
  }

  /** A `BodyFetcher` that reads bodies in this pool's workers (see `BodyFetcher`). */
  readonly fetchBody: BodyFetcher = async (url, init) => {
    if (init.signal.aborted) throw init.signal.reason;
    // A request waits for no worker to start: until one has answered, this thread
    // fetches and reads the body (a cold page's loose files, ranges and delta reads), as bundles
    // stream here (see streamBundle).
    if (this.#ready !== true) {
      this.warm();
      return undefined;
    }
    const worker = this.#fallback ? undefined : await this.#pick(0);
    if (!worker) return undefined;
    return this.#sendFetch(worker, url, init);
  };

  /**
   * A `StreamElsewhere` for one bundle (SPEC §7 "Streamed members"): each attempt is one job in a
   * worker that fetches the bundle, checks its head, cuts and hashes each member as it arrives
   * and posts it at once (`onMember`, with a buffer the caller owns), and once every member
   * passed, writes them to `store`. A bundle crosses threads once. Resolves `undefined` where
   * workers cannot run, for the transport to read the body itself.
   */
  streamBundle(
    plan: BundleStreamPlan,
    onMember: (index: number, bytes: Uint8Array) => void,
    store?: WorkerStoreAccess,
    preloaded = false,
  ): { attempt: StreamElsewhere; stored: () => Promise<void> | undefined } {
    /** The store write of the last attempt run in a worker (the one that passed, if any). */
    let stored: Promise<void> | undefined;
    const attempt: StreamElsewhere = async (url, init) => {
      stored = undefined;
      if (init.signal.aborted) throw init.signal.reason;
      // A bundle waits for no worker to start: until one has answered, bundles stream on this
      // thread (the first bundles of a cold page), rather than go out a worker's start-up later;
      // but one with more than 2 MiB of encoded members to decode is decoded in a worker (SPEC
      // §5a, decoding off the page): this thread sends its request now and feeds the body, chunk
      // by chunk as it arrives, to the first worker that answers (`feedBody`).
      const large = decodesOver(plan, this.#decodeLimit());
      // A bundle the page preloads is fetched on this thread, where the preloaded response is;
      // only one with a large decode then goes to a worker to be read.
      if (preloaded && !large) return undefined;
      if (this.#ready !== true && !large) {
        this.warm();
        return undefined;
      }
      if (this.#fallback) return undefined;
      const fetchHere = preloaded || this.#ready !== true;
      const pageFetch = fetchHere ? fetchOnThisThread(url, init) : undefined;
      pageFetch?.catch(() => undefined); // awaited below, once a worker answers (or none will)
      // A worker still starting gets the job at once, queued until it runs: this thread then feeds
      // it the body as it arrives, rather than first wait for its answer, which reaches a page
      // busy with its engine's first frames only at its next free moment (traced: 180 ms after
      // the worker had started). Should it never start, this thread reads a copy it kept.
      const starting = pageFetch && this.#ready !== true ? this.#pickStarting() : undefined;
      const worker = starting ?? (await this.#pick(0));
      if (!worker) {
        // No worker after all (they failed to start): this thread reads what it fetched.
        return pageFetch ? { here: (await pageFetch).response } : undefined;
      }
      const fetched = pageFetch ? await pageFetch : undefined;
      const spare = starting && fetched?.response.body ? fetched.response.clone() : undefined;
      const { id, result } = this.#track<StreamedAnswer>(
        worker,
        1,
        (data, resolve, reject) => {
          if (data.member !== undefined) return onMember(data.member, new Uint8Array(data.buffer!));
          if (data.progress !== undefined) return init.onProgress(data.progress);
          init.signal.removeEventListener('abort', abort);
          if (data.failure !== undefined) {
            fetched?.stop();
            return reject(
              data.aborted || init.signal.aborted ? init.signal.reason : new TypeError(`fetch failed in a worker: ${data.failure}`),
            );
          }
          // A head the worker refused is judged on this thread (bundle-fetcher.ts, stream-check.ts `judgedError`).
          const { head, received, over, refusal } = data.end!;
          // A body this thread fetched and the worker stopped reading: its request ends here too.
          if (over || refusal) fetched?.stop();
          resolve({
            status: head.status,
            statusText: head.statusText,
            type: head.type,
            headers: new Headers(head.headers),
            receivedBytes: received,
            ...(over ? { overLimit: over } : {}),
            ...(refusal ? { refusal: refusalError(refusal, url) } : {}),
          });
        },
        (lost, _, reject) => {
          // As a failed fetch: the transport tries again, with a worker left or on this thread.
          // Not where this thread kept a copy for a worker still starting: one that never started
          // leaves that copy to be read (below), and stopping the request would end it too.
          init.signal.removeEventListener('abort', abort);
          if (!spare) fetched?.stop();
          reject(init.signal.aborted ? init.signal.reason : new TypeError(`fetch failed in a worker: ${lost.message}`));
        },
      );
      const abort = () => worker.worker.postMessage({ abort: id });
      init.signal.addEventListener('abort', abort, { once: true });
      if (store) {
        stored = this.#storeOf(worker, id);
        stored.catch(() => undefined); // looked at only when the bundle passed
      }
      const body = fetched?.response.body ? bodyToRead(fetched.response) : null;
      worker.worker.postMessage({
        id,
        bundle: {
          url: absoluteUrl(url),
          headers: init.headers,
          plan,
          ...(store ? { store } : {}),
          ...(fetched ? { fetched: { head: responseHead(fetched.response), fed: body !== null } } : {}),
        },
      });
      if (!spare) {
        if (body) feedBody(worker.worker, id, body, result);
        return result;
      }
      const answer = new Promise<Awaited<typeof result> | { here: Response }>((resolve, reject) => {
        // It never started (its script refused, no WebCrypto there): no store write comes from
        // it, and whatever it said of the job does not count; this thread reads the copy.
        const readSpare = () => {
          this.#inThread();
          stored = undefined;
          resolve({ here: spare });
        };
        result.then(resolve, (error: unknown) => void worker.ready.then((up) => (up ? reject(error) : readSpare())));
        void worker.ready.then((up) => {
          if (!up) return readSpare();
          this.#ready = true;
          void spare.body?.cancel().catch(() => undefined);
        });
      });
      if (body) feedBody(worker.worker, id, body, answer);
      return answer;
    };
    return { attempt, stored: () => stored };
  }

  /**
   * Reads cached entries in a worker from an IndexedDB store (see `WorkerStoreAccess`), checks
   * each against its size and SHA-256 there, and hands back the ones that pass (`found`, bytes
   * the caller owns) and the ones that failed (`bad`). `undefined` when workers cannot run here.
   */
  async readStored(
    access: WorkerStoreAccess,
    wanted: readonly { sha256: string; sizeBytes: number }[],
  ): Promise<{ found: Map<string, Uint8Array>; bad: string[] } | undefined> {
    const worker = this.#fallback ? undefined : await this.#pick(0);
    if (!worker) return undefined;
    const { id, result } = this.#track<{ found: Map<string, Uint8Array>; bad: string[] } | undefined>(
      worker,
      1,
      (data, resolve, reject) => {
        if (data.readError !== undefined) return reject(new Error(data.readError));
        resolve({ found: new Map(data.found!.map(([key, buffer]) => [key, new Uint8Array(buffer)])), bad: data.bad! });
      },
      (_, resolve) => resolve(undefined),
      wanted.reduce((sum, { sizeBytes }) => sum + sizeBytes, 0),
    );
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
    const { id, result } = this.#track<boolean[] | undefined>(
      worker,
      1,
      (data, resolve, reject) => (data.readError !== undefined ? reject(new Error(data.readError)) : resolve(data.present!)),
      (_, resolve) => resolve(undefined),
      0,
    );
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

  /**
   * Starts the workers soon, in a task of their own (a source calls this as it opens, a first
   * load as it sends its requests), so that they are up by the time later bundles are fetched.
   * Not in the caller's task: spawning them costs this thread 4–6 ms each, which lay between a
   * Babylon page's parse and its first bundle requests (traced); a cold page's
   * first bundles do not wait for them (they stream on this thread).
   */
  warm(): void {
    if (this.#fallback || this.#workers || this.#warming !== undefined) return;
    this.#warming = setTimeout(() => {
      this.#warming = undefined;
      if (this.#fallback || this.#workers) return;
      const workers = (this.#workers = this.#start());
      // Workers that cannot run (a CSP refusing them shows up here): this thread for good, as a job would find.
      if (workers.length === 0) return void this.#inThread();
      void Promise.all(workers.map((entry) => entry.ready)).then((up) => {
        if (!up.some(Boolean) && this.#workers === workers) this.#inThread();
      });
    }, 0);
  }

  /** Lets every worker open the store as soon as it is up, so the first read or write does not wait for it. */
  prepareStore(access: WorkerStoreAccess): void {
    if (this.#fallback) return;
    if (!this.#workers) {
      this.#opening.push(access);
      return this.warm();
    }
    this.#open(this.#workers, access);
  }

  #open(workers: PoolWorker[], access: WorkerStoreAccess): void {
    for (const entry of workers) void entry.ready.then((ready) => ready && entry.worker.postMessage({ open: access }));
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
    clearTimeout(this.#warming);
    this.#warming = undefined;
    this.#opening.length = 0;
    this.#ready = undefined;
    if (this.#scriptUrl) URL.revokeObjectURL(this.#scriptUrl);
    this.#scriptUrl = undefined;
  }

  /** The most decoded bytes this thread decodes itself now (see IN_THREAD_DECODE_BYTES). */
  #decodeLimit(): number {
    return this.#ready === true ? IN_THREAD_DECODE_BYTES : COLD_PAGE_DECODE_BYTES;
  }

  #inThread(): InThreadDigests {
    this.#fallback ??= new InThreadDigests();
    return this.#fallback;
  }

  /** The least loaded worker that answered its ping; none (and the fallback set) when workers fail. */
  async #pick(bytes: number): Promise<PoolWorker | undefined> {
    for (;;) {
      const entry = this.#pickStarting();
      if (!entry) return void this.#inThread();
      // Reserve it while waiting for readiness, so that concurrent jobs spread out.
      const reserved = bytes + 1;
      entry.load += reserved;
      const ready = await entry.ready;
      entry.load -= reserved;
      // Lost meanwhile (it is out of the pool now): the next live one, or this thread.
      if (entry.lost) continue;
      if (!ready) return void this.#inThread();
      this.#ready = true;
      return entry;
    }
  }

  /** The least loaded worker, started now if none was, without waiting for its answer; none where workers cannot run. */
  #pickStarting(): PoolWorker | undefined {
    if (this.#fallback) return undefined;
    this.#workers ??= this.#start();
    if (this.#workers.length === 0) return void this.#inThread();
    return this.#workers.reduce((best, next) => (next.load < best.load ? next : best));
  }

  #start(): PoolWorker[] {
    if (!workersAvailable()) return [];
    const workers: PoolWorker[] = [];
    try {
      this.#scriptUrl = URL.createObjectURL(new Blob([WORKER_SCRIPT!], { type: 'text/javascript' }));
      for (let i = 0; i < this.size; i++) workers.push(this.#spawn(this.#scriptUrl));
    } catch {
      // A CSP that forbids blob: workers may throw here: work on this thread instead.
      for (const entry of workers) entry.worker.terminate();
      return [];
    }
    for (const access of this.#opening.splice(0)) this.#open(workers, access);
    return workers;
  }

  #spawn(scriptUrl: string): PoolWorker {
    const worker = new Worker(scriptUrl);
    const entry: PoolWorker = { worker, pending: new Map(), stores: new Set(), load: 0, ready: Promise.resolve(false), heard: now() };
    entry.ready = new Promise<boolean>((resolve) => {
      entry.resolveReady = resolve;
      worker.onmessage = ({ data }: MessageEvent) => {
        entry.heard = now();
        entry.pinged = undefined;
        if (data?.pong) {
          const up = Boolean(data.subtle && data.fetch);
          if (up && !this.#fallback) this.#ready = true;
          entry.started = true;
          return resolve(up);
        }
        if (data.stored !== undefined || data.storeError !== undefined) {
          const waiter = this.#stores.get(data.id);
          this.#stores.delete(data.id);
          entry.stores.delete(data.id);
          return data.storeError === undefined ? waiter?.resolve() : waiter?.reject(new Error(data.storeError));
        }
        const pending = entry.pending.get(data.id);
        if (!pending) return;
        // Progress and streamed members come before a job's last message.
        if (data.progress === undefined && data.member === undefined) {
          entry.pending.delete(data.id);
          entry.load -= pending.bytes;
        }
        pending.onMessage?.(data);
      };
      // A worker that cannot load (a CSP refusing it shows up here) or dies: out of the pool, its
      // jobs answered without it. So is one whose answer could not be read.
      worker.onerror = (event: ErrorEvent) => {
        event.preventDefault?.();
        this.#lose(entry, `error: ${event.message || 'no message'}`);
      };
      worker.onmessageerror = () => this.#lose(entry, 'an answer that could not be read');
    });
    worker.postMessage({ ping: true });
    this.#watchSoon();
    return entry;
  }

  /**
   * A worker is gone: stopped, out of the pool, every job it held answered without it (a cache
   * read or check comes back `undefined`, for this thread to do; a fetch fails as a network
   * failure would, for the transport to try again; a digest whose bytes went with it rejects).
   * Later jobs go to the workers left, or to this thread once none is.
   */
  #lose(entry: PoolWorker, why: string): void {
    if (entry.lost) return;
    entry.lost = true;
    entry.worker.terminate();
    entry.resolveReady?.(false);
    if (this.#workers) {
      this.#workers = this.#workers.filter((other) => other !== entry);
      if (this.#workers.length === 0) this.#inThread();
    }
    const error = new WorkerLostError(why);
    for (const pending of entry.pending.values()) (pending.lost ?? pending.reject)(error);
    entry.pending.clear();
    entry.load = 0;
    for (const id of entry.stores) {
      this.#stores.get(id)?.reject(error);
      this.#stores.delete(id);
    }
    entry.stores.clear();
  }

  /** Has the watchdog look at the workers soon, unless it is already to. */
  #watchSoon(): void {
    if (this.#watch !== undefined) return;
    this.#watch = setTimeout(() => {
      this.#watch = undefined;
      this.#watchWorkers();
    }, this.#livenessMs / 4);
  }

  /**
   * The watchdog: a worker with jobs (or still starting) that has said nothing for half the
   * liveness time is pinged; one still silent a half later is lost, as is one holding a job past
   * its time (`Pending.due`). Looks again while any has work.
   */
  #watchWorkers(): void {
    const at = now();
    let busy = false;
    for (const entry of [...(this.#workers ?? [])]) {
      const waiting = entry.pending.size > 0 || entry.stores.size > 0 || !entry.started;
      if (!waiting) continue;
      if (entry.pinged !== undefined && at - entry.pinged >= this.#livenessMs / 2) {
        this.#lose(entry, `silent for ${Math.round(at - entry.heard)} ms`);
        continue;
      }
      if ([...entry.pending.values()].some((pending) => pending.due !== undefined && at > pending.due)) {
        this.#lose(entry, 'a job of its own bytes still unanswered past its time');
        continue;
      }
      busy = true;
      if (entry.pinged === undefined && at - entry.heard >= this.#livenessMs / 2) {
        entry.pinged = at;
        entry.worker.postMessage({ ping: true });
      }
    }
    if (busy) this.#watchSoon();
  }

  /**
   * Job `id` on `entry`, weighing `bytes` in its load; one of `work` bytes (a digest, a cache read
   * or check: no network) is due after `livenessMs` + (the worker's load + `work`) / SLOWEST_BYTES_PER_MS.
   */
  #track<T>(
    entry: PoolWorker,
    bytes: number,
    onMessage: (data: WorkerReply, resolve: (value: T) => void, reject: (error: Error) => void) => void,
    lost?: (error: WorkerLostError, resolve: (value: T) => void, reject: (error: Error) => void) => void,
    work?: number,
  ): { id: number; result: Promise<T> } {
    const id = this.#nextId++;
    const result = new Promise<T>((resolve, reject) => {
      // A worker lost before the job was sent: answered at once, as if lost with it.
      if (entry.lost)
        return lost
          ? lost(new WorkerLostError('before the job was sent'), resolve, reject)
          : reject(new WorkerLostError('before the job was sent'));
      const pending: Pending = {
        resolve: resolve as (value: unknown) => void,
        reject,
        bytes,
        onMessage: (data) => onMessage(data, resolve, reject),
        ...(lost ? { lost: (error: WorkerLostError) => lost(error, resolve, reject) } : {}),
        // Behind what the worker has already (its load), which it may do first.
        ...(work === undefined ? {} : { due: now() + this.#livenessMs + (entry.load + work) / SLOWEST_BYTES_PER_MS }),
      };
      entry.pending.set(id, pending);
      entry.load += bytes;
    });
    this.#watchSoon();
    return { id, result };
  }

  /** The store write of job `id` on `entry`: settles when the worker says how it went, or rejects if it is lost. */
  #storeOf(entry: PoolWorker, id: number): Promise<void> {
    if (entry.lost) return Promise.reject(new WorkerLostError('before the job was sent'));
    const stored = new Promise<void>((resolve, reject) => this.#stores.set(id, { resolve, reject }));
    entry.stores.add(id);
    return stored;
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
    const rebuild = (returned: ArrayBuffer[]) =>
      where.map(({ buffer, byteOffset, length }) => new Uint8Array(returned[buffer]!, byteOffset, length));
    const bytes = job.inputs.reduce((sum, input) => sum + input.length, 0);
    const { id, result } = this.#track<DigestResult>(
      entry,
      bytes,
      (data, resolve, reject) => {
        const inputs = rebuild(data.buffers!);
        // The bytes came back: hash them here rather than fail a load over a worker's trouble.
        if (data.error !== undefined) return void new InThreadDigests().digest({ ...job, inputs }).then(resolve, reject);
        const decodeErrors = data.decodeErrors?.map((failure) => (failure ? new MemberDecodeError(failure.message, failure) : undefined));
        resolve({
          inputs,
          digests: data.digests!,
          ...(data.parts ? { parts: data.parts.map((part) => new Uint8Array(part)) } : {}),
          ...(decodeErrors ? { decodeErrors } : {}),
        });
      },
      (lost, resolve, reject) => {
        // Bytes sent as copies are still here: hashed here instead. Transferred ones went with it.
        if (job.transfer) reject(lost);
        else void new InThreadDigests().digest(job).then(resolve, reject);
      },
      bytes,
    );
    const message = {
      id,
      buffers,
      split: Boolean(job.split),
      ranges: ranges.map(({ input, offset, length }) => [where[input]!.buffer, where[input]!.byteOffset + offset, length]),
      ...(ranges.some((range) => range.decode) ? { decode: ranges.map((range) => range.decode ?? null) } : {}),
      ...(job.store ? { store: job.store } : {}),
    };
    const stored = job.store ? this.#storeOf(entry, id) : undefined;
    stored?.catch(() => undefined); // the caller may never look
    entry.worker.postMessage(message, buffers);
    return stored ? result.then((answer) => ({ ...answer, stored })) : result;
  }

  #sendFetch(entry: PoolWorker, url: string, init: FetchBodyInit): Promise<FetchedBody> {
    const { id, result } = this.#track<FetchedBody>(
      entry,
      1,
      (data, resolve, reject) => {
        if (data.progress !== undefined) return init.onProgress?.(data.progress, data.total);
        init.signal.removeEventListener('abort', abort);
        // Rejects as fetch would (a TypeError); Transport turns it into a NetworkError for the caller.
        if (data.failure !== undefined)
          return reject(data.aborted ? init.signal.reason : new TypeError(`fetch failed in a worker: ${data.failure}`));
        const head = data.head!;
        resolve({
          status: head.status,
          statusText: head.statusText,
          type: head.type,
          headers: new Headers(head.headers),
          bytes: new Uint8Array(data.buffer!),
          ...(data.over ? { overLimit: data.over } : {}),
        });
      },
      (lost, _, reject) => {
        init.signal.removeEventListener('abort', abort);
        reject(init.signal.aborted ? init.signal.reason : new TypeError(`fetch failed in a worker: ${lost.message}`));
      },
    );
    const abort = () => entry.worker.postMessage({ abort: id });
    init.signal.addEventListener('abort', abort, { once: true });
    const absolute = absoluteUrl(url);
    const limits = init.expectedBytes !== undefined ? { expectedBytes: init.expectedBytes } : {};
    entry.worker.postMessage({ id, url: absolute, headers: init.headers, progress: Boolean(init.onProgress), ...limits });
    return result;
  }
}

/** A worker made from a blob: URL resolves relative URLs against that, not the page: resolve here. */
function absoluteUrl(url: string): string {
  return new URL(url, (globalThis as { location?: { href: string } }).location?.href).href;
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
