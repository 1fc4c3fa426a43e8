/**
 * Delta reads (issue 11): a returning player has version 1 of a project in the cache; version 2
 * changes a few files. Reading or prefetching v2 asks only for the changed members, as `Range`
 * requests merged over small gaps, at most `maxRangesPerBundle` per bundle, each member verified
 * alone. Against the project's own server (Range support) and a plain node:http server that
 * ignores Range; requests are counted by wrapping the real fetch.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { deltaRangesFor } from '../core/read/delta-ranges.js';
import { BundleIntegrityError, IndexedAssetSource, MemoryCache, DEFAULT_DELTA_READS, type ContentCache, type PrefetchProgress } from '../core/index.js';
import { NodeFolderCache, startStaticServer, type StaticServer } from '../core/node/index.js';
import { runCli, temporaryDir } from './helpers/cli.js';
import { seededBytes, sha256Hex, writeTree } from './helpers/trees.js';

const KiB = 1024;
/** 60 files of 16 KiB in `levels/` (one bundle), and a few small ones in `ui/` (another). */
const LEVELS = Array.from({ length: 60 }, (_, i) => `levels/chunk-${String(i).padStart(2, '0')}.bin`);
const UI = ['ui/hud.json', 'ui/menu.json', 'ui/atlas.png'];
const PATHS = [...LEVELS, ...UI];

function version1(): Record<string, Uint8Array> {
  const files: Record<string, Uint8Array> = {};
  LEVELS.forEach((path, i) => (files[path] = seededBytes(16 * KiB, i)));
  UI.forEach((path, i) => (files[path] = seededBytes(300 + i, 1000 + i)));
  return files;
}

/** v1 with the files at `changed` (indexes into LEVELS) given new bytes of the same size. */
function changedFrom(v1: Record<string, Uint8Array>, changed: number[], seed: number): Record<string, Uint8Array> {
  const files = { ...v1 };
  for (const i of changed) files[LEVELS[i]!] = seededBytes(16 * KiB, seed * 1000 + i);
  return files;
}

let root: string;
let server: StaticServer;
const v1 = version1();
/** Sites, each a published version under `<root>/<name>/`. */
const versions: Record<string, Record<string, Uint8Array>> = {
  v1,
  // Two adjacent changed files (one range), and two more far apart.
  v2: changedFrom(v1, [2, 3, 20, 41], 2),
  // Seven changed files spread over the bundle: six ranges at a 64 KiB gap, more than 4.
  spread: changedFrom(v1, [0, 1, 10, 20, 30, 40, 50], 3),
  // Most of the bundle changed: cheaper to fetch it whole.
  most: changedFrom(v1, Array.from({ length: 40 }, (_, i) => i), 4),
};

function publish(name: string, files: Record<string, Uint8Array>): void {
  const tree = temporaryDir(`awkb-delta-${name}-`);
  writeTree(tree, files);
  const result = runCli([tree, '--out', join(root, name)]);
  if (result.code !== 0) throw new Error(`publish ${name}: ${result.stderr}`);
}

beforeAll(async () => {
  root = temporaryDir('awkb-delta-site-');
  for (const [name, files] of Object.entries(versions)) publish(name, files);
  server = await startStaticServer({ root });
});
afterAll(() => server.close());

/** A fetch that records each request's path and Range header, then sends it for real. */
function countingFetch() {
  const requests: { path: string; range: string | null }[] = [];
  const counted: typeof fetch = (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    requests.push({ path: url.pathname, range: new Headers(init?.headers).get('range') });
    return fetch(input, init);
  };
  return { fetch: counted, requests, bundles: () => requests.filter((r) => r.path.endsWith('.awkb')) };
}

interface Listed {
  bundles: { sha256: string; sizeBytes: number; url: string }[];
  files: { path: string; sizeBytes: number; sha256: string; bundle: string; offset: number }[];
}
const indexOf = (name: string): Listed => JSON.parse(readFileSync(join(root, name, 'project.index.json'), 'utf8'));
const indexUrl = (name: string, base = server.url) => `${base}${name}/project.index.json`;
/** `bytes=a-b` of each member at `paths` in version `name`. */
const rangeOf = (name: string, first: string, last = first) => {
  const files = indexOf(name).files;
  const a = files.find((f) => f.path === first)!;
  const b = files.find((f) => f.path === last)!;
  return `bytes=${a.offset}-${b.offset + b.sizeBytes - 1}`;
};
const rangeBytes = (range: string | null) => {
  const [, a, b] = /bytes=(\d+)-(\d+)/.exec(range!)!;
  return Number(b) - Number(a) + 1;
};

/** A cache holding v1, as a returning player's would. */
async function cacheWithV1<C extends ContentCache>(cache: C): Promise<C> {
  const source = await IndexedAssetSource.open({ indexUrl: indexUrl('v1'), cache });
  await source.prefetch(PATHS, { keep: false });
  await source.whenStored();
  return cache;
}

async function expectEveryFileOf(source: IndexedAssetSource, name: string): Promise<void> {
  for (const path of PATHS) expect(sha256Hex(await source.read(path))).toBe(sha256Hex(versions[name]![path]!));
}

describe('planning the ranges of a bundle (the rule diff prices updates with)', () => {
  let next = 0;
  const member = (offset: number, sizeBytes: number) => ({ offset, sizeBytes, sha256: String(next++).padStart(64, '0') });
  test('members closer than the gap share a range; farther ones get their own', () => {
    expect(deltaRangesFor([member(100, 10), member(115, 5), member(100_000, 20)], 1_000_000, { ...DEFAULT_DELTA_READS, maxGapBytes: 6 })).toEqual([
      { offset: 100, length: 20 }, { offset: 100_000, length: 20 },
    ]);
    expect(deltaRangesFor([member(100, 10), member(115, 5)], 1_000_000, { ...DEFAULT_DELTA_READS, maxGapBytes: 5 })).toHaveLength(2);
  });
  test('past maxRangesPerBundle, the smallest gaps close first; touching members always share a range', () => {
    const missing = [member(0, 1), member(10, 1), member(1000, 1), member(1001, 3), member(5000, 1)];
    expect(deltaRangesFor(missing, 1_000_000, { ...DEFAULT_DELTA_READS, maxGapBytes: 0, maxRangesPerBundle: 3 })).toEqual([
      { offset: 0, length: 11 }, { offset: 1000, length: 4 }, { offset: 5000, length: 1 },
    ]);
  });
  test('more than maxMissingFraction of the bundle missing: fetch it whole (undefined)', () => {
    expect(deltaRangesFor([member(0, 60)], 100, DEFAULT_DELTA_READS)).toBeUndefined();
    expect(deltaRangesFor([member(0, 50)], 100, DEFAULT_DELTA_READS)).toEqual([{ offset: 0, length: 50 }]);
  });
});

describe('a returning player loads version 2 with version 1 in the cache', () => {
  test('reading v2 asks only for the changed members: adjacent ones in one range, one request per range', async () => {
    const cache = await cacheWithV1(new MemoryCache());
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: indexUrl('v2'), cache, fetch: net.fetch });
    await expectEveryFileOf(source, 'v2');
    const [c2, c3, c20, c41] = [2, 3, 20, 41].map((i) => LEVELS[i]!);
    // The ui bundle is unchanged (and cached): no request at all.
    expect(net.bundles().map((r) => r.range).sort()).toEqual([rangeOf('v2', c2!, c3!), rangeOf('v2', c20!), rangeOf('v2', c41!)].sort());
    expect(net.bundles().reduce((sum, r) => sum + rangeBytes(r.range), 0)).toBe(4 * 16 * KiB);
    await source.whenStored();
    // What the ranges brought is cached like any member: a second source needs no request.
    const again = countingFetch();
    await expectEveryFileOf(await IndexedAssetSource.open({ indexUrl: indexUrl('v2'), cache, fetch: again.fetch }), 'v2');
    expect(again.bundles()).toEqual([]);
  });

  test('prefetch counts only the bytes it fetches, and concurrent reads share its range requests', async () => {
    const cache = await cacheWithV1(new NodeFolderCache(temporaryDir('awkb-delta-cache-')));
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: indexUrl('v2'), cache, fetch: net.fetch });
    const events: PrefetchProgress[] = [];
    const reads = LEVELS.map((path) => source.read(path));
    await source.prefetch(PATHS, { onProgress: (p) => events.push(p) });
    (await Promise.all(reads)).forEach((bytes, i) => expect(sha256Hex(bytes)).toBe(sha256Hex(versions.v2![LEVELS[i]!]!)));
    expect(net.bundles()).toHaveLength(3);
    expect(new Set(net.bundles().map((r) => r.range)).size).toBe(3);
    expect(events.at(-1)).toMatchObject({ loadedBytes: 4 * 16 * KiB, totalBytes: 4 * 16 * KiB, requestsDone: 1, requestsTotal: 1 });
    await expectEveryFileOf(source, 'v2');
    expect(net.bundles()).toHaveLength(3);
  });

  test('at most maxRangesPerBundle requests per bundle: the smallest gaps are closed first', async () => {
    const cache = await cacheWithV1(new MemoryCache());
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: indexUrl('spread'), cache, fetch: net.fetch });
    await expectEveryFileOf(source, 'spread');
    const ranges = net.bundles().map((r) => r.range);
    expect(ranges).toHaveLength(4);
    expect(ranges.every((range) => range !== null)).toBe(true);
    // 7 changed files of 16 KiB; the ranges also bring the 8 and 9 files between two pairs.
    expect(ranges.reduce((sum, range) => sum + rangeBytes(range), 0)).toBe((7 + 8 + 9) * 16 * KiB);

    const tuned = countingFetch();
    const cache2 = await cacheWithV1(new MemoryCache());
    await expectEveryFileOf(await IndexedAssetSource.open({ indexUrl: indexUrl('spread'), cache: cache2, fetch: tuned.fetch, deltaReads: { maxRangesPerBundle: 8 } }), 'spread');
    expect(tuned.bundles()).toHaveLength(6);
    expect(tuned.bundles().reduce((sum, r) => sum + rangeBytes(r.range), 0)).toBe(7 * 16 * KiB);
  });

  test('when more than half the bundle changed, it is fetched whole, one request', async () => {
    const cache = await cacheWithV1(new MemoryCache());
    const net = countingFetch();
    await expectEveryFileOf(await IndexedAssetSource.open({ indexUrl: indexUrl('most'), cache, fetch: net.fetch }), 'most');
    expect(net.bundles()).toEqual([{ path: expect.stringMatching(/\.awkb$/), range: null }]);
  });

  test('deltaReads options are checked at open, before any request', async () => {
    const net = countingFetch();
    await expect(IndexedAssetSource.open({ indexUrl: indexUrl('v2'), cache: new MemoryCache(), fetch: net.fetch, deltaReads: { maxRangesPerBundle: 0 } })).rejects.toThrow(/maxRangesPerBundle must be an integer ≥ 1/);
    await expect(IndexedAssetSource.open({ indexUrl: indexUrl('v2'), cache: new MemoryCache(), fetch: net.fetch, deltaReads: { maxMissingFraction: 2 } })).rejects.toThrow(/maxMissingFraction/);
    expect(net.requests).toEqual([]);
  });

  test('deltaReads: false fetches whole bundles', async () => {
    const cache = await cacheWithV1(new MemoryCache());
    const net = countingFetch();
    await expectEveryFileOf(await IndexedAssetSource.open({ indexUrl: indexUrl('v2'), cache, fetch: net.fetch, deltaReads: false }), 'v2');
    expect(net.bundles()).toEqual([{ path: expect.stringMatching(/\.awkb$/), range: null }]);
  });

  test('a damaged range is a BundleIntegrityError naming the member, and nothing of it is cached', async () => {
    const name = 'v2-damaged';
    cpSync(join(root, 'v2'), join(root, name), { recursive: true });
    const index = indexOf(name);
    const target = index.files.find((f) => f.path === LEVELS[20])!;
    const file = join(root, name, index.bundles.find((b) => b.sha256 === target.bundle)!.url);
    const bytes = readFileSync(file);
    bytes[target.offset + 100]! ^= 0xff;
    writeFileSync(file, bytes);
    const cache = await cacheWithV1(new MemoryCache());
    const before = cache.size;
    const source = await IndexedAssetSource.open({ indexUrl: indexUrl(name), cache, retry: { attempts: 1 } });
    const error = await source.read(LEVELS[20]!).catch((e) => e);
    expect(error).toBeInstanceOf(BundleIntegrityError);
    expect(error).toMatchObject({ code: 'E_BUNDLE_INTEGRITY', part: 'members', damaged: [LEVELS[20]], path: LEVELS[20] });
    expect(error.url).toMatch(/\.awkb$/);
    // The good changed members came in the same load: none of them is cached either.
    await source.whenStored();
    expect(cache.size).toBe(before);
    expect(await cache.has(target.sha256)).toBe(false);
  });

  test('a server that ignores Range: the 200 is the whole bundle, checked and used; that origin then gets whole requests', async () => {
    const plain: Server = createServer((request, response) => {
      try {
        const body = readFileSync(join(root, decodeURIComponent(new URL(request.url!, 'http://x').pathname)));
        response.writeHead(200, { 'content-length': body.length });
        response.end(body);
      } catch {
        response.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(plain.address() as AddressInfo).port}/`;
      const cache = await cacheWithV1(new MemoryCache());
      const net = countingFetch();
      const source = await IndexedAssetSource.open({ indexUrl: indexUrl('v2', base), cache, fetch: net.fetch });
      await expectEveryFileOf(source, 'v2');
      expect(net.bundles().length).toBeGreaterThanOrEqual(1);
      expect(net.bundles()[0]!.range).not.toBeNull();
      // Verified whole, so every member of v2's levels bundle is cached now.
      await source.whenStored();
      for (const path of LEVELS) expect(await cache.has(sha256Hex(versions.v2![path]!))).toBe(true);

      const later = countingFetch();
      await expectEveryFileOf(await IndexedAssetSource.open({ indexUrl: indexUrl('spread', base), cache, fetch: later.fetch }), 'spread');
      expect(later.bundles()).toEqual([{ path: expect.stringMatching(/\.awkb$/), range: null }]);
    } finally {
      plain.closeAllConnections();
      await new Promise((resolve) => plain.close(resolve));
    }
  });
});
