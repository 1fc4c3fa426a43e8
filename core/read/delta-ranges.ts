/**
 * Delta reads (issue 11): which byte ranges of a bundle to ask for when the cache already holds
 * some of its members (from an earlier version of the project: the cache is keyed by member
 * SHA-256, so contents carry over). Pure planning; the reader fetches and verifies.
 */
import { InvalidOptionError } from '../errors.js';

export interface DeltaReadOptions {
  /** Missing members at most this many bytes apart go in one range (the bytes between are fetched and dropped). Default 64 KiB. */
  maxGapBytes?: number;
  /** Fetch the whole bundle when the ranges would download more than this fraction of it. Default 0.5. */
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
 * The ranges that cover `missing` (members' offsets and sizes in a bundle of `bundleBytes`):
 * members closer than `maxGapBytes` share a range, then, while there are more ranges than
 * `maxRangesPerBundle`, the two ranges with the smallest gap between them are joined. Returns
 * `undefined` (fetch the whole bundle) when the ranges would download more than
 * `maxMissingFraction` of the bundle. Empty members need no bytes and no range.
 */
export function planDeltaRanges(missing: readonly { offset: number; sizeBytes: number }[], bundleBytes: number, settings: Required<DeltaReadOptions>): ByteRange[] | undefined {
  const parts = missing.filter((member) => member.sizeBytes > 0).map((member) => ({ start: member.offset, end: member.offset + member.sizeBytes })).sort((a, b) => a.start - b.start);
  const ranges: { start: number; end: number }[] = [];
  for (const part of parts) {
    const last = ranges.at(-1);
    if (last && part.start - last.end <= settings.maxGapBytes) last.end = Math.max(last.end, part.end);
    else ranges.push({ ...part });
  }
  while (ranges.length > settings.maxRangesPerBundle) {
    let smallest = 0;
    for (let i = 1; i < ranges.length - 1; i++) if (ranges[i + 1]!.start - ranges[i]!.end < ranges[smallest + 1]!.start - ranges[smallest]!.end) smallest = i;
    ranges[smallest]!.end = Math.max(ranges[smallest]!.end, ranges[smallest + 1]!.end);
    ranges.splice(smallest + 1, 1);
  }
  const bytes = ranges.reduce((sum, range) => sum + range.end - range.start, 0);
  if (bytes > settings.maxMissingFraction * bundleBytes) return undefined;
  return ranges.map(({ start, end }) => ({ offset: start, length: end - start }));
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
