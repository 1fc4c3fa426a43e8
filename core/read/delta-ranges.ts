/**
 * Delta reads (issue 11): which byte ranges of a bundle to ask for when the cache already holds
 * some of its members (from an earlier version of the project: the cache is keyed by member
 * SHA-256, so contents carry over). Pure planning; the reader fetches and verifies.
 */
import { InvalidOptionError } from '../errors.js';
import { planDeltaRanges } from '../format/delta-ranges.js';

export interface DeltaReadOptions {
  /** Missing members closer than this many bytes go in one range (the bytes between are fetched and dropped); touching ones always do. Default 64 KiB. */
  maxGapBytes?: number;
  /** Fetch the whole bundle when the missing contents are more than this fraction of it. Default 0.5. */
  maxMissingFraction?: number;
  /** At most this many range requests per bundle; past it, the smallest gaps are closed first. Default 4. */
  maxRangesPerBundle?: number;
}

export const DEFAULT_DELTA_READS: Required<DeltaReadOptions> = { maxGapBytes: 64 * 1024, maxMissingFraction: 0.5, maxRangesPerBundle: 4 };

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
  return settings;
}

/**
 * The ranges that bring `missing` (members' offsets and sizes in a bundle of `bundleBytes`), by
 * the one rule the `diff` command prices updates with (`planDeltaRanges` in
 * core/format/delta-ranges.ts); `undefined` when the whole bundle should be fetched.
 */
export function deltaRangesFor(missing: readonly { offset: number; sizeBytes: number; sha256: string }[], bundleBytes: number, settings: Required<DeltaReadOptions>): ByteRange[] | undefined {
  const plan = planDeltaRanges(bundleBytes, missing, new Set(missing.map((member) => member.sha256)), {
    maxGapBytes: settings.maxGapBytes,
    maxMissingFraction: settings.maxMissingFraction,
    maxRanges: settings.maxRangesPerBundle,
  });
  if (plan.whole) return undefined;
  return plan.ranges.map(({ start, end }) => ({ offset: start, length: end - start }));
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
