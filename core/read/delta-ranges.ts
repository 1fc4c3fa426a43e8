/**
 * Delta reads (issue 11): which byte ranges of a bundle to ask for when the cache already holds
 * some of its members (from an earlier version of the project: the cache is keyed by member
 * SHA-256, so contents carry over). Pure planning; the reader fetches and verifies.
 */
import { InvalidOptionError } from '../errors.js';
import { DEFAULT_DELTA_RANGE_OPTIONS, DEFAULT_MULTIPART_RANGE_OPTIONS, planDeltaRanges } from '../format/delta-ranges.js';

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
  if (!(Number.isSafeInteger(settings.maxGapBytes) && settings.maxGapBytes >= 0)) throw new InvalidOptionError('deltaReads.maxGapBytes', `deltaReads.maxGapBytes must be an integer ≥ 0, got ${settings.maxGapBytes}`);
  if (!(settings.maxMissingFraction >= 0 && settings.maxMissingFraction <= 1)) throw new InvalidOptionError('deltaReads.maxMissingFraction', `deltaReads.maxMissingFraction must be a number from 0 to 1, got ${settings.maxMissingFraction}`);
  if (!(Number.isSafeInteger(settings.maxRangesPerBundle) && settings.maxRangesPerBundle >= 1)) throw new InvalidOptionError('deltaReads.maxRangesPerBundle', `deltaReads.maxRangesPerBundle must be an integer ≥ 1, got ${settings.maxRangesPerBundle}`);
  if (!(Number.isSafeInteger(settings.maxRangesPerRequest) && settings.maxRangesPerRequest >= 1)) throw new InvalidOptionError('deltaReads.maxRangesPerRequest', `deltaReads.maxRangesPerRequest must be an integer ≥ 1, got ${settings.maxRangesPerRequest}`);
  if (!(Number.isSafeInteger(settings.multipartGapBytes) && settings.multipartGapBytes >= 0)) throw new InvalidOptionError('deltaReads.multipartGapBytes', `deltaReads.multipartGapBytes must be an integer ≥ 0, got ${settings.multipartGapBytes}`);
  if (typeof settings.multipartRanges !== 'boolean') throw new InvalidOptionError('deltaReads.multipartRanges', `deltaReads.multipartRanges must be a boolean, got ${String(settings.multipartRanges)}`);
  return settings;
}

/**
 * The ranges that bring `missing` (members' offsets and sizes in a bundle of `bundleBytes`), by
 * the one rule the `diff` command prices updates with (`planDeltaRanges` in
 * core/format/delta-ranges.ts); `undefined` when the whole bundle should be fetched. With
 * `multipart`, for one multi-range request (`multipartGapBytes`, `maxRangesPerRequest`).
 */
export function deltaRangesFor(missing: readonly { offset: number; sizeBytes: number; sha256: string }[], bundleBytes: number, settings: Required<DeltaReadOptions>, multipart = false): ByteRange[] | undefined {
  const plan = planDeltaRanges(bundleBytes, missing, new Set(missing.map((member) => member.sha256)), {
    maxGapBytes: multipart ? settings.multipartGapBytes : settings.maxGapBytes,
    maxMissingFraction: settings.maxMissingFraction,
    maxRanges: multipart ? settings.maxRangesPerRequest : settings.maxRangesPerBundle,
  });
  if (plan.whole) return undefined;
  return plan.ranges.map(({ start, end }) => ({ offset: start, length: end - start }));
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
