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
