/**
 * The range reads' scheduler (range-reads.ts has the option): each origin has at most
 * `maxRequestsPerOrigin` range requests in flight, the other reads wait their turn, and reads of
 * members of one bundle that wait together share one request, unless the gap between them holds
 * a member this page has already.
 */
import { RequestAbortedError } from '../../errors.js';
import { gapJoins } from '../../format/delta-ranges.js';
import type { Entry } from '../open/index-view.js';
import type { RangeReadOptions } from '../plan/range-reads.js';

/** What a range read is for: the member, the path it was read by, and what else the caller attaches. */
export interface RangeRead {
  readonly entry: Entry;
  readonly path: string;
}

/** One read waiting for its member's bytes: `undefined` sends it another way (the host refused ranges). */
export interface RangeWaiter<R extends RangeRead = RangeRead> {
  readonly read: R;
  /** Settled once: later calls do nothing. */
  resolve(bytes: Uint8Array | undefined): void;
  reject(error: unknown): void;
  /** Answered or aborted. */
  readonly done: boolean;
}

/** One range request: a span of a bundle and the reads it answers. */
export interface RangeBatch<R extends RangeRead = RangeRead> {
  bundleSha: string;
  url: string;
  offset: number;
  length: number;
  waiters: RangeWaiter<R>[];
  /** The signal its reads share, else one that aborts once every read of the batch has been aborted. */
  signal: AbortSignal;
}

interface Waiting<R extends RangeRead> extends RangeWaiter<R> {
  readonly url: string;
  readonly signal: AbortSignal;
  /** The batch it went in; `controller` when its reads do not share one signal. */
  batch?: { waiters: Waiting<R>[]; controller: AbortController | undefined };
}

interface OriginQueue<R extends RangeRead> {
  active: number;
  /** Reads waiting, by bundle, in the order their bundles were first asked for. */
  waiting: Map<string, { url: string; reads: Waiting<R>[] }>;
}

interface Span<R extends RangeRead> {
  offset: number;
  end: number;
  reads: Waiting<R>[];
}

export class RangeScheduler<R extends RangeRead = RangeRead> {
  readonly #settings: Required<RangeReadOptions>;
  readonly #run: (batch: RangeBatch<R>) => Promise<void>;
  readonly #origins = new Map<string, OriginQueue<R>>();
  /** The reads waiting on each signal, and its one listener. */
  readonly #signals = new Map<AbortSignal, Set<Waiting<R>>>();
  readonly #listeners = new Map<AbortSignal, () => void>();
  #flushing = false;

  /** Whether bytes `[from, to)` of a bundle hold a member this page has already or has on its way: a span never joins across them. */
  readonly #keepOut: (bundleSha: string, from: number, to: number) => boolean;

  /** `run` makes one batch's request and settles each of its reads; the slot frees when it settles. */
  constructor(
    settings: Required<RangeReadOptions>,
    run: (batch: RangeBatch<R>) => Promise<void>,
    keepOut: (bundleSha: string, from: number, to: number) => boolean = () => false,
  ) {
    this.#settings = settings;
    this.#run = run;
    this.#keepOut = keepOut;
  }

  /** Queues `read` (a member of `bundleSha` at `url`); resolves with bytes it owns, or `undefined`. */
  read(origin: string, bundleSha: string, url: string, read: R, signal: AbortSignal): Promise<Uint8Array | undefined> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(aborted(url, signal));
      let done = false;
      const settle = (): boolean => {
        if (done) return false;
        done = true;
        this.#unwatch(signal, waiter);
        return true;
      };
      const waiter: Waiting<R> = {
        read,
        url,
        signal,
        get done() {
          return done;
        },
        resolve: (bytes) => settle() && resolve(bytes),
        reject: (error) => settle() && reject(error),
      };
      this.#watch(signal, waiter);
      const queue = this.#queueOf(origin);
      const waiting = queue.waiting.get(bundleSha);
      if (waiting) waiting.reads.push(waiter);
      else queue.waiting.set(bundleSha, { url, reads: [waiter] });
      this.#scheduleFlush();
    });
  }

  /**
   * One abort listener per signal however many reads wait on it (a source's reads share its
   * lifetime signal: 10,000 listeners on it made each new one slower to add, and warned).
   */
  #watch(signal: AbortSignal, waiter: Waiting<R>): void {
    const watched = this.#signals.get(signal);
    if (watched) return void watched.add(waiter);
    const waiters = new Set([waiter]);
    this.#signals.set(signal, waiters);
    const onAbort = (): void => {
      this.#signals.delete(signal);
      this.#listeners.delete(signal);
      const batches = new Set<NonNullable<Waiting<R>['batch']>>();
      for (const each of waiters) {
        each.reject(aborted(each.url, signal));
        if (each.batch) batches.add(each.batch);
      }
      // A request goes on while another read of its batch waits; with none left, it stops.
      for (const batch of batches) if (batch.waiters.every((each) => each.done)) batch.controller?.abort(signal.reason);
    };
    this.#listeners.set(signal, onAbort);
    signal.addEventListener('abort', onAbort, { once: true });
  }

  #unwatch(signal: AbortSignal, waiter: Waiting<R>): void {
    const waiters = this.#signals.get(signal);
    if (!waiters?.delete(waiter) || waiters.size > 0) return;
    this.#signals.delete(signal);
    signal.removeEventListener('abort', this.#listeners.get(signal)!);
    this.#listeners.delete(signal);
  }

  #queueOf(origin: string): OriginQueue<R> {
    let queue = this.#origins.get(origin);
    if (!queue) this.#origins.set(origin, (queue = { active: 0, waiting: new Map() }));
    return queue;
  }

  /**
   * The first requests go out once the reads asked for in this task have queued (a timer of 0),
   * so reads started together share requests; later ones go as slots free.
   */
  #scheduleFlush(): void {
    if (this.#flushing) return;
    this.#flushing = true;
    setTimeout(() => {
      this.#flushing = false;
      for (const origin of this.#origins.keys()) this.#pump(origin);
    }, 0);
  }

  /** Sends batches while the origin has free slots: the oldest bundle's spans first, then the next. */
  #pump(origin: string): void {
    const queue = this.#origins.get(origin);
    if (!queue) return;
    while (queue.active < this.#settings.maxRequestsPerOrigin && queue.waiting.size > 0) {
      const [bundleSha, { url, reads }] = queue.waiting.entries().next().value!;
      queue.waiting.delete(bundleSha);
      const spans = this.#spansOf(
        bundleSha,
        reads.filter((read) => !read.done),
      );
      while (spans.length > 0 && queue.active < this.#settings.maxRequestsPerOrigin)
        this.#send(queue, origin, bundleSha, url, spans.shift()!);
      // What did not fit waits behind the other bundles' reads (a turn each).
      if (spans.length > 0) queue.waiting.set(bundleSha, { url, reads: spans.flatMap((span) => span.reads) });
    }
    if (queue.active === 0 && queue.waiting.size === 0) this.#origins.delete(origin);
  }

  /**
   * Reads sorted by offset, cut into spans: the next member joins while the gap before it joins
   * (`gapJoins`, the rule every range plan uses: closer than `maxGapBytes`), the span stays within `maxRequestBytes`, and the gap holds no member this page
   * has already (SPEC §7 "One request per bundle": no byte of it twice).
   */
  #spansOf(bundleSha: string, reads: Waiting<R>[]): Span<R>[] {
    reads.sort((a, b) => a.read.entry.offset! - b.read.entry.offset!);
    const spans: Span<R>[] = [];
    for (const read of reads) {
      const start = read.read.entry.offset!;
      const end = start + (read.read.entry.storedBytes ?? read.read.entry.sizeBytes); // stored bytes (SPEC §5a)
      const last = spans[spans.length - 1];
      if (
        last &&
        gapJoins(start - last.end, this.#settings.maxGapBytes) &&
        Math.max(last.end, end) - last.offset <= this.#settings.maxRequestBytes &&
        (start <= last.end || !this.#keepOut(bundleSha, last.end, start))
      ) {
        last.end = Math.max(last.end, end);
        last.reads.push(read);
      } else {
        spans.push({ offset: start, end, reads: [read] });
      }
    }
    return spans;
  }

  #send(queue: OriginQueue<R>, origin: string, bundleSha: string, url: string, span: Span<R>): void {
    // Reads that share a signal (a source's reads without one of their own share its lifetime's)
    // send their request with it; else the request stops once every one of them is aborted.
    const shared = span.reads.every((read) => read.signal === span.reads[0]!.signal) ? span.reads[0]!.signal : undefined;
    const controller = shared ? undefined : new AbortController();
    const batch = { waiters: span.reads, controller };
    for (const read of span.reads) read.batch = batch;
    queue.active++;
    const settled = (): void => {
      queue.active--;
      this.#pump(origin);
    };
    this.#run({
      bundleSha,
      url,
      offset: span.offset,
      length: span.end - span.offset,
      waiters: span.reads,
      signal: shared ?? controller!.signal,
    }).then(settled, (error: unknown) => {
      for (const read of span.reads) read.reject(error);
      settled();
    });
  }
}

function aborted(url: string, signal: AbortSignal): RequestAbortedError {
  return new RequestAbortedError(`GET ${url}: aborted`, { url, cause: signal.reason });
}
