/**
 * `diffProjectIndexes`, `planDeltaRanges` and `awake-bundle diff`: what changed
 * between two published versions, what a host uploads, and what a returning player downloads —
 * whole bundles, or only the missing members' ranges by the reader's rule.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  diffProjectIndexes,
  groupByFolder,
  InvalidOptionError,
  opaqueId,
  parseProjectIndexJson,
  planDeltaRanges,
  type BundledIndex,
  type DeltaMember,
  type ProjectIndex,
} from '../core/internal.js';
import { diskReader, looseIndexFromFolder, publishToDirectory, startStaticServer } from '../core/node/index.js';
import { CLI, runCli, temporaryDir } from './helpers/cli.js';
import { seededBytes, writeTree } from './helpers/trees.js';

const KiB = 1024;

// ---------------------------------------------------------------------------------------------
// The planner, on bundles made up in place.

/** Members of `sizes` bytes one after another from `start`, each its own content `c<i>`. */
function membersInRow(sizes: number[], start = 0): DeltaMember[] {
  let offset = start;
  return sizes.map((sizeBytes, i) => {
    const member = { offset, sizeBytes, sha256: `c${i}` };
    offset += sizeBytes;
    return member;
  });
}

describe('planDeltaRanges', () => {
  test('nothing missing: no request', () => {
    expect(planDeltaRanges(1000, membersInRow([500, 500]), new Set())).toEqual({
      none: true,
      whole: false,
      ranges: [],
      bytes: 0,
      missingBytes: 0,
    });
  });

  test('members closer than the gap become one range; a gap of exactly maxGapBytes does not', () => {
    // c0 [0,100) · c1 [100, 100+g) held · c2 [100+g, 200+g)
    const near = [
      { offset: 0, sizeBytes: 100, sha256: 'a' },
      { offset: 100, sizeBytes: 999, sha256: 'held' },
      { offset: 1099, sizeBytes: 100, sha256: 'b' },
    ];
    const plan = planDeltaRanges(10_000, near, new Set(['a', 'b']), { maxGapBytes: 1000 });
    expect(plan.ranges).toEqual([{ start: 0, end: 1199 }]);
    expect(plan.bytes).toBe(1199);
    expect(plan.missingBytes).toBe(200);

    const apart = [near[0]!, { ...near[1]!, sizeBytes: 1000 }, { ...near[2]!, offset: 1100 }];
    expect(planDeltaRanges(10_000, apart, new Set(['a', 'b']), { maxGapBytes: 1000 }).ranges).toEqual([
      { start: 0, end: 100 },
      { start: 1100, end: 1200 },
    ]);
  });

  test('the default gap is 64 KiB', () => {
    const members = membersInRow([10, 64 * KiB - 1, 10, 64 * KiB, 10, 1024 * KiB]);
    const plan = planDeltaRanges(members.at(-1)!.offset + 1024 * KiB, members, new Set(['c0', 'c2', 'c4']));
    expect(plan.ranges).toEqual([
      { start: 0, end: members[2]!.offset + 10 },
      { start: members[4]!.offset, end: members[4]!.offset + 10 },
    ]);
  });

  test('more than maxMissingFraction of the bundle missing: the whole bundle, one request', () => {
    const members = membersInRow([200, 600, 200]);
    expect(planDeltaRanges(1000, members, new Set(['c0', 'c2']), { maxGapBytes: 0 })).toMatchObject({
      whole: false,
      bytes: 400,
      ranges: [
        { start: 0, end: 200 },
        { start: 800, end: 1000 },
      ],
    });
    const half = planDeltaRanges(1000, membersInRow([500, 500]), new Set(['c0']), { maxGapBytes: 0 });
    expect(half).toMatchObject({ whole: false, bytes: 500 });
    const more = planDeltaRanges(1000, membersInRow([501, 499]), new Set(['c0']));
    expect(more).toEqual({ none: false, whole: true, ranges: [{ start: 0, end: 1000 }], bytes: 1000, missingBytes: 501 });
    expect(planDeltaRanges(1000, members, new Set(['c0']), { maxMissingFraction: 0.1 }).whole).toBe(true);
  });

  test('over maxRanges, the neighbours with the smallest gap merge first', () => {
    // Six 10-byte members with gaps 500, 100, 300, 200, 400 between them.
    const gaps = [500, 100, 300, 200, 400];
    const members: DeltaMember[] = [];
    let offset = 0;
    for (let i = 0; i < 6; i++) {
      members.push({ offset, sizeBytes: 10, sha256: `m${i}` });
      offset += 10 + (gaps[i] ?? 0);
    }
    const missing = new Set(members.map((member) => member.sha256));
    const options = { maxGapBytes: 0, maxMissingFraction: 1 };
    const spans = (ranges: { start: number; end: number }[]) => ranges.map(({ start, end }) => [start, end]);
    // 6 ranges → merge the 100 gap (m1+m2), then the 200 gap (m3+m4): 4 remain.
    expect(spans(planDeltaRanges(100_000, members, missing, { ...options, maxRanges: 4 }).ranges)).toEqual([
      [0, 10],
      [510, 630],
      [930, 1150],
      [1550, 1560],
    ]);
    // Then the 300 gap joins those two pairs, then 400: two ranges.
    expect(spans(planDeltaRanges(100_000, members, missing, { ...options, maxRanges: 2 }).ranges)).toEqual([
      [0, 10],
      [510, 1560],
    ]);
    expect(spans(planDeltaRanges(100_000, members, missing, { ...options, maxRanges: 1 }).ranges)).toEqual([[0, 1560]]);
  });

  test('a content shared by several members is fetched once; an empty one not at all', () => {
    const members = [
      { offset: 50, sizeBytes: 20, sha256: 'x' },
      { offset: 50, sizeBytes: 20, sha256: 'x' },
      { offset: 70, sizeBytes: 0, sha256: 'empty' },
    ];
    expect(planDeltaRanges(10_000, members, new Set(['x'])).ranges).toEqual([{ start: 50, end: 70 }]);
    expect(planDeltaRanges(10_000, members, new Set(['empty'])).none).toBe(true);
  });

  test('options out of range are InvalidOptionError naming the option', () => {
    const members = membersInRow([10]);
    for (const [option, value] of [
      ['maxGapBytes', -1],
      ['maxGapBytes', 1.5],
      ['maxMissingFraction', 1.1],
      ['maxMissingFraction', Number.NaN],
      ['maxRanges', 0],
    ] as const) {
      let caught: unknown;
      try {
        planDeltaRanges(100, members, new Set(['c0']), { [option]: value });
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(InvalidOptionError);
      expect((caught as InvalidOptionError).option).toBe(option);
    }
  });
  test('past maxRanges, the same ranges as merging the closest neighbours pair by pair, ties included, in O(n log n)', () => {
    // The rule as first written: the pair with the smallest gap (the first on a tie), merged again and again.
    const pairByPair = (ranges: { start: number; end: number }[], maxRanges: number) => {
      const capped = ranges.map((range) => ({ ...range }));
      while (capped.length > maxRanges) {
        let smallest = 0;
        for (let i = 1; i < capped.length - 1; i++)
          if (capped[i + 1]!.start - capped[i]!.end < capped[smallest + 1]!.start - capped[smallest]!.end) smallest = i;
        capped[smallest]!.end = capped[smallest + 1]!.end;
        capped.splice(smallest + 1, 1);
      }
      return capped;
    };
    let seed = 7;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let round = 0; round < 200; round++) {
      const members: { offset: number; sizeBytes: number; sha256: string }[] = [];
      let offset = 0;
      const count = 2 + random(60);
      // Gaps from a few values, so that ties are common.
      for (let i = 0; i < count; i++) {
        members.push({ offset, sizeBytes: 1 + random(50), sha256: `m${i}` });
        offset += members[i]!.sizeBytes + [1, 2, 3, 5, 8][random(5)]!;
      }
      const missing = new Set(members.map((member) => member.sha256));
      const maxRanges = 1 + random(count + 2);
      const plan = planDeltaRanges(offset * 4, members, missing, { maxGapBytes: 0, maxRanges });
      const spans = members.map((member) => ({ start: member.offset, end: member.offset + member.sizeBytes }));
      expect(plan.ranges).toEqual(pairByPair(spans, maxRanges));
    }
    // 100k spans to 4 ranges: pair by pair, ~5·10⁹ gap comparisons (minutes); now a sort.
    const many = Array.from({ length: 100_000 }, (_, i) => ({ offset: i * 10, sizeBytes: 5, sha256: `x${i}` }));
    const plan = planDeltaRanges(2_000_000, many, new Set(many.map((member) => member.sha256)), { maxGapBytes: 0, maxRanges: 4 });
    expect(plan.ranges).toHaveLength(4);
    expect(plan.ranges.at(-1)!.end).toBe(999_995);
  });
});

// ---------------------------------------------------------------------------------------------
// Two published versions of a small tree.

const V1 = {
  'art/hero.png': seededBytes(3000, 2),
  'art/middle.bin': seededBytes(200 * KiB, 1), // between hero.png and zebra.png: keeps them far apart
  'art/tree.png': seededBytes(2000, 3),
  'sound/theme.ogg': seededBytes(40 * KiB, 4),
  'readme.txt': 'version 1\n',
};
/** v2 changes art/hero.png, adds art/zebra.png, removes readme.txt; sound/ stays as it was. */
const V2 = { ...V1, 'art/hero.png': seededBytes(3000, 5), 'art/zebra.png': seededBytes(1000, 6), 'readme.txt': undefined };

async function publishVersion(files: Record<string, string | Uint8Array | undefined>, outDir: string, salt?: string) {
  const input = temporaryDir();
  writeTree(
    input,
    Object.fromEntries(Object.entries(files).filter((entry): entry is [string, string | Uint8Array] => entry[1] !== undefined)),
  );
  const { index: looseIndex } = await looseIndexFromFolder(input);
  const summary = await publishToDirectory({
    looseIndex,
    read: diskReader((entry) => join(input, ...entry.path.split('/'))),
    outDir,
    grouping: groupByFolder(1),
    ...(salt ? { pathIds: { salt } } : {}),
  });
  return { looseIndex, summary, indexText: readFileSync(summary.indexPath, 'utf8') };
}

/** v1 and v2 published into one out folder (the host's), each index also kept apart. */
async function twoVersions(salts: { v1?: string; v2?: string } = {}) {
  const out = temporaryDir();
  const v1 = await publishVersion(V1, out, salts.v1);
  const v2 = await publishVersion(V2, out, salts.v2);
  const dir = temporaryDir();
  writeFileSync(join(dir, 'v1.json'), v1.indexText);
  writeFileSync(join(dir, 'v2.json'), v2.indexText);
  const parse = (text: string) => parseProjectIndexJson(text) as BundledIndex;
  return { out, dir, v1: { ...v1, index: parse(v1.indexText) }, v2: { ...v2, index: parse(v2.indexText) } };
}

const keysOf = (files: { key: string }[]) => files.map((file) => file.key);

describe('diffProjectIndexes on two published versions', () => {
  let versions: Awaited<ReturnType<typeof twoVersions>>;
  beforeAll(async () => {
    versions = await twoVersions();
  });

  test('files added, changed and removed, by path', () => {
    const diff = diffProjectIndexes(versions.v1.index, versions.v2.index);
    expect(diff.keys).toBe('path');
    expect(diff.notes).toEqual([]);
    expect(keysOf(diff.files.added)).toEqual(['art/zebra.png']);
    expect(diff.files.changed).toEqual([
      { key: 'art/hero.png', old: { sizeBytes: 3000, sha256: expect.any(String) }, new: { sizeBytes: 3000, sha256: expect.any(String) } },
    ]);
    expect(diff.files.changed[0]!.old.sha256).not.toBe(diff.files.changed[0]!.new.sha256);
    expect(keysOf(diff.files.removed)).toEqual(['readme.txt']);
    expect(diff.files.unchanged).toBe(3);
  });

  test('bundles new and gone; the upload is what the second publish wrote', () => {
    const { v1, v2 } = versions;
    const diff = diffProjectIndexes(v1.index, v2.index);
    const bundleOf = (index: BundledIndex, path: string) => index.files.find((file) => file.path === path)!.bundle;
    // The art bundle changed; the root bundle (readme.txt) is gone; sound/ is the same bundle.
    expect(diff.bundles.new.map((bundle) => bundle.sha256)).toEqual([bundleOf(v2.index, 'art/hero.png')]);
    expect(diff.bundles.gone.map((bundle) => bundle.sha256).sort()).toEqual(
      [bundleOf(v1.index, 'art/hero.png'), bundleOf(v1.index, 'readme.txt')].sort(),
    );
    expect(diff.bundles.kept).toBe(1);
    expect(diff.upload).toEqual({ bundles: v2.summary.newBundles, bytes: v2.summary.newBytes });
  });

  test('a returning player: the whole art bundle, or two ranges for the two new contents', () => {
    const { v2 } = versions;
    const diff = diffProjectIndexes(versions.v1.index, v2.index);
    const art = v2.index.bundles.find((bundle) => bundle.sha256 === diff.bundles.new[0]!.sha256)!;
    expect(diff.download).toMatchObject({
      missingContents: 2,
      missingBytes: 4000,
      looseFiles: { files: 0, bytes: 0 },
      wholeBundles: { bundles: 1, bytes: art.sizeBytes, requests: 1 },
      deltaRanges: { bytes: 4000, requests: 2, bundlesWhole: 0, bundlesRanged: 1 },
      // The reader's default where the server answers multi-range requests: both ranges in one.
      multiRange: { bytes: 4000, requests: 1, bundlesWhole: 0 },
    });
    // art/middle.bin (200 KiB) lies between hero.png and zebra.png: too far to merge.
    const member = (path: string) => v2.index.files.find((file) => file.path === path)!;
    expect(diff.download.deltaRanges.plans[0]!.ranges).toEqual([
      { start: member('art/hero.png').offset, end: member('art/hero.png').offset! + 3000 },
      { start: member('art/zebra.png').offset, end: member('art/zebra.png').offset! + 1000 },
    ]);
    // With a gap wider than middle.bin, one range spans hero.png to zebra.png (the missing
    // bytes, not the range, are what the fraction rule weighs); with a lower fraction, whole.
    const wide = diffProjectIndexes(versions.v1.index, v2.index, { maxGapBytes: 1024 * KiB });
    expect(wide.download.deltaRanges).toMatchObject({
      bytes: member('art/zebra.png').offset! + 1000 - member('art/hero.png').offset!,
      requests: 1,
      bundlesWhole: 0,
      bundlesRanged: 1,
    });
    const low = diffProjectIndexes(versions.v1.index, v2.index, { maxMissingFraction: 0.01 });
    expect(low.download.deltaRanges).toMatchObject({ bytes: art.sizeBytes, requests: 1, bundlesWhole: 1, bundlesRanged: 0 });
  });

  test('the same version twice: nothing to upload or download', () => {
    const diff = diffProjectIndexes(versions.v2.index, versions.v2.index);
    expect(diff.files).toEqual({ added: [], changed: [], removed: [], unchanged: 5 });
    expect(diff.bundles).toEqual({ new: [], gone: [], kept: versions.v2.index.bundles.length });
    expect(diff.download).toMatchObject({
      missingContents: 0,
      wholeBundles: { bytes: 0, requests: 0 },
      deltaRanges: { bytes: 0, requests: 0 },
    });
  });

  test('loose (formatVersion 2) indexes: files only, each missing file fetched alone', () => {
    const diff = diffProjectIndexes(versions.v1.looseIndex, versions.v2.looseIndex);
    expect(diff.notes).toEqual([
      expect.stringContaining('old index is loose (formatVersion 2)'),
      expect.stringContaining('new index is loose (formatVersion 2)'),
    ]);
    expect(keysOf(diff.files.added)).toEqual(['art/zebra.png']);
    expect(diff.bundles).toEqual({ new: [], gone: [], kept: 0 });
    expect(diff.download).toMatchObject({
      looseFiles: { files: 2, bytes: 4000 },
      wholeBundles: { bytes: 4000, requests: 2 },
      deltaRanges: { bytes: 4000, requests: 2 },
    });
  });
});

describe('diffProjectIndexes with opaque ids', () => {
  test('two versions with one salt compare by id', async () => {
    const { v1, v2 } = await twoVersions({ v1: 'pepper', v2: 'pepper' });
    const diff = diffProjectIndexes(v1.index, v2.index);
    expect(diff.keys).toBe('id');
    expect(diff.notes).toEqual([]);
    expect(keysOf(diff.files.added)).toEqual([opaqueId('pepper', 'art/zebra.png')]);
    expect(keysOf(diff.files.changed)).toEqual([opaqueId('pepper', 'art/hero.png')]);
    expect(keysOf(diff.files.removed)).toEqual([opaqueId('pepper', 'readme.txt')]);
  });

  test("paths against ids: the paths are turned into ids with the other index's salt", async () => {
    const { v1, v2 } = await twoVersions({ v2: 'pepper' });
    const diff = diffProjectIndexes(v1.index, v2.index);
    expect(diff.keys).toBe('id');
    expect(diff.notes).toEqual([expect.stringContaining('old index lists paths')]);
    expect(keysOf(diff.files.removed)).toEqual([opaqueId('pepper', 'readme.txt')]);
    expect(diff.files.unchanged).toBe(3);
  });

  test('different salts: said so; the download figures still hold', async () => {
    const { v1, v2 } = await twoVersions({ v1: 'salt', v2: 'pepper' });
    const diff = diffProjectIndexes(v1.index, v2.index);
    expect(diff.notes).toEqual([expect.stringContaining('different salts')]);
    expect(diff.files.added).toHaveLength(5);
    expect(diff.download).toMatchObject({ missingContents: 2, missingBytes: 4000 });
  });
});

// ---------------------------------------------------------------------------------------------
// The command.

describe('awake-bundle diff', () => {
  let versions: Awaited<ReturnType<typeof twoVersions>>;
  beforeAll(async () => {
    versions = await twoVersions();
  });

  test('text: the changes, the upload and both downloads, with plurals', () => {
    const { dir } = versions;
    const result = runCli(['diff', join(dir, 'v1.json'), join(dir, 'v2.json')]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe(`old: ${join(dir, 'v1.json')} (formatVersion 3, 5 files, 3 bundles)`);
    expect(lines).toContain('Files: 1 added, 1 changed, 1 removed, 3 unchanged');
    expect(lines).toContain('  + art/zebra.png  1000 B');
    expect(lines).toContain('  ~ art/hero.png  2.93 KiB → 2.93 KiB');
    expect(lines).toContain('  - readme.txt  10 B');
    expect(lines).toContain('Bundles: 1 new, 2 gone, 1 kept');
    expect(result.stdout).toMatch(/^Upload: 1 new bundle, 20\d\.\d KiB$/m);
    expect(result.stdout).toMatch(/^Download for a returning player: 2 missing contents, 3\.91 KiB$/m);
    expect(result.stdout).toMatch(/^ {2}whole bundles: 20\d\.\d KiB in 1 request \(1 bundle\)$/m);
    expect(lines).toContain('  delta ranges:  3.91 KiB in 2 requests (1 bundle by ranges, 0 whole)');
  });

  test("--json: the library's result, with each index described", () => {
    const { dir, v1, v2, out } = versions;
    const result = runCli(['diff', join(dir, 'v1.json'), out, '--json']);
    expect(result.code).toBe(0);
    const json = JSON.parse(result.stdout);
    expect(json.old).toEqual({ source: join(dir, 'v1.json'), formatVersion: 3, files: 5, bundles: 3, opaqueIds: false });
    expect(json.new.source).toBe(out); // a published folder reads its project.index.json
    const { keys, notes, files, bundles, upload, download } = diffProjectIndexes(v1.index, v2.index);
    expect(json).toMatchObject(JSON.parse(JSON.stringify({ keys, notes, files, bundles, upload, download })));
  });

  test('--max-gap and friends set the range rule', () => {
    const { dir } = versions;
    const wide = runCli(['diff', join(dir, 'v1.json'), join(dir, 'v2.json'), '--json', '--max-gap', String(1024 * KiB)]);
    expect(JSON.parse(wide.stdout).download.deltaRanges).toMatchObject({ requests: 1, bundlesRanged: 1 });
    const low = runCli(['diff', join(dir, 'v1.json'), join(dir, 'v2.json'), '--json', '--max-missing', '0.01']);
    expect(JSON.parse(low.stdout).download.deltaRanges).toMatchObject({ requests: 1, bundlesWhole: 1 });
    const capped = runCli(['diff', join(dir, 'v1.json'), join(dir, 'v2.json'), '--json', '--max-ranges', '1', '--max-missing', '1']);
    expect(JSON.parse(capped.stdout).download.deltaRanges).toMatchObject({ requests: 1, bundlesWhole: 0 });
  });

  test('loose indexes are said to be loose', () => {
    const dir = temporaryDir();
    writeFileSync(join(dir, 'a.json'), JSON.stringify(versions.v1.looseIndex));
    writeFileSync(join(dir, 'b.json'), JSON.stringify(versions.v2.looseIndex));
    const result = runCli(['diff', join(dir, 'a.json'), join(dir, 'b.json')]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('note: the old index is loose (formatVersion 2): it has no bundles, its files are fetched one by one');
    expect(result.stdout).not.toContain('Bundles:');
    expect(result.stdout).toContain('2 loose files (3.91 KiB) fetched alone in both');
  });

  test('names are escaped; --json keeps them exact', () => {
    const dir = temporaryDir();
    const index = (files: { path: string; content: string }[]): ProjectIndex => ({
      formatVersion: 2,
      rootPath: '/p',
      files: files.map(({ path, content }) => ({
        path,
        sizeBytes: content.length,
        sha256: content.repeat(64),
        url: `files/${encodeURIComponent(path)}`,
      })),
    });
    writeFileSync(join(dir, 'old.json'), JSON.stringify(index([])));
    writeFileSync(join(dir, 'new.json'), JSON.stringify(index([{ path: 'evil\x1b[2J.png', content: 'a' }])));
    const text = runCli(['diff', join(dir, 'old.json'), join(dir, 'new.json')]);
    expect(text.stdout).toContain('  + evil\\x1b[2J.png  1 B');
    expect(text.stdout).not.toContain('\x1b');
    expect(text.stdout).toContain('Files: 1 added, 0 changed, 0 removed, 0 unchanged');
    const json = runCli(['diff', join(dir, 'old.json'), join(dir, 'new.json'), '--json']);
    expect(JSON.parse(json.stdout).files.added[0].key).toBe('evil\x1b[2J.png');
  });

  test('an index given by URL is fetched', async () => {
    const { out, dir } = versions;
    const server = await startStaticServer({ root: out });
    try {
      // Not runCli: its spawnSync would block this process, and with it the server.
      const { stdout } = await promisify(execFile)(process.execPath, [
        CLI,
        'diff',
        join(dir, 'v1.json'),
        `${server.url}project.index.json`,
        '--json',
      ]);
      expect(JSON.parse(stdout).files.added).toHaveLength(1);
      const missing = await promisify(execFile)(process.execPath, [CLI, 'diff', join(dir, 'v1.json'), `${server.url}nothing.json`]).catch(
        (error) => error,
      );
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain(`${server.url}nothing.json: cannot fetch: HTTP 404`);
    } finally {
      await server.close();
    }
  });
});

describe('awake-bundle diff errors', () => {
  let good: string;
  let dir: string;
  beforeAll(async () => {
    dir = temporaryDir();
    good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ formatVersion: 2, rootPath: '/p', files: [] }));
  });

  test('an unreadable index exits 1 naming the file', () => {
    const missing = join(dir, 'nope.json');
    const result = runCli(['diff', good, missing]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${missing}: cannot read:`);
    const folder = temporaryDir(); // a folder without project.index.json
    expect(runCli(['diff', folder, good]).stderr).toContain(`${join(folder, 'project.index.json')}: cannot read:`);
  });

  test('an invalid index exits 1 naming the file and the field', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify({ formatVersion: 2, rootPath: '/p', files: [{ path: 'a', sizeBytes: 1, sha256: 'XYZ', url: 'files/a' }] }),
    );
    const result = runCli(['diff', bad, good]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${bad}: invalid project index`);
    expect(result.stderr).toContain('files[0].sha256 must be 64 lowercase hex digits');

    const notJson = join(dir, 'not.json');
    writeFileSync(notJson, '{');
    expect(runCli(['diff', good, notJson]).stderr).toContain(`${notJson}: invalid project index:\n  not valid JSON`);

    const future = join(dir, 'v9.json');
    writeFileSync(future, JSON.stringify({ formatVersion: 9 }));
    const version = runCli(['diff', good, future]);
    expect(version.code).toBe(1);
    expect(version.stderr).toContain(`${future}: unsupported project index formatVersion 9`);
  });

  test('a wrong command line exits 2', () => {
    for (const args of [
      ['diff', good],
      ['diff', good, good, good],
      ['diff', good, good, '--max-missing', '2'],
      ['diff', good, good, '--max-ranges', '0'],
      ['diff', good, good, '--max-gap', 'wide'],
      ['diff', good, good, '--colour'],
    ]) {
      const result = runCli(args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('Run awake-bundle diff --help for usage.');
    }
    expect(runCli(['diff', good]).stderr).toContain('diff takes two indexes (old and new), found 1');
  });

  test('--help prints the usage and exits 0', () => {
    const result = runCli(['diff', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: awake-bundle diff <old-index> <new-index>');
  });
});
