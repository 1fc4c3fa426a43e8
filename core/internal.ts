/**
 * Every name of core, for the project's own tests, benches and tools: not a package entry. A
 * game imports `awake-bundle` (index.ts), publishing code `awake-bundle/format` or
 * `awake-bundle/node`.
 */
export * from './errors.js';
export * from './format/paths.js';
export * from './format/ids.js';
export * from './format/awkb.js';
export * from './format/awkb-decode.js';
export * from './format/encoded-member.js';
export * from './format/project-index.js';
export { decodeIndexText, type DecodeIndexOptions } from './format/index-text.js';
export * from './format/delta-ranges.js';
export * from './format/index-diff.js';
export { sha256Hex, toHex, fromHex } from './hash.js';
export { sha256HexSync, createSha256, type IncrementalSha256 } from './hash-noble.js';
export * from './publish/grouping.js';
export * from './publish/loads.js';
export * from './publish/load-report.js';
export * from './format/references.js';
export * from './publish/references.js';
export * from './publish/plan.js';
export * from './publish/bundle-writer.js';
export * from './publish/member-encoding.js';
export * from './read/verify/verify.js';
export * from './read/verify/accept.js';
export { structuralProblem } from './read/verify/structure.js';
export * from './read/workers/digest-pool.js';
export * from './net/index.js';
export * from './cache/index.js';
export * from './read/indexed-asset-source.js';
export type { NeededBytesOptions } from './read/plan/needed-bytes.js';
export { DEFAULT_DELTA_READS, type ByteRange, type DeltaReadOptions } from './read/plan/delta-ranges.js';
export { mediaTypeOf, contentTypeOf } from './format/media-types.js';
export * from './page/project-urls.js';
export { watchDoubleDownloads, type DoubleDownloadsOptions } from './page/double-downloads.js';
