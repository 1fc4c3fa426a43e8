/** awake-bundle core: the AWKB format, project indexes, opaque ids, the bundle writer, reading. */
export * from './errors.js';
export * from './format/paths.js';
export * from './format/ids.js';
export * from './format/awkb.js';
export * from './format/project-index.js';
export * from './format/delta-ranges.js';
export * from './format/index-diff.js';
export { sha256Hex, sha256HexSync, createSha256, toHex, fromHex, type IncrementalSha256 } from './hash.js';
export * from './publish/grouping.js';
export * from './publish/plan.js';
export * from './publish/bundle-writer.js';
export * from './read/verify.js';
export * from './read/digest-pool.js';
export * from './net/index.js';
export * from './cache/index.js';
export * from './read/indexed-asset-source.js';
export { mediaTypeOf, contentTypeOf } from './format/media-types.js';
export * from './read/project-urls.js';
