/**
 * Needed bytes (SPEC §7 "Needed bytes"): a load fetches, per bundle it touches, only
 * the members it needs that are not cached, as ranges, where that costs less than the whole
 * bundle. The price of a byte against a request comes from the line to the bundle's origin: its
 * round trip (RTT) times its throughput is what one more request costs in bytes (`roundTripBytes`).
 * The rule (load-planner.ts, FORMAT.md "Needed bytes"):
 *
 * - neighbouring needed members share one range where the gap between them is under one round
 *   trip's bytes (one range per request), or under `deltaReads.multipartGapBytes` (512: a part
 *   header, in one multi-range request);
 * - the whole bundle when the bytes it adds to the ranges are at most one round trip's bytes:
 *   they cost less than the request a later read of them would make. A load that touches several
 *   bundles (a prefetch, a loader tick, a read-ahead) has one round trip's bytes for all of them
 *   (`WholeAllowance`): the requests a later read would make go out in parallel, costing about
 *   one round trip together, while every unneeded byte is paid in turn on a line whose bandwidth
 *   is the limit.
 *
 * The line is measured per origin by this source: the round trip is the shortest wait from a
 * request to its first body bytes (the index's fetch, as Resource Timing reports it where it
 * can, then every load's), the throughput the
 * fastest body of at least 128 KiB. Before a body that large has come, the throughput is taken as
 * 2.5 MB/s (20 Mbit/s, a slow line: small gaps, so few unneeded bytes). `roundTripBytes` is
 * clamped to 16 KiB … 8 MiB; a fixed number may be given instead (`neededBytes.roundTripBytes`).
 */
import { InvalidOptionError } from '../../errors.js';
import { originOf } from '../open/origins.js';

export interface NeededBytesOptions {
  /** One round trip's bytes at the line's rate, fixed, instead of measured (see above). */
  roundTripBytes?: number;
}

/**
 * The bytes that the bundles of one load may still add to their needed ranges by coming whole
 * (see above): one round trip's bytes at the first plan, less what each whole bundle added.
 */
export interface WholeAllowance {
  bytes?: number;
}

/** Taken as the line's rate until a large body was measured: 20 Mbit/s. */
export const ASSUMED_BYTES_PER_SECOND = 2_500_000;
/** A round trip until one was measured: 40 ms. */
export const ASSUMED_ROUND_TRIP_MS = 40;
export const MIN_ROUND_TRIP_BYTES = 16 * 1024;
export const MAX_ROUND_TRIP_BYTES = 8 * 1024 * 1024;
/** Bodies smaller than this say little of the line's rate (they end within a few packets). */
const THROUGHPUT_SAMPLE_BYTES = 128 * 1024;

/** Milliseconds on a monotonic clock where there is one (a page, a worker, Node), else the wall clock. */
export const nowMs = (): number => globalThis.performance?.now() ?? Date.now();

/**
 * The network's own wait for the latest fetch of `url` on this page or worker (Resource Timing:
 * request sent → first response byte), where the platform reports it: a fetch answered from a
 * preload (`<link rel="preload">`, the build plugins' index link) or read while the thread was
 * busy booting a game would otherwise count that work as the line's round trip. `undefined` where
 * there is no entry or its times are hidden (another origin without `Timing-Allow-Origin`).
 */
export function networkWaitMs(url: string): number | undefined {
  let entries: PerformanceEntryList | undefined;
  try {
    entries = globalThis.performance?.getEntriesByName?.(new URL(url, globalThis.location?.href).href, 'resource');
  } catch {
    return undefined;
  }
  const last = entries?.[entries.length - 1] as PerformanceResourceTiming | undefined;
  if (!last || !(last.requestStart > 0) || !(last.responseStart >= last.requestStart)) return undefined;
  return last.responseStart - last.requestStart;
}

/** The option checked: `undefined` when needed bytes are off. */
export function neededBytesSettings(option: boolean | NeededBytesOptions | undefined): NeededBytesOptions | undefined {
  if (option === false) return undefined;
  if (option === undefined || option === true) return {};
  if (typeof option !== 'object' || option === null)
    throw new InvalidOptionError('neededBytes', `neededBytes must be a boolean or an object, got ${String(option)}`);
  const { roundTripBytes } = option;
  if (roundTripBytes !== undefined && !(Number.isSafeInteger(roundTripBytes) && roundTripBytes >= 0))
    throw new InvalidOptionError(
      'neededBytes.roundTripBytes',
      `neededBytes.roundTripBytes must be an integer ≥ 0, got ${String(roundTripBytes)}`,
    );
  return roundTripBytes === undefined ? {} : { roundTripBytes };
}

/** One fetch as the line saw it: from the request to its first body bytes, and the body's bytes and time. */
export interface LineSample {
  waitedMs: number;
  bytes?: number;
  bodyMs?: number;
}

/** What this source measured of each origin's line (per source, like `OriginCapabilities`). */
export class LineEstimates {
  readonly #lines = new Map<string, { roundTripMs?: number; bytesPerSecond?: number }>();
  readonly #fixed: number | undefined;

  constructor(settings: NeededBytesOptions) {
    this.#fixed = settings.roundTripBytes;
  }

  observe(url: string, sample: LineSample): void {
    const origin = originOf(url);
    const line = this.#lines.get(origin) ?? {};
    if (sample.waitedMs >= 0) line.roundTripMs = Math.min(line.roundTripMs ?? Infinity, sample.waitedMs);
    if (sample.bytes !== undefined && sample.bytes >= THROUGHPUT_SAMPLE_BYTES && sample.bodyMs !== undefined && sample.bodyMs > 0)
      line.bytesPerSecond = Math.max(line.bytesPerSecond ?? 0, (sample.bytes * 1000) / sample.bodyMs);
    this.#lines.set(origin, line);
  }

  /** What one more request to `url`'s origin costs, in bytes at its line's rate. */
  roundTripBytes(url: string): number {
    if (this.#fixed !== undefined) return this.#fixed;
    const line = this.#lines.get(originOf(url));
    const bytes = ((line?.roundTripMs ?? ASSUMED_ROUND_TRIP_MS) / 1000) * (line?.bytesPerSecond ?? ASSUMED_BYTES_PER_SECOND);
    return Math.round(Math.min(MAX_ROUND_TRIP_BYTES, Math.max(MIN_ROUND_TRIP_BYTES, bytes)));
  }
}

/** How long a load waits at most for the reads of its bundle still asking the cache (a cache that hangs holds no load back for long). */
export const GATHER_LIMIT_MS = 50;

/**
 * Reads asked for together are one load (SPEC §7 "Needed bytes": "an engine's queue"): an engine
 * starts the reads of a scene's files in one task (Babylon's glTF loader asks for a model's
 * buffers and images in one loop), and each asks the cache first. A load planning for needed
 * bytes waits until the reads of its bundle that are asking the cache have their answers: those
 * that missed have joined it by then (the load wants their contents too), so one request brings
 * them all. Counted per load key, by the reads themselves (read-steps.ts).
 */
export class CacheLookups {
  readonly #asking = new Map<string, number>();
  readonly #quiet = new Map<string, (() => void)[]>();

  begin(loadKey: string): void {
    this.#asking.set(loadKey, (this.#asking.get(loadKey) ?? 0) + 1);
  }

  end(loadKey: string): void {
    const left = (this.#asking.get(loadKey) ?? 1) - 1;
    if (left > 0) return void this.#asking.set(loadKey, left);
    this.#asking.delete(loadKey);
    const waiting = this.#quiet.get(loadKey);
    this.#quiet.delete(loadKey);
    waiting?.forEach((wake) => wake());
  }

  /** Resolves once no read of `loadKey` is asking the cache (or after `GATHER_LIMIT_MS`); `undefined` when none is now. */
  quiet(loadKey: string): Promise<void> | undefined {
    if (!this.#asking.has(loadKey)) return undefined;
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, GATHER_LIMIT_MS);
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const waiting = this.#quiet.get(loadKey);
      if (waiting) waiting.push(wake);
      else this.#quiet.set(loadKey, [wake]);
    });
  }
}
