/** The one rule for a browser cache's keys (browser.ts, browser-stores.ts). */
import { InvalidOptionError } from '../errors.js';
import { SHA256_HEX } from '../format/sha256.js';

/** Keys become file names and URLs, so anything but 64 lowercase hex digits is refused. */
export function checkKey(sha256: string): void {
  if (!SHA256_HEX.test(sha256)) {
    throw new InvalidOptionError(
      'sha256',
      `a cache key is a lowercase hex SHA-256 (64 digits), got ${JSON.stringify(String(sha256).slice(0, 80))}`,
    );
  }
}
