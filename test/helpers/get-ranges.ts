/**
 * Several ranges of a resource in one request, gathered in one buffer in order (range `i` from
 * `body[at[i]]`), through `Transport.streamRanges`: what the reader's needed-bytes loads receive,
 * for tests of what a multi-range answer must be.
 */
import type { RequestOptions, StreamedRanges, Transport } from '../../core/net/index.js';

export type GatheredRanges = { kind: 'ranges'; body: Uint8Array; at: number[] } | Exclude<StreamedRanges, { kind: 'streamed' }>;

export async function getRanges(
  transport: Transport,
  url: string,
  ranges: readonly { offset: number; length: number }[],
  options: RequestOptions = {},
): Promise<GatheredRanges> {
  const at: number[] = [];
  let total = 0;
  for (const range of ranges) {
    at.push(total);
    total += range.length;
  }
  const body = new Uint8Array(total);
  const answer = await transport.streamRanges(
    url,
    ranges,
    { ...options, expectedBytes: options.expectedBytes ?? Number.MAX_SAFE_INTEGER },
    () => ({
      data(offset, bytes) {
        ranges.forEach((range, i) => {
          const from = Math.max(offset, range.offset);
          const to = Math.min(offset + bytes.length, range.offset + range.length);
          if (from < to) body.set(bytes.subarray(from - offset, to - offset), at[i]! + from - range.offset);
        });
      },
      finish: () => Promise.resolve(),
    }),
  );
  return answer.kind === 'streamed' ? { kind: 'ranges', body, at } : answer;
}
