/**
 * Which members a writer stores encoded (SPEC §5a): deflate-raw where that saves at least 1 KiB
 * and 5% of the member. The compressor is given (`node:zlib` in Node, core/node/deflate.ts), so
 * this module runs anywhere; what it decides depends only on the member's bytes and the
 * compressor's output, never on timing, so a publish gives the same bytes every run.
 */
import { InvalidOptionError } from '../errors.js';
import type { MemberEncoding } from '../format/awkb.js';

/** SPEC §5a: an encoding must save at least this many bytes… */
export const MIN_SAVED_BYTES = 1024;
/** …and at least this share of the member (5%, as 1/20: `20 × saved ≥ size`, in integers). */
export const MIN_SAVED_SHARE_DIVISOR = 20;

/**
 * Compresses a member's bytes deflate-raw (RFC 1951, no header or trailer). It must be
 * deterministic (same bytes in, same bytes out), as SPEC §5a asks of a writer; it may run off the
 * thread (a thread pool, a worker) and must not keep `bytes` past its promise.
 */
export interface MemberCompressor {
  deflateRaw(bytes: Uint8Array): Promise<Uint8Array>;
}

/** A member stored encoded: its stored bytes and how. */
export interface EncodedMember {
  encoding: MemberEncoding;
  stored: Uint8Array;
}

/** SPEC §5a's rule: storing `storedBytes` instead of `sizeBytes` saves at least 1 KiB and 5%. */
export function encodingPays(sizeBytes: number, storedBytes: number): boolean {
  const saved = sizeBytes - storedBytes;
  return saved >= MIN_SAVED_BYTES && saved * MIN_SAVED_SHARE_DIVISOR >= sizeBytes;
}

/** Bytes of a member sampled to judge whether deflate can pay (see `looksIncompressible`). */
const SAMPLE_SLICES = 4;
const SAMPLE_SLICE_BYTES = 8 * 1024;
/**
 * Order-0 entropy, bits per byte, at or above which a sample counts as incompressible. Uniform
 * random bytes give 7.994 on a 32 KiB sample. Calibrated on examples/assets: the file nearest
 * below that still pays (a tileset PNG, 15% saved) samples at 7.967; files above 7.985 saved
 * nothing. What passes is compressed whole and judged by the rule, so this only saves the
 * compressor's time on bytes that are already compressed (PNG, JPEG, Ogg, MP3, KTX2…).
 */
const INCOMPRESSIBLE_BITS_PER_BYTE = 7.985;

/**
 * True when a sample of `bytes` (4 slices of 8 KiB spread over it, or all of it when smaller)
 * looks like bytes deflate cannot shrink by 5%: its byte histogram is nearly flat. Cheap (one
 * pass over ≤ 32 KiB) and deterministic. Such a member may still hold long repeats a sample
 * misses; SPEC §5a only says a writer encodes *only where* it pays, so leaving it as is is legal.
 */
export function looksIncompressible(bytes: Uint8Array): boolean {
  const counts = new Uint32Array(256);
  let sampled: number;
  if (bytes.length <= SAMPLE_SLICES * SAMPLE_SLICE_BYTES) {
    for (let i = 0; i < bytes.length; i++) counts[bytes[i]!]!++;
    sampled = bytes.length;
  } else {
    const stride = Math.floor((bytes.length - SAMPLE_SLICE_BYTES) / (SAMPLE_SLICES - 1));
    for (let slice = 0; slice < SAMPLE_SLICES; slice++) {
      const start = slice * stride;
      for (let i = start; i < start + SAMPLE_SLICE_BYTES; i++) counts[bytes[i]!]!++;
    }
    sampled = SAMPLE_SLICES * SAMPLE_SLICE_BYTES;
  }
  let bits = 0;
  for (const count of counts) if (count > 0) bits -= count * Math.log2(count / sampled);
  return bits / sampled >= INCOMPRESSIBLE_BITS_PER_BYTE;
}

/**
 * How `bytes` is stored (SPEC §5a): deflate-raw when that pays, else `undefined` (stored as is).
 * A member too small to save 1 KiB, or whose sample looks incompressible, is not compressed at all.
 */
export async function encodeMember(bytes: Uint8Array, compressor: MemberCompressor): Promise<EncodedMember | undefined> {
  if (bytes.length <= MIN_SAVED_BYTES || looksIncompressible(bytes)) return undefined;
  const stored = await compressor.deflateRaw(bytes);
  if (!(stored instanceof Uint8Array)) throw new InvalidOptionError('compress', 'the compressor must resolve to a Uint8Array');
  return encodingPays(bytes.length, stored.length) ? { encoding: 'deflate-raw', stored } : undefined;
}
