/**
 * The range requests of `Transport` (SPEC §7 "Range reads", "Needed bytes"): the Range header and
 * the checks of a 206 answer as it streams (`streamRanges`, under `getRange` too). The retries and
 * timeouts stay in transport.ts. Part of the entry: with needed bytes on by default, a first
 * visit's first load asks for ranges, and a chunk imported then would stand in front of it.
 */
import { InvalidOptionError, RangeResponseError } from '../errors.js';
import { bodyToRead, declaredLength, isMultipart, pumpBody } from './body.js';
import { MULTIPART_BODY_ALLOWANCE, MULTIPART_PART_ALLOWANCE, type RangeSink, type StreamedRanges } from './requests.js';
import { headerPreview, parseContentRange } from './content-range.js';
import { MultipartStream } from './multipart.js';

/** `Range: bytes=a-b,c-d,…` for `ranges`: sorted, not overlapping, none empty, else `InvalidOptionError`. */
export function rangesHeader(ranges: readonly { offset: number; length: number }[]): string {
  if (ranges.length === 0) throw new InvalidOptionError('ranges', 'a range request needs at least one range');
  ranges.forEach((range, i) => {
    if (!Number.isSafeInteger(range.offset) || range.offset < 0 || !Number.isSafeInteger(range.length) || range.length < 1)
      throw new InvalidOptionError(
        'ranges',
        `ranges[${i}] must have a safe integer offset ≥ 0 and length ≥ 1, got ${range.offset}+${range.length}`,
      );
    if (i > 0 && range.offset < ranges[i - 1]!.offset + ranges[i - 1]!.length)
      throw new InvalidOptionError('ranges', `ranges must be sorted and not overlap (ranges[${i}])`);
  });
  return `bytes=${ranges.map((range) => `${range.offset}-${range.offset + range.length - 1}`).join(',')}`;
}

/** What `streamRangesAnswer` needs of the transport: its error for a body cut short (retried). */
export interface AnswerErrors {
  cutShort(url: string, received: number, expected: number): Error;
}

/**
 * One 206 answer to `ranges` (`Transport.streamRanges`), read into a new sink as it arrives: a
 * `multipart/byteranges` body through its parser (multipart.ts), or one range, which
 * must be the one asked for or, for several, cover them all (else `unsupported`, unread). The body
 * is bounded by what its request could bring back, whatever its headers claim (SPEC §7 "Needed
 * bytes"): from the first byte asked for to the last (a host may merge ranges and the gaps between
 * them, never widen them), plus part headers for a multipart answer. Past that bound it is a
 * `RangeResponseError` naming what was asked, thrown as soon as the headers or the bytes show it
 * (the transport then aborts the request: nothing more is read or held). One shorter than its
 * Content-Length is the transport's `cutShort` (retried), a malformed one `RangeResponseError`.
 */
export async function streamRangesAnswer(
  response: Response,
  url: string,
  ranges: readonly { offset: number; length: number }[],
  signal: AbortSignal,
  arm: () => void,
  onProgress: (received: number) => void,
  newSink: () => RangeSink,
  errors: AnswerErrors,
): Promise<StreamedRanges> {
  const declared = declaredLength(response.headers);
  const cancel = () => void response.body?.cancel().catch(() => undefined);
  const sink = newSink();
  // What was asked, from its first byte to its last: what a 206 may hold, plus part headers.
  const first = ranges[0]!.offset;
  const last = ranges[ranges.length - 1]!.offset + ranges[ranges.length - 1]!.length - 1;
  const asked = `${ranges.length > 1 ? `${ranges.length} ranges within ` : ''}bytes ${first}-${last}`;
  let limit = last - first + 1;
  let exact = true;
  let feed: (chunk: Uint8Array) => void;
  let end = () => {};
  if (isMultipart(response.headers)) {
    limit += MULTIPART_PART_ALLOWANCE * ranges.length + MULTIPART_BODY_ALLOWANCE;
    exact = false;
    const parser = new MultipartStream(response.headers.get('content-type') ?? '', url, ranges, (offset, bytes) =>
      sink.data(offset, bytes),
    );
    feed = (chunk) => parser.push(chunk);
    end = () => parser.end();
  } else {
    const header = response.headers.get('content-range');
    const contentRange = parseContentRange(header);
    if (ranges.length > 1) {
      if (!contentRange) {
        cancel();
        throw new RangeResponseError(
          `GET ${url}: asked for ${ranges.length} ranges, the 206 answer has no valid Content-Range and is not multipart/byteranges (Content-Type: ${headerPreview(response.headers.get('content-type'))})`,
          { url },
        );
      }
      if (!ranges.every((range) => contentRange.first <= range.offset && range.offset + range.length - 1 <= contentRange.last)) {
        cancel();
        return {
          kind: 'unsupported',
          reason: `asked for ${ranges.length} ranges, the server answered one (bytes ${contentRange.first}-${contentRange.last})`,
        };
      }
    }
    // One range must be the one asked for; covering several, it can only be their merge (a host
    // may merge ranges and the gaps between them, never widen them): a wider claim (a terabyte
    // from byte 0) would have the body read for as long as the host sends it.
    if ((header !== null || ranges.length > 1) && (contentRange?.first !== first || contentRange.last !== last)) {
      cancel();
      throw new RangeResponseError(`GET ${url}: asked for ${asked}, the 206 answer says Content-Range: ${headerPreview(header)}`, { url });
    }
    let at = first;
    feed = (chunk) => {
      sink.data(at, chunk);
      at += chunk.length;
    };
  }
  const tooLong = (what: string) =>
    new RangeResponseError(
      `GET ${url}: asked for a range of ${last - first + 1} bytes${ranges.length > 1 ? ` (${asked}${exact ? '' : `; at most ${limit} with part headers`})` : ''}, the 206 answer is not: ${what}`,
      { url },
    );
  if (declared !== undefined && (exact ? declared !== limit : declared > limit)) {
    cancel();
    throw tooLong(`its Content-Length says ${declared}`);
  }
  arm();
  const body = bodyToRead(response);
  const read = body ? await pumpBody(body, { signal, limit, onChunk: feed, onProgress }) : { received: 0 };
  if (read.overLimit !== undefined) throw tooLong(`more arrived (${read.overLimit} bytes read, reading stopped)`);
  if (declared !== undefined && read.received !== declared) throw errors.cutShort(url, read.received, declared);
  if (exact && read.received !== limit)
    throw new RangeResponseError(`GET ${url}: asked for a range of ${limit} bytes, the 206 answer holds ${read.received}`, { url });
  end();
  await sink.finish();
  return { kind: 'streamed' };
}
