/**
 * The `Range` header parsers (core/format/range-header.ts): `requestedRange`, the one the service
 * worker uses, and `requestedRanges`, the one `serve` uses. Both are linear in the header's length
 * and ignore headers longer than `MAX_RANGE_HEADER_LENGTH` (issue 20: `requestedRange` was a
 * regular expression that backtracked in cubic time, 25.8 s for a 4 KB header).
 */
import vm from 'node:vm';
import { MAX_RANGE_HEADER_LENGTH, requestedRange, requestedRanges } from '../core/node/index.js';

/**
 * Runs `parse` where a runaway call is stopped: `vm`'s watchdog ends it after a limit hundreds of
 * times what the work needs (microseconds), so a backtracking parser fails here instead of
 * holding the test for minutes. A guard, not a measure of speed.
 */
function stopped<T>(parse: () => T): T {
  return vm.runInNewContext('parse()', { parse }, { timeout: 5_000 }) as T;
}

/** `bytes=` + n spaces + `-` + n spaces + `x`: the backtracking input of issue 20. */
const hostile = (n: number) => `bytes=${' '.repeat(n)}-${' '.repeat(n)}x`;

describe('hostile headers are answered at once', () => {
  test.each([
    ['4 KB', 2 * 1024],
    ['just under the bound', (MAX_RANGE_HEADER_LENGTH - 8) / 2],
    ['64 KB', 32 * 1024],
    ['1 MB', 512 * 1024],
  ])('%s of spaces around a dash', (_name, n) => {
    expect(stopped(() => requestedRange(hostile(n), 100))).toBeUndefined();
    expect(stopped(() => requestedRanges(hostile(n), 100))).toBeUndefined();
  });

  test('long runs of spaces, dashes, digits and commas', () => {
    const half = Math.floor(MAX_RANGE_HEADER_LENGTH / 2) - 8;
    for (const header of [
      `bytes=${'-'.repeat(half * 2)}`,
      `bytes=${'9'.repeat(half)}-${'9'.repeat(half)}x`,
      `bytes=${' -'.repeat(half)}`,
      `bytes=${'0-0,'.repeat(half / 2)}x`,
      `${' '.repeat(half)}bytes${' '.repeat(half)}x`,
    ]) {
      expect(stopped(() => requestedRange(header, 100))).toBeUndefined();
      expect(stopped(() => requestedRanges(header, 100))).toBeUndefined();
    }
  });

  test('a well-formed header with long whitespace is still read, up to the bound', () => {
    const n = Math.floor(MAX_RANGE_HEADER_LENGTH / 5);
    const spaced = `${' '.repeat(n)}bytes${' '.repeat(n)}=${' '.repeat(n)}2${' '.repeat(n)}-4`;
    expect(spaced.length).toBeLessThanOrEqual(MAX_RANGE_HEADER_LENGTH);
    expect(stopped(() => requestedRange(spaced, 10))).toEqual({ start: 2, end: 4 });
    expect(stopped(() => requestedRanges(spaced, 10))).toEqual([{ start: 2, end: 4 }]);
    // Past the bound a header is ignored, as RFC 9110 §14.2 allows: the whole file is sent.
    const tooLong = `bytes=2-4${' '.repeat(MAX_RANGE_HEADER_LENGTH)}`;
    expect(requestedRange(tooLong, 10)).toBeUndefined();
    expect(requestedRanges(tooLong, 10)).toBeUndefined();
  });
});

describe('the grammar is unchanged', () => {
  test.each([
    ['bytes=2-4', { start: 2, end: 4 }],
    [' BYTES = 2 - 4 ', { start: 2, end: 4 }],
    ['\tbytes=\n-3\r\n', { start: 7, end: 9 }],
    ['bytes=\u00a02\u2028-\ufeff', { start: 2, end: 9 }],
    ['bytes=8-', { start: 8, end: 9 }],
    ['bytes=0-999', { start: 0, end: 9 }],
    ['bytes=10-', 'unsatisfiable'],
    ['bytes=-0', 'unsatisfiable'],
    ['bytes=-', undefined],
    ['bytes=4-2', undefined],
    ['bytes=1-2,3-4', undefined],
    ['bytes=1 2-4', undefined],
    ['bytes=2--4', undefined],
    ['bytes=+2-4', undefined],
    ['bytes=２-4', undefined], // a full-width digit is not \d
    ['bytes 2-4', undefined],
    ['items=2-4', undefined],
  ] as const)('requestedRange(%j, 10)', (header, expected) => {
    expect(requestedRange(header, 10)).toEqual(expected);
  });

  test('requestedRanges reads the same specs, split at commas', () => {
    expect(requestedRanges(' Bytes = 0 - 1 , , 5 - ,-2 ', 10)).toEqual([
      { start: 0, end: 1 },
      { start: 5, end: 9 },
    ]);
    expect(requestedRanges('bytes=0-1,2 x', 10)).toBeUndefined();
    expect(requestedRanges('bytes=,', 10)).toBeUndefined();
  });
});
