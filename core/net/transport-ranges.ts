/**
 * The range reads of `Transport` (SPEC §7 "Range reads"): `getRange` and `getRanges`, with the
 * checks of a 206 answer. A module of its own, imported by those methods the first time they run
 * (and by the bundle fetcher together with its range reads, read/bundle-fetcher.ts): range reads
 * are off by default and delta reads need a cache that holds part of a bundle, so a game's first
 * load does not run this code, and its bundle does not carry it. The retries, timeouts and body
 * bounds stay in transport.ts: `request` is the transport's own request loop for one URL.
 */
import { InvalidOptionError, RangeResponseError, ResponseSizeError } from '../errors.js';
import { isMultipart } from './body.js';
import {
  checkedSize,
  MULTIPART_BODY_ALLOWANCE,
  MULTIPART_PART_ALLOWANCE,
  RANGE_REFUSALS,
  type BodyBound,
  type Fetched,
  type RangeRefusal,
  type RangeResult,
  type RangesResult,
  type RequestOptions,
} from './requests.js';
import { headerPreview, parseContentRange } from './content-range.js';

/** The transport's request loop (retries, timeouts, bounds) for the URL at hand. */
export type RangeRequest = (headers: Record<string, string>, bound: BodyBound) => Promise<Fetched>;

/** `Transport.getRange`. */
export async function getRange(
  request: RangeRequest,
  url: string,
  offset: number,
  size: number,
  options: RequestOptions,
): Promise<RangeResult> {
  if (!Number.isSafeInteger(offset) || offset < 0)
    throw new InvalidOptionError('offset', `range offset must be a safe integer ≥ 0, got ${offset}`);
  if (!Number.isSafeInteger(size) || size < 0) throw new InvalidOptionError('size', `range size must be a safe integer ≥ 0, got ${size}`);
  if (size === 0) return { kind: 'range', bytes: new Uint8Array(0) };
  const last = offset + size - 1;
  const bound = {
    partial: size,
    ranged: true,
    ...(options.expectedBytes === undefined ? {} : { whole: checkedSize(options.expectedBytes, 'expectedBytes') }),
  };
  const fetched = await request({ ...options.headers, Range: `bytes=${offset}-${last}` }, bound);
  if (RANGE_REFUSALS.has(fetched.status)) return refusal(url, fetched.status);
  if (fetched.status !== 206) return { kind: 'whole', bytes: fetched.bytes };
  checkPartialContent(fetched, url, offset, last);
  return { kind: 'range', bytes: fetched.bytes };
}

/** `Transport.getRanges`. */
export async function getRanges(
  request: RangeRequest,
  url: string,
  ranges: readonly { offset: number; length: number }[],
  options: RequestOptions,
): Promise<RangesResult> {
  if (ranges.length === 0) throw new InvalidOptionError('ranges', 'getRanges needs at least one range');
  ranges.forEach((range, i) => {
    if (!Number.isSafeInteger(range.offset) || range.offset < 0 || !Number.isSafeInteger(range.length) || range.length < 1)
      throw new InvalidOptionError(
        'ranges',
        `ranges[${i}] must have a safe integer offset ≥ 0 and length ≥ 1, got ${range.offset}+${range.length}`,
      );
    if (i > 0 && range.offset < ranges[i - 1]!.offset + ranges[i - 1]!.length)
      throw new InvalidOptionError('ranges', `ranges must be sorted and not overlap (ranges[${i}])`);
  });
  const first = ranges[0]!.offset;
  const end = ranges[ranges.length - 1]!.offset + ranges[ranges.length - 1]!.length;
  // A 200 (or any 2xx but 206) stops at its headers: `whole: 0`.
  const bound: BodyBound = {
    whole: 0,
    partial: end - first,
    partialAtMost: true,
    multipart: end - first + MULTIPART_PART_ALLOWANCE * ranges.length + MULTIPART_BODY_ALLOWANCE,
    ranged: true,
  };
  const header = `bytes=${ranges.map((range) => `${range.offset}-${range.offset + range.length - 1}`).join(',')}`;
  let fetched: Fetched;
  try {
    fetched = await request({ ...options.headers, Range: header }, bound);
  } catch (error) {
    if (error instanceof ResponseSizeError)
      return { kind: 'unsupported', reason: 'the server answered several ranges with the whole file (200)' };
    throw error;
  }
  if (RANGE_REFUSALS.has(fetched.status)) return refusal(url, fetched.status);
  if (fetched.status !== 206) return { kind: 'unsupported', reason: `the server answered several ranges with HTTP ${fetched.status}` };
  if (isMultipart(fetched.headers)) {
    // The parser comes with the first multi-range answer (delta reads): a game that never gets one loads none of it.
    const { multipartOffsets } = await import('./multipart.js');
    return {
      kind: 'ranges',
      body: fetched.bytes,
      at: multipartOffsets(fetched.bytes, fetched.headers.get('content-type') ?? '', url, ranges),
    };
  }
  // One range back: accepted when it covers every range asked for (a server may coalesce them).
  const contentRange = parseContentRange(fetched.headers.get('content-range'));
  if (!contentRange)
    throw new RangeResponseError(
      `GET ${url}: asked for ${ranges.length} ranges, the 206 answer has no valid Content-Range and is not multipart/byteranges (Content-Type: ${headerPreview(fetched.headers.get('content-type'))})`,
      { url },
    );
  if (fetched.bytes.length !== contentRange.last - contentRange.first + 1)
    throw new RangeResponseError(
      `GET ${url}: the 206 answer says Content-Range: bytes ${contentRange.first}-${contentRange.last}, it holds ${fetched.bytes.length} bytes`,
      { url },
    );
  if (!ranges.every((range) => contentRange.first <= range.offset && range.offset + range.length - 1 <= contentRange.last)) {
    return {
      kind: 'unsupported',
      reason: `asked for ${ranges.length} ranges, the server answered one (bytes ${contentRange.first}-${contentRange.last})`,
    };
  }
  return { kind: 'ranges', body: fetched.bytes, at: ranges.map((range) => range.offset - contentRange.first) };
}

function refusal(url: string, status: number): RangeRefusal {
  return { kind: 'refused', status, reason: `GET ${url}: the server refused the Range request with HTTP ${status}` };
}

/** A 206 must be exactly `bytes=<first>-<last>`: the right length, and a matching Content-Range if sent. */
function checkPartialContent(fetched: Fetched, url: string, first: number, last: number): void {
  const size = last - first + 1;
  const contentRange = fetched.headers.get('content-range');
  if (contentRange !== null) {
    const match = /^\s*bytes\s+(\d+)-(\d+)\s*\/\s*(\d+|\*)\s*$/i.exec(contentRange);
    if (!match || Number(match[1]) !== first || Number(match[2]) !== last) {
      throw new RangeResponseError(`GET ${url}: asked for bytes ${first}-${last}, the 206 answer says Content-Range: ${contentRange}`, {
        url,
      });
    }
  }
  if (fetched.bytes.length !== size) {
    throw new RangeResponseError(`GET ${url}: asked for ${size} bytes (${first}-${last}), the 206 answer holds ${fetched.bytes.length}`, {
      url,
    });
  }
}
