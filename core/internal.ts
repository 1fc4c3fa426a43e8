/**
 * Every name of core, for the project's own tests, benches and tools: not a package entry. A
 * game imports `awake-bundle` (index.ts), publishing code `awake-bundle/format` or
 * `awake-bundle/node`. Here: the format entry's names, and the reader's parts besides.
 */
export * from './format-entry.js';
export { acceptBundle, type AcceptedBundle } from './read/verify/accept.js';
export * from './read/workers/digest-pool.js';
export * from './net/index.js';
export * from './cache/index.js';
export * from './read/indexed-asset-source.js';
export type { NeededBytesOptions } from './read/plan/needed-bytes.js';
export { DEFAULT_DELTA_READS, type ByteRange, type DeltaReadOptions } from './read/plan/delta-ranges.js';
export { watchDoubleDownloads, type DoubleDownloadsOptions } from './page/double-downloads.js';
