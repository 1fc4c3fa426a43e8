/** Node's native incremental SHA-256 (`node:crypto`), ~10× noble's speed. */
import { createHash } from 'node:crypto';
import { setIncrementalSha256, type IncrementalSha256 } from '../hash-noble.js';

export function nodeSha256(): IncrementalSha256 {
  const hash = createHash('sha256');
  return {
    update: (bytes) => void hash.update(bytes),
    digestHex: () => hash.digest('hex'),
  };
}

export function sha256HexNode(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Makes `createSha256()` use node:crypto. Idempotent; awake-bundle/node calls it on import. */
export function registerNodeHash(): void {
  setIncrementalSha256(nodeSha256);
}
