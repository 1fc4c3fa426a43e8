/**
 * One read of one file, as a small machine with named states (shared/STYLE.md, after
 * query-core's Retryer). Each step awaits a real event: a cache answer, an arrival, a load's end,
 * a prefetch's decision, a response, an abort. A read that must start over (the load it joined
 * did not bring its content, a decision it waited on ended, a host refused its range) first
 * waits for what made it, and counts: past `MAX_READ_RESTARTS` it fails with `ReadStalledError`
 * naming its path and state. So a read resolves, fails typed, or waits on something named; it
 * never re-enters itself in microtasks (a livelock once: a read that started over at once, forever).
 *
 *   held ──────────► done           bytes in memory for this read
 *    │
 *   joining ───────► done | again   its content on its way by a range of its own (aside-ranges.ts):
 *    │                              that range; else a load in flight for its bundle: its arrival, or its end
 *    │                              (a delta load without this content: passed over, once)
 *    │
 *   deciding ──────► again          a prefetch is deciding where the group comes from
 *    │
 *   cache ─────────► done           the cache's answer
 *    │
 *   planned ───────► done | joining held or started meanwhile?
 *    │
 *   fetching ──────► done | again   a range request, or a load of its own that brings it
 *
 * The steps (`ReadSteps`) are the source's parts (read-steps.ts); a test gives its own.
 */
import { AwakeError, ReadStalledError, RequestAbortedError } from '../../errors.js';
import { abortable } from '../../net/abort.js';
import type { Load } from './load-registry.js';

export type ReadState = 'held' | 'joining' | 'deciding' | 'cache' | 'planned' | 'fetching';

/**
 * Starts over a read may make. The legitimate ones each wait for a real event and happen a few
 * times at most: a prefetch's decision ended (a game's loader may decide the same group in two
 * ticks), the load it joined had let its content go under the memory budget, a host refused its
 * range. Past it, something keeps ending without its content: the read fails typed, never spins.
 */
export const MAX_READ_RESTARTS = 5;

/** What a read can do, one step each. */
export interface ReadSteps {
  /** Bytes held in memory for this read, taken (the read owns them). */
  takeHeld(): Uint8Array | undefined;
  /** The load in flight for this file's bundle (or loose file) that a read may join. */
  inFlight(): Load | undefined;
  /** Whether `load` brings this content (a delta load brings only what the cache lacked): at once once decided, else when it decides. */
  brings(load: Load, signal: AbortSignal): boolean | Promise<boolean>;
  /**
   * Waits until `load` brought this content and takes it; `undefined` when the load did not
   * bring it (a delta load) or let it go before this read asked. Rejects with the load's error.
   */
  arrival(load: Load, signal: AbortSignal): Promise<Uint8Array | undefined>;
  /** Waits until `load` is over, its cache writes included, however it ended (aborts reject). */
  settle(load: Load, signal: AbortSignal): Promise<void>;
  /** A prefetch deciding where this file's group comes from (cache or network), if one is. */
  deciding(): Promise<void> | undefined;
  /** The cache's verified copy, if it has one (once a write of it in flight has settled). */
  fromCache(signal: AbortSignal): Promise<Uint8Array | undefined>;
  /** Whether this read goes alone by range request (SPEC §7 "Range reads"). */
  byRange(): boolean;
  /** Whether this content is on its way by a range of its own (aside-ranges.ts), which this read then shares. */
  ranging(): boolean;
  /** Whether a read that `load` (a needed-bytes load of its bundle, without its content) passed over goes by a range of its own rather than wait for it to end. */
  asideByRange(load: Load): boolean;
  /** That range (aside-ranges.ts), shared with any other asking for the same content; `undefined` when the host refused it. */
  aside(signal: AbortSignal): Promise<Uint8Array | undefined>;
  /** The range read; `undefined` when the host refused the range (its origin then gets whole bundles). */
  range(signal: AbortSignal): Promise<Uint8Array | undefined>;
  /** Starts a load that brings this content whatever the cache says. */
  startLoad(): Load;
}

/** What a read is for, to name it in its errors. */
export interface ReadTarget {
  path: string;
  id?: string | undefined;
}

/** Runs one read to its end: bytes, or a typed error (an abort by the caller is `RequestAbortedError`). */
export async function runRead(steps: ReadSteps, target: ReadTarget, signal: AbortSignal): Promise<Uint8Array> {
  try {
    return await walk(steps, target, signal);
  } catch (error) {
    throw typedAbort(error, signal, target);
  }
}

async function walk(steps: ReadSteps, target: ReadTarget, signal: AbortSignal): Promise<Uint8Array> {
  let state: ReadState = 'held';
  let restarts = 0;
  /** A load in flight that does not bring this content (a delta load), passed over for the cache once. */
  let passedOver: Load | undefined;
  /** Back to the start, counted; the caller has awaited what made it (never a spin). */
  const again = (from: ReadState): ReadState => {
    if (++restarts > MAX_READ_RESTARTS)
      throw new ReadStalledError(
        `${target.path}: the read started over ${MAX_READ_RESTARTS} times and gave up ${from} (the loads it waited for ended without its content)`,
        { path: target.path, ...(target.id !== undefined ? { id: target.id } : {}), state: from, restarts: MAX_READ_RESTARTS },
      );
    return 'held';
  };
  for (;;) {
    signal.throwIfAborted();
    switch (state) {
      case 'held': {
        const bytes = steps.takeHeld();
        if (bytes) return bytes;
        state = 'joining';
        break;
      }
      case 'joining': {
        if (steps.ranging()) {
          // Its member is on its way by a range of its own: that range, not a load that would ask for it again.
          const bytes = await steps.aside(signal);
          if (bytes) return bytes;
          // Another read of the content took them: its cache write is pending (the cache, next time round).
          state = again('joining');
          break;
        }
        const load = steps.inFlight();
        if (!load) {
          state = 'deciding';
          break;
        }
        if (load !== passedOver && !(await steps.brings(load, signal))) {
          // A delta load without this content: it was planned so because the cache holds it.
          passedOver = load;
          state = 'deciding';
          break;
        }
        if (load === passedOver && steps.asideByRange(load)) {
          // Needed bytes: the load in flight fetches other members of this bundle; this one by a range of its own, now.
          const bytes = await steps.aside(signal);
          if (bytes) return bytes;
        }
        const bytes = load === passedOver ? undefined : await steps.arrival(load, signal);
        if (bytes) return bytes;
        // Not brought, or not kept for this read: once the load is over, the cache (or a new load) has it.
        await steps.settle(load, signal);
        state = again('joining');
        break;
      }
      case 'deciding': {
        const decision = steps.deciding();
        if (!decision) {
          state = 'cache';
          break;
        }
        await abortable(decision, signal);
        state = again('deciding');
        break;
      }
      case 'cache': {
        const bytes = await steps.fromCache(signal);
        if (bytes) return bytes;
        state = 'planned';
        break;
      }
      case 'planned': {
        // While the cache answered, a load may have brought this content, or started.
        const bytes = steps.takeHeld();
        if (bytes) return bytes;
        state = steps.inFlight() ? 'joining' : 'fetching';
        break;
      }
      case 'fetching': {
        if (steps.byRange()) {
          const bytes = await steps.range(signal);
          if (bytes) return bytes;
          // Refused (403, 416, 501): that origin now gets whole bundles; through a load, next time round.
          state = again('fetching');
          break;
        }
        const load = steps.startLoad();
        const bytes = await steps.arrival(load, signal);
        if (bytes) return bytes;
        await steps.settle(load, signal);
        state = again('fetching');
        break;
      }
    }
  }
}

/**
 * An abort by the caller (or `dispose`), as `RequestAbortedError` whatever the signal's reason
 * was (docs/reader.md "Errors"; the raw `DOMException` leaked out of most
 * aborted reads). Other errors, the library's own abort errors among them, pass as they are.
 */
export function typedAbort(error: unknown, signal: AbortSignal, target: ReadTarget): unknown {
  if (!signal.aborted || error instanceof AwakeError) return error;
  if (signal.reason instanceof RequestAbortedError) return signal.reason;
  return new RequestAbortedError(`${target.path}: the read was aborted`, {
    path: target.path,
    ...(target.id !== undefined ? { id: target.id } : {}),
    cause: signal.reason,
  });
}
