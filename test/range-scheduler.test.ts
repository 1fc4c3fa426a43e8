/**
 * The range reads' scheduler on its own (core/read/fetch/range-scheduler.ts): reads of one bundle
 * waiting together share a request where the gap between them joins by the rule every range plan
 * uses (`gapJoins`: closer than `maxGapBytes`, touching always), within `maxRequestBytes`, never
 * across bytes the page has; at most `maxRequestsPerOrigin` requests in flight per origin.
 */
import { gapJoins, planDeltaRanges } from '../core/format/delta-ranges.js';
import type { Entry } from '../core/read/open/index-view.js';
import { RangeScheduler, type RangeBatch, type RangeRead } from '../core/read/fetch/range-scheduler.js';

const entry = (offset: number, sizeBytes: number): Entry =>
  ({ offset, sizeBytes, sha256: `${offset}`.padStart(64, '0') }) as unknown as Entry;

/** Reads of `members` ([offset, size]) of one bundle at once; the batches the scheduler made, as [offset, length]. */
async function batchesOf(
  members: [number, number][],
  settings: { maxRequestsPerOrigin?: number; maxGapBytes?: number; maxRequestBytes?: number } = {},
  keepOut?: (bundleSha: string, from: number, to: number) => boolean,
): Promise<[number, number][]> {
  const batches: RangeBatch[] = [];
  const scheduler = new RangeScheduler<RangeRead>(
    { maxRequestsPerOrigin: 6, maxGapBytes: 100, maxRequestBytes: 1_000_000, ...settings },
    async (batch) => {
      batches.push(batch);
      for (const waiter of batch.waiters) waiter.resolve(new Uint8Array(waiter.read.entry.sizeBytes));
    },
    keepOut,
  );
  const signal = new AbortController().signal;
  await Promise.all(
    members.map(([offset, size], i) =>
      scheduler.read('http://h', 'b', 'http://h/b.awkb', { entry: entry(offset, size), path: `m${i}` }, signal),
    ),
  );
  return batches.map((batch) => [batch.offset, batch.length]);
}

test('the gap rule is one: a gap closer than maxGapBytes joins, exactly maxGapBytes does not, touching always does', async () => {
  expect([gapJoins(99, 100), gapJoins(100, 100), gapJoins(0, 0), gapJoins(-5, 0), gapJoins(1, 0)]).toEqual([
    true,
    false,
    true,
    true,
    false,
  ]);
  // The scheduler and the delta plan agree at the boundary.
  expect(
    await batchesOf([
      [0, 10],
      [109, 10],
    ]),
  ).toEqual([[0, 119]]);
  expect(
    await batchesOf([
      [0, 10],
      [110, 10],
    ]),
  ).toEqual([
    [0, 10],
    [110, 10],
  ]);
  expect(
    await batchesOf(
      [
        [0, 10],
        [10, 10],
      ],
      { maxGapBytes: 0 },
    ),
  ).toEqual([[0, 20]]);
  const members = [
    { sha256: 'a', offset: 0, sizeBytes: 10 },
    { sha256: 'b', offset: 109, sizeBytes: 10 },
    { sha256: 'c', offset: 1000, sizeBytes: 10 },
    { sha256: 'd', offset: 1110, sizeBytes: 10 },
  ];
  expect(planDeltaRanges(100_000, members, new Set(['a', 'b', 'c', 'd']), { maxGapBytes: 100, maxMissingFraction: 1 }).ranges).toEqual([
    { start: 0, end: 119 },
    { start: 1000, end: 1010 },
    { start: 1110, end: 1120 },
  ]);
  expect(await batchesOf(members.map((member) => [member.offset, member.sizeBytes]))).toEqual([
    [0, 119],
    [1000, 10],
    [1110, 10],
  ]);
});

test('a span stays within maxRequestBytes, and never joins across bytes the page has', async () => {
  expect(
    await batchesOf(
      [
        [0, 60],
        [60, 60],
        [120, 60],
      ],
      { maxRequestBytes: 130 },
    ),
  ).toEqual([
    [0, 120],
    [120, 60],
  ]);
  const had = (bundleSha: string, from: number, to: number) => from < 50 && to > 40;
  expect(
    await batchesOf(
      [
        [0, 20],
        [60, 20],
      ],
      {},
      had,
    ),
  ).toEqual([
    [0, 20],
    [60, 20],
  ]);
  expect(
    await batchesOf([
      [0, 20],
      [60, 20],
    ]),
  ).toEqual([[0, 80]]);
});

test('at most maxRequestsPerOrigin requests in flight; the others wait their turn', async () => {
  let inFlight = 0;
  let most = 0;
  const release: (() => void)[] = [];
  const scheduler = new RangeScheduler<RangeRead>({ maxRequestsPerOrigin: 2, maxGapBytes: 0, maxRequestBytes: 1_000_000 }, (batch) => {
    inFlight++;
    most = Math.max(most, inFlight);
    return new Promise<void>((resolve) =>
      release.push(() => {
        inFlight--;
        for (const waiter of batch.waiters) waiter.resolve(new Uint8Array(1));
        resolve();
      }),
    );
  });
  const signal = new AbortController().signal;
  const reads = [0, 10, 20, 30, 40].map((offset, i) =>
    scheduler.read('http://h', `b${i}`, `http://h/b${i}.awkb`, { entry: entry(offset, 1), path: `m${i}` }, signal),
  );
  // The scheduler sends on its next task (it gathers the reads of one moment first): each turn,
  // at most two are out; releasing one lets the next go.
  let answered = 0;
  void Promise.all(reads).then(() => (answered = reads.length));
  for (let turn = 0; answered < reads.length && turn < 100; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(inFlight).toBeLessThanOrEqual(2);
    release.shift()?.();
  }
  await Promise.all(reads);
  expect(most).toBe(2);
});

describe('the cap on ranges never joins across bytes kept out', () => {
  // 12 members of 1000 bytes back to back; the even ones missing, the odd ones had already.
  const members = Array.from({ length: 12 }, (_, i) => ({ offset: i * 1000, sizeBytes: 1000, sha256: `${i}`.padStart(64, '0') }));
  const missing = new Set(members.filter((_, i) => i % 2 === 0).map((member) => member.sha256));

  test('without keepOutGapBytes, 6 spans are joined down to 4 ranges, across had members', () => {
    const plan = planDeltaRanges(12_000, members, missing, { maxGapBytes: 0, maxMissingFraction: 1, maxRanges: 4 });
    expect(plan.ranges).toHaveLength(4);
    expect(plan.bytes).toBeGreaterThan(6000);
  });

  test('with keepOutGapBytes no larger than a had member, every gap is a cut: 6 ranges of exactly the missing bytes', () => {
    const plan = planDeltaRanges(12_000, members, missing, { maxGapBytes: 0, maxMissingFraction: 1, maxRanges: 4, keepOutGapBytes: 999 });
    expect(plan.ranges).toEqual(members.filter((_, i) => i % 2 === 0).map(({ offset }) => ({ start: offset, end: offset + 1000 })));
    expect(plan.bytes).toBe(6000);
  });

  test('gaps under keepOutGapBytes still join to keep to the cap', () => {
    // Five missing members 10 bytes apart, but for a had member of 1000 bytes between the third and fourth.
    const at = [0, 1010, 2020, 4020, 5030];
    const spaced = at.map((offset, i) => ({ offset, sizeBytes: 1000, sha256: `m${i}`.padStart(64, '0') }));
    const had = { offset: 3020, sizeBytes: 1000, sha256: 'had'.padStart(64, '0') };
    const wanted = new Set(spaced.map((member) => member.sha256));
    const plan = planDeltaRanges(6030, [...spaced, had], wanted, {
      maxGapBytes: 0,
      maxMissingFraction: 1,
      maxRanges: 2,
      keepOutGapBytes: 999,
    });
    expect(plan.ranges).toEqual([
      { start: 0, end: 3020 },
      { start: 4020, end: 6030 },
    ]);
  });
});
