/**
 * The load planner on its own (core/read/plan/load-planner.ts): for one load, whether a bundle
 * comes whole, as ranges of the members the load needs (SPEC §7 "Needed bytes"), or as ranges
 * of the members the cache lacks (delta reads); what it leaves out because memory, the cache or
 * an earlier load has it ("One request per bundle": no byte twice); and the one rule for joining
 * ranges across a gap (`gapJoins` in core/format/delta-ranges.ts). The end-to-end suites
 * (needed-bytes, delta-reads) see these decisions only through a server's request log; here each
 * one is asked of the planner directly.
 *
 * Real parts where they are cheap: an index written by `BundleWriter` in memory, its `IndexView`,
 * `OriginCapabilities`, `LineEstimates` with a fixed round trip, the real delta rule
 * (delta-plan.ts). The one part that does I/O, the verified cache, is a fake that answers
 * `contains` from a set and records what it was asked. Every expected range is computed from the
 * index's offsets, never copied from an output.
 */
import { deflateRawSync } from 'node:zlib';
import {
  BundleWriter,
  DEFAULT_DELTA_READS,
  gapJoins,
  groupByFolder,
  oneGroup,
  parseProjectIndex,
  type BundleEntry,
  type BundledIndex,
  type BundleWriterOptions,
  type ByteRange,
  type DeltaReadOptions,
  type LooseIndex,
} from '../core/internal.js';
import { IndexView, type Entry } from '../core/read/open/index-view.js';
import { OriginCapabilities } from '../core/read/open/origins.js';
import * as deltaPlan from '../core/read/plan/delta-plan.js';
import {
  LoadPlanner,
  PLAN_SLICE_MEMBERS,
  type DeltaRule,
  type LoadPlan,
  type PlanInputs,
  type RangesPlan,
} from '../core/read/plan/load-planner.js';
import { LineEstimates, type WholeAllowance } from '../core/read/plan/needed-bytes.js';
import type { VerifiedCache } from '../core/read/state/verified-cache.js';
import { seededBytes, sha256Hex } from './helpers/trees.js';

const KiB = 1024;
const BASE = 'https://cdn.example/game/';
/** The member between `level/b.bin` and `level/d.bin`: the gap of the boundary cases. */
const GAP = 3000;

/**
 * One bundle (keys sort into data order): a and b touch, c is the gap before d, e is a copy of a
 * (one content, one place), h is empty; a 200 KiB filler keeps d and g apart, a 400 KiB tail
 * keeps the whole bundle dear even next to a range that spans the filler.
 */
const A = seededBytes(16 * KiB, 1);
const LEVEL: Record<string, Uint8Array> = {
  'level/a.bin': A,
  'level/b.bin': seededBytes(16 * KiB, 2),
  'level/c-gap.bin': seededBytes(GAP, 3),
  'level/d.bin': seededBytes(16 * KiB, 4),
  'level/e-copy.bin': A,
  'level/f-filler.bin': seededBytes(200 * KiB, 5),
  'level/g.bin': seededBytes(16 * KiB, 6),
  'level/h-empty.bin': new Uint8Array(0),
  'level/i-small.bin': seededBytes(5000, 7),
  'level/j.bin': seededBytes(16 * KiB, 8),
  'level/k-tail.bin': seededBytes(400 * KiB, 9),
};

/** Two small bundles (one per folder), for what the bundles of one load share. */
const TWO: Record<string, Uint8Array> = {
  'x/one.bin': seededBytes(4000, 11),
  'x/two.bin': seededBytes(3000, 12),
  'y/one.bin': seededBytes(6000, 13),
  'y/two.bin': seededBytes(2000, 14),
};

/** The bundled index of `files`, written in memory (nothing on disk, nothing fetched). */
async function indexOf(files: Record<string, Uint8Array>, options: BundleWriterOptions = {}): Promise<BundledIndex> {
  const loose: LooseIndex = {
    formatVersion: 2,
    rootPath: '/game',
    files: Object.entries(files).map(([path, bytes]) => ({ path, sizeBytes: bytes.length, sha256: sha256Hex(bytes), url: path })),
  };
  return new BundleWriter({ grouping: oneGroup(), ...options }).write(
    loose,
    (entry) => files[entry.path]!,
    () => undefined,
  );
}

const viewOf = (index: BundledIndex) => IndexView.open(index, `${BASE}project.index.json`, BASE);

let level: IndexView;
let two: IndexView;
beforeAll(async () => {
  level = await viewOf(await indexOf(LEVEL));
  two = await viewOf(await indexOf(TWO, { grouping: groupByFolder(1) }));
});

const entry = (view: IndexView, path: string): Entry => view.require(path);
const sha = (view: IndexView, path: string) => entry(view, path).sha256;
const shas = (view: IndexView, ...paths: string[]) => new Set(paths.map((path) => sha(view, path)));
const bundleOf = (view: IndexView, path: string): BundleEntry => view.bundle(entry(view, path).bundle!)!;
const keyOf = (view: IndexView, path: string) => view.loadKeyOf(entry(view, path));
/** Where a member's bytes sit in its bundle (its stored bytes, SPEC §5a). */
const startOf = (view: IndexView, path: string) => entry(view, path).offset!;
const endOf = (view: IndexView, path: string) => startOf(view, path) + (entry(view, path).storedBytes ?? entry(view, path).sizeBytes);
/** The range from the first byte of `from` to the last of `to`. */
const span = (view: IndexView, from: string, to = from): ByteRange => ({
  offset: startOf(view, from),
  length: endOf(view, to) - startOf(view, from),
});
const total = (ranges: ByteRange[]) => ranges.reduce((sum, range) => sum + range.length, 0);
/** The bytes the whole bundle of `path` adds to `ranges`. */
const addedBy = (view: IndexView, path: string, ranges: ByteRange[]) => bundleOf(view, path).sizeBytes - total(ranges);

interface PlannerSetup {
  /** How ranges are asked for (`deltaReads`); `null`: `deltaReads: false`. Default: the defaults. */
  ranges?: Required<DeltaReadOptions> | null;
  /** Delta reads' settings (a cache that counts); absent: a cache that cannot say what it holds. */
  delta?: Required<DeltaReadOptions>;
  /** Needed bytes on with this round trip's bytes, fixed; or the lines themselves; absent: needed bytes off. */
  roundTripBytes?: number;
  lines?: LineEstimates;
  rangeReads?: boolean;
  /** What the fake cache holds; absent: its `contains` fails (`undefined`). */
  cached?: ReadonlySet<string>;
  rule?: DeltaRule;
}

function plannerFor(view: IndexView, setup: PlannerSetup = {}) {
  const origins = new OriginCapabilities();
  /** Every `contains` question the planner asked, in order. */
  const asked: string[][] = [];
  const cache = {
    contains: async (list: string[]) => {
      asked.push([...list]);
      return setup.cached && new Set(list.filter((sha256) => setup.cached!.has(sha256)));
    },
  } as unknown as VerifiedCache;
  const lines =
    setup.lines ?? (setup.roundTripBytes === undefined ? undefined : new LineEstimates({ roundTripBytes: setup.roundTripBytes }));
  const ranges = setup.ranges === null ? undefined : (setup.ranges ?? DEFAULT_DELTA_READS);
  const planner = new LoadPlanner(
    view,
    cache,
    origins,
    { delta: setup.delta, ranges },
    setup.rangeReads ?? false,
    setup.rule ?? (async () => deltaPlan),
    lines,
  );
  return { planner, origins, asked };
}

const nothingHeld = () => false;
/** A load of `paths` with needed bytes (its reads' contents), nothing held or cached. */
const wanting = (view: IndexView, ...paths: string[]): PlanInputs => ({ held: nothingHeld, wanted: shas(view, ...paths) });

function asRanges(plan: LoadPlan): RangesPlan {
  if (plan.kind !== 'ranges') throw new Error(`expected a ranges plan, got ${plan.kind}`);
  return plan;
}
const missingOf = (plan: LoadPlan) => new Set(asRanges(plan).missing.map((member) => member.sha256));

describe('the layout the cases below rely on', () => {
  test('a and b touch, c lies between b and d, e shares a’s bytes, h is empty', () => {
    expect(startOf(level, 'level/b.bin')).toBe(endOf(level, 'level/a.bin'));
    expect(startOf(level, 'level/c-gap.bin')).toBe(endOf(level, 'level/b.bin'));
    expect(startOf(level, 'level/d.bin') - endOf(level, 'level/b.bin')).toBe(GAP);
    expect(startOf(level, 'level/e-copy.bin')).toBe(startOf(level, 'level/a.bin'));
    expect(entry(level, 'level/h-empty.bin').sizeBytes).toBe(0);
    expect(new Set(level.membersOf(keyOf(level, 'level/a.bin')).map((member) => member.bundle)).size).toBe(1);
    expect(keyOf(two, 'x/one.bin')).not.toBe(keyOf(two, 'y/one.bin'));
  });
});

describe('a bundle’s distinct contents (what a plan brings once each)', () => {
  test('one entry per content, the first listed, in the index’s order; without copies in the index, its members as they are', async () => {
    const key = keyOf(level, 'level/a.bin');
    const members = level.membersOf(key);
    const contents = level.contentsOf(key);
    // e-copy shares a's content: listed after it, left out.
    expect(contents).not.toContain(entry(level, 'level/e-copy.bin'));
    expect(contents).toContain(entry(level, 'level/a.bin'));
    expect(contents).toEqual(members.filter((member, i) => members.findIndex((other) => other.sha256 === member.sha256) === i));
    expect(level.contentsOf(key)).toBe(contents); // made once
    const plain = await viewOf(await indexOf({ 'x/1.bin': seededBytes(10, 1), 'x/2.bin': seededBytes(10, 2) }));
    const plainKey = keyOf(plain, 'x/1.bin');
    expect(plain.contentsOf(plainKey)).toBe(plain.membersOf(plainKey));
  });
});

describe('needed bytes: whole bundle or the wanted members’ ranges (SPEC §7 "Needed bytes")', () => {
  test('a bundle whose members are all wanted comes whole, even where the whole rule would never pick it', async () => {
    // A round trip of 0 bytes: any unneeded byte costs more than a request, so only "all of it" can make it whole.
    const { planner } = plannerFor(level, { roundTripBytes: 0 });
    const key = keyOf(level, 'level/a.bin');
    const all = Object.keys(LEVEL);
    expect(await planner.plan(key, wanting(level, ...all))).toEqual({
      kind: 'whole',
      bundle: bundleOf(level, 'level/a.bin'),
      bytes: bundleOf(level, 'level/a.bin').sizeBytes,
    });
    // One content fewer (j) and it is ranges of the rest.
    const plan = asRanges(await planner.plan(key, wanting(level, ...all.filter((path) => path !== 'level/j.bin'))));
    expect(missingOf(plan).has(sha(level, 'level/j.bin'))).toBe(false);
    expect(plan.missing).toHaveLength(new Set(Object.values(LEVEL).map(sha256Hex)).size - 1);
  });

  test('a few small members of a large bundle come as ranges: touching members share one, distant ones do not', async () => {
    const { planner, asked } = plannerFor(level, { roundTripBytes: 16 * KiB });
    // e is a's content: wanting it adds nothing.
    const plan = asRanges(
      await planner.plan(keyOf(level, 'level/a.bin'), wanting(level, 'level/a.bin', 'level/b.bin', 'level/e-copy.bin', 'level/g.bin')),
    );
    const ranges = [span(level, 'level/a.bin', 'level/b.bin'), span(level, 'level/g.bin')];
    expect(plan).toMatchObject({ ranges, multipart: true, bytes: total(ranges), needed: true, keepOut: undefined });
    expect(plan.missing).toHaveLength(3);
    expect(missingOf(plan)).toEqual(shas(level, 'level/a.bin', 'level/b.bin', 'level/g.bin'));
    expect(addedBy(level, 'level/a.bin', ranges)).toBeGreaterThan(16 * KiB);
    // Needed bytes take what the load knows; they never ask the cache themselves.
    expect(asked).toEqual([]);
  });

  test('the whole bundle when it adds at most one round trip’s bytes to the ranges; one byte fewer and ranges', async () => {
    const key = keyOf(level, 'level/j.bin');
    const added = addedBy(level, 'level/j.bin', [span(level, 'level/j.bin')]);
    const at = await plannerFor(level, { roundTripBytes: added }).planner.plan(key, wanting(level, 'level/j.bin'));
    expect(at.kind).toBe('whole');
    const below = await plannerFor(level, { roundTripBytes: added - 1 }).planner.plan(key, wanting(level, 'level/j.bin'));
    expect(asRanges(below).ranges).toEqual([span(level, 'level/j.bin')]);
    expect(below.bytes).toBe(entry(level, 'level/j.bin').sizeBytes);
  });

  test('the price is the line to the bundle’s own origin, as measured (LineEstimates)', async () => {
    const key = keyOf(level, 'level/j.bin');
    const url = level.resolveUrl(bundleOf(level, 'level/j.bin').url);
    const lines = new LineEstimates({});
    const { planner } = plannerFor(level, { lines });
    const added = addedBy(level, 'level/j.bin', [span(level, 'level/j.bin')]);
    // Unmeasured: the assumed line's round trip is cheaper than what the whole adds.
    expect(lines.roundTripBytes(url)).toBeLessThan(added);
    expect((await planner.plan(key, wanting(level, 'level/j.bin'))).kind).toBe('ranges');
    // A slow round trip on another origin changes nothing here…
    lines.observe('https://elsewhere.example/x', { waitedMs: 500, bytes: 1024 * KiB, bodyMs: 50 });
    expect((await planner.plan(key, wanting(level, 'level/j.bin'))).kind).toBe('ranges');
    // …on the bundle's own origin it makes a request dearer than the whole bundle's extra bytes.
    lines.observe(`${BASE}project.index.json`, { waitedMs: 500, bytes: 1024 * KiB, bodyMs: 50 });
    expect(lines.roundTripBytes(url)).toBeGreaterThanOrEqual(added);
    expect((await planner.plan(key, wanting(level, 'level/j.bin'))).kind).toBe('whole');
  });

  test('the bundles of one load share one round trip’s bytes (WholeAllowance)', async () => {
    const addedX = addedBy(two, 'x/one.bin', [span(two, 'x/one.bin')]);
    const addedY = addedBy(two, 'y/one.bin', [span(two, 'y/one.bin')]);
    const roundTrip = Math.max(addedX, addedY) + 1;
    // Either alone fits in a round trip; both together do not.
    expect(addedX + addedY).toBeGreaterThan(roundTrip);
    const { planner } = plannerFor(two, { roundTripBytes: roundTrip });
    const allowance: WholeAllowance = {};
    const x = await planner.plan(keyOf(two, 'x/one.bin'), { ...wanting(two, 'x/one.bin'), allowance });
    expect(x.kind).toBe('whole');
    expect(allowance.bytes).toBe(roundTrip - addedX);
    expect(allowance.bytes).toBeGreaterThan(0);
    const y = await planner.plan(keyOf(two, 'y/one.bin'), { ...wanting(two, 'y/one.bin'), allowance });
    expect(asRanges(y).ranges).toEqual([span(two, 'y/one.bin')]);
    expect(allowance.bytes).toBe(roundTrip - addedX); // ranges spend none of it
    // The same bundle in a load of its own comes whole.
    expect((await planner.plan(keyOf(two, 'y/one.bin'), wanting(two, 'y/one.bin'))).kind).toBe('whole');
  });

  test('what memory holds or the cache holds (as a prefetch found it) is not fetched; `need` is, whatever they say', async () => {
    const { planner, asked } = plannerFor(level, { roundTripBytes: 0 });
    const key = keyOf(level, 'level/a.bin');
    const inputs: PlanInputs = {
      held: (sha256) => sha256 === sha(level, 'level/b.bin'),
      present: shas(level, 'level/d.bin'),
      wanted: shas(level, 'level/b.bin', 'level/d.bin', 'level/g.bin'),
    };
    const plan = asRanges(await planner.plan(key, inputs));
    expect(missingOf(plan)).toEqual(shas(level, 'level/g.bin'));
    expect(plan.ranges).toEqual([span(level, 'level/g.bin')]);
    // `need`: a read just missed the cache for d, which a prefetch had found there: brought all the same.
    const needed = asRanges(await planner.plan(key, { ...inputs, need: sha(level, 'level/d.bin') }));
    expect(missingOf(needed)).toEqual(shas(level, 'level/d.bin', 'level/g.bin'));
    // And a `need` outside the wanted set (j) too.
    const notWanted = asRanges(await planner.plan(key, { ...inputs, need: sha(level, 'level/j.bin') }));
    expect(missingOf(notWanted)).toEqual(shas(level, 'level/g.bin', 'level/j.bin'));
    expect(asked).toEqual([]);
  });

  test('everything wanted is held or cached by now: a ranges plan of nothing, no bytes, no whole bundle', async () => {
    const { planner } = plannerFor(level, { roundTripBytes: 1024 * KiB });
    const plan = await planner.plan(keyOf(level, 'level/a.bin'), {
      held: (sha256) => sha256 === sha(level, 'level/a.bin'),
      present: shas(level, 'level/b.bin'),
      wanted: shas(level, 'level/a.bin', 'level/b.bin'),
    });
    expect(plan).toMatchObject({ kind: 'ranges', ranges: [], missing: [], bytes: 0, multipart: false, needed: true });
  });

  test('an encoded member is asked for by its stored bytes (SPEC §5a)', async () => {
    const text = new TextEncoder().encode('a line of a level file, said again and again\n'.repeat(600));
    const files = { 'text/level.txt': text, 'text/noise.bin': seededBytes(64 * KiB, 21) };
    const view = await viewOf(await indexOf(files, { compressor: { deflateRaw: async (bytes) => deflateRawSync(bytes) } }));
    const member = entry(view, 'text/level.txt');
    expect(member.storedBytes).toBeLessThan(member.sizeBytes);
    const plan = asRanges(
      await plannerFor(view, { roundTripBytes: 0 }).planner.plan(keyOf(view, 'text/level.txt'), wanting(view, 'text/level.txt')),
    );
    expect(plan.ranges).toEqual([{ offset: member.offset, length: member.storedBytes }]);
    expect(plan.bytes).toBe(member.storedBytes);
  });
});

describe('what came already is never brought again ("One request per bundle")', () => {
  // Wanted: b and d, with c (GAP bytes) between them. One range per request (the origin does not
  // answer multi-range), a round trip so dear that, left alone, the planner would take the whole bundle.
  const dear = 1024 * KiB;
  const singleRanges = (setup: PlannerSetup) => {
    const made = plannerFor(level, setup);
    made.origins.lacksMultipart(BASE);
    return made;
  };

  test('a member an earlier needed-bytes load brought is spanned by no range, and the whole is not priced', async () => {
    const key = keyOf(level, 'level/b.bin');
    const { planner } = singleRanges({ roundTripBytes: dear });
    expect((await planner.plan(key, wanting(level, 'level/b.bin', 'level/d.bin'))).kind).toBe('whole');

    // What the source's loads brought, per bundle (the source's `fetched` asks this, besides memory).
    const brought = new Map([[key, shas(level, 'level/c-gap.bin')]]);
    const fetched = (sha256: string) => brought.get(key)?.has(sha256) ?? false;
    const plan = asRanges(await planner.plan(key, { ...wanting(level, 'level/b.bin', 'level/d.bin'), fetched }));
    expect(plan.ranges).toEqual([span(level, 'level/b.bin'), span(level, 'level/d.bin')]);
    expect(plan.keepOut).toBe(GAP - 1);
    expect(plan.multipart).toBe(false);
  });

  test('the widest gap allowed is one byte less than the smallest member that came already; empty members do not count', async () => {
    const key = keyOf(level, 'level/b.bin');
    const { planner } = singleRanges({ roundTripBytes: dear });
    const wantBD = wanting(level, 'level/b.bin', 'level/d.bin');
    const cameAlready = (...paths: string[]) => {
      const came = shas(level, ...paths);
      return (sha256: string) => came.has(sha256);
    };
    // Only an empty member came: nothing to keep out, so the dear round trip still makes it whole.
    expect((await planner.plan(key, { ...wantBD, fetched: cameAlready('level/h-empty.bin') })).kind).toBe('whole');
    // i (5000 bytes, not between b and d) came: gaps under 4999 bytes still join, and never the whole.
    const small = entry(level, 'level/i-small.bin').sizeBytes;
    expect(GAP).toBeLessThan(small - 1);
    const joined = asRanges(await planner.plan(key, { ...wantBD, fetched: cameAlready('level/i-small.bin', 'level/h-empty.bin') }));
    expect(joined).toMatchObject({ ranges: [span(level, 'level/b.bin', 'level/d.bin')], keepOut: small - 1 });
    // c came too: the smaller of the two decides.
    const split = asRanges(await planner.plan(key, { ...wantBD, fetched: cameAlready('level/i-small.bin', 'level/c-gap.bin') }));
    expect(split).toMatchObject({ ranges: [span(level, 'level/b.bin'), span(level, 'level/d.bin')], keepOut: GAP - 1 });
  });

  test('a member the plan fetches itself does not count as come already', async () => {
    const key = keyOf(level, 'level/b.bin');
    const { planner } = singleRanges({ roundTripBytes: dear });
    // d is wanted and not held: `fetched` saying so (its load in flight brings it) keeps nothing out.
    const plan = await planner.plan(key, {
      ...wanting(level, 'level/b.bin', 'level/d.bin'),
      fetched: (sha256) => sha256 === sha(level, 'level/d.bin'),
    });
    expect(plan.kind).toBe('whole');
  });
});

describe('delta reads: the members the cache lacks (no wanted set)', () => {
  const key = () => keyOf(level, 'level/a.bin');
  const allContents = () => new Set(level.membersOf(key()).map((member) => member.sha256));
  const except = (...paths: string[]) => {
    const kept = allContents();
    for (const path of paths) kept.delete(sha(level, path));
    return kept;
  };

  test('ranges of what neither memory nor the cache holds; the cache asked once, for what memory does not hold', async () => {
    const { planner, asked } = plannerFor(level, { delta: DEFAULT_DELTA_READS, cached: except('level/d.bin', 'level/j.bin') });
    // b is held, and the cache lacks it too: not fetched all the same.
    const plan = asRanges(await planner.plan(key(), { held: (sha256) => sha256 === sha(level, 'level/b.bin') }));
    const ranges = [span(level, 'level/d.bin'), span(level, 'level/j.bin')];
    expect(plan).toMatchObject({ ranges, multipart: true, bytes: total(ranges), needed: false });
    expect(missingOf(plan)).toEqual(shas(level, 'level/d.bin', 'level/j.bin'));
    expect(asked).toHaveLength(1);
    const unknown = allContents();
    unknown.delete(sha(level, 'level/b.bin'));
    expect(new Set(asked[0])).toEqual(unknown);
    expect(asked[0]).toHaveLength(unknown.size);
  });

  test('a prefetch’s answer (`present`) stands for the cache’s: the cache is not asked again', async () => {
    // The fake cache would say it holds everything; the prefetch found d and j missing.
    const { planner, asked } = plannerFor(level, { delta: DEFAULT_DELTA_READS, cached: allContents() });
    const plan = asRanges(await planner.plan(key(), { held: nothingHeld, present: except('level/d.bin', 'level/j.bin') }));
    expect(missingOf(plan)).toEqual(shas(level, 'level/d.bin', 'level/j.bin'));
    expect(asked).toEqual([]);
    // Everything held or present: nothing to ask the cache, nothing to fetch.
    const none = asRanges(
      await planner.plan(key(), { held: (sha256) => sha256 === sha(level, 'level/j.bin'), present: except('level/j.bin') }),
    );
    expect(none).toMatchObject({ ranges: [], missing: [], bytes: 0 });
    expect(asked).toEqual([]);
  });

  test('the whole bundle when the cache cannot say, holds none of it, or lacks more than maxMissingFraction of it', async () => {
    const inputs: PlanInputs = { held: nothingHeld };
    expect((await plannerFor(level, { delta: DEFAULT_DELTA_READS }).planner.plan(key(), inputs)).kind).toBe('whole');
    expect((await plannerFor(level, { delta: DEFAULT_DELTA_READS, cached: new Set() }).planner.plan(key(), inputs)).kind).toBe('whole');
    // d and j lacking: their bytes against the bundle's, half a byte either side of the limit.
    const missingBytes = total([span(level, 'level/d.bin'), span(level, 'level/j.bin')]);
    const size = bundleOf(level, 'level/d.bin').sizeBytes;
    const withFraction = (bytes: number) =>
      plannerFor(level, {
        delta: { ...DEFAULT_DELTA_READS, maxMissingFraction: bytes / size },
        cached: except('level/d.bin', 'level/j.bin'),
      }).planner.plan(key(), inputs);
    expect((await withFraction(missingBytes + 0.5)).kind).toBe('ranges');
    expect((await withFraction(missingBytes - 0.5)).kind).toBe('whole');
  });

  test('with needed bytes on, a load without a wanted set (a delta load) still goes by the cache', async () => {
    const { planner, asked } = plannerFor(level, { delta: DEFAULT_DELTA_READS, cached: except('level/j.bin'), roundTripBytes: 0 });
    const plan = asRanges(await planner.plan(key(), { held: nothingHeld }));
    expect(plan).toMatchObject({ ranges: [span(level, 'level/j.bin')], needed: false });
    expect(asked).toHaveLength(1);
  });
});

describe('whole bundles where ranges cannot go', () => {
  const key = () => keyOf(level, 'level/j.bin');
  const few = () => wanting(level, 'level/j.bin');

  test('deltaReads off, an origin that ignores ranges, needed bytes off with a cache that cannot count', async () => {
    expect((await plannerFor(level, { ranges: null, roundTripBytes: 0 }).planner.plan(key(), few())).kind).toBe('whole');
    const ignoring = plannerFor(level, { roundTripBytes: 0, delta: DEFAULT_DELTA_READS, cached: new Set([sha(level, 'level/a.bin')]) });
    expect((await ignoring.planner.plan(key(), few())).kind).toBe('ranges');
    ignoring.origins.ignoresRanges(`${BASE}anything`);
    expect((await ignoring.planner.plan(key(), few())).kind).toBe('whole');
    expect((await ignoring.planner.plan(key(), { held: nothingHeld })).kind).toBe('whole');
    expect(ignoring.asked).toEqual([]);
    expect((await plannerFor(level).planner.plan(key(), few())).kind).toBe('whole');
  });

  test('a delta rule that cannot be imported (a chunk gone after a deploy) means the whole bundle', async () => {
    const rule: DeltaRule = () => Promise.reject(new Error('chunk gone'));
    expect((await plannerFor(level, { roundTripBytes: 0, rule }).planner.plan(key(), few())).kind).toBe('whole');
    const delta = plannerFor(level, { delta: DEFAULT_DELTA_READS, cached: new Set([sha(level, 'level/a.bin')]), rule });
    expect((await delta.planner.plan(key(), { held: nothingHeld })).kind).toBe('whole');
  });

  test('a loose file is a load of its own, of its listed size', async () => {
    const index = await indexOf(LEVEL);
    const bytes = seededBytes(1234, 31);
    const withLoose = parseProjectIndex({
      ...index,
      files: [...index.files, { path: 'z/loose.bin', sizeBytes: bytes.length, sha256: sha256Hex(bytes), url: 'files/z/loose.bin' }],
    });
    const view = await IndexView.open(withLoose, `${BASE}project.index.json`, BASE);
    const loose = entry(view, 'z/loose.bin');
    const plan = await plannerFor(view, { roundTripBytes: 0 }).planner.plan(view.loadKeyOf(loose), { held: nothingHeld });
    expect(plan).toEqual({ kind: 'loose', entry: loose, bytes: bytes.length });
  });
});

describe('multi-range requests', () => {
  // b and g: far apart (c, d and the filler between), closer than the round trip below.
  const gap = () => startOf(level, 'level/g.bin') - endOf(level, 'level/b.bin');
  const want = () => wanting(level, 'level/b.bin', 'level/g.bin');
  const key = () => keyOf(level, 'level/b.bin');

  test('one request of several ranges where the origin answers it; else one range per request, gaps priced by the round trip', async () => {
    const roundTrip = gap() + 1;
    expect(roundTrip).toBeLessThan(addedBy(level, 'level/b.bin', [span(level, 'level/b.bin', 'level/g.bin')]));
    const answering = plannerFor(level, { roundTripBytes: roundTrip });
    const multi = asRanges(await answering.planner.plan(key(), want()));
    expect(multi).toMatchObject({ ranges: [span(level, 'level/b.bin'), span(level, 'level/g.bin')], multipart: true });
    // A part header costs less than a request: gaps join only under multipartGapBytes (512) there.
    expect(gap()).toBeGreaterThanOrEqual(DEFAULT_DELTA_READS.multipartGapBytes);

    answering.origins.lacksMultipart(BASE);
    const single = asRanges(await answering.planner.plan(key(), want()));
    expect(single).toMatchObject({ ranges: [span(level, 'level/b.bin', 'level/g.bin')], multipart: false });

    const off = plannerFor(level, { roundTripBytes: roundTrip, ranges: { ...DEFAULT_DELTA_READS, multipartRanges: false } });
    expect(await off.planner.plan(key(), want())).toEqual(single);
  });

  test('one range is never a multi-range request', async () => {
    const plan = asRanges(
      await plannerFor(level, { roundTripBytes: 16 * KiB }).planner.plan(key(), wanting(level, 'level/a.bin', 'level/b.bin')),
    );
    expect(plan).toMatchObject({ ranges: [span(level, 'level/a.bin', 'level/b.bin')], multipart: false });
  });
});

describe('the cost rule at its boundaries (gapJoins)', () => {
  test('touching or overlapping ranges always join; others only when the gap is under the limit', () => {
    expect(gapJoins(0, 0)).toBe(true);
    expect(gapJoins(-10, 0)).toBe(true);
    expect(gapJoins(1, 0)).toBe(false);
    expect(gapJoins(GAP - 1, GAP)).toBe(true);
    expect(gapJoins(GAP, GAP)).toBe(false);
  });

  const key = () => keyOf(level, 'level/b.bin');
  const wantBD = () => wanting(level, 'level/b.bin', 'level/d.bin');
  const apart = () => [span(level, 'level/b.bin'), span(level, 'level/d.bin')];
  const together = () => [span(level, 'level/b.bin', 'level/d.bin')];

  test('one range per request: a gap of exactly one round trip’s bytes splits, one byte less joins', async () => {
    const plan = async (roundTrip: number) => {
      const { planner, origins } = plannerFor(level, { roundTripBytes: roundTrip });
      origins.lacksMultipart(BASE);
      return asRanges(await planner.plan(key(), wantBD()));
    };
    // The whole stays dearer than a round trip in both cases: only the gap rule decides.
    expect(addedBy(level, 'level/b.bin', together())).toBeGreaterThan(GAP + 1);
    expect((await plan(GAP)).ranges).toEqual(apart());
    expect((await plan(GAP + 1)).ranges).toEqual(together());
  });

  test('in one multi-range request: the same at multipartGapBytes', async () => {
    const plan = async (multipartGapBytes: number) =>
      asRanges(
        await plannerFor(level, { roundTripBytes: 2 * GAP, ranges: { ...DEFAULT_DELTA_READS, multipartGapBytes } }).planner.plan(
          key(),
          wantBD(),
        ),
      );
    expect(await plan(GAP)).toMatchObject({ ranges: apart(), multipart: true });
    expect(await plan(GAP + 1)).toMatchObject({ ranges: together(), multipart: false });
  });

  test('touching members share a range at any price, even a round trip of 0 bytes', async () => {
    const plan = asRanges(await plannerFor(level, { roundTripBytes: 0 }).planner.plan(key(), wanting(level, 'level/a.bin', 'level/b.bin')));
    expect(plan.ranges).toEqual([span(level, 'level/a.bin', 'level/b.bin')]);
  });
});

describe('replan: when the host could not serve a plan', () => {
  const key = () => keyOf(level, 'level/b.bin');

  test('"whole": the whole bundle', async () => {
    const { planner } = plannerFor(level, { roundTripBytes: 16 * KiB });
    const plan = asRanges(await planner.plan(key(), wanting(level, 'level/b.bin', 'level/g.bin')));
    expect(await planner.replan(plan, 'whole')).toEqual({ kind: 'whole', bundle: plan.bundle, bytes: plan.bundle.sizeBytes });
  });

  test('"separate", needed bytes: the same members, one range per request, gaps priced by the round trip', async () => {
    const gap = startOf(level, 'level/g.bin') - endOf(level, 'level/b.bin');
    const { planner } = plannerFor(level, { roundTripBytes: gap + 1 });
    const plan = asRanges(await planner.plan(key(), wanting(level, 'level/b.bin', 'level/g.bin')));
    expect(plan.multipart).toBe(true);
    const again = asRanges(await planner.replan(plan, 'separate'));
    const ranges = [span(level, 'level/b.bin', 'level/g.bin')];
    expect(again).toEqual({ ...plan, ranges, multipart: false, bytes: total(ranges) });
  });

  test('"separate", delta reads: gaps priced by maxGapBytes', async () => {
    const cached = new Set(level.membersOf(key()).map((member) => member.sha256));
    cached.delete(sha(level, 'level/b.bin'));
    cached.delete(sha(level, 'level/d.bin'));
    const { planner } = plannerFor(level, { delta: DEFAULT_DELTA_READS, cached });
    const plan = asRanges(await planner.plan(key(), { held: nothingHeld }));
    expect(plan).toMatchObject({ ranges: [span(level, 'level/b.bin'), span(level, 'level/d.bin')], multipart: true, needed: false });
    expect(GAP).toBeLessThan(DEFAULT_DELTA_READS.maxGapBytes);
    const again = asRanges(await planner.replan(plan, 'separate'));
    expect(again).toMatchObject({ ranges: [span(level, 'level/b.bin', 'level/d.bin')], multipart: false, missing: plan.missing });
  });

  test('"separate" keeps out what came already: still ranges, never the whole', async () => {
    const { planner } = plannerFor(level, { roundTripBytes: 1024 * KiB });
    const fetched = (sha256: string) => sha256 === sha(level, 'level/c-gap.bin');
    const plan = asRanges(await planner.plan(key(), { ...wanting(level, 'level/b.bin', 'level/d.bin'), fetched }));
    expect(plan.keepOut).toBe(GAP - 1);
    const again = asRanges(await planner.replan(plan, 'separate'));
    expect(again).toMatchObject({ ranges: [span(level, 'level/b.bin'), span(level, 'level/d.bin')], multipart: false, keepOut: GAP - 1 });
  });
});

describe('readsByRange: whether one read goes alone by range request (SPEC §7 "Range reads")', () => {
  test('with rangeReads: a bundle member on an origin that serves ranges', async () => {
    const { planner, origins } = plannerFor(level, { rangeReads: true });
    const member = entry(level, 'level/d.bin');
    expect(planner.readsByRange(member)).toBe(true);
    origins.ignoresRanges(BASE);
    expect(planner.readsByRange(member)).toBe(false);
    expect(planner.readsByRange(member, true)).toBe(false);
  });

  test('without rangeReads: only a read a needed-bytes load passed over (`aside`), and only while ranges are on', async () => {
    const member = entry(level, 'level/d.bin');
    const { planner } = plannerFor(level, { roundTripBytes: 0 });
    expect(planner.readsByRange(member)).toBe(false);
    expect(planner.readsByRange(member, true)).toBe(true);
    expect(plannerFor(level, { ranges: null }).planner.readsByRange(member, true)).toBe(false);
  });

  test('never a loose file', async () => {
    const bytes = seededBytes(10, 41);
    const index = parseProjectIndex({
      formatVersion: 3,
      rootPath: '/game',
      bundles: [],
      files: [{ path: 'loose.bin', sizeBytes: bytes.length, sha256: sha256Hex(bytes), url: 'loose.bin' }],
    });
    const view = await IndexView.open(index, `${BASE}project.index.json`, BASE);
    expect(plannerFor(view, { rangeReads: true }).planner.readsByRange(entry(view, 'loose.bin'), true)).toBe(false);
  });
});

/** Counts the turns of the event loop (`setImmediate` in Node, as `nextTurn` takes them) until stopped. */
function countTurns(): { readonly count: number; stop(): void } {
  let count = 0;
  let ticking = setImmediate(function tick() {
    count++;
    ticking = setImmediate(tick);
  });
  return {
    get count() {
      return count;
    },
    stop: () => clearImmediate(ticking),
  };
}

describe('many members: the planner takes turns with the event loop', () => {
  test('bundles whose members together pass PLAN_SLICE_MEMBERS are planned in tasks of their own; small ones share one', async () => {
    // Three bundles of 3,000 tiny members each (one per folder) and two of 10: 9,020 members.
    const files: Record<string, Uint8Array> = {};
    for (const folder of ['a', 'b', 'c'])
      for (let i = 0; i < 3000; i++) files[`${folder}/${i}.bin`] = seededBytes(8, i + folder.charCodeAt(0) * 10_000);
    for (const folder of ['x', 'y'])
      for (let i = 0; i < 10; i++) files[`${folder}/${i}.bin`] = seededBytes(8, i + folder.charCodeAt(0) * 10_000);
    const view = await viewOf(await indexOf(files, { grouping: groupByFolder(1) }));
    const { planner } = plannerFor(view, { roundTripBytes: 0 });
    /** Which task each plan ended in: the count of turns by then. */
    const turns = countTurns();
    try {
      const ended: Record<string, number> = {};
      await Promise.all(
        ['x', 'a', 'y', 'b', 'c'].map(async (folder) => {
          const first = `${folder}/0.bin`;
          const plan = await planner.plan(keyOf(view, first), wanting(view, first));
          expect(plan.kind).toBe('ranges');
          ended[folder] = turns.count;
        }),
      );
      expect(PLAN_SLICE_MEMBERS).toBeLessThan(2 * 3000);
      // x, a and y fit one slice (3,020 members); b and c each wait for a turn of their own.
      expect(ended.x).toBe(ended.a);
      expect(ended.y).toBe(ended.a);
      expect(ended.b!).toBeGreaterThan(ended.a!);
      expect(ended.c!).toBeGreaterThan(ended.b!);
    } finally {
      turns.stop();
    }
  });

  test('a whole bundle’s stream plan is made by the planner, once, a large one in a task of its own', async () => {
    const files: Record<string, Uint8Array> = {};
    for (const folder of ['a', 'b'])
      for (let i = 0; i < 3000; i++) files[`${folder}/${i}.bin`] = seededBytes(8, i + folder.charCodeAt(0) * 10_000);
    for (let i = 0; i < 10; i++) files[`x/${i}.bin`] = seededBytes(8, i + 'x'.charCodeAt(0) * 10_000);
    const view = await viewOf(await indexOf(files, { grouping: groupByFolder(1) }));
    // `deltaReads: false`: every bundle comes whole.
    const { planner } = plannerFor(view, { ranges: null });
    const turns = countTurns();
    try {
      const ended: Record<string, number> = {};
      await Promise.all(
        ['x', 'a', 'b'].map(async (folder) => {
          const first = `${folder}/0.bin`;
          const plan = await planner.plan(keyOf(view, first), wanting(view, first));
          expect(plan.kind).toBe('whole');
          // Made by the plan: the fetcher finds it.
          expect(view.hasStreamPlan(bundleOf(view, first))).toBe(true);
          ended[folder] = turns.count;
        }),
      );
      // x and a (3,010 members) in the task that asked; b (3,000 more: past a slice) in a turn of its own.
      expect(PLAN_SLICE_MEMBERS).toBeLessThan(2 * 3000);
      expect(ended.x).toBe(0);
      expect(ended.a).toBe(0);
      expect(ended.b!).toBeGreaterThan(0);
      const plan = view.streamPlan(bundleOf(view, 'a/0.bin'));
      expect(plan?.contents).toHaveLength(3000);
      // Planned again: no turn, the stream plan is made already.
      const before = turns.count;
      await planner.plan(keyOf(view, 'a/0.bin'), wanting(view, 'a/0.bin'));
      expect(turns.count).toBe(before);
      expect(view.streamPlan(bundleOf(view, 'a/0.bin'))).toBe(plan);
    } finally {
      turns.stop();
    }
  });
});
