/**
 * Where each range asked for starts in a whole `multipart/byteranges` body, read by the
 * transport's streaming parser (`MultipartStream`, core/net/multipart.ts) in one piece: a pure
 * function of its arguments, so the parser can be fuzzed without HTTP (test/fuzz.test.ts).
 */
import { MultipartStream } from '../../core/net/multipart.js';

export function multipartOffsets(
  body: Uint8Array,
  contentType: string,
  url: string,
  ranges: readonly { offset: number; length: number }[],
): number[] {
  const at: (number | undefined)[] = ranges.map(() => undefined);
  const parser = new MultipartStream(contentType, url, ranges, (offset, bytes) => {
    // Data views lie in `body` itself (it is pushed in one piece): where a range's first byte is.
    ranges.forEach((range, i) => {
      if (at[i] === undefined && offset <= range.offset && range.offset < offset + bytes.length)
        at[i] = bytes.byteOffset - body.byteOffset + (range.offset - offset);
    });
  });
  parser.push(body);
  parser.end();
  return at as number[];
}
