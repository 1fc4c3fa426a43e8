/** The options of delta range planning (format/delta-ranges.ts) and their defaults. */

export interface DeltaRangeOptions {
  /** Missing members closer than this are fetched as one range (default 64 KiB). */
  maxGapBytes?: number;
  /** Above this share of the bundle missing, the whole bundle is fetched (default 0.5). */
  maxMissingFraction?: number;
  /** At most this many range requests per bundle (default 4). */
  maxRanges?: number;
  /**
   * Gaps of this many bytes or more are never joined, not even to keep to `maxRanges`: they may
   * hold bytes the reader has already, which are never asked for twice (SPEC §7 "Needed bytes").
   * Default: no such limit.
   */
  keepOutGapBytes?: number;
}

export const DEFAULT_DELTA_RANGE_OPTIONS: Readonly<Required<Omit<DeltaRangeOptions, 'keepOutGapBytes'>>> = Object.freeze({
  maxGapBytes: 64 * 1024,
  maxMissingFraction: 0.5,
  maxRanges: 4,
});

/**
 * The rule for ranges asked for in one multi-range request (`multipart/byteranges`), the reader's
 * default where the server answers them: a range costs a part header (~130 bytes), not a
 * request, so gaps close only below 512 bytes and up to 64 ranges share the request.
 */
export const DEFAULT_MULTIPART_RANGE_OPTIONS: Readonly<Required<Omit<DeltaRangeOptions, 'keepOutGapBytes'>>> = Object.freeze({
  maxGapBytes: 512,
  maxMissingFraction: 0.5,
  maxRanges: 64,
});
