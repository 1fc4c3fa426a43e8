/** awake-bundle/node: publishing from disk, the Node folder cache, and the local server. */
import { registerNodeHash } from './hash.js';

registerNodeHash();

export { registerNodeHash, nodeSha256, sha256HexNode } from './hash.js';
export * from './loose-index.js';
export * from './publish.js';
export * from './server.js';
export { NodeFolderCache } from './folder-cache.js';
export * from './verify-published.js';
export * from './publish-folder.js';
