/** Opaque path ids (SPEC §4). */
import { InvalidOptionError } from '../errors.js';
import { hmacSha256Hex } from '../hash-noble.js';

// Declared with the index that carries them: reading an index needs no HMAC code (noble) until
// it has opaque ids (read/index-view.ts imports this module then).
export { PATH_ID_ALGORITHM, type PathIds } from './project-index.js';

/**
 * `lowercase hex(HMAC-SHA256(key = UTF-8(salt), message = UTF-8(path)))`. Ids hide the file
 * list, not the files: anyone with the index can test a guessed path.
 */
export function opaqueId(salt: string, path: string): string {
  if (typeof salt !== 'string' || salt.length === 0) throw new InvalidOptionError('salt', 'opaque ids need a non-empty salt');
  return hmacSha256Hex(salt, path);
}
