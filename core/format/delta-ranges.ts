/**
 * Which byte ranges of a bundle a reader that already holds some of its contents should ask for
 * (HTTP `Range`), instead of the whole bundle. Pure: the `diff` command uses it to price an
 * update, and the reader can use it to fetch one.
 *
 * The rule: the missing members' spans, in offset order; spans closer than `maxGapBytes` merged
 * into one range (a small gap costs less than a request); the whole bundle when the missing
 * bytes are more than `maxMissingFraction` of it; and when more than `maxRanges` ranges remain,
 * the two neighbours with the smallest gap between them merged, again and again (`capRanges`).
 */
import { InvalidOptionError } from '../errors.js';
import { DEFAULT_DELTA_RANGE_OPTIONS, type DeltaRangeOptions } from './delta-range-options.js';

// The options and their defaults are in a module of their own: the reader's option
// (read/delta-ranges.ts) needs them on every page, the planning here only once a cache holds part
// of a bundle (read/bundle-ranges.ts, imported then).
export { DEFAULT_DELTA_RANGE_OPTIONS, DEFAULT_MULTIPART_RANGE_OPTIONS, type DeltaRangeOptions } from './delta-range-options.js';

/**
 * A member as the index places it: `offset` and `sizeBytes` in its bundle, its content's SHA-256.
 * `sizeBytes` is the bytes it takes there: an encoded member's `storedBytes` (SPEC §5a).
 */
export interface DeltaMember {
  offset: number;
  sizeBytes: number;
  sha256: string;
}

/** Bytes `start` up to, not including, `end`: the header `Range: bytes=<start>-<end − 1>`. */
export interface DeltaByteRange {
  start: number;
  end: number;
}

export interface DeltaRangePlan {
  /** Nothing missing: no request. */
  none: boolean;
  /** Fetch the whole bundle (one request, no Range header). */
  whole: boolean;
  /** The requests: one range `[0, size)` when `whole`, none when `none`. */
  ranges: DeltaByteRange[];
  /** Bytes the requests transfer. */
  bytes: number;
  /** Bytes of the distinct missing contents alone. */
  missingBytes: number;
}

function resolveOptions(options: DeltaRangeOptions): Required<Omit<DeltaRangeOptions, 'keepOutGapBytes'>> {
  const resolved = {
    maxGapBytes: options.maxGapBytes ?? DEFAULT_DELTA_RANGE_OPTIONS.maxGapBytes,
    maxMissingFraction: options.maxMissingFraction ?? DEFAULT_DELTA_RANGE_OPTIONS.maxMissingFraction,
    maxRanges: options.maxRanges ?? DEFAULT_DELTA_RANGE_OPTIONS.maxRanges,
  };
  if (!Number.isSafeInteger(resolved.maxGapBytes) || resolved.maxGapBytes < 0)
    throw new InvalidOptionError('maxGapBytes', `maxGapBytes must be a non-negative integer, found ${resolved.maxGapBytes}`);
  if (!(resolved.maxMissingFraction >= 0 && resolved.maxMissingFraction <= 1))
    throw new InvalidOptionError('maxMissingFraction', `maxMissingFraction must be between 0 and 1, found ${resolved.maxMissingFraction}`);
  if (!Number.isSafeInteger(resolved.maxRanges) || resolved.maxRanges < 1)
    throw new InvalidOptionError('maxRanges', `maxRanges must be a positive integer, found ${resolved.maxRanges}`);
  return resolved;
}

/**
 * The spans of the missing members, sorted and with overlaps joined. Members that share a
 * content share its bytes (SPEC §5), so a span is counted once. An empty content needs no bytes.
 */
function missingSpans(members: readonly DeltaMember[], missing: ReadonlySet<string>): DeltaByteRange[] {
  const spans = members
    .filter((member) => member.sizeBytes > 0 && missing.has(member.sha256))
    .map((member) => ({ start: member.offset, end: member.offset + member.sizeBytes }))
    .sort((a, b) => a.start - b.start || a.end - b.end);
  const joined: DeltaByteRange[] = [];
  for (const span of spans) {
    const last = joined[joined.length - 1];
    if (last && span.start <= last.end) last.end = Math.max(last.end, span.end);
    else joined.push(span);
  }
  return joined;
}

/**
 * The one rule for joining two ranges of a bundle across the bytes between them, wherever ranges
 * are planned (delta and needed-bytes plans, range reads waiting together): touching or
 * overlapping ranges always join; others when the gap is closer than `maxGapBytes` (its bytes
 * cost less than a request of their own). A gap of exactly `maxGapBytes` does not join.
 */
export function gapJoins(gapBytes: number, maxGapBytes: number): boolean {
  return gapBytes <= 0 || gapBytes < maxGapBytes;
}

function mergeCloseRanges(spans: DeltaByteRange[], maxGapBytes: number): DeltaByteRange[] {
  const merged: DeltaByteRange[] = [];
  for (const span of spans) {
    const last = merged[merged.length - 1];
    if (last && gapJoins(span.start - last.end, maxGapBytes)) last.end = span.end;
    else merged.push(span);
  }
  return merged;
}

/**
 * Merges the two neighbours with the smallest gap (the first such pair on a tie), again and
 * again, until at most `maxRanges` remain. A merge removes one gap and leaves the others as they
 * were, so that is: cut at the `maxRanges − 1` widest gaps (of equal ones, the later), join the
 * rest. O(n log n), where merging pair by pair was O(n²). A gap of `keepOutGapBytes` or more is
 * always a cut, even where that leaves more than `maxRanges` ranges: it may hold bytes already had.
 * The ranges are this plan's own (made by `missingSpans`): joined as they are, not copied.
 */
function capRanges(ranges: DeltaByteRange[], maxRanges: number, keepOutGapBytes = Infinity): DeltaByteRange[] {
  if (ranges.length <= maxRanges) return ranges;
  const widths = ranges.slice(1).map((range, i) => range.start - ranges[i]!.end);
  const gaps = [...widths.keys()].sort((a, b) => widths[b]! - widths[a]! || b - a);
  const kept = widths.filter((width) => width >= keepOutGapBytes).length;
  const cuts = new Set(gaps.slice(0, Math.max(kept, maxRanges - 1)));
  const capped = [ranges[0]!];
  for (let i = 1; i < ranges.length; i++) {
    if (cuts.has(i - 1)) capped.push(ranges[i]!);
    else capped[capped.length - 1]!.end = ranges[i]!.end;
  }
  return capped;
}

const sumOf = (ranges: DeltaByteRange[]) => ranges.reduce((sum, range) => sum + (range.end - range.start), 0);

/**
 * The requests that fetch the members of a bundle of `bundleSizeBytes` whose content (SHA-256)
 * is in `missing`. Throws `InvalidOptionError` for an option out of range.
 */
export function planDeltaRanges(
  bundleSizeBytes: number,
  members: readonly DeltaMember[],
  missing: ReadonlySet<string>,
  options: DeltaRangeOptions = {},
): DeltaRangePlan {
  const { maxGapBytes, maxMissingFraction, maxRanges } = resolveOptions(options);
  const spans = missingSpans(members, missing);
  const missingBytes = sumOf(spans);
  if (spans.length === 0) return { none: true, whole: false, ranges: [], bytes: 0, missingBytes };
  if (missingBytes > maxMissingFraction * bundleSizeBytes) {
    return { none: false, whole: true, ranges: [{ start: 0, end: bundleSizeBytes }], bytes: bundleSizeBytes, missingBytes };
  }
  const ranges = capRanges(mergeCloseRanges(spans, maxGapBytes), maxRanges, options.keepOutGapBytes);
  return { none: false, whole: false, ranges, bytes: sumOf(ranges), missingBytes };
}
