/**
 * Loads in flight (SPEC §7 "One request per bundle"): one per bundle or loose file, shared by
 * every read and prefetch that needs it. A load counts the parties waiting for it and stops only
 * when all of them gave up; a load every party gave up on leaves the registry at once, so a read
 * that comes next starts a load of its own rather than join one that is being stopped. It tells each waiting read when its own content has arrived (a streamed bundle hands
 * members out one by one), and reports bytes as they arrive, on the scale it planned when it
 * started (SPEC §7 "Byte progress").
 *
 * Work is linear in the reads: a read waiting for one content is woken by
 * that content's arrival alone (waiters are kept per content), and only progress watchers hear
 * progress.
 */
import { abortable } from '../../net/abort.js';

/**
 * Where a load is: `gathering` the reads asked for with it (a needed-bytes load, before it plans),
 * `planning` what to fetch, `fetching` what it planned (`fetchBytes` is final from here on),
 * `storing` what arrived in the cache (every content has passed), then `done` or `failed`.
 */
export type LoadStatus = 'gathering' | 'planning' | 'fetching' | 'storing' | 'done' | 'failed';

export interface Load {
  readonly key: string;
  status: LoadStatus;
  /** Aborted when every party waiting for the load has given up, or the source is disposed. */
  readonly controller: AbortController;
  /** Settles when the load is over: every content it brings arrived and passed, or it failed. */
  done: Promise<void>;
  /** Cache writes of what the load brought, settled (never rejects). */
  stored: Promise<void>;
  /** Bytes the load downloads: the bundle's size, or its delta ranges' once decided. */
  fetchBytes: number;
  /** Settles with `fetchBytes` once the load has decided between the whole bundle and ranges. */
  planned: Promise<number>;
  /** A delta load: it brings only the members the cache lacked; the others are read from the cache. */
  partial: boolean;
  /** A delta load's contents, once decided; `undefined` for a load that brings every member. */
  brings?: Set<string>;
  /**
   * The contents a load planning for needed bytes is for: while it is `gathering` the reads asked
   * for with it (needed-bytes.ts `CacheLookups`), a read that joins adds its own.
   */
  wanted?: Set<string>;
  /** Bytes received so far on the `fetchBytes` scale: never lower than before, never past it. */
  receivedBytes: number;
  /** Contents that arrived, verified. */
  readonly arrived: Set<string>;
  /** Why a `failed` load failed. */
  error?: unknown;
  interest: number;
  /** Called on every change of progress or arrivals (byte progress only: reads wait in `#arrivals`). */
  readonly listeners: Set<() => void>;
}

/** Whether the load has decided what it fetches (its `fetchBytes` are final). */
export function decided(load: Load): boolean {
  return load.status !== 'gathering' && load.status !== 'planning';
}

/** Whether the load is over, however. */
export function over(load: Load): boolean {
  return load.status === 'done' || load.status === 'failed';
}

interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class LoadRegistry {
  readonly #loads = new Map<string, Load>();
  /** Per load, the reads waiting for each content to arrive. */
  readonly #arrivals = new WeakMap<Load, Map<string, Waiter[]>>();
  readonly #lifetime: AbortSignal;
  readonly #onIdle: () => void;
  /** Loads whose cache write a settling read asked for already. */
  readonly #writesAsked = new WeakSet<Load>();
  /** Waiters woken and listeners called so far: the work the registry did, for tests that bound it. */
  wakeups = 0;

  /** Asks for the cache writes now: once a load that a read settles on ends (the read waits for its write). */
  readonly #writeNow: () => void;

  /**
   * `onIdle` runs whenever the last load in flight ends (the writes may wait for the page to be
   * idle); `writeNow` once a load that a read settles on ends.
   */
  constructor(lifetime: AbortSignal, onIdle: () => void, writeNow: () => void = onIdle) {
    this.#lifetime = lifetime;
    this.#onIdle = onIdle;
    this.#writeNow = writeNow;
    lifetime.addEventListener(
      'abort',
      () => {
        for (const load of this.#loads.values()) load.controller.abort(lifetime.reason);
      },
      { once: true },
    );
  }

  /** The load of `key` in flight that a read may still join: not one being stopped. */
  get(key: string): Load | undefined {
    const load = this.#loads.get(key);
    return load && !load.controller.signal.aborted ? load : undefined;
  }

  get size(): number {
    return this.#loads.size;
  }

  /** The bodies that may be in memory on their way in: the sizes of the loads in flight. */
  bytesInFlight(): number {
    let bytes = 0;
    for (const load of this.#loads.values()) bytes += load.fetchBytes;
    return bytes;
  }

  /**
   * Starts a load of `fetchBytes` (until it decides otherwise with `decide`): `run` fetches, and
   * hands each content over with `arrive` as it passes. The load is over when `run` settles.
   */
  start(key: string, fetchBytes: number, run: (load: Load, decide: (bytes: number) => void) => Promise<void>): Load {
    const controller = new AbortController();
    if (this.#lifetime.aborted) controller.abort(this.#lifetime.reason);
    let decideWith!: (bytes: number) => void;
    const load: Load = {
      key,
      controller,
      fetchBytes,
      interest: 0,
      status: 'planning',
      partial: false,
      receivedBytes: 0,
      done: Promise.resolve(),
      stored: Promise.resolve(),
      arrived: new Set(),
      listeners: new Set(),
      planned: new Promise<number>((resolve) => (decideWith = resolve)),
    };
    const decide = (bytes: number) => {
      if (decided(load)) return;
      load.status = 'fetching';
      load.fetchBytes = bytes;
      decideWith(bytes);
    };
    this.#arrivals.set(load, new Map());
    this.#loads.set(key, load);
    load.done = run(load, decide);
    load.done.catch(() => decide(load.fetchBytes));
    const finish = (outcome: { error?: unknown }) => {
      load.status = outcome.error === undefined ? 'done' : 'failed';
      if (outcome.error === undefined) load.receivedBytes = load.fetchBytes;
      else load.error = outcome.error;
      this.#settleWaiters(load);
      this.#notify(load);
      this.#leave(load);
    };
    load.done.then(
      () => finish({}),
      (error: unknown) => finish({ error }),
    );
    load.done.catch(() => undefined); // a load nobody waits for any more must not be an unhandled rejection
    return load;
  }

  /** A content of `load` arrived and passed (its bytes are held by the caller of this). */
  arrive(load: Load, sha256: string): void {
    if (load.arrived.has(sha256)) return;
    load.arrived.add(sha256);
    const waiters = this.#arrivals.get(load)!;
    const waiting = waiters.get(sha256);
    if (waiting) {
      waiters.delete(sha256);
      this.wakeups += waiting.length;
      for (const waiter of waiting) waiter.resolve();
    }
    this.#notify(load);
  }

  /**
   * Bytes of the load's current attempt so far, of `total` (what it actually downloads, which a
   * fallback may change): mapped onto the planned `fetchBytes`, so a load's share of a progress
   * total never changes, and never going back when an attempt starts again.
   */
  progress(load: Load, received: number, total: number): void {
    const scaled = total > 0 && total !== load.fetchBytes ? Math.floor((received * load.fetchBytes) / total) : received;
    const next = Math.min(load.fetchBytes, Math.max(load.receivedBytes, scaled));
    if (next === load.receivedBytes) return;
    load.receivedBytes = next;
    this.#notify(load);
  }

  /** Waits for `load` on behalf of one party; the load stops only when every party gave up. */
  async join(load: Load, signal: AbortSignal): Promise<void> {
    await this.#waitOn(load, signal, () => load.done);
  }

  /** Waits for `load` and its cache writes: once this resolves or rejects, the load has left the registry. */
  async settle(load: Load, signal: AbortSignal): Promise<void> {
    await this.#waitOn(load, signal, () =>
      load.done.then(() => {
        // Someone waits for this load's cache write: asked for as the load ends (once a load), not
        // when no load is in flight (`onIdle`), which a background load held at the server would
        // postpone for as long as it is held (RELIABILITY.md 35).
        if (!this.#writesAsked.has(load)) {
          this.#writesAsked.add(load);
          this.#writeNow();
        }
        return load.stored;
      }),
    );
  }

  /** Waits until `sha256` arrived with `load`, or the load is over (then its error, if it failed). */
  async arrival(load: Load, sha256: string, signal: AbortSignal): Promise<void> {
    await this.#waitOn(load, signal, () => this.#arrivalOf(load, sha256));
  }

  /** Resolves when every load in flight now has settled, however. */
  async settled(): Promise<void> {
    await Promise.all([...this.#loads.values()].map((load) => load.done.catch(() => undefined)));
  }

  /** Calls `listener` whenever the load's progress or arrivals change; returns the unsubscribe. */
  watch(load: Load, listener: () => void): () => void {
    load.listeners.add(listener);
    return () => load.listeners.delete(listener);
  }

  async #waitOn(load: Load, signal: AbortSignal, wait: () => Promise<void>): Promise<void> {
    signal.throwIfAborted();
    load.interest++;
    try {
      // The source's own signal aborts the load itself (see the constructor): no listener per read.
      await (signal === this.#lifetime ? wait() : abortable(wait(), signal));
    } finally {
      if (--load.interest === 0 && signal.aborted) {
        load.controller.abort(signal.reason);
        // Stopped: what comes next starts anew (a read one microtask later would join it and fail aborted).
        this.#leave(load);
      }
    }
  }

  #arrivalOf(load: Load, sha256: string): Promise<void> {
    if (load.arrived.has(sha256)) return Promise.resolve();
    if (over(load)) return load.status === 'done' ? Promise.resolve() : Promise.reject(load.error);
    return new Promise<void>((resolve, reject) => {
      const waiters = this.#arrivals.get(load)!;
      const waiting = waiters.get(sha256);
      if (waiting) waiting.push({ resolve, reject });
      else waiters.set(sha256, [{ resolve, reject }]);
    });
  }

  /** The load is over: every read still waiting gets its outcome (once each). */
  #settleWaiters(load: Load): void {
    const waiters = this.#arrivals.get(load)!;
    for (const waiting of waiters.values()) {
      this.wakeups += waiting.length;
      for (const waiter of waiting)
        if (load.status === 'done') waiter.resolve();
        else waiter.reject(load.error);
    }
    waiters.clear();
  }

  #leave(load: Load): void {
    if (this.#loads.get(load.key) !== load) return;
    this.#loads.delete(load.key);
    if (this.#loads.size === 0) this.#onIdle();
  }

  #notify(load: Load): void {
    if (load.listeners.size === 0) return;
    this.wakeups += load.listeners.size;
    for (const listener of [...load.listeners]) listener();
  }
}

/** Bytes allowed in flight at once, taken in turns (at least one taker at a time, whatever its size). */
export class ByteBudget {
  #used = 0;
  #takers = 0;
  readonly #queue: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async take(bytes: number, signal: AbortSignal): Promise<void> {
    while (this.#takers > 0 && this.#used + bytes > this.limit) {
      await abortable(new Promise<void>((resolve) => this.#queue.push(resolve)), signal);
    }
    this.#used += bytes;
    this.#takers++;
  }

  give(bytes: number): void {
    this.#used -= bytes;
    this.#takers--;
    for (const wake of this.#queue.splice(0)) wake();
  }
}
