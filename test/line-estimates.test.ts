/**
 * The parts of needed bytes (SPEC §7 "Needed bytes") that price a request and gather a load,
 * on their own (core/read/plan/needed-bytes.ts): `LineEstimates`, the line to each origin that
 * says what one more request costs in bytes (the shortest wait to first bytes, times the fastest
 * large body's rate, clamped; or a fixed number); `neededBytesSettings`, the option checked; and
 * `CacheLookups`, the count of reads still asking the cache per load key that a load waits for
 * before it plans, so that reads started together are one load. The end-to-end suite
 * (needed-bytes.test.ts) sees these only through the ranges a server was asked for; here every
 * expected number is computed from the samples given.
 */
import { InvalidOptionError } from '../core/internal.js';
import {
  ASSUMED_BYTES_PER_SECOND,
  ASSUMED_ROUND_TRIP_MS,
  CacheLookups,
  GATHER_LIMIT_MS,
  LineEstimates,
  MAX_ROUND_TRIP_BYTES,
  MIN_ROUND_TRIP_BYTES,
  neededBytesSettings,
  networkWaitMs,
} from '../core/read/plan/needed-bytes.js';

const KiB = 1024;
const MiB = 1024 * KiB;
/** The smallest body the estimate takes a rate from (the module's own limit: smaller ones end within a few packets). */
const LARGE_BODY = 128 * KiB;
const CDN = 'https://cdn.example';
const bundleUrl = `${CDN}/game/bundles/one.awkb`;

/** What the estimate should say for a round trip of `ms` at `bytesPerSecond`: the product, clamped, rounded. */
const expected = (ms: number, bytesPerSecond: number) =>
  Math.round(Math.min(MAX_ROUND_TRIP_BYTES, Math.max(MIN_ROUND_TRIP_BYTES, (ms / 1000) * bytesPerSecond)));

describe('LineEstimates: one round trip’s bytes per origin', () => {
  test('an unmeasured line: the assumed round trip at the assumed rate', () => {
    const lines = new LineEstimates({});
    expect(lines.roundTripBytes(bundleUrl)).toBe(expected(ASSUMED_ROUND_TRIP_MS, ASSUMED_BYTES_PER_SECOND));
    // Inside the clamps, so the assumption itself is what shows.
    expect((ASSUMED_ROUND_TRIP_MS / 1000) * ASSUMED_BYTES_PER_SECOND).toBeGreaterThan(MIN_ROUND_TRIP_BYTES);
    expect((ASSUMED_ROUND_TRIP_MS / 1000) * ASSUMED_BYTES_PER_SECOND).toBeLessThan(MAX_ROUND_TRIP_BYTES);
  });

  test('the round trip is the shortest wait seen; a longer one later does not raise it; a negative or NaN wait is no sample', () => {
    const lines = new LineEstimates({});
    lines.observe(bundleUrl, { waitedMs: 30 });
    expect(lines.roundTripBytes(bundleUrl)).toBe(expected(30, ASSUMED_BYTES_PER_SECOND));
    lines.observe(bundleUrl, { waitedMs: 90 });
    expect(lines.roundTripBytes(bundleUrl)).toBe(expected(30, ASSUMED_BYTES_PER_SECOND));
    lines.observe(bundleUrl, { waitedMs: 20 });
    expect(lines.roundTripBytes(bundleUrl)).toBe(expected(20, ASSUMED_BYTES_PER_SECOND));
    lines.observe(bundleUrl, { waitedMs: -5 });
    lines.observe(bundleUrl, { waitedMs: Number.NaN });
    expect(lines.roundTripBytes(bundleUrl)).toBe(expected(20, ASSUMED_BYTES_PER_SECOND));
  });

  test('the rate comes from the fastest body of at least 128 KiB with a measured time; smaller or untimed bodies say nothing', () => {
    const lines = new LineEstimates({});
    const waitedMs = 50;
    const assumed = expected(waitedMs, ASSUMED_BYTES_PER_SECOND);
    lines.observe(bundleUrl, { waitedMs, bytes: LARGE_BODY - 1, bodyMs: 1 });
    lines.observe(bundleUrl, { waitedMs, bytes: 4 * MiB, bodyMs: 0 });
    lines.observe(bundleUrl, { waitedMs, bytes: 4 * MiB });
    expect(lines.roundTripBytes(bundleUrl)).toBe(assumed);
    // Exactly the limit counts: 128 KiB in 20 ms.
    lines.observe(bundleUrl, { waitedMs, bytes: LARGE_BODY, bodyMs: 20 });
    const first = (LARGE_BODY * 1000) / 20;
    expect(lines.roundTripBytes(bundleUrl)).toBe(expected(waitedMs, first));
    // A slower body later keeps the faster rate; a faster one replaces it.
    lines.observe(bundleUrl, { waitedMs, bytes: MiB, bodyMs: 1000 });
    expect(lines.roundTripBytes(bundleUrl)).toBe(expected(waitedMs, first));
    lines.observe(bundleUrl, { waitedMs, bytes: 2 * MiB, bodyMs: 100 });
    expect(lines.roundTripBytes(bundleUrl)).toBe(expected(waitedMs, (2 * MiB * 1000) / 100));
  });

  test('clamped to 16 KiB … 8 MiB, and rounded to whole bytes', () => {
    const quick = new LineEstimates({});
    quick.observe(bundleUrl, { waitedMs: 1 }); // 1 ms at the assumed rate: 2,500 bytes
    expect(quick.roundTripBytes(bundleUrl)).toBe(MIN_ROUND_TRIP_BYTES);
    const far = new LineEstimates({});
    far.observe(bundleUrl, { waitedMs: 2000, bytes: 64 * MiB, bodyMs: 100 }); // 2 s at 640 MiB/s
    expect(far.roundTripBytes(bundleUrl)).toBe(MAX_ROUND_TRIP_BYTES);
    const odd = new LineEstimates({});
    odd.observe(bundleUrl, { waitedMs: 33.3, bytes: LARGE_BODY, bodyMs: 7 });
    const exact = (33.3 / 1000) * ((LARGE_BODY * 1000) / 7);
    expect(Number.isInteger(exact)).toBe(false);
    expect(odd.roundTripBytes(bundleUrl)).toBe(Math.round(exact));
  });

  test('per origin: paths of one origin share a line, another origin’s samples leave it alone', () => {
    const lines = new LineEstimates({});
    lines.observe(`${CDN}/game/project.index.json`, { waitedMs: 10, bytes: MiB, bodyMs: 50 });
    const measured = expected(10, (MiB * 1000) / 50);
    expect(lines.roundTripBytes(bundleUrl)).toBe(measured);
    lines.observe('https://other.example/game/bundles/one.awkb', { waitedMs: 1, bytes: 8 * MiB, bodyMs: 1 });
    expect(lines.roundTripBytes(bundleUrl)).toBe(measured);
    expect(lines.roundTripBytes(`${CDN}:8443/game/bundles/one.awkb`)).toBe(expected(ASSUMED_ROUND_TRIP_MS, ASSUMED_BYTES_PER_SECOND));
  });

  test('a fixed `roundTripBytes` wins over every sample, and is not clamped', () => {
    for (const fixed of [0, 100, 64 * MiB]) {
      const lines = new LineEstimates({ roundTripBytes: fixed });
      expect(lines.roundTripBytes(bundleUrl)).toBe(fixed);
      lines.observe(bundleUrl, { waitedMs: 100, bytes: MiB, bodyMs: 10 });
      expect(lines.roundTripBytes(bundleUrl)).toBe(fixed);
    }
  });
});

describe('networkWaitMs: the network’s own wait, from Resource Timing', () => {
  afterEach(() => jest.restoreAllMocks());
  const timing = (requestStart: number, responseStart: number) => ({ requestStart, responseStart }) as unknown as PerformanceEntry;

  test('request sent → first response byte of the latest entry for the URL', () => {
    const spy = jest.spyOn(performance, 'getEntriesByName').mockReturnValue([timing(10, 500), timing(1000, 1042.5)]);
    expect(networkWaitMs(bundleUrl)).toBe(42.5);
    expect(spy).toHaveBeenCalledWith(bundleUrl, 'resource');
  });

  test('undefined with no entry, with hidden times (another origin without Timing-Allow-Origin), or when asking throws', () => {
    jest.spyOn(performance, 'getEntriesByName').mockReturnValueOnce([]);
    expect(networkWaitMs(bundleUrl)).toBeUndefined();
    jest.spyOn(performance, 'getEntriesByName').mockReturnValueOnce([timing(0, 0)]);
    expect(networkWaitMs(bundleUrl)).toBeUndefined();
    jest.spyOn(performance, 'getEntriesByName').mockReturnValueOnce([timing(100, 50)]);
    expect(networkWaitMs(bundleUrl)).toBeUndefined();
    // No page to resolve a relative URL against (Node): no answer rather than an error.
    expect(networkWaitMs('bundles/one.awkb')).toBeUndefined();
  });
});

describe('neededBytesSettings: the option checked', () => {
  test('false turns needed bytes off; true, nothing or {} is on with a measured line; a round trip may be fixed', () => {
    expect(neededBytesSettings(false)).toBeUndefined();
    expect(neededBytesSettings(true)).toEqual({});
    expect(neededBytesSettings(undefined)).toEqual({});
    expect(neededBytesSettings({})).toEqual({});
    expect(neededBytesSettings({ roundTripBytes: undefined })).toEqual({});
    expect(neededBytesSettings({ roundTripBytes: 0 })).toEqual({ roundTripBytes: 0 });
    expect(neededBytesSettings({ roundTripBytes: 40 * KiB })).toEqual({ roundTripBytes: 40 * KiB });
  });

  /** The error `option` throws, checked to be an InvalidOptionError. */
  const refusal = (option: unknown): InvalidOptionError => {
    try {
      neededBytesSettings(option as boolean);
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidOptionError);
      return error as InvalidOptionError;
    }
    throw new Error(`neededBytesSettings(${String(option)}) did not throw`);
  };

  test.each([['yes'], [1], [null], [() => true]])('not a boolean or an object (%p): refused, naming neededBytes', (option) => {
    const error = refusal(option);
    expect(error.option).toBe('neededBytes');
    expect(error.code).toBe('E_OPTION');
    expect(error.message).toContain(String(option));
  });

  test.each([[-1], [1.5], [Number.NaN], [Number.POSITIVE_INFINITY], [2 ** 53], ['4096']])(
    'roundTripBytes %p: refused, naming neededBytes.roundTripBytes and the value',
    (roundTripBytes) => {
      const error = refusal({ roundTripBytes });
      expect(error.option).toBe('neededBytes.roundTripBytes');
      expect(error.message).toContain(String(roundTripBytes));
    },
  );
});

describe('CacheLookups: a load waits for the reads of its bundle still asking the cache', () => {
  /** Whether `promise` has settled, looked at after the microtasks queued so far ran. */
  async function settled(promise: Promise<void>): Promise<boolean> {
    let done = false;
    void promise.then(() => (done = true));
    for (let i = 0; i < 5; i++) await Promise.resolve();
    return done;
  }

  afterEach(() => jest.useRealTimers());

  test('nothing to wait for where no read of that key is asking', () => {
    const lookups = new CacheLookups();
    expect(lookups.quiet('bundle-a')).toBeUndefined();
    lookups.begin('bundle-b');
    expect(lookups.quiet('bundle-a')).toBeUndefined();
    lookups.end('bundle-b');
    expect(lookups.quiet('bundle-b')).toBeUndefined();
  });

  test('quiet once the last read of the key has its answer, not before; every waiter wakes, and no timer is left', async () => {
    jest.useFakeTimers();
    const lookups = new CacheLookups();
    lookups.begin('bundle-a');
    lookups.begin('bundle-a');
    lookups.begin('bundle-b');
    const first = lookups.quiet('bundle-a')!;
    const second = lookups.quiet('bundle-a')!;
    lookups.end('bundle-a');
    expect(await settled(first)).toBe(false);
    // Another key's answer is not this key's.
    lookups.end('bundle-b');
    expect(await settled(first)).toBe(false);
    lookups.end('bundle-a');
    expect(await settled(first)).toBe(true);
    expect(await settled(second)).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
    expect(lookups.quiet('bundle-a')).toBeUndefined();
  });

  test(`a cache that hangs holds a load back at most ${GATHER_LIMIT_MS} ms`, async () => {
    jest.useFakeTimers();
    const lookups = new CacheLookups();
    lookups.begin('bundle-a');
    const quiet = lookups.quiet('bundle-a')!;
    jest.advanceTimersByTime(GATHER_LIMIT_MS - 1);
    expect(await settled(quiet)).toBe(false);
    jest.advanceTimersByTime(1);
    expect(await settled(quiet)).toBe(true);
    // The read still asks: a later load waits again (its own limit).
    const again = lookups.quiet('bundle-a')!;
    expect(again).toBeDefined();
    lookups.end('bundle-a');
    expect(await settled(again)).toBe(true);
  });

  test('an end with no begin leaves the count at nothing: the next read is counted afresh', async () => {
    const lookups = new CacheLookups();
    lookups.end('bundle-a');
    expect(lookups.quiet('bundle-a')).toBeUndefined();
    lookups.begin('bundle-a');
    const quiet = lookups.quiet('bundle-a')!;
    expect(await settled(quiet)).toBe(false);
    lookups.end('bundle-a');
    expect(await settled(quiet)).toBe(true);
  });
});
