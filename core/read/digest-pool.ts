/**
 * Hashing verified bytes once, off the page's main thread (SPEC §7 "Verified"). In Chromium
 * `crypto.subtle.digest` runs on the calling thread, so a reader that digests on the page blocks
 * it for ~1 ms per MB. `WorkerDigestPool` sends buffers to a few Web Workers (transferred, not
 * copied), digests the asked ranges there, optionally cuts them into buffers of their own (the
 * copy happens in the worker too) and transfers everything back.
 *
 * Where workers cannot run (Node, a Content-Security-Policy without `worker-src blob:`, a page
 * with no `crypto.subtle` such as plain HTTP off localhost) `InThreadDigests` does the same work
 * on the calling thread; in Node that is WebCrypto on libuv's thread pool, already off the event
 * loop. Browser-safe: no `node:` imports.
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

function rangesOf(job: DigestJob): DigestRange[] {
  return job.ranges ?? job.inputs.map((bytes, input) => ({ input, offset: 0, length: bytes.length }));
}

/** The same work on the calling thread. */
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
 * then hashes and cuts what it is sent and transfers every buffer back.
 */
const WORKER_SOURCE = `'use strict';
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const hex = (buffer) => { const b = new Uint8Array(buffer); let s = ''; for (let i = 0; i < b.length; i++) s += HEX[b[i]]; return s; };
onmessage = async ({ data }) => {
  if (data.ping) return postMessage({ pong: true, subtle: !!(self.crypto && crypto.subtle && crypto.subtle.digest) });
  const { id, buffers, ranges, split } = data;
  try {
    const digests = await Promise.all(ranges.map((r) => crypto.subtle.digest('SHA-256', new Uint8Array(buffers[r[0]], r[1], r[2])).then(hex)));
    const parts = split ? ranges.map((r) => buffers[r[0]].slice(r[1], r[1] + r[2])) : undefined;
    postMessage({ id, buffers, digests, parts }, parts ? buffers.concat(parts) : buffers);
  } catch (error) {
    postMessage({ id, buffers, error: String((error && error.message) || error) }, buffers);
  }
};
`;

interface Pending {
  resolve: (result: DigestResult) => void;
  reject: (error: Error) => void;
  /** Rebuilds the caller's views from the buffers that came back. */
  rebuild: (buffers: ArrayBuffer[]) => Uint8Array[];
  bytes: number;
  job: DigestJob;
}

interface PoolWorker {
  worker: Worker;
  ready: Promise<boolean>;
  pending: Map<number, Pending>;
  /** Bytes sent and not answered yet: the next job goes to the least loaded worker. */
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
 * Digests in Web Workers. If a worker cannot start or has no WebCrypto, the pool turns to
 * `InThreadDigests` for good; no buffer is ever sent to a worker that has not answered its ping.
 */
export class WorkerDigestPool implements DigestPool {
  readonly size: number;
  #workers: PoolWorker[] | undefined;
  #fallback: InThreadDigests | undefined;
  #nextId = 1;
  #scriptUrl: string | undefined;

  constructor(options: WorkerDigestPoolOptions = {}) {
    const cores = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 2;
    this.size = Math.max(1, Math.floor(options.size ?? Math.min(4, cores)));
  }

  /** Whether jobs go to workers: undefined until the first job has found out, false after a fallback. */
  get usingWorkers(): boolean | undefined {
    if (this.#fallback) return false;
    return this.#workers === undefined ? undefined : this.#ready;
  }

  #ready: boolean | undefined;

  async digest(job: DigestJob): Promise<DigestResult> {
    if (!this.#fallback) {
      const worker = await this.#pick();
      if (worker) return this.#send(worker, job);
    }
    return this.#fallback!.digest(job);
  }

  terminate(): void {
    for (const entry of this.#workers ?? []) {
      entry.worker.terminate();
      for (const pending of entry.pending.values()) pending.reject(new Error('the digest pool was terminated'));
      entry.pending.clear();
    }
    this.#workers = undefined;
    if (this.#scriptUrl) URL.revokeObjectURL(this.#scriptUrl);
    this.#scriptUrl = undefined;
  }

  /** The least loaded worker that answered its ping; none (and the fallback set) when workers fail. */
  async #pick(): Promise<PoolWorker | undefined> {
    this.#workers ??= this.#start();
    if (this.#workers.length === 0) return this.#giveUp();
    const entry = this.#workers.reduce((best, next) => (next.load < best.load ? next : best));
    entry.load += 1; // reserve it while waiting for readiness, so concurrent jobs spread out
    const ready = await entry.ready;
    entry.load -= 1;
    if (ready) this.#ready = true;
    return ready ? entry : this.#giveUp();
  }

  #giveUp(): undefined {
    this.#fallback ??= new InThreadDigests();
    return undefined;
  }

  #start(): PoolWorker[] {
    if (!workersAvailable()) return [];
    const workers: PoolWorker[] = [];
    try {
      this.#scriptUrl = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: 'text/javascript' }));
      for (let i = 0; i < this.size; i++) workers.push(this.#spawn(this.#scriptUrl));
    } catch {
      // A CSP that forbids blob: workers throws here: hash on this thread instead.
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
        if (data?.pong) return resolve(Boolean(data.subtle));
        this.#answer(entry, data);
      };
      worker.onerror = (event: ErrorEvent) => {
        event.preventDefault?.();
        resolve(false);
        for (const pending of entry.pending.values()) pending.reject(new Error(`digest worker failed: ${event.message ?? 'error'}`));
        entry.pending.clear();
      };
    });
    worker.postMessage({ ping: true });
    return entry;
  }

  #send(entry: PoolWorker, job: DigestJob): Promise<DigestResult> {
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
    const message = {
      id: this.#nextId++,
      buffers,
      ranges: ranges.map(({ input, offset, length }) => [where[input]!.buffer, where[input]!.byteOffset + offset, length]),
      split: Boolean(job.split),
    };
    const bytes = job.inputs.reduce((sum, input) => sum + input.length, 0);
    return new Promise<DigestResult>((resolve, reject) => {
      entry.pending.set(message.id, {
        resolve,
        reject,
        bytes,
        job,
        rebuild: (returned) => where.map(({ buffer, byteOffset, length }) => new Uint8Array(returned[buffer]!, byteOffset, length)),
      });
      entry.load += bytes;
      entry.worker.postMessage(message, buffers);
    });
  }

  #answer(entry: PoolWorker, data: { id: number; buffers: ArrayBuffer[]; digests?: string[]; parts?: ArrayBuffer[]; error?: string }): void {
    const pending = entry.pending.get(data.id);
    if (!pending) return;
    entry.pending.delete(data.id);
    entry.load -= pending.bytes;
    if (data.error !== undefined) {
      // The bytes came back: hash them here rather than fail the load over a worker's trouble.
      const inputs = pending.rebuild(data.buffers);
      new InThreadDigests().digest({ ...pending.job, inputs }).then(pending.resolve, pending.reject);
      return;
    }
    pending.resolve({
      inputs: pending.rebuild(data.buffers),
      digests: data.digests!,
      ...(data.parts ? { parts: data.parts.map((part) => new Uint8Array(part)) } : {}),
    });
  }
}

let shared: DigestPool | undefined;

/**
 * The pool readers share by default: Web Workers where the platform has them, else the calling
 * thread. Created on first use; its workers idle between jobs.
 */
export function sharedDigestPool(): DigestPool {
  shared ??= workersAvailable() ? new WorkerDigestPool() : new InThreadDigests();
  return shared;
}
