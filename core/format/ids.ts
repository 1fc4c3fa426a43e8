/** Opaque path ids (SPEC §4). */
import { InvalidOptionError } from '../errors.js';
import { hmacSha256Hex } from '../hash.js';

export const PATH_ID_ALGORITHM = 'hmac-sha256';

export interface PathIds {
  algorithm: typeof PATH_ID_ALGORITHM;
  salt: string;
}

/**
 * `lowercase hex(HMAC-SHA256(key = UTF-8(salt), message = UTF-8(path)))`. Ids hide the file
 * list, not the files: anyone with the index can test a guessed path.
 */
export function opaqueId(salt: string, path: string): string {
  if (typeof salt !== 'string' || salt.length === 0) throw new InvalidOptionError('salt', 'opaque ids need a non-empty salt');
  return hmacSha256Hex(salt, path);
}
