/**
 * The ranges of a bundle that bring the members a cache lacks (delta reads), by the
 * one rule the `diff` command prices updates with (`planDeltaRanges` in core/format/delta-ranges.ts).
 * The load planner imports this module the first time a cache holds part of a bundle: a game
 * whose loads are whole bundles loads none of it (BENCHMARKS.md, "Size").
 */
import { planDeltaRanges } from '../../format/delta-ranges.js';
import type { ByteRange, DeltaReadOptions } from './delta-ranges.js';

/**
 * The ranges that bring `missing` (members' offsets and sizes in a bundle of `bundleBytes`);
 * `undefined` when the whole bundle should be fetched. With `multipart`, for one multi-range
 * request (`multipartGapBytes`, `maxRangesPerRequest`).
 */
export function deltaRangesFor(
  missing: readonly { offset: number; sizeBytes: number; sha256: string }[],
  bundleBytes: number,
  settings: Required<DeltaReadOptions> & { keepOutGapBytes?: number | undefined },
  multipart = false,
): ByteRange[] | undefined {
  const plan = planDeltaRanges(bundleBytes, missing, new Set(missing.map((member) => member.sha256)), {
    maxGapBytes: multipart ? settings.multipartGapBytes : settings.maxGapBytes,
    maxMissingFraction: settings.maxMissingFraction,
    maxRanges: multipart ? settings.maxRangesPerRequest : settings.maxRangesPerBundle,
    ...(settings.keepOutGapBytes !== undefined ? { keepOutGapBytes: settings.keepOutGapBytes } : {}),
  });
  if (plan.whole) return undefined;
  return plan.ranges.map(({ start, end }) => ({ offset: start, length: end - start }));
}
