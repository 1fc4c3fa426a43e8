/**
 * Reading the headers of a range answer: a Content-Range value, and a header value cut to a length
 * fit for an error message. Shared by the range reads (transport-ranges.ts) and the
 * `multipart/byteranges` parser they import on demand (multipart.ts), so neither imports the other
 * for them.
 */

/** `bytes <first>-<last>/<total or *>`, or `undefined`. */
export function parseContentRange(value: string | null): { first: number; last: number } | undefined {
  const match = value === null ? null : /^\s*bytes\s+(\d+)-(\d+)\s*\/\s*(\d+|\*)\s*$/i.exec(value);
  if (!match) return undefined;
  const first = Number(match[1]);
  const last = Number(match[2]);
  return Number.isSafeInteger(first) && Number.isSafeInteger(last) && first <= last ? { first, last } : undefined;
}

const HEADER_PREVIEW_CHARACTERS = 200;

/** A header value in a message: whole up to 200 characters, else cut (a server may send 64 KB of one). */
export function headerPreview(value: string | null): string {
  if (value === null || value.length <= HEADER_PREVIEW_CHARACTERS) return String(value);
  return `${value.slice(0, HEADER_PREVIEW_CHARACTERS)}… (${value.length} characters)`;
}
