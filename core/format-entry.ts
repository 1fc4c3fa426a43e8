/**
 * awake-bundle/format: the AWKB format (SPEC §5, §5a), project indexes (§4), opaque ids, paths,
 * grouping and the bundle writer (§6), index diffs, and checks of bundles and files against an
 * index (§7 "Verified"). Browser-safe: no `node:` imports. `awake-bundle/node` has these too,
 * beside publishing from disk.
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
export { mediaTypeOf, contentTypeOf } from './format/media-types.js';
export * from './format/references.js';
export { sha256Hex, toHex, fromHex } from './hash.js';
export { sha256HexSync, createSha256, type IncrementalSha256 } from './hash-noble.js';
export * from './publish/grouping.js';
export * from './publish/loads.js';
export * from './publish/load-report.js';
export * from './publish/references.js';
export * from './publish/plan.js';
export * from './publish/bundle-writer.js';
export * from './publish/member-encoding.js';
export * from './read/verify/verify.js';
export { verifyBundle, type VerifiedMember } from './read/verify/accept.js';
export { structuralProblem } from './read/verify/structure.js';
export * from './page/project-urls.js';
