/** awake-bundle/node: publishing from disk, the Node folder cache, and the local server. */
import { registerNodeHash } from './hash.js';
import { registerNodeDecoder } from './inflate.js';

registerNodeHash();
registerNodeDecoder();

export { registerNodeHash, nodeSha256, sha256HexNode } from './hash.js';
export * from './loose-index.js';
export { nodeMemberCompressor, DEFLATE_LEVEL } from './deflate.js';
export { NodeMemberDecoder, decodeMemberNode, nodeMemberDecoder, registerNodeDecoder } from './inflate.js';
export * from './publish.js';
export * from './server.js';
export { NodeFolderCache } from './folder-cache.js';
export * from './verify-published.js';
export * from './publish-folder.js';
export * from './publish-target.js';
export * from '../format-entry.js';
export { S3PublishTarget, parseS3Url, BUNDLE_CACHE_CONTROL, INDEX_CACHE_CONTROL, type S3PublishTargetOptions } from './s3-target.js';
export { publishGrouping, readLoadsFile, readReferrerFile, type GroupingInput, type PublishGroupingOptions } from './publish-grouping.js';
