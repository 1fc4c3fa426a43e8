/**
 * Range reads when many come at once (SPEC §7 "Range reads"): each origin has at most
 * `maxRequestsPerOrigin` range requests in flight and the other reads wait their turn, and reads
 * of members of one bundle that wait together, adjacent or closer than `maxGapBytes`, go in one
 * range request. Without it, 10,000 concurrent reads made 10,627 requests over up to 4,973
 * connections. Scheduling only: the bundle fetcher makes each request and checks each member alone.
 * Here the option and its defaults; the scheduler is range-scheduler.ts, imported with the range
 * reads themselves (bundle-ranges.ts).
 */
import { InvalidOptionError } from '../../errors.js';

export interface RangeReadOptions {
  /**
   * Range requests in flight per origin, at most (default 6, the connections a browser opens to
   * one HTTP/1.1 host); the other reads wait, and those of one bundle then share requests.
   */
  maxRequestsPerOrigin?: number;
  /**
   * Members of one bundle read at the same time whose bytes are closer than this go in one range
   * request (the rule of every range plan, `gapJoins`); the bytes between are fetched and dropped (default 64 KiB, as `deltaReads`'
   * `maxGapBytes`: about what one more request costs in time on a common line).
   */
  maxGapBytes?: number;
  /** The most bytes one shared range request asks for (default 4 MiB); a larger member still goes alone, whole. */
  maxRequestBytes?: number;
}

export const DEFAULT_RANGE_READS: Required<RangeReadOptions> = {
  maxRequestsPerOrigin: 6,
  maxGapBytes: 64 * 1024,
  maxRequestBytes: 4 * 1024 * 1024,
};

/** The option checked, with defaults filled in; `undefined` when range reads are off. */
export function rangeReadSettings(option: boolean | RangeReadOptions | undefined): Required<RangeReadOptions> | undefined {
  if (option === undefined || option === false) return undefined;
  const given = typeof option === 'object' ? Object.fromEntries(Object.entries(option).filter(([, value]) => value !== undefined)) : {};
  const settings = { ...DEFAULT_RANGE_READS, ...given } as Required<RangeReadOptions>;
  const check = (name: keyof RangeReadOptions, least: number) => {
    const value = settings[name];
    if (!(Number.isSafeInteger(value) && value >= least))
      throw new InvalidOptionError(`rangeReads.${name}`, `rangeReads.${name} must be an integer ≥ ${least}, got ${value}`);
  };
  check('maxRequestsPerOrigin', 1);
  check('maxGapBytes', 0);
  check('maxRequestBytes', 1);
  return settings;
}
