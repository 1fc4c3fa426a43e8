/**
 * SHA-256 through the fastest hash the platform has: WebCrypto (`crypto.subtle`, native in
 * browsers and in Node 20) for one-shot digests. What needs a hash in JavaScript (incremental,
 * synchronous, HMAC, and the fallback where `crypto.subtle` is missing: plain-HTTP pages that are
 * not localhost have no SubtleCrypto) is in hash-noble.ts, imported here only on demand, so that
 * a game's bundle carries `@noble/hashes` only when it needs it.
 */
import { InvalidOptionError } from './errors.js';

// toHex lives with the byte helpers, so that hash-noble.ts (imported from here on demand) imports it downward.
export { toHex } from './bytes.js';
import { toHex } from './bytes.js';

/** Hex digit values by char code; -1 for anything else. Pure: a bundle that never calls fromHex (the reader's worker) drops it. */
const HEX_VALUES = /* @__PURE__ */ Int8Array.from({ length: 128 }, (_, code) => {
  const digit = '0123456789abcdef'.indexOf(String.fromCharCode(code).toLowerCase());
  return digit;
});

export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0) throw notHex(hex);
  const out = new Uint8Array(hex.length / 2);
  hexInto(hex, out, 0);
  return out;
}

/** Writes the bytes of `hex` (an even number of digits) into `out` from `at`. */
export function hexInto(hex: string, out: Uint8Array, at: number): void {
  for (let i = 0; i < hex.length; i += 2) {
    const high = HEX_VALUES[hex.charCodeAt(i)] ?? -1;
    const low = HEX_VALUES[hex.charCodeAt(i + 1)] ?? -1;
    if (high < 0 || low < 0) throw notHex(hex);
    out[at++] = (high << 4) | low;
  }
}

function notHex(hex: string): InvalidOptionError {
  return new InvalidOptionError('hex', `not a hex string: ${JSON.stringify(hex.slice(0, 80))}`);
}

function subtle(): SubtleCrypto | undefined {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  return c && c.subtle && typeof c.subtle.digest === 'function' ? c.subtle : undefined;
}

/** Lowercase hex SHA-256 of `bytes`, native where the platform has it. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const s = subtle();
  if (s) {
    // digest() copies its input; a view into a larger buffer is fine as a BufferSource.
    return toHex(new Uint8Array(await s.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)));
  }
  const { sha256HexSync } = await import('./hash-noble.js');
  return sha256HexSync(bytes);
}
