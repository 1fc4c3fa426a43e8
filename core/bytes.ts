/** Small byte helpers shared by the network layer and the writer. */

/** Joins `chunks` (of `length` bytes in all) into one array; a single chunk is returned as is. */
export function concatBytes(chunks: readonly Uint8Array[], length = chunks.reduce((sum, chunk) => sum + chunk.length, 0)): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const bytes = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Lowercase hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]!];
  return out;
}

/**
 * The most a buffer takes on a claim alone (an index's listed size, a Content-Length) before the
 * bytes arrive; past it, it grows with them. Most members are smaller: one buffer, of their size.
 */
export const CLAIMED_CAPACITY_BYTES = 1024 * 1024;

/**
 * `buffer` when it reaches `end`, else a buffer that does, holding what `buffer` held: at first
 * min(`size`, `CLAIMED_CAPACITY_BYTES`), then doubled, never past `size` (the most the bytes may
 * be). So a buffer grows as bytes arrive, never from a size only claimed (SPEC §5: a reader never
 * allocates from a size it has not bounded against the bytes it holds): 100 bytes of a member
 * listed at 3 GiB hold 1 MiB. Filled to `size`, it is exactly `size` long: no last copy.
 */
export function roomFor(buffer: Uint8Array | undefined, end: number, size: number): Uint8Array {
  if (buffer && end <= buffer.length) return buffer;
  const grown = new Uint8Array(Math.min(size, Math.max(end, buffer ? buffer.length * 2 : CLAIMED_CAPACITY_BYTES)));
  if (buffer) grown.set(buffer);
  return grown;
}
