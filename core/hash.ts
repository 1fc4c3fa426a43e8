/**
 * SHA-256 through the fastest hash the platform has: WebCrypto (`crypto.subtle`, native in
 * browsers and in Node 20) for one-shot digests; `@noble/hashes` for incremental and
 * synchronous needs and as the fallback where `crypto.subtle` is missing (plain-HTTP pages
 * that are not localhost have no SubtleCrypto). Node-only code plugs in `node:crypto` through
 * `setIncrementalSha256` (see core/node/hash.ts) so this module stays browser-safe.
 */
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { hmac } from '@noble/hashes/hmac.js';
import { InvalidOptionError } from './errors.js';

export interface IncrementalSha256 {
  update(bytes: Uint8Array): void;
  /** Lowercase hex digest; the hasher cannot be used afterwards. */
  digestHex(): string;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]!];
  return out;
}

/** Hex digit values by char code; -1 for anything else. */
const HEX_VALUES = Int8Array.from({ length: 128 }, (_, code) => {
  const digit = '0123456789abcdef'.indexOf(String.fromCharCode(code).toLowerCase());
  return digit;
});

export function fromHex(hex: string): Uint8Array {
  const bad = () => new InvalidOptionError('hex', `not a hex string: ${JSON.stringify(hex.slice(0, 80))}`);
  if (hex.length % 2 !== 0) throw bad();
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) {
    const high = HEX_VALUES[hex.charCodeAt(i * 2)] ?? -1;
    const low = HEX_VALUES[hex.charCodeAt(i * 2 + 1)] ?? -1;
    if (high < 0 || low < 0) throw bad();
    out[i] = (high << 4) | low;
  }
  return out;
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
  return toHex(nobleSha256(bytes));
}

/** Synchronous SHA-256 (noble); for small inputs only, such as tests and headers. */
export function sha256HexSync(bytes: Uint8Array): string {
  return toHex(nobleSha256(bytes));
}

type IncrementalFactory = () => IncrementalSha256;

function nobleIncremental(): IncrementalSha256 {
  const h = nobleSha256.create();
  return {
    update: (bytes) => void h.update(bytes),
    digestHex: () => toHex(h.digest()),
  };
}

let incrementalFactory: IncrementalFactory = nobleIncremental;

/** An incremental SHA-256: `node:crypto` once Node code has registered it, else noble. */
export function createSha256(): IncrementalSha256 {
  return incrementalFactory();
}

/** Lets platform code (core/node) install a faster incremental hash. */
export function setIncrementalSha256(factory: IncrementalFactory | undefined): void {
  incrementalFactory = factory ?? nobleIncremental;
}

const encoder = new TextEncoder();

/** HMAC-SHA256 of UTF-8 `message` under UTF-8 `key`, lowercase hex (SPEC §4). */
export function hmacSha256Hex(key: string, message: string): string {
  return toHex(hmac(nobleSha256, encoder.encode(key), encoder.encode(message)));
}
