/**
 * The `multipart/byteranges` parser under `Transport.getRanges` (RFC 9110 §14.6), in a module of
 * its own: the transport imports it with the first multi-range answer (delta reads), so a game
 * that never gets one loads none of it.
 */
import { RangeResponseError } from '../errors.js';
import { headerPreview, parseContentRange } from './content-range.js';
import { MAX_PART_HEADER_BYTES } from './requests.js';

/**
 * Where each range asked for starts in a `multipart/byteranges` body (RFC 9110 §14.6, RFC 2046
 * §5.1.1): parts are read by their Content-Range lengths (the data is never searched for the
 * boundary); each part must be a range asked for or cover ranges asked for, every range asked
 * for must be in a part, and the body must end with the closing boundary. Else `RangeResponseError`
 * naming `url`. `contentType` is the answer's Content-Type, which holds the boundary. A pure
 * function of its arguments (`getRanges` calls it on a 206), so it can be fuzzed without HTTP;
 * its work is linear in the body and the header (the part header blocks searched are bounded by
 * `MAX_PART_HEADER_BYTES`).
 */
export function multipartOffsets(
  body: Uint8Array,
  contentType: string,
  url: string,
  ranges: readonly { offset: number; length: number }[],
): number[] {
  const fail = (why: string): never => {
    throw new RangeResponseError(`GET ${url}: asked for ${ranges.length} ranges, the multipart/byteranges answer is malformed: ${why}`, {
      url,
    });
  };
  const type = contentType;
  const param = /;\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s;",]{1,70}))/i.exec(type);
  const boundary = param ? (param[1] ?? param[2])! : fail(`no boundary in Content-Type: ${headerPreview(type)}`);
  const delimiter = ascii(`--${boundary}`);
  const at: (number | undefined)[] = ranges.map(() => undefined);
  // The first delimiter: at the start, or after a preamble ending in CRLF.
  let pos = indexOf(body, delimiter, 0, Math.min(body.length, MAX_PART_HEADER_BYTES + delimiter.length));
  if (pos < 0 || (pos > 0 && !(body[pos - 2] === 13 && body[pos - 1] === 10))) fail('it does not start with the boundary');
  let parts = 0;
  for (;;) {
    pos += delimiter.length;
    if (body[pos] === 45 && body[pos + 1] === 45) break; // "--": the closing delimiter
    // Transport padding (spaces, tabs), then CRLF.
    while (body[pos] === 32 || body[pos] === 9) pos++;
    if (!(body[pos] === 13 && body[pos + 1] === 10)) fail(`no line break after the boundary at byte ${pos}`);
    pos += 2;
    const headersEnd = indexOf(body, CRLF2, pos, Math.min(body.length, pos + MAX_PART_HEADER_BYTES));
    if (headersEnd < 0) fail(`part ${parts + 1} has no end of headers within ${MAX_PART_HEADER_BYTES} bytes`);
    let contentRange: string | null = null;
    for (const line of latin1(body.subarray(pos, headersEnd)).split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === 'content-range') contentRange = line.slice(colon + 1);
    }
    const part = parseContentRange(contentRange);
    if (!part)
      fail(`part ${parts + 1} has no valid Content-Range${contentRange === null ? '' : ` (${headerPreview(contentRange.trim())})`}`);
    const dataStart = headersEnd + 4;
    const dataEnd = dataStart + (part!.last - part!.first + 1);
    if (dataEnd > body.length) fail(`part ${parts + 1} (bytes ${part!.first}-${part!.last}) is cut short`);
    let covers = 0;
    ranges.forEach((range, i) => {
      if (part!.first <= range.offset && range.offset + range.length - 1 <= part!.last) {
        at[i] ??= dataStart + (range.offset - part!.first);
        covers++;
      }
    });
    if (covers === 0) fail(`part ${parts + 1} (bytes ${part!.first}-${part!.last}) is not a range asked for nor covers one`);
    if (++parts > ranges.length) fail('more parts than ranges asked for');
    // The data ends where its Content-Range says: CRLF and the next delimiter follow.
    if (!(body[dataEnd] === 13 && body[dataEnd + 1] === 10 && startsWith(body, delimiter, dataEnd + 2)))
      fail(`part ${parts} (bytes ${part!.first}-${part!.last}) is not followed by the boundary`);
    pos = dataEnd + 2;
  }
  const missing = at.findIndex((offset) => offset === undefined);
  if (missing >= 0) fail(`no part holds bytes ${ranges[missing]!.offset}-${ranges[missing]!.offset + ranges[missing]!.length - 1}`);
  return at as number[];
}

const CRLF2 = new Uint8Array([13, 10, 13, 10]);

function ascii(text: string): Uint8Array {
  return Uint8Array.from(text, (char) => char.charCodeAt(0) & 0xff);
}

function latin1(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return text;
}

function startsWith(haystack: Uint8Array, needle: Uint8Array, at: number): boolean {
  if (at + needle.length > haystack.length) return false;
  for (let k = 0; k < needle.length; k++) if (haystack[at + k] !== needle[k]) return false;
  return true;
}

/** The first `needle` in `haystack[from, to)`, or −1. */
function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number, to: number): number {
  for (let i = from; i + needle.length <= to; i++) if (startsWith(haystack, needle, i)) return i;
  return -1;
}
