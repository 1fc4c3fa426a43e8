/**
 * Delta reads: which byte ranges of a bundle to ask for when the cache already holds
 * some of its members (from an earlier version of the project: the cache is keyed by member
 * SHA-256, so contents carry over): the option and its defaults. The planning is
 * `deltaRangesFor` in delta-plan.ts, which the load planner imports (through bundle-ranges.ts) once a cache holds part of a bundle.
 */
import { InvalidOptionError } from '../../errors.js';
import { DEFAULT_DELTA_RANGE_OPTIONS, DEFAULT_MULTIPART_RANGE_OPTIONS } from '../../format/delta-range-options.js';

export interface DeltaReadOptions {
  /** Missing members closer than this many bytes go in one range (the bytes between are fetched and dropped); touching ones always do. Default 64 KiB. */
  maxGapBytes?: number;
  /** Fetch the whole bundle when the missing contents are more than this fraction of it. Default 0.5. */
  maxMissingFraction?: number;
  /** At most this many range requests per bundle (ranges asked for one by one); past it, the smallest gaps are closed first. Default 4. */
  maxRangesPerBundle?: number;
  /**
   * Ask for a bundle's ranges in one request (`Range: bytes=a-b,c-d,…`, answered as
   * `multipart/byteranges`, RFC 9110 §14.6) where the origin is not known to lack it. Default true.
   * An origin that answers otherwise (a 200, one range of several, a malformed body) gets ranges
   * one by one from then on (`maxGapBytes`, `maxRangesPerBundle`).
   */
  multipartRanges?: boolean;
  /** At most this many ranges in one multi-range request; past it, the smallest gaps are closed first. Default 64 (what `serve` answers). */
  maxRangesPerRequest?: number;
  /** `maxGapBytes` for ranges asked for in one request, where a range costs a part header (~130 bytes), not a request. Default 512. */
  multipartGapBytes?: number;
}

export const DEFAULT_DELTA_READS: Required<DeltaReadOptions> = {
  maxGapBytes: DEFAULT_DELTA_RANGE_OPTIONS.maxGapBytes,
  maxMissingFraction: DEFAULT_DELTA_RANGE_OPTIONS.maxMissingFraction,
  maxRangesPerBundle: DEFAULT_DELTA_RANGE_OPTIONS.maxRanges,
  multipartRanges: true,
  maxRangesPerRequest: DEFAULT_MULTIPART_RANGE_OPTIONS.maxRanges,
  multipartGapBytes: DEFAULT_MULTIPART_RANGE_OPTIONS.maxGapBytes,
};

/** A part of the bundle to request: `Range: bytes=<offset>-<offset + length − 1>`. */
export interface ByteRange {
  offset: number;
  length: number;
}

/** The options checked, with defaults filled in; `undefined` when delta reads are off. */
export function deltaReadSettings(option: boolean | DeltaReadOptions | undefined): Required<DeltaReadOptions> | undefined {
  if (option === false) return undefined;
  const settings = { ...DEFAULT_DELTA_READS, ...(typeof option === 'object' ? definedOnly(option) : {}) };
  const integer = (name: 'maxGapBytes' | 'maxRangesPerBundle' | 'maxRangesPerRequest' | 'multipartGapBytes', least: number) => {
    if (!(Number.isSafeInteger(settings[name]) && settings[name] >= least))
      throw new InvalidOptionError(`deltaReads.${name}`, `deltaReads.${name} must be an integer ≥ ${least}, got ${settings[name]}`);
  };
  integer('maxGapBytes', 0);
  if (!(settings.maxMissingFraction >= 0 && settings.maxMissingFraction <= 1))
    throw new InvalidOptionError(
      'deltaReads.maxMissingFraction',
      `deltaReads.maxMissingFraction must be a number from 0 to 1, got ${settings.maxMissingFraction}`,
    );
  integer('maxRangesPerBundle', 1);
  integer('maxRangesPerRequest', 1);
  integer('multipartGapBytes', 0);
  if (typeof settings.multipartRanges !== 'boolean')
    throw new InvalidOptionError(
      'deltaReads.multipartRanges',
      `deltaReads.multipartRanges must be a boolean, got ${String(settings.multipartRanges)}`,
    );
  return settings;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
