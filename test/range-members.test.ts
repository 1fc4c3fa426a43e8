/**
 * `RangeMembers` (core/read/fetch/range-members.ts) on its own: the members of a load that come
 * by byte ranges of their bundle (SPEC §7 "Needed bytes", "Range reads"). Each member is cut
 * from the range answers as its bytes arrive, checked alone against its entry's SHA-256 (an
 * encoded member once decoded, SPEC §5a) and handed over as soon as it passed, before the rest
 * of its ranges (SPEC §7 "Verified": every byte handed to a caller has been checked). A member
 * that fails is never handed over, and the load fails with a typed `BundleIntegrityError` naming
 * it (SPEC §7 "Errors"); nothing of that load is then kept for the cache. End-to-end tests see
 * this only through a server; here the sinks are fed the real bytes of a bundle the writer built,
 * as the transport feeds them (absolute offsets, pieces of any size, one sink per attempt), and
 * hashed by the real `InThreadDigests` pool.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BundleIntegrityError, MemberDecodeError } from '../core/errors.js';
import { MemoryCache } from '../core/cache/index.js';
import type { BundledIndex, BundleEntry } from '../core/format/project-index.js';
import { publishFolder } from '../core/node/index.js';
import { RangeMembers } from '../core/read/fetch/range-members.js';
import type { FetchCallbacks } from '../core/read/fetch/fetched.js';
import { IndexView, type Entry } from '../core/read/open/index-view.js';
import type { ByteRange } from '../core/read/plan/delta-ranges.js';
import { VerifiedCache } from '../core/read/state/verified-cache.js';
import { spanOf } from '../core/read/verify/verify.js';
import { InThreadDigests, type DigestJob, type DigestPool } from '../core/read/workers/digest-jobs.js';
import { temporaryDir } from './helpers/cli.js';
import { seededBytes, sha256Hex, writeTree } from './helpers/trees.js';
import { text } from './helpers/encoded-sites.js';
import { MIXED_FILES } from './helpers/mixed-files.js';

/** One bundle (one group) of every kind of member (helpers/mixed-files.ts). */
const FILES = MIXED_FILES;
const URL_OF_BUNDLE = 'https://cdn.example/bundles/x.awkb';

let index: BundledIndex;
let bundle: BundleEntry;
let bundleBytes: Uint8Array;
let view: IndexView;
const member = (path: string): Entry => view.entry(path)!;

beforeAll(async () => {
  const tree = temporaryDir('awkb-range-members-tree-');
  writeTree(tree, FILES);
  const out = temporaryDir('awkb-range-members-out-');
  ({ index } = await publishFolder({ folder: tree, outDir: out, grouping: () => 'one' }));
  expect(index.bundles).toHaveLength(1);
  bundle = index.bundles[0]!;
  bundleBytes = new Uint8Array(readFileSync(join(out, bundle.url)));
  view = await IndexView.open(index, undefined, undefined);
  // The fixture is what the tests below rely on: text members encoded, the rest stored as they are.
  expect(member('b/level.json').encoding).toBe('deflate-raw');
  expect(member('c/map.json').encoding).toBe('deflate-raw');
  expect(member('a/noise.bin').encoding).toBeUndefined();
  expect(member('b/copy.bin').offset).toBe(member('a/noise.bin').offset);
});

/** What a `RangeMembers` handed over, and the parts it was given. */
function rangeMembers(missing: Entry[], options: { cache?: boolean; pool?: DigestPool; onContent?: (bytes: Uint8Array) => void } = {}) {
  const pool = options.pool ?? new InThreadDigests();
  const cache = new VerifiedCache(options.cache === false ? undefined : new MemoryCache(), pool, undefined, (sha) =>
    view.contentEntry(sha),
  );
  const handed: { sha256: string; bytes: Uint8Array }[] = [];
  const callbacks: FetchCallbacks = {
    signal: new AbortController().signal,
    onContent: (sha256, bytes) => {
      handed.push({ sha256, bytes: bytes.slice() });
      options.onContent?.(bytes);
    },
  };
  const members = new RangeMembers(missing, pool, cache, callbacks);
  /** Hex of what was handed over, by SHA-256 (each content at most once, else the test fails). */
  const handedOver = () => {
    const bySha: Record<string, string> = {};
    for (const { sha256, bytes } of handed) {
      expect(bySha[sha256]).toBeUndefined();
      bySha[sha256] = hex(bytes);
    }
    return bySha;
  };
  return { members, handed, handedOver };
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
/** The decoded bytes the index lists for each of `paths`, by SHA-256, as hex. */
const expectedOf = (paths: string[]) => Object.fromEntries(paths.map((path) => [member(path).sha256, hex(FILES[path]!)]));
const exactRange = (entry: Entry): ByteRange => ({ offset: entry.offset!, length: spanOf(entry) });
/** The range from the first of `entries` to the end of the last (members between included). */
function spanning(...entries: Entry[]): ByteRange {
  const start = Math.min(...entries.map((entry) => entry.offset!));
  const end = Math.max(...entries.map((entry) => entry.offset! + spanOf(entry)));
  return { offset: start, length: end - start };
}

/** Feeds `range` of `bytes` to `sink` in pieces of `size`, at their bundle offsets, as the transport does. */
function feed(sink: { data(offset: number, bytes: Uint8Array): void }, range: ByteRange, size: number, bytes = bundleBytes): void {
  const end = range.offset + range.length;
  for (let at = range.offset; at < end; at += size) sink.data(at, bytes.subarray(at, Math.min(at + size, end)));
}

/** Resolves once `condition` holds (checked every turn of the event loop), failing after a while. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turns = 0; !condition(); turns++) {
    if (turns > 2000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** `bundleBytes` with byte `at` changed. */
function damagedAt(at: number): Uint8Array {
  const copy = bundleBytes.slice();
  copy[at] = copy[at]! ^ 0x40;
  return copy;
}

/** The `BundleIntegrityError` that `done` rejects with. */
async function refusal(members: RangeMembers): Promise<BundleIntegrityError> {
  const error = await members.done(bundle, URL_OF_BUNDLE, view).then(
    () => {
      throw new Error('done() accepted the load');
    },
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(BundleIntegrityError);
  return error as BundleIntegrityError;
}

const ALL = Object.keys(FILES);
/** Distinct contents that take bytes in the bundle. */
const NON_EMPTY = ALL.filter((path) => path !== 'a/empty.txt' && path !== 'b/copy.bin');

test.each([
  ['1 byte', 1],
  ['7 bytes', 7],
  ['4096 bytes', 4096],
  ['the whole range', Number.MAX_SAFE_INTEGER],
])(
  'one range over the whole data, in pieces of %s: every distinct content handed over once, decoded, and kept for the cache',
  async (_, size) => {
    const missing = ALL.map(member);
    const { members, handedOver } = rangeMembers(missing);
    feed(members.sink([spanning(...missing)]), spanning(...missing), size);
    const { forCache } = await members.done(bundle, URL_OF_BUNDLE, view);
    expect(handedOver()).toEqual(expectedOf(ALL));
    expect(Object.fromEntries(forCache.map(([sha, bytes]) => [sha, hex(bytes)]))).toEqual(expectedOf(ALL));
    // One entry per content: the one listed twice is brought and kept once.
    expect(forCache).toHaveLength(new Set(ALL.map((path) => member(path).sha256)).size);
  },
);

test('the empty content passes at once; a member is handed over as soon as its bytes are in, before the rest of its range', async () => {
  const missing = ['a/empty.txt', 'a/noise.bin', 'b/level.json', 'd/big.bin'].map(member);
  const { members, handedOver } = rangeMembers(missing);
  // Nothing fed yet: only the empty content, which lies in no range.
  await until(() => Object.keys(handedOver()).length === 1, 'the empty content');
  expect(handedOver()).toEqual(expectedOf(['a/empty.txt']));

  const range = spanning(...missing);
  const sink = members.sink([range]);
  const noise = member('a/noise.bin');
  // The range up to the end of noise.bin, and 100 bytes of what follows it.
  const firstPart = { offset: range.offset, length: noise.offset! + noise.sizeBytes + 100 - range.offset };
  feed(sink, firstPart, 333);
  await until(() => Object.keys(handedOver()).length === 2, 'noise.bin');
  expect(handedOver()).toEqual(expectedOf(['a/empty.txt', 'a/noise.bin']));

  feed(sink, { offset: firstPart.offset + firstPart.length, length: range.length - firstPart.length }, 1000);
  await members.done(bundle, URL_OF_BUNDLE, view);
  expect(handedOver()).toEqual(expectedOf(['a/empty.txt', 'a/noise.bin', 'b/level.json', 'd/big.bin']));
});

test('only the missing members are cut: bytes of members between them in the range are skipped', async () => {
  const missing = ['a/noise.bin', 'd/big.bin'].map(member);
  const { members, handedOver } = rangeMembers(missing);
  const range = spanning(...missing);
  // The members in between are in the range; damaging them must not matter.
  const level = member('b/level.json');
  feed(members.sink([range]), range, 2048, damagedAt(level.offset! + 10));
  const { forCache } = await members.done(bundle, URL_OF_BUNDLE, view);
  expect(handedOver()).toEqual(expectedOf(['a/noise.bin', 'd/big.bin']));
  expect(forCache.map(([sha]) => sha).sort()).toEqual(missing.map((entry) => entry.sha256).sort());
});

test('ranges answered one per request, finishing in any order, each through a sink of its own', async () => {
  const paths = ['c/tiny.txt', 'b/level.json', 'd/big.bin', 'c/map.json'];
  const missing = paths.map(member);
  const { members, handedOver } = rangeMembers(missing);
  const ranges = missing.map(exactRange);
  const sinks = ranges.map((range) => members.sink([range]));
  // Answers in reverse order, in pieces of different sizes.
  for (let i = ranges.length - 1; i >= 0; i--) feed(sinks[i]!, ranges[i]!, 17 + i * 500);
  await members.done(bundle, URL_OF_BUNDLE, view);
  expect(handedOver()).toEqual(expectedOf(paths));
});

test('one multi-range answer whose parts come in another order than asked', async () => {
  const paths = ['a/noise.bin', 'c/map.json', 'd/big.bin'];
  const missing = paths.map(member);
  const { members, handedOver } = rangeMembers(missing);
  const ranges = missing.map(exactRange);
  const sink = members.sink(ranges);
  for (const range of [ranges[2]!, ranges[0]!, ranges[1]!]) feed(sink, range, 4000);
  await members.done(bundle, URL_OF_BUNDLE, view);
  expect(handedOver()).toEqual(expectedOf(paths));
});

test('a sink copies the bytes it is given: a transport that reuses its buffer after each call changes nothing', async () => {
  const paths = ['a/noise.bin', 'b/level.json', 'c/map.json', 'c/tiny.txt'];
  const missing = paths.map(member);
  const { members, handedOver } = rangeMembers(missing);
  const range = spanning(...missing);
  const sink = members.sink([range]);
  const scratch = new Uint8Array(1500);
  for (let at = range.offset; at < range.offset + range.length; at += scratch.length) {
    const piece = bundleBytes.subarray(at, Math.min(at + scratch.length, range.offset + range.length));
    scratch.set(piece);
    sink.data(at, scratch.subarray(0, piece.length));
    scratch.fill(0xee);
  }
  await members.done(bundle, URL_OF_BUNDLE, view);
  expect(handedOver()).toEqual(expectedOf(paths));
});

describe('a damaged member', () => {
  test('is not handed over, the others are; done() fails naming it, and nothing is kept for the cache', async () => {
    const missing = NON_EMPTY.map(member);
    const big = member('d/big.bin');
    const { members, handedOver } = rangeMembers(missing);
    const range = spanning(...missing);
    feed(members.sink([range]), range, 4096, damagedAt(big.offset! + big.sizeBytes - 1));
    const error = await refusal(members);
    expect(error.code).toBe('E_BUNDLE_INTEGRITY');
    expect(error.part).toBe('members');
    expect(error.damaged).toEqual(['d/big.bin']);
    expect(error.url).toBe(URL_OF_BUNDLE);
    expect(error.message).toContain(`bundle ${bundle.sha256}: damaged member "d/big.bin" in the ranges of a delta read`);
    expect(error.cause).toBeUndefined();
    // Each member is checked alone: the good ones were handed over.
    expect(handedOver()).toEqual(expectedOf(NON_EMPTY.filter((path) => path !== 'd/big.bin')));
  });

  test('a content listed under two paths is named by both', async () => {
    const missing = [member('a/noise.bin'), member('c/tiny.txt')];
    const { members, handedOver } = rangeMembers(missing);
    const ranges = missing.map(exactRange);
    const damaged = damagedAt(member('a/noise.bin').offset! + 2500);
    const sink = members.sink(ranges);
    for (const range of ranges) feed(sink, range, 999, damaged);
    const error = await refusal(members);
    expect([...error.damaged].sort()).toEqual(['a/noise.bin', 'b/copy.bin']);
    expect(error.message).toContain('damaged members "a/noise.bin", "b/copy.bin"');
    expect(handedOver()).toEqual(expectedOf(['c/tiny.txt']));
  });

  test('an encoded member with a changed stored byte is refused', async () => {
    const level = member('b/level.json');
    const { members, handed } = rangeMembers([level]);
    feed(members.sink([exactRange(level)]), exactRange(level), 512, damagedAt(level.offset! + Math.floor(level.storedBytes! / 2)));
    const error = await refusal(members);
    expect(error.damaged).toEqual(['b/level.json']);
    expect(handed).toEqual([]);
  });

  test('an encoded member whose stored bytes are no deflate stream: refused, with the decode error as cause', async () => {
    const map = member('c/map.json');
    const tiny = member('c/tiny.txt');
    const { members, handedOver } = rangeMembers([map, tiny]);
    const garbage = bundleBytes.slice();
    garbage.fill(0xff, map.offset!, map.offset! + map.storedBytes!);
    const range = spanning(map, tiny);
    feed(members.sink([range]), range, 100, garbage);
    const error = await refusal(members);
    expect(error.damaged).toEqual(['c/map.json']);
    expect(error.cause).toBeInstanceOf(MemberDecodeError);
    const cause = error.cause as MemberDecodeError;
    expect(cause.key).toBe('c/map.json');
    expect(cause.encoding).toBe('deflate-raw');
    expect(cause.problem).toBe('corrupt');
    expect(error.message).toContain(`; ${cause.message}`);
    expect(handedOver()).toEqual(expectedOf(['c/tiny.txt']));
  });

  test('a pool that reports the right SHA-256 for a decoded member of the wrong size is not believed', async () => {
    // A pool of one's own (`hashWorkers`) that gets decoding wrong: one byte short, digest as expected.
    const real = new InThreadDigests();
    const lying: DigestPool = {
      async digest(job: DigestJob) {
        const result = await real.digest(job);
        if (!result.parts) return result;
        return { ...result, parts: result.parts.map((part) => part.subarray(0, part.length - 1)) };
      },
      terminate() {},
    };
    const level = member('b/level.json');
    const { members, handed } = rangeMembers([level], { pool: lying });
    feed(members.sink([exactRange(level)]), exactRange(level), 4096);
    const error = await refusal(members);
    expect(error.damaged).toEqual(['b/level.json']);
    expect(handed).toEqual([]);
  });
});

describe('attempts', () => {
  test('after an answer that broke off, the next attempt cuts only what has not passed, afresh', async () => {
    const paths = ['a/noise.bin', 'b/level.json', 'c/map.json'];
    const missing = paths.map(member);
    const { members, handed, handedOver } = rangeMembers(missing);
    const range = spanning(...missing);
    const level = member('b/level.json');
    // Attempt 1: noise.bin whole, then half of level.json's stored bytes; the answer breaks off.
    feed(members.sink([range]), { offset: range.offset, length: level.offset! + level.storedBytes! / 2 - range.offset }, 700);
    await until(() => handed.length === 1, 'noise.bin');
    // Attempt 2 answers the whole range again, with noise.bin's bytes damaged this time: it
    // passed already, so it is not cut again, and level.json is cut from attempt 2's bytes alone.
    const noise = member('a/noise.bin');
    feed(members.sink([range]), range, 700, damagedAt(noise.offset! + 1));
    const { forCache } = await members.done(bundle, URL_OF_BUNDLE, view);
    expect(handedOver()).toEqual(expectedOf(paths));
    expect(forCache).toHaveLength(3);
  });

  test('two attempts in flight that both bring a content hand it over once', async () => {
    const missing = ['c/tiny.txt', 'd/big.bin'].map(member);
    const { members, handedOver } = rangeMembers(missing);
    const range = spanning(...missing);
    const first = members.sink([range]);
    const second = members.sink([range]);
    feed(first, range, 10_000);
    feed(second, range, 3);
    const { forCache } = await members.done(bundle, URL_OF_BUNDLE, view);
    expect(handedOver()).toEqual(expectedOf(['c/tiny.txt', 'd/big.bin']));
    expect(forCache.map(([sha]) => sha).sort()).toEqual(missing.map((entry) => entry.sha256).sort());
  });

  test('the same entry asked twice (two paths, one content) is one content to bring', async () => {
    const { members, handedOver } = rangeMembers([member('a/noise.bin'), member('b/copy.bin'), member('a/noise.bin')]);
    const range = exactRange(member('a/noise.bin'));
    feed(members.sink([range]), range, 5000);
    const { forCache } = await members.done(bundle, URL_OF_BUNDLE, view);
    expect(handedOver()).toEqual(expectedOf(['a/noise.bin']));
    expect(forCache).toHaveLength(1);
  });
});

describe('the copies kept for the cache', () => {
  test('with no cache, nothing is kept', async () => {
    const missing = ['c/tiny.txt', 'b/level.json'].map(member);
    const { members, handedOver } = rangeMembers(missing, { cache: false });
    const range = spanning(...missing);
    feed(members.sink([range]), range, 4096);
    expect(await members.done(bundle, URL_OF_BUNDLE, view)).toEqual({ forCache: [] });
    expect(handedOver()).toEqual(expectedOf(['c/tiny.txt', 'b/level.json']));
  });

  test('are taken before the hand-over: a game that detaches or scribbles on what it got leaves them whole', async () => {
    const paths = ['a/noise.bin', 'b/level.json', 'd/big.bin'];
    const missing = paths.map(member);
    let n = 0;
    const { members } = rangeMembers(missing, {
      // Phaser gives audio to decodeAudioData, which detaches the buffer; others write into it.
      onContent: (bytes) => (n++ % 2 === 0 ? structuredClone(bytes.buffer, { transfer: [bytes.buffer as ArrayBuffer] }) : bytes.fill(0)),
    });
    const range = spanning(...missing);
    feed(members.sink([range]), range, 4096);
    const { forCache } = await members.done(bundle, URL_OF_BUNDLE, view);
    expect(n).toBe(3);
    expect(Object.fromEntries(forCache.map(([sha, bytes]) => [sha, hex(bytes)]))).toEqual(expectedOf(paths));
    for (const [sha, bytes] of forCache) expect(sha256Hex(bytes)).toBe(sha);
  });
});

test('a pool that fails (its worker lost) while no one has called done yet leaves no unhandled rejection; done then rejects with its error', async () => {
  const lost = new Error('the worker was lost');
  const failing: DigestPool = { digest: () => Promise.reject(lost), terminate: () => undefined };
  const seen: unknown[] = [];
  const listen = (reason: unknown) => void seen.push(reason);
  process.on('unhandledRejection', listen);
  try {
    const missing = ALL.map(member);
    const { members } = rangeMembers(missing, { pool: failing });
    feed(members.sink([spanning(...missing)]), spanning(...missing), 4096);
    // Turns of the event loop before anyone awaits the checks (an answer that failed first, say).
    await new Promise<void>((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(seen).toEqual([]);
    await expect(members.done(bundle, URL_OF_BUNDLE, view)).rejects.toBe(lost);
  } finally {
    process.off('unhandledRejection', listen);
  }
});

describe('a load of many tiny members over many ranges', () => {
  // 1,536 members of 0–300 bytes in one bundle, every 40th a text of 2 KB that the writer stores
  // deflate-raw, a few empty, a few of one content. Of the contents that take bytes, in data order,
  // every 24th lies between ranges and every 7th inside one is not wanted: 64 ranges, as many as
  // one multi-range request asks for.
  const COUNT = 1536;
  const MANY: Record<string, Uint8Array> = {};
  for (let i = 0; i < COUNT; i++) {
    const name = `m/${String(i).padStart(4, '0')}`;
    if (i % 40 === 5) MANY[`${name}.json`] = text(2000 + (i % 300), i);
    else if (i % 97 === 11) MANY[`${name}.bin`] = seededBytes(150, 42);
    else MANY[`${name}.bin`] = seededBytes((i * 7919) % 301, i);
  }
  let manyBundle: BundleEntry;
  let manyBytes: Uint8Array;
  let manyView: IndexView;
  /** One entry per content that takes bytes, in data order. */
  let byOffset: Entry[];
  let wanted: Entry[];
  let ranges: ByteRange[];

  beforeAll(async () => {
    const tree = temporaryDir('awkb-range-members-many-');
    writeTree(tree, MANY);
    const out = temporaryDir('awkb-range-members-many-out-');
    const published = await publishFolder({ folder: tree, outDir: out, grouping: () => 'one' });
    manyBundle = published.index.bundles[0]!;
    manyBytes = new Uint8Array(readFileSync(join(out, manyBundle.url)));
    manyView = await IndexView.open(published.index, undefined, undefined);
    const entries = Object.keys(MANY).map((path) => manyView.entry(path)!);
    const contents = new Map<string, Entry>();
    for (const entry of entries) if (spanOf(entry) > 0 && !contents.has(entry.sha256)) contents.set(entry.sha256, entry);
    byOffset = [...contents.values()].sort((a, b) => a.offset! - b.offset!);
    wanted = [];
    ranges = [];
    let run: Entry[] = [];
    const endRun = () => {
      if (run.length > 0) ranges.push(spanning(...run));
      run = [];
    };
    byOffset.forEach((entry, k) => {
      if (k % 24 === 0) return endRun();
      run.push(entry);
      if (k % 7 !== 3) wanted.push(entry);
    });
    endRun();
    // Also asked: the empty content (in no range), and a wanted content under its other paths.
    const asked = new Set(wanted.map((entry) => entry.sha256));
    wanted.push(...entries.filter((entry) => !wanted.includes(entry) && (spanOf(entry) === 0 || asked.has(entry.sha256))));
    // What the test relies on: encoded members, a content listed twice, an empty one, and 64 ranges.
    expect(wanted.some((entry) => entry.encoding === 'deflate-raw')).toBe(true);
    expect(new Set(wanted.map((entry) => entry.sha256)).size).toBeLessThan(wanted.length);
    expect(wanted.some((entry) => entry.sizeBytes === 0)).toBe(true);
    expect(ranges).toHaveLength(64);
  });

  /** The decoded bytes of `entries`, by SHA-256, as hex. */
  const expectedOfMany = (entries: Entry[]) => Object.fromEntries(entries.map((entry) => [entry.sha256, hex(MANY[entry.path!]!)]));

  /** Whether `entry` lies whole inside one of `among`. */
  const inside = (entry: Entry, among: ByteRange[]) =>
    among.some((range) => range.offset <= entry.offset! && entry.offset! + spanOf(entry) <= range.offset + range.length);

  /** A pool that counts the members it hashes. */
  function countingPool() {
    const real = new InThreadDigests();
    const pool = { hashed: 0, digest: (job: DigestJob) => ((pool.hashed += job.inputs.length), real.digest(job)), terminate() {} };
    return pool;
  }

  /**
   * Feeds the answer to `ranges` as one stream, parts in the order given, in pieces of awkward
   * sizes (one byte, primes, 64 KiB), a piece that crosses the end of a part given as two calls;
   * each piece a view at an odd offset into a larger buffer, scribbled on once the call returns.
   */
  function feedStream(sink: { data(offset: number, bytes: Uint8Array): void }, parts: readonly ByteRange[]): void {
    const SIZES = [1, 4093, 3, 65_536, 2, 17, 16_381, 511, 1, 40_009];
    const scratch = new Uint8Array(70_000);
    let piece = 0;
    let left = SIZES[0]!;
    for (const { offset, length } of parts) {
      for (let at = offset; at < offset + length;) {
        const size = Math.min(left, offset + length - at);
        scratch.set(manyBytes.subarray(at, at + size), 3);
        sink.data(at, scratch.subarray(3, 3 + size));
        scratch.fill(0xa5);
        at += size;
        left -= size;
        if (left === 0) left = SIZES[++piece % SIZES.length]!;
      }
    }
  }

  test('one multi-range request: every wanted member cut and hashed once, handed over once with its bytes, none between', async () => {
    const pool = countingPool();
    const { members, handedOver } = rangeMembers(wanted, { pool });
    feedStream(members.sink(ranges), ranges);
    const { forCache } = await members.done(manyBundle, URL_OF_BUNDLE, manyView);
    expect(handedOver()).toEqual(expectedOfMany(wanted));
    const contents = new Set(wanted.map((entry) => entry.sha256));
    expect(forCache).toHaveLength(contents.size);
    // The empty content is checked without a range; every other content is cut and hashed once.
    expect(pool.hashed).toBe(contents.size);
  });

  test('one request per range, answered last first: the same members, each once', async () => {
    const pool = countingPool();
    const { members, handedOver } = rangeMembers(wanted, { pool });
    const sinks = ranges.map((range) => members.sink([range]));
    for (let i = ranges.length - 1; i >= 0; i--) feedStream(sinks[i]!, [ranges[i]!]);
    await members.done(manyBundle, URL_OF_BUNDLE, manyView);
    expect(handedOver()).toEqual(expectedOfMany(wanted));
    expect(pool.hashed).toBe(new Set(wanted.map((entry) => entry.sha256)).size);
  });

  test('ranges out of order and overlapping: each member inside them cut once; one only partly inside is not cut', async () => {
    const pool = countingPool();
    const { members, handedOver } = rangeMembers(wanted, { pool });
    // Range 10 asked twice and within a range over 10 and 11, and answered twice; range 20 one
    // byte short at each end, its answer whole all the same (as from a host that merged the ranges).
    const [r10, r11, r20] = [ranges[10]!, ranges[11]!, ranges[20]!];
    const over10and11 = { offset: r10.offset, length: r11.offset + r11.length - r10.offset };
    const shortened = { offset: r20.offset + 1, length: r20.length - 2 };
    const sink = members.sink([...ranges.slice(30).reverse(), r10, over10and11, r11, shortened, r10]);
    feedStream(sink, [r20, ...ranges.slice(30), over10and11, r10]);
    await members.done(manyBundle, URL_OF_BUNDLE, manyView);
    const expected = wanted.filter((entry) => spanOf(entry) === 0 || inside(entry, [...ranges.slice(30), over10and11, shortened]));
    expect(handedOver()).toEqual(expectedOfMany(expected));
    // The first and last members of range 20, wanted, each have a byte outside the shortened range:
    // not cut, though their bytes came. The members between them are.
    const in20 = byOffset.filter((entry) => inside(entry, [r20]));
    const [first20, last20] = [in20[0]!, in20[in20.length - 1]!];
    expect(wanted).toEqual(expect.arrayContaining([first20, last20]));
    expect(handedOver()[first20.sha256]).toBeUndefined();
    expect(handedOver()[last20.sha256]).toBeUndefined();
    expect(in20.filter((entry) => handedOver()[entry.sha256] !== undefined).length).toBeGreaterThan(10);
    expect(pool.hashed).toBe(new Set(expected.map((entry) => entry.sha256)).size);
  });

  test('the range of one member asked twice in a row, after a range before it: it is cut once', async () => {
    const pool = countingPool();
    const { members, handedOver } = rangeMembers(wanted, { pool });
    const lone = byOffset.find((entry) => entry.offset! > ranges[5]!.offset && wanted.includes(entry))!;
    feedStream(members.sink([ranges[3]!, exactRange(lone), exactRange(lone)]), [ranges[3]!, exactRange(lone)]);
    await members.done(manyBundle, URL_OF_BUNDLE, manyView);
    const expected = wanted.filter((entry) => spanOf(entry) === 0 || inside(entry, [ranges[3]!, exactRange(lone)]));
    expect(handedOver()).toEqual(expectedOfMany(expected));
    expect(pool.hashed).toBe(new Set(expected.map((entry) => entry.sha256)).size);
  });
});
