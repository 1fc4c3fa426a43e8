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

/** What `streamRangesAnswer` needs of the transport: its errors for a body of the wrong size. */
export interface AnswerErrors {
  sizeError(url: string, status: number, limit: number, got: { declaredBytes?: number; receivedBytes?: number }): Error;
  cutShort(url: string, received: number, expected: number): Error;
}

/**
 * One 206 answer to `ranges` (`Transport.streamRanges`), read into a new sink as it arrives: a
 * `multipart/byteranges` body through its parser (multipart.ts), or one range, which
 * must be the one asked for or, for several, cover them all (else `unsupported`, unread). The body
 * is bounded to what was asked for; one shorter than its Content-Length is the
 * transport's `cutShort` (retried), a malformed one `RangeResponseError`.
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
  let limit: number;
  let exact: boolean;
  let feed: (chunk: Uint8Array) => void;
  let end = () => {};
  if (isMultipart(response.headers)) {
    const span = ranges[ranges.length - 1]!.offset + ranges[ranges.length - 1]!.length - ranges[0]!.offset;
    limit = span + MULTIPART_PART_ALLOWANCE * ranges.length + MULTIPART_BODY_ALLOWANCE;
    exact = false;
    const parser = new MultipartStream(response.headers.get('content-type') ?? '', url, ranges, (offset, bytes) =>
      sink.data(offset, bytes),
    );
    feed = (chunk) => parser.push(chunk);
    end = () => parser.end();
  } else {
    const header = response.headers.get('content-range');
    const contentRange = parseContentRange(header);
    let first = ranges[0]!.offset;
    if (ranges.length === 1) {
      const last = first + ranges[0]!.length - 1;
      if (header !== null && (contentRange?.first !== first || contentRange.last !== last)) {
        cancel();
        throw new RangeResponseError(
          `GET ${url}: asked for bytes ${first}-${last}, the 206 answer says Content-Range: ${headerPreview(header)}`,
          {
            url,
          },
        );
      }
      limit = ranges[0]!.length;
    } else {
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
      first = contentRange.first;
      limit = contentRange.last - contentRange.first + 1;
    }
    exact = true;
    let at = first;
    feed = (chunk) => {
      sink.data(at, chunk);
      at += chunk.length;
    };
  }
  if (declared !== undefined && (exact ? declared !== limit : declared > limit)) {
    cancel();
    throw errors.sizeError(url, 206, limit, { declaredBytes: declared });
  }
  arm();
  const body = bodyToRead(response);
  const read = body ? await pumpBody(body, { signal, limit, onChunk: feed, onProgress }) : { received: 0 };
  if (read.overLimit !== undefined) throw errors.sizeError(url, 206, limit, { receivedBytes: read.overLimit });
  if (declared !== undefined && read.received !== declared) throw errors.cutShort(url, read.received, declared);
  if (exact && read.received !== limit)
    throw new RangeResponseError(`GET ${url}: asked for a range of ${limit} bytes, the 206 answer holds ${read.received}`, { url });
  end();
  await sink.finish();
  return { kind: 'streamed' };
}
