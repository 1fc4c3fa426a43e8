/**
 * Delta reads: a returning player has version 1 of a project in the cache; version 2
 * changes a few files. Reading or prefetching v2 asks only for the changed members, as `Range`
 * requests merged over small gaps, at most `maxRangesPerBundle` per bundle, each member verified
 * alone. Against the project's own server (Range support) and a plain node:http server that
 * ignores Range; requests are counted by wrapping the real fetch.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startWholeFileServer } from './helpers/whole-file-server.js';
import { deltaRangesFor } from '../core/read/plan/delta-plan.js';
import {
  BundleIntegrityError,
  IndexedAssetSource,
  RangeResponseError,
  MemoryCache,
  DEFAULT_DELTA_READS,
  type ContentCache,
  type PrefetchProgress,
} from '../core/internal.js';
import { NodeFolderCache, startStaticServer, type StaticServer } from '../core/node/index.js';
import { MAX_PART_HEADER_BYTES, MULTIPART_BODY_ALLOWANCE, MULTIPART_PART_ALLOWANCE, Transport } from '../core/net/transport.js';
import { getRanges } from './helpers/get-ranges.js';
import { runCli, temporaryDir } from './helpers/cli.js';
import { startNginx } from './helpers/nginx.js';
import { seededBytes, sha256Hex, writeTree } from './helpers/trees.js';

const KiB = 1024;
/** Ranges one request each (as before multi-range requests, and as an origin without them gets). */
const SEPARATE = { multipartRanges: false };
/**
 * A read alone is a load of one (SPEC §7 "Needed bytes"): with needed bytes on (the default) it
 * asks for its own member only. The delta rule, which brings every member of the bundle the cache
 * lacks, plans the reads here with needed bytes off; prefetches plan by it either way.
 */
const DELTA = { neededBytes: false } as const;
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
  // Twenty changed files, every third one: twenty ranges (a third of the bundle).
  many: changedFrom(
    v1,
    Array.from({ length: 20 }, (_, i) => i * 3),
    5,
  ),
  // Most of the bundle changed: cheaper to fetch it whole.
  most: changedFrom(
    v1,
    Array.from({ length: 40 }, (_, i) => i),
    4,
  ),
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
  const answers: { status: number; type: string | null }[] = [];
  const counted: typeof fetch = async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    requests.push({ path: url.pathname, range: new Headers(init?.headers).get('range') });
    const response = await fetch(input, init);
    if (url.pathname.endsWith('.awkb')) answers.push({ status: response.status, type: response.headers.get('content-type') });
    return response;
  };
  return { fetch: counted, requests, answers, bundles: () => requests.filter((r) => r.path.endsWith('.awkb')) };
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
/** Bytes a Range header asks for, over all its ranges. */
const rangeBytes = (range: string | null) =>
  [...range!.matchAll(/(\d+)-(\d+)/g)].reduce((sum, [, a, b]) => sum + Number(b) - Number(a) + 1, 0);

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
    expect(
      deltaRangesFor([member(100, 10), member(115, 5), member(100_000, 20)], 1_000_000, { ...DEFAULT_DELTA_READS, maxGapBytes: 6 }),
    ).toEqual([
      { offset: 100, length: 20 },
      { offset: 100_000, length: 20 },
    ]);
    expect(deltaRangesFor([member(100, 10), member(115, 5)], 1_000_000, { ...DEFAULT_DELTA_READS, maxGapBytes: 5 })).toHaveLength(2);
  });
  test('past maxRangesPerBundle, the smallest gaps close first; touching members always share a range', () => {
    const missing = [member(0, 1), member(10, 1), member(1000, 1), member(1001, 3), member(5000, 1)];
    expect(deltaRangesFor(missing, 1_000_000, { ...DEFAULT_DELTA_READS, maxGapBytes: 0, maxRangesPerBundle: 3 })).toEqual([
      { offset: 0, length: 11 },
      { offset: 1000, length: 4 },
      { offset: 5000, length: 1 },
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
    const source = await IndexedAssetSource.open({ ...DELTA, indexUrl: indexUrl('v2'), cache, fetch: net.fetch, deltaReads: SEPARATE });
    await expectEveryFileOf(source, 'v2');
    const [c2, c3, c20, c41] = [2, 3, 20, 41].map((i) => LEVELS[i]!);
    // The ui bundle is unchanged (and cached): no request at all.
    expect(
      net
        .bundles()
        .map((r) => r.range)
        .sort(),
    ).toEqual([rangeOf('v2', c2!, c3!), rangeOf('v2', c20!), rangeOf('v2', c41!)].sort());
    expect(net.bundles().reduce((sum, r) => sum + rangeBytes(r.range), 0)).toBe(4 * 16 * KiB);
    await source.whenStored();
    // What the ranges brought is cached like any member: a second source needs no request.
    const again = countingFetch();
    await expectEveryFileOf(await IndexedAssetSource.open({ ...DELTA, indexUrl: indexUrl('v2'), cache, fetch: again.fetch }), 'v2');
    expect(again.bundles()).toEqual([]);
  });

  test('prefetch counts only the bytes it fetches, and concurrent reads share its range requests', async () => {
    const cache = await cacheWithV1(new NodeFolderCache(temporaryDir('awkb-delta-cache-')));
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: indexUrl('v2'), cache, fetch: net.fetch, deltaReads: SEPARATE });
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

  test('prefetchChanged(v1) brings the changed files whose v1 contents are cached, in the same ranges, and nothing else', async () => {
    // The player downloaded only the levels/ bundle of v1.
    const cache = new MemoryCache();
    const first = await IndexedAssetSource.open({ indexUrl: indexUrl('v1'), cache });
    await first.prefetch(LEVELS, { keep: false });
    await first.whenStored();
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: indexUrl('v2'), cache, fetch: net.fetch });
    expect(await source.prefetchChanged(first.index)).toBe(4);
    const bundle = indexOf('v2').bundles.find((b) => b.sha256 === indexOf('v2').files.find((f) => f.path === LEVELS[2])!.bundle)!;
    expect(net.bundles()).toEqual([
      {
        path: `/v2/${bundle.url}`,
        range: `${rangeOf('v2', LEVELS[2]!, LEVELS[3]!)},${rangeOf('v2', LEVELS[20]!)},${rangeOf('v2', LEVELS[41]!)}`.replace(
          /,bytes=/g,
          ',',
        ),
      },
    ]);
    // Nothing pinned in memory for reads (keep: false); every v2 file of levels/ now reads from the cache.
    expect(source.stats().protectedBytes).toBe(0);
    await source.whenStored();
    net.requests.length = 0;
    for (const path of LEVELS) expect(sha256Hex(await source.read(path))).toBe(sha256Hex(versions.v2![path]!));
    expect(net.bundles()).toEqual([]);
    // Again: nothing changed is missing now. Without a cache: nothing.
    expect(await source.prefetchChanged(first.index)).toBe(0);
    const uncached = await IndexedAssetSource.open({ indexUrl: indexUrl('v2'), cache: null });
    expect(await uncached.prefetchChanged(first.index)).toBe(0);
  });

  test('at most maxRangesPerBundle requests per bundle: the smallest gaps are closed first', async () => {
    const cache = await cacheWithV1(new MemoryCache());
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ ...DELTA, indexUrl: indexUrl('spread'), cache, fetch: net.fetch, deltaReads: SEPARATE });
    await expectEveryFileOf(source, 'spread');
    const ranges = net.bundles().map((r) => r.range);
    expect(ranges).toHaveLength(4);
    expect(ranges.every((range) => range !== null)).toBe(true);
    // 7 changed files of 16 KiB; the ranges also bring the 8 and 9 files between two pairs.
    expect(ranges.reduce((sum, range) => sum + rangeBytes(range), 0)).toBe((7 + 8 + 9) * 16 * KiB);

    const tuned = countingFetch();
    const cache2 = await cacheWithV1(new MemoryCache());
    await expectEveryFileOf(
      await IndexedAssetSource.open({
        ...DELTA,
        indexUrl: indexUrl('spread'),
        cache: cache2,
        fetch: tuned.fetch,
        deltaReads: { ...SEPARATE, maxRangesPerBundle: 8 },
      }),
      'spread',
    );
    expect(tuned.bundles()).toHaveLength(6);
    expect(tuned.bundles().reduce((sum, r) => sum + rangeBytes(r.range), 0)).toBe(7 * 16 * KiB);
  });

  test('when more than half the bundle changed, it is fetched whole, one request', async () => {
    const cache = await cacheWithV1(new MemoryCache());
    const net = countingFetch();
    await expectEveryFileOf(await IndexedAssetSource.open({ ...DELTA, indexUrl: indexUrl('most'), cache, fetch: net.fetch }), 'most');
    expect(net.bundles()).toEqual([{ path: expect.stringMatching(/\.awkb$/), range: null }]);
  });

  test('deltaReads options are checked at open, before any request', async () => {
    const net = countingFetch();
    await expect(
      IndexedAssetSource.open({
        indexUrl: indexUrl('v2'),
        cache: new MemoryCache(),
        fetch: net.fetch,
        deltaReads: { maxRangesPerBundle: 0 },
      }),
    ).rejects.toThrow(/maxRangesPerBundle must be an integer ≥ 1/);
    await expect(
      IndexedAssetSource.open({
        indexUrl: indexUrl('v2'),
        cache: new MemoryCache(),
        fetch: net.fetch,
        deltaReads: { maxMissingFraction: 2 },
      }),
    ).rejects.toThrow(/maxMissingFraction/);
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
    const plain = await startWholeFileServer(root);
    try {
      const { base } = plain;
      const cache = await cacheWithV1(new MemoryCache());
      const net = countingFetch();
      const source = await IndexedAssetSource.open({ indexUrl: indexUrl('v2', base), cache, fetch: net.fetch });
      await expectEveryFileOf(source, 'v2');
      expect(net.bundles().length).toBeGreaterThanOrEqual(1);
      expect(net.bundles()[0]!.range).not.toBeNull();
      // Verified whole, so every member of v2's levels bundle is cached now.
      await source.whenStored();
      for (const path of LEVELS) expect(await cache.has(sha256Hex(versions.v2![path]!))).toBe(true);

      // What an origin serves is learnt per source: a new source asks for ranges again, and uses the whole answer.
      const before = net.bundles().length;
      await expectEveryFileOf(await IndexedAssetSource.open({ indexUrl: indexUrl('spread', base), cache, fetch: net.fetch }), 'spread');
      expect(net.bundles()[before]!.range).not.toBeNull();
    } finally {
      await plain.close();
    }
  });
});

/**
 * A node:http server for the bundles of the published versions that answers one range as a 206
 * and several as `multi` says: `first` (a 206 of the first range only), `whole` (a 200, as S3
 * does), `coalesce` (one 206 range from the first to the last), `malformed` (multipart whose
 * second part's Content-Range says one byte more than it holds), `reset` (the connection
 * dropped: what a page sees when a CDN refuses the CORS preflight several ranges need), `gap`
 * (multipart whose first part spans the first two ranges and the gap between them), `long-headers`
 * (multipart whose every part carries a 3000-byte header). With `refuse`, every request with a
 * Range header is answered with that status instead (a host that refuses ranges), plain GETs 200.
 */
async function rangeServer(multi: 'first' | 'whole' | 'coalesce' | 'malformed' | 'reset' | 'gap' | 'long-headers', refuse?: number) {
  const answered: { range: string | undefined; status: number }[] = [];
  const plain: Server = createServer((request, response) => {
    let body: Buffer;
    try {
      body = readFileSync(join(root, decodeURIComponent(new URL(request.url!, 'http://x').pathname)));
    } catch {
      return void response.writeHead(404).end();
    }
    const header = request.headers.range;
    const specs = header ? [...header.matchAll(/(\d+)-(\d+)/g)].map(([, a, b]) => [Number(a), Number(b)] as const) : [];
    const send = (status: number, headers: Record<string, string>, bytes: Buffer) => {
      answered.push({ range: header, status });
      response.writeHead(status, { ...headers, 'content-length': bytes.length });
      response.end(bytes);
    };
    const one = (a: number, b: number) => send(206, { 'content-range': `bytes ${a}-${b}/${body.length}` }, body.subarray(a, b + 1));
    if (header !== undefined && refuse !== undefined) return send(refuse, {}, Buffer.from('ranges are not served here'));
    if (specs.length > 1 && multi === 'reset') {
      answered.push({ range: header, status: 0 });
      return void request.socket.resetAndDestroy();
    }
    if (specs.length === 0 || (specs.length > 1 && multi === 'whole')) return send(200, {}, body);
    if (specs.length === 1 || multi === 'first') return one(specs[0]![0], specs[0]![1]);
    if (multi === 'coalesce') return one(specs[0]![0], specs.at(-1)![1]);
    const boundary = 'XyZ';
    if (multi === 'gap') specs.splice(0, 2, [specs[0]![0], specs[1]![1]]);
    const extra = multi === 'long-headers' ? `X-Origin-Trace: ${'t'.repeat(3000)}\r\n` : '';
    const pieces = specs.flatMap(([a, b], i) => [
      Buffer.from(
        `--${boundary}\r\n${extra}Content-Range: bytes ${a}-${multi === 'malformed' && i === 1 ? b + 1 : b}/${body.length}\r\n\r\n`,
      ),
      body.subarray(a, b + 1),
      Buffer.from('\r\n'),
    ]);
    return send(
      206,
      { 'content-type': `multipart/byteranges; boundary=${boundary}` },
      Buffer.concat([...pieces, Buffer.from(`--${boundary}--\r\n`)]),
    );
  });
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(plain.address() as AddressInfo).port}/`,
    bundleAnswers: () => answered.filter((a) => a.range !== undefined),
    close: async () => {
      plain.closeAllConnections();
      await new Promise((resolve) => plain.close(resolve));
    },
  };
}

describe('several ranges in one request (multipart/byteranges)', () => {
  const multiRange = (range: string | null) => range !== null && range.includes(',');

  test('many changes spread over a bundle: one request for the bundle, bringing the changed bytes alone', async () => {
    for (const [name, changed, ranges] of [
      ['spread', 7, 6],
      ['many', 20, 20],
      ['v2', 4, 3],
    ] as const) {
      const cache = await cacheWithV1(new MemoryCache());
      const net = countingFetch();
      const source = await IndexedAssetSource.open({ ...DELTA, indexUrl: indexUrl(name), cache, fetch: net.fetch });
      await expectEveryFileOf(source, name);
      expect(net.bundles()).toHaveLength(1);
      expect(net.bundles()[0]!.range!.split(',')).toHaveLength(ranges);
      expect(rangeBytes(net.bundles()[0]!.range)).toBe(changed * 16 * KiB);
      expect(net.answers).toEqual([{ status: 206, type: expect.stringMatching(/^multipart\/byteranges; boundary=/) }]);
      // Each member verified and cached: a second source needs no request.
      await source.whenStored();
      const again = countingFetch();
      await expectEveryFileOf(await IndexedAssetSource.open({ ...DELTA, indexUrl: indexUrl(name), cache, fetch: again.fetch }), name);
      expect(again.bundles()).toEqual([]);
    }
  });

  test('against nginx: its multipart/byteranges answer is parsed, one request per changed bundle', async () => {
    const nginx = await startNginx(root);
    try {
      const cache = await cacheWithV1(new MemoryCache());
      const net = countingFetch();
      const source = await IndexedAssetSource.open({ ...DELTA, indexUrl: indexUrl('many', `${nginx.origin}/`), cache, fetch: net.fetch });
      await expectEveryFileOf(source, 'many');
      expect(net.bundles()).toHaveLength(1);
      expect(net.bundles()[0]!.range!.split(',')).toHaveLength(20);
      expect(net.answers).toEqual([{ status: 206, type: expect.stringMatching(/^multipart\/byteranges; boundary=/) }]);
    } finally {
      await nginx.stop();
    }
  });

  test('prefetch progress ends at the planned bytes; maxRangesPerRequest caps the ranges of the one request', async () => {
    const cache = await cacheWithV1(new MemoryCache());
    const net = countingFetch();
    const source = await IndexedAssetSource.open({
      indexUrl: indexUrl('many'),
      cache,
      fetch: net.fetch,
      deltaReads: { maxRangesPerRequest: 5 },
    });
    const events: PrefetchProgress[] = [];
    await source.prefetch(PATHS, { onProgress: (p) => events.push(p) });
    await expectEveryFileOf(source, 'many');
    expect(net.bundles()).toHaveLength(1);
    expect(net.bundles()[0]!.range!.split(',')).toHaveLength(5);
    const planned = rangeBytes(net.bundles()[0]!.range);
    expect(events.at(-1)).toMatchObject({ loadedBytes: planned, totalBytes: planned, requestsDone: 1, requestsTotal: 1 });
    for (let i = 1; i < events.length; i++) expect(events[i]!.loadedBytes).toBeGreaterThanOrEqual(events[i - 1]!.loadedBytes);
  });

  test('deltaReads.maxRangesPerRequest and multipartGapBytes are checked at open', async () => {
    await expect(
      IndexedAssetSource.open({ indexUrl: indexUrl('v2'), cache: new MemoryCache(), deltaReads: { maxRangesPerRequest: 0 } }),
    ).rejects.toThrow(/maxRangesPerRequest must be an integer ≥ 1/);
    await expect(
      IndexedAssetSource.open({ indexUrl: indexUrl('v2'), cache: new MemoryCache(), deltaReads: { multipartGapBytes: -1 } }),
    ).rejects.toThrow(/multipartGapBytes/);
  });

  test.each([
    ['first', 'a 206 of the first range only'],
    ['whole', 'a 200 (as S3 answers several ranges), not read'],
    ['reset', 'a network failure (after its retries)'],
  ] as const)(
    'a server that answers several ranges with %s (%s): ranges one per request, for that origin from then on',
    async (mode, _what) => {
      const host = await rangeServer(mode);
      try {
        const cache = await cacheWithV1(new MemoryCache());
        const net = countingFetch();
        await expectEveryFileOf(
          await IndexedAssetSource.open({
            ...DELTA,
            indexUrl: indexUrl('spread', host.base),
            cache,
            fetch: net.fetch,
            retry: { baseDelayMs: 1 },
          }),
          'spread',
        );
        const ranges = net.bundles().map((r) => r.range);
        const tries = mode === 'reset' ? 4 : 1;
        expect(ranges.slice(0, tries).every(multiRange)).toBe(true);
        // Then today's plan: at most maxRangesPerBundle single ranges, as 206s.
        expect(ranges.slice(tries)).toHaveLength(4);
        expect(ranges.slice(tries).some(multiRange)).toBe(false);
        expect(
          host
            .bundleAnswers()
            .slice(tries)
            .every((a) => a.status === 206),
        ).toBe(true);

        // What an origin serves is learnt per source: a new source asks in one request again.
        const later = countingFetch();
        await expectEveryFileOf(
          await IndexedAssetSource.open({
            ...DELTA,
            indexUrl: indexUrl('spread', host.base),
            cache: await cacheWithV1(new MemoryCache()),
            fetch: later.fetch,
            retry: { baseDelayMs: 1 },
          }),
          'spread',
        );
        expect(multiRange(later.bundles()[0]!.range)).toBe(true);
      } finally {
        await host.close();
      }
    },
  );

  test('a server that coalesces several ranges into one 206 covering them: accepted, one request', async () => {
    const host = await rangeServer('coalesce');
    try {
      const cache = await cacheWithV1(new MemoryCache());
      const net = countingFetch();
      const source = await IndexedAssetSource.open({ ...DELTA, indexUrl: indexUrl('spread', host.base), cache, fetch: net.fetch });
      await expectEveryFileOf(source, 'spread');
      expect(net.bundles()).toHaveLength(1);
      await source.whenStored();
      for (const i of [0, 1, 10, 20, 30, 40, 50]) expect(await cache.has(sha256Hex(versions.spread![LEVELS[i]!]!))).toBe(true);
    } finally {
      await host.close();
    }
  });

  test.each([
    ['gap', 'a part spanning two ranges and the 128 KiB gap between them'],
    ['long-headers', 'parts with 3000-byte headers'],
  ] as const)('a legal but unusual multipart answer (%s: %s) reads on the first try, one request', async (mode, _what) => {
    const host = await rangeServer(mode);
    try {
      const cache = await cacheWithV1(new MemoryCache());
      const net = countingFetch();
      const source = await IndexedAssetSource.open({
        ...DELTA,
        indexUrl: indexUrl('spread', host.base),
        cache,
        fetch: net.fetch,
        retry: { attempts: 1 },
      });
      await expectEveryFileOf(source, 'spread');
      expect(net.bundles()).toHaveLength(1);
      expect(net.bundles()[0]!.range!.split(',')).toHaveLength(6);
      expect(net.answers).toEqual([{ status: 206, type: expect.stringMatching(/^multipart\/byteranges; boundary=/) }]);
      await source.whenStored();
      for (const i of [0, 1, 10, 20, 30, 40, 50]) expect(await cache.has(sha256Hex(versions.spread![LEVELS[i]!]!))).toBe(true);
    } finally {
      await host.close();
    }
  });

  test('a malformed multipart answer is a RangeResponseError naming the URL, nothing of it is cached; that origin then gets ranges one per request', async () => {
    const host = await rangeServer('malformed');
    try {
      const cache = await cacheWithV1(new MemoryCache());
      const before = cache.size;
      const net = countingFetch();
      const source = await IndexedAssetSource.open({
        ...DELTA,
        indexUrl: indexUrl('spread', host.base),
        cache,
        retry: { attempts: 1 },
        fetch: net.fetch,
      });
      const error = await source.read(LEVELS[20]!).catch((e) => e);
      expect(error).toBeInstanceOf(RangeResponseError);
      expect(error).toMatchObject({ code: 'E_RANGE', path: LEVELS[20] });
      expect(error.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/spread\/.*\.awkb$/);
      expect(error.message).toMatch(/multipart\/byteranges answer is malformed/);
      await source.whenStored();
      expect(cache.size).toBe(before);

      // The same source then asks that origin for ranges one per request (issue 18: per source).
      await expectEveryFileOf(source, 'spread');
      expect(net.bundles().slice(1)).toHaveLength(4);
      expect(
        net
          .bundles()
          .slice(1)
          .some((r) => multiRange(r.range)),
      ).toBe(false);
    } finally {
      await host.close();
    }
  });
});

describe('a host that refuses Range (403, 416, 501): whole bundles, verified', () => {
  const levelsBundle = (name: string) =>
    `/${name}/${indexOf(name).bundles.find((b) => b.sha256 === indexOf(name).files.find((f) => f.path === LEVELS[0])!.bundle)!.url}`;
  const uiBundle = (name: string) =>
    `/${name}/${indexOf(name).bundles.find((b) => b.sha256 === indexOf(name).files.find((f) => f.path === UI[0])!.bundle)!.url}`;

  test.each([403, 416, 501])(
    'rangeReads: a %i to the range makes that read fetch the whole bundle; later reads on that origin go whole at once',
    async (status) => {
      const host = await rangeServer('first', status);
      try {
        const net = countingFetch();
        const source = await IndexedAssetSource.open({
          indexUrl: indexUrl('v2', host.base),
          rangeReads: true,
          fetch: net.fetch,
          retry: { baseDelayMs: 1 },
        });
        expect(sha256Hex(await source.read(LEVELS[2]!))).toBe(sha256Hex(versions.v2![LEVELS[2]!]!));
        expect(net.bundles()).toEqual([
          { path: levelsBundle('v2'), range: rangeOf('v2', LEVELS[2]!) },
          { path: levelsBundle('v2'), range: null },
        ]);
        // The whole bundle was checked as one: its other members need no request.
        expect(sha256Hex(await source.read(LEVELS[3]!))).toBe(sha256Hex(versions.v2![LEVELS[3]!]!));
        // Another bundle on the same origin: whole at once, no Range.
        expect(sha256Hex(await source.read(UI[0]!))).toBe(sha256Hex(versions.v2![UI[0]!]!));
        expect(net.bundles()).toEqual([
          { path: levelsBundle('v2'), range: rangeOf('v2', LEVELS[2]!) },
          { path: levelsBundle('v2'), range: null },
          { path: uiBundle('v2'), range: null },
        ]);
        expect(host.bundleAnswers()).toEqual([{ range: rangeOf('v2', LEVELS[2]!), status }]);
      } finally {
        await host.close();
      }
    },
  );

  test.each([
    [403, true],
    [416, true],
    [501, true],
    [403, false],
    [416, false],
    [501, false],
  ])(
    'delta read: a %i (several ranges in one request: %s) makes the load fetch the whole bundle; later loads go whole at once',
    async (status, multipartRanges) => {
      const host = await rangeServer('first', status);
      try {
        const cache = await cacheWithV1(new MemoryCache());
        const net = countingFetch();
        const source = await IndexedAssetSource.open({
          indexUrl: indexUrl('v2', host.base),
          cache,
          fetch: net.fetch,
          deltaReads: { multipartRanges },
          retry: { baseDelayMs: 1 },
        });
        await expectEveryFileOf(source, 'v2');
        const requests = net.bundles();
        // The range requests (one with every range, or up to one per range, sent together), refused; then the bundle, whole.
        expect(requests.at(-1)).toEqual({ path: levelsBundle('v2'), range: null });
        expect(requests.slice(0, -1).length).toBeGreaterThanOrEqual(1);
        expect(requests.slice(0, -1).length).toBeLessThanOrEqual(multipartRanges ? 1 : 3);
        expect(requests.slice(0, -1).every((r) => r.path === levelsBundle('v2') && r.range !== null)).toBe(true);
        expect(host.bundleAnswers().every((a) => a.status === status)).toBe(true);
        // Verified whole: every member of v2's levels bundle is cached now.
        await source.whenStored();
        for (const path of LEVELS) expect(await cache.has(sha256Hex(versions.v2![path]!))).toBe(true);

        // What an origin serves is learnt per source: a new source asks for ranges again, then goes whole.
        const later = countingFetch();
        await expectEveryFileOf(
          await IndexedAssetSource.open({
            indexUrl: indexUrl('spread', host.base),
            cache: await cacheWithV1(new MemoryCache()),
            fetch: later.fetch,
          }),
          'spread',
        );
        expect(later.bundles().at(-1)).toEqual({ path: levelsBundle('spread'), range: null });
      } finally {
        await host.close();
      }
    },
  );
});

describe('Transport.streamRanges: what a multi-range answer must be', () => {
  const file = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
  const asked = [
    { offset: 10, length: 10 },
    { offset: 100, length: 5 },
    { offset: 500, length: 20 },
  ];
  const part = (first: number, last: number, boundary = 'b0') => [
    Buffer.from(`--${boundary}\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes ${first}-${last}/1000\r\n\r\n`),
    file.subarray(first, last + 1),
    Buffer.from('\r\n'),
  ];
  const end = (boundary = 'b0') => Buffer.from(`--${boundary}--\r\n`);
  async function answer(status: number, headers: Record<string, string>, body: Buffer, ranges = asked, size = file.length) {
    const host: Server = createServer((_, response) => {
      response.writeHead(status, { 'content-length': String(body.length), ...headers });
      response.end(body);
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(host.address() as AddressInfo).port}/b.awkb`;
    try {
      return await getRanges(new Transport({ retry: { attempts: 1 } }), url, ranges, { expectedBytes: size }).catch(
        (error: unknown) => error,
      );
    } finally {
      host.closeAllConnections();
      await new Promise((resolve) => host.close(resolve));
    }
  }
  const multipart = { 'content-type': 'multipart/byteranges; boundary="b0"' };
  const slices = (result: { body: Uint8Array; at: number[] }) =>
    asked.map((range, i) => Buffer.from(result.body.subarray(result.at[i]!, result.at[i]! + range.length)));
  const expected = asked.map((range) => file.subarray(range.offset, range.offset + range.length));

  test('parts in any order, one covering two ranges, a preamble and an epilogue: every range found', async () => {
    const result = await answer(
      206,
      multipart,
      Buffer.concat([Buffer.from('preamble\r\n'), ...part(500, 519), ...part(5, 104), end(), Buffer.from('epilogue')]),
    );
    expect(result).toMatchObject({ kind: 'ranges' });
    expect(slices(result as { body: Uint8Array; at: number[] })).toEqual(expected);
  });

  test('a 200 is not read: unsupported; one 206 range covering all is accepted; one that does not is unsupported', async () => {
    expect(await answer(200, {}, file)).toMatchObject({ kind: 'unsupported', reason: expect.stringMatching(/200/) });
    const covering = await answer(206, { 'content-range': 'bytes 10-519/1000' }, file.subarray(10, 520));
    expect(slices(covering as { body: Uint8Array; at: number[] })).toEqual(expected);
    expect(await answer(206, { 'content-range': 'bytes 10-19/1000' }, file.subarray(10, 20))).toMatchObject({ kind: 'unsupported' });
  });

  test('a part spanning two ranges and the gap between them (larger than every allowance) is read', async () => {
    // Ranges of 10 bytes, 20 000 bytes apart: the first part holds the first two and the gap.
    const wide = Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 7) % 251));
    const apart = [
      { offset: 10, length: 10 },
      { offset: 20_020, length: 10 },
      { offset: 40_030, length: 10 },
    ];
    const widePart = (first: number, last: number) => [
      Buffer.from(`--b0\r\nContent-Range: bytes ${first}-${last}/${wide.length}\r\n\r\n`),
      wide.subarray(first, last + 1),
      Buffer.from('\r\n'),
    ];
    const result = await answer(
      206,
      multipart,
      Buffer.concat([...widePart(10, 20_029), ...widePart(40_030, 40_039), end()]),
      apart,
      wide.length,
    );
    expect(result).toMatchObject({ kind: 'ranges' });
    const { body, at } = result as { body: Uint8Array; at: number[] };
    apart.forEach((range, i) =>
      expect(Buffer.from(body.subarray(at[i]!, at[i]! + range.length))).toEqual(wide.subarray(range.offset, range.offset + range.length)),
    );
  });

  test('part headers up to MAX_PART_HEADER_BYTES each are within the bound', async () => {
    const long = (first: number, last: number, headerBytes: number) => {
      const head = `Content-Type: application/octet-stream\r\nContent-Range: bytes ${first}-${last}/1000\r\n`;
      const padding = `X-Origin-Trace: ${'t'.repeat(headerBytes - head.length - 'X-Origin-Trace: '.length - 4)}\r\n`;
      expect(Buffer.byteLength(padding + head + '\r\n')).toBe(headerBytes);
      return [Buffer.from(`--b0\r\n${padding}${head}\r\n`), file.subarray(first, last + 1), Buffer.from('\r\n')];
    };
    const result = await answer(
      206,
      multipart,
      Buffer.concat([...long(10, 19, MAX_PART_HEADER_BYTES), ...long(100, 104, MAX_PART_HEADER_BYTES), ...long(500, 519, 3000), end()]),
    );
    expect(result).toMatchObject({ kind: 'ranges' });
    expect(slices(result as { body: Uint8Array; at: number[] })).toEqual(expected);
  });

  test.each([
    ['no boundary', { 'content-type': 'multipart/byteranges' }, () => Buffer.concat([...part(10, 19), end()]), /no boundary/],
    ['another boundary', multipart, () => Buffer.concat([...part(10, 19, 'zz'), end('zz')]), /does not start with the boundary/],
    [
      'a part not asked for',
      multipart,
      () => Buffer.concat([...part(10, 19), ...part(100, 104), ...part(700, 719), end()]),
      /not a range asked for/,
    ],
    ['a range no part holds', multipart, () => Buffer.concat([...part(10, 19), ...part(100, 104), end()]), /no part holds bytes 500-519/],
    [
      'a part cut short',
      multipart,
      () => Buffer.concat([...part(10, 19), ...part(100, 104), ...part(500, 519)]).subarray(0, -10),
      /part 3 \(bytes 500-519\) is cut short/,
    ],
    // The bound: the span from the first range to the last (510 bytes here), plus the allowances.
    [
      'a body past the bound',
      multipart,
      () =>
        Buffer.concat([
          ...part(10, 19),
          ...part(100, 104),
          ...part(500, 519),
          Buffer.alloc(510 + 3 * MULTIPART_PART_ALLOWANCE + MULTIPART_BODY_ALLOWANCE),
          end(),
        ]),
      /asked for a range of \d+ bytes/,
    ],
  ] as const)('%s: RangeResponseError naming the URL', async (_, headers, body, message) => {
    const error = await answer(206, headers, body());
    expect(error).toBeInstanceOf(RangeResponseError);
    expect(error).toMatchObject({ code: 'E_RANGE', url: expect.stringMatching(/\/b\.awkb$/), message: expect.stringMatching(message) });
  });
});
