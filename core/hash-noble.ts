/**
 * SHA-256 in JavaScript (`@noble/hashes`), where WebCrypto does not serve: synchronous and
 * incremental hashing, HMAC for opaque ids (SPEC §4), and hash.ts's fallback where
 * `crypto.subtle` is missing. Node-only code plugs in `node:crypto` through
 * `setIncrementalSha256` (see core/node/hash.ts) so this module stays browser-safe. The reader
 * imports it only on demand (read/index-view.ts, hash.ts): a game's bundle stays without it.
 */
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { hmac } from '@noble/hashes/hmac.js';
import { toHex } from './bytes.js';

export interface IncrementalSha256 {
  update(bytes: Uint8Array): void;
  /** Lowercase hex digest; the hasher cannot be used afterwards. */
  digestHex(): string;
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
