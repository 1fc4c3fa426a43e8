/**
 * The `multipart/byteranges` parser under `Transport.streamRanges` (RFC 9110 §14.6), in a module
 * of its own: the transport imports it with the first multi-range answer (needed bytes, delta
 * reads), so a game that never gets one loads none of it.
 */
import { RangeResponseError } from '../errors.js';
import { headerPreview, parseContentRange } from './content-range.js';
import { MAX_PART_HEADER_BYTES } from './requests.js';

type Part = { first: number; last: number };

/**
 * A `multipart/byteranges` body read as it arrives (SPEC §7 "Needed bytes": members are checked
 * as their bytes come, not once the whole answer is in). Parts are read by their Content-Range
 * lengths (the data is never searched for the boundary); each part must be a range asked for or
 * cover ranges asked for, every range asked for must be in a part, and the body must end with
 * the closing boundary. Each part's data goes to `onData(offset, bytes)`, `offset` counting from
 * the resource's first byte, in views the receiver must copy before `push` returns. A malformed
 * body is `RangeResponseError` naming `url`, thrown by `push` or `end`. Only a delimiter line or a
 * part's header block is ever held (bounded by `MAX_PART_HEADER_BYTES`); the work is linear in
 * the body.
 */
export class MultipartStream {
  readonly #url: string;
  readonly #ranges: readonly { offset: number; length: number }[];
  readonly #onData: (offset: number, bytes: Uint8Array) => void;
  readonly #delimiter: Uint8Array;
  readonly #covered: boolean[];
  #state: 'preamble' | 'boundary' | 'headers' | 'data' | 'after' | 'closed' = 'preamble';
  /** Bytes of a delimiter line or header block not yet complete. */
  #pending = new Uint8Array(0);
  #parts = 0;
  #part: Part = { first: 0, last: -1 };
  /** Where the current part's next data byte lies in the resource, and how many are still to come. */
  #offset = 0;
  #remaining = 0;

  constructor(
    contentType: string,
    url: string,
    ranges: readonly { offset: number; length: number }[],
    onData: (offset: number, bytes: Uint8Array) => void,
  ) {
    this.#url = url;
    this.#ranges = ranges;
    this.#onData = onData;
    this.#covered = ranges.map(() => false);
    const param = /;\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s;",]{1,70}))/i.exec(contentType);
    const boundary = param ? (param[1] ?? param[2])! : this.#fail(`no boundary in Content-Type: ${headerPreview(contentType)}`);
    this.#delimiter = ascii(`--${boundary}`);
  }

  #fail(why: string): never {
    throw new RangeResponseError(
      `GET ${this.#url}: asked for ${this.#ranges.length} ranges, the multipart/byteranges answer is malformed: ${why}`,
      { url: this.#url },
    );
  }

  push(chunk: Uint8Array): void {
    let body = chunk;
    if (this.#pending.length > 0) {
      body = new Uint8Array(this.#pending.length + chunk.length);
      body.set(this.#pending);
      body.set(chunk, this.#pending.length);
    }
    this.#pending = body.slice(this.#read(body));
  }

  /** Reads what it can of `body` (pending bytes, then the chunk): the position it stopped at, wanting more. */
  #read(body: Uint8Array): number {
    const delimiter = this.#delimiter;
    let pos = 0;
    for (;;) {
      switch (this.#state) {
        case 'closed':
          return body.length; // the epilogue, ignored
        case 'data': {
          const n = Math.min(this.#remaining, body.length - pos);
          if (n > 0) this.#onData(this.#offset, body.subarray(pos, pos + n));
          this.#offset += n;
          this.#remaining -= n;
          pos += n;
          if (this.#remaining > 0) return pos;
          this.#state = 'after';
          break;
        }
        case 'preamble': {
          // The first delimiter: at the start, or after a preamble ending in CRLF.
          const limit = MAX_PART_HEADER_BYTES + delimiter.length;
          const found = indexOf(body, delimiter, 0, Math.min(body.length, limit));
          if (found < 0) {
            if (body.length >= limit) this.#fail('it does not start with the boundary');
            return 0;
          }
          if (found > 0 && !(body[found - 2] === 13 && body[found - 1] === 10)) this.#fail('it does not start with the boundary');
          pos = found + delimiter.length;
          this.#state = 'boundary';
          break;
        }
        case 'boundary': {
          // "--" closes the body; else transport padding (spaces, tabs), then CRLF.
          if (body.length - pos < 2) return pos;
          if (body[pos] === 45 && body[pos + 1] === 45) {
            this.#state = 'closed';
            break;
          }
          let end = pos;
          while (end < body.length && end - pos <= MAX_PADDING && (body[end] === 32 || body[end] === 9)) end++;
          if (end + 1 >= body.length && end - pos <= MAX_PADDING) return pos;
          if (!(body[end] === 13 && body[end + 1] === 10)) this.#fail(`no line break after the boundary of part ${this.#parts + 1}`);
          pos = end + 2;
          this.#state = 'headers';
          break;
        }
        case 'headers': {
          const limit = Math.min(body.length, pos + MAX_PART_HEADER_BYTES);
          const headersEnd = indexOf(body, CRLF2, pos, limit);
          if (headersEnd < 0) {
            if (body.length - pos >= MAX_PART_HEADER_BYTES)
              this.#fail(`part ${this.#parts + 1} has no end of headers within ${MAX_PART_HEADER_BYTES} bytes`);
            return pos;
          }
          this.#startPart(body.subarray(pos, headersEnd));
          pos = headersEnd + 4;
          break;
        }
        case 'after': {
          // The data ends where its Content-Range says: CRLF and the next delimiter follow.
          if (body.length - pos < 2 + delimiter.length) return pos;
          if (!(body[pos] === 13 && body[pos + 1] === 10 && startsWith(body, delimiter, pos + 2)))
            this.#fail(`part ${this.#parts} (bytes ${this.#part.first}-${this.#part.last}) is not followed by the boundary`);
          pos += 2 + delimiter.length;
          this.#state = 'boundary';
          break;
        }
      }
    }
  }

  #startPart(block: Uint8Array): void {
    let contentRange: string | null = null;
    for (const line of latin1(block).split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === 'content-range') contentRange = line.slice(colon + 1);
    }
    const part = parseContentRange(contentRange);
    if (!part)
      this.#fail(
        `part ${this.#parts + 1} has no valid Content-Range${contentRange === null ? '' : ` (${headerPreview(contentRange.trim())})`}`,
      );
    let covers = 0;
    this.#ranges.forEach((range, i) => {
      if (part.first <= range.offset && range.offset + range.length - 1 <= part.last) {
        this.#covered[i] = true;
        covers++;
      }
    });
    if (covers === 0) this.#fail(`part ${this.#parts + 1} (bytes ${part.first}-${part.last}) is not a range asked for nor covers one`);
    if (++this.#parts > this.#ranges.length) this.#fail('more parts than ranges asked for');
    this.#part = part;
    this.#offset = part.first;
    this.#remaining = part.last - part.first + 1;
    this.#state = 'data';
  }

  /** The body ended: it must have closed, with every range asked for in a part. */
  end(): void {
    if (this.#state === 'data' || this.#state === 'after')
      this.#fail(`part ${this.#parts} (bytes ${this.#part.first}-${this.#part.last}) is cut short`);
    if (this.#state === 'preamble') this.#fail('it does not start with the boundary');
    if (this.#state !== 'closed') this.#fail('it ends before the closing boundary');
    const missing = this.#covered.indexOf(false);
    if (missing >= 0)
      this.#fail(
        `no part holds bytes ${this.#ranges[missing]!.offset}-${this.#ranges[missing]!.offset + this.#ranges[missing]!.length - 1}`,
      );
  }
}

/** Transport padding after a delimiter (RFC 2046 §5.1.1) accepted before its CRLF. */
const MAX_PADDING = 256;
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
