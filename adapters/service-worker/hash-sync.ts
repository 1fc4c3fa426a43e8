/**
 * The service worker's stand-in for core/hash-noble.ts (webpack.config.cjs replaces that module
 * with this one in the worker's build): the two synchronous hashes the reader needs there, in
 * about 0.6 KB gzipped where `@noble/hashes` took 2.9 of the worker's 40 KB (now 37.6). HMAC-SHA256 serves
 * opaque ids (SPEC §4), which an index lookup computes synchronously; SHA-256 is hash.ts's
 * fallback, which a service worker never takes (it runs only in secure contexts, which have
 * WebCrypto). Every long input goes to WebCrypto; test/service-worker-hash.test.ts checks these
 * against `node:crypto` and noble.
 */
import { toHex } from '../../core/bytes.js';

/** Round constants and initial state: the first 32 bits of the fractional parts of the cube roots of the first 64 primes, and the square roots of the first 8 (FIPS 180-4 §4.2.2, §5.3.3). */
let K: Uint32Array | undefined;
let H0: Uint32Array;

function constants(): Uint32Array {
  if (K) return K;
  K = new Uint32Array(64);
  H0 = new Uint32Array(8);
  const fraction = (x: number) => ((x - Math.floor(x)) * 0x100000000) >>> 0;
  for (let n = 2, i = 0; i < 64; n++) {
    let prime = true;
    for (let d = 2; d * d <= n; d++) if (n % d === 0) prime = false;
    if (!prime) continue;
    if (i < 8) H0[i] = fraction(Math.sqrt(n));
    K[i++] = fraction(Math.cbrt(n));
  }
  return K;
}

const ror = (x: number, n: number) => (x >>> n) | (x << (32 - n));

/** SHA-256 of `data` (FIPS 180-4 §6.2), synchronously. */
function sha256(data: Uint8Array): Uint8Array {
  const k = constants();
  const length = data.length;
  const padded = new Uint8Array(((length + 9 + 63) >> 6) << 6);
  padded.set(data);
  padded[length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(length / 0x20000000));
  view.setUint32(padded.length - 4, (length << 3) >>> 0);
  const h = H0.slice();
  const w = new Uint32Array(64);
  for (let block = 0; block < padded.length; block += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(block + i * 4);
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!;
      const b = w[i - 2]!;
      w[i] = w[i - 16]! + (ror(a, 7) ^ ror(a, 18) ^ (a >>> 3)) + w[i - 7]! + (ror(b, 17) ^ ror(b, 19) ^ (b >>> 10));
    }
    let [a, b, c, d, e, f, g, hh] = h as unknown as number[];
    for (let i = 0; i < 64; i++) {
      const t1 = (hh! + (ror(e!, 6) ^ ror(e!, 11) ^ ror(e!, 25)) + ((e! & f!) ^ (~e! & g!)) + k[i]! + w[i]!) | 0;
      const t2 = ((ror(a!, 2) ^ ror(a!, 13) ^ ror(a!, 22)) + ((a! & b!) ^ (a! & c!) ^ (b! & c!))) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d! + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    [a, b, c, d, e, f, g, hh].forEach((value, i) => (h[i]! += value!));
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  h.forEach((value, i) => outView.setUint32(i * 4, value));
  return out;
}

export function sha256HexSync(bytes: Uint8Array): string {
  return toHex(sha256(bytes));
}

const encoder = new TextEncoder();

/** HMAC-SHA256 (RFC 2104) of UTF-8 `message` under UTF-8 `key`, lowercase hex (SPEC §4). */
export function hmacSha256Hex(key: string, message: string): string {
  let keyBytes: Uint8Array = encoder.encode(key);
  if (keyBytes.length > 64) keyBytes = sha256(keyBytes);
  const pad = (byte: number) => {
    const block = new Uint8Array(64).fill(byte);
    keyBytes.forEach((value, i) => (block[i] = value ^ byte));
    return block;
  };
  const text = encoder.encode(message);
  const inner = new Uint8Array(64 + text.length);
  inner.set(pad(0x36));
  inner.set(text, 64);
  const outer = new Uint8Array(96);
  outer.set(pad(0x5c));
  outer.set(sha256(inner), 64);
  return sha256HexSync(outer);
}
