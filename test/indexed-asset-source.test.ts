/**
 * IndexedAssetSource (SPEC §7) in Node 20, against the project's own server on 127.0.0.1 and a
 * plain node:http server that ignores Range. Requests are counted by wrapping the real fetch.
 */
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolveObjectURL } from 'node:buffer';
import { join } from 'node:path';
import {
  AssetNotFoundError,
  BundleIntegrityError,
  decodeBundle,
  DEFAULT_INDEX_ATTEMPTS,
  encodeBundle,
  DEFAULT_INDEX_TIMEOUT_MS,
  HttpError,
  IndexedAssetSource,
  IndexValidationError,
  MemoryCache,
  RequestTimeoutError,
  tokenAuthorizedFetch,
  Transport,
  UnsupportedIndexVersionError,
  type BodyRequestOptions,
  type ContentCache,
} from '../core/internal.js';
import { NodeFolderCache, startStaticServer, type StaticServer } from '../core/node/index.js';
import { FIXTURES, temporaryDir } from './helpers/cli.js';
import { startHeldServer } from './helpers/held-server.js';
import { startWholeFileServer } from './helpers/whole-file-server.js';

const TREE = join(FIXTURES, 'trees/small');
const loose = JSON.parse(readFileSync(join(FIXTURES, 'trees/small.loose.index.json'), 'utf8'));
const PATHS: string[] = loose.files.map((file: { path: string }) => file.path);
const fileBytes = (path: string) => new Uint8Array(readFileSync(join(TREE, path)));
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** A cache whose writes start at once (each key noted) and end only when the test lets them (putMany writes through put). */
class HeldWrites extends MemoryCache {
  readonly started: string[] = [];
  release!: () => void;
  readonly released = new Promise<void>((resolve) => (this.release = resolve));
  override async put(key: string, bytes: Uint8Array): Promise<void> {
    this.started.push(key);
    const copy = bytes.slice(); // taken now, as MemoryCache does, before the caller may change the bytes
    await this.released;
    return super.put(key, copy);
  }
}

/** A fetch that records each request's URL (path only) and Range header, then sends it for real. */
function countingFetch(base: typeof fetch = fetch) {
  const requests: { path: string; range: string | null }[] = [];
  const counted: typeof fetch = (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    requests.push({ path: decodeURIComponent(url.pathname), range: new Headers(init?.headers).get('range') });
    return base(input, init);
  };
  const count = (part: string) => requests.filter((r) => r.path.includes(part)).length;
  return { fetch: counted, requests, count, bundleRequests: () => requests.filter((r) => r.path.endsWith('.awkb')).length };
}

let root: string;
let server: StaticServer;
let site: string;

beforeAll(async () => {
  root = temporaryDir('awkb-site-');
  cpSync(join(FIXTURES, 'expected/small-default'), join(root, 'bundled'), { recursive: true });
  cpSync(join(FIXTURES, 'expected/small-ids'), join(root, 'ids'), { recursive: true });
  for (const name of ['small-loads', 'small-loads-target-0.25-ids'])
    cpSync(join(FIXTURES, 'expected', name), join(root, name), { recursive: true });
  mkdirSync(join(root, 'loose'));
  writeFileSync(join(root, 'loose/project.index.json'), JSON.stringify(loose));
  cpSync(TREE, join(root, 'loose/files'), { recursive: true });
  writeFileSync(join(root, 'v4.index.json'), JSON.stringify({ formatVersion: 4, rootPath: '/p', files: [] }));
  server = await startStaticServer({ root });
  site = server.url;
});
afterAll(() => server.close());

const bundledIndex = () => `${site}bundled/project.index.json`;

/** Bytes a Range header asks for (a request without one: 0 here, counted apart). */
const rangeBytes = (range: string | null) =>
  [...(range ?? '').matchAll(/(\d+)-(\d+)/g)].reduce((sum, [, a, b]) => sum + Number(b) - Number(a) + 1, 0);

/** No bundle byte asked for twice: per bundle, at most one whole request and then no range, or ranges that never overlap. */
function expectNoByteTwice(requests: { path: string; range: string | null }[]): void {
  const asked = new Map<string, [number, number][]>();
  for (const { path, range } of requests.filter((r) => r.path.endsWith('.awkb'))) {
    const spans = asked.get(path) ?? [];
    const added: [number, number][] =
      range === null ? [[0, Number.MAX_SAFE_INTEGER]] : [...range.matchAll(/(\d+)-(\d+)/g)].map(([, a, b]) => [Number(a), Number(b)]);
    for (const [a, b] of added)
      for (const [c, d] of spans) if (a <= d && c <= b) throw new Error(`${path}: bytes ${a}-${b} asked for again (had ${c}-${d})`);
    asked.set(path, [...spans, ...added]);
  }
}

describe('reading a bundled index', () => {
  test('every file reads back verified; read one at a time, each a load of one: no byte twice, no unrelated member', async () => {
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch });
    for (const path of PATHS) expect(Buffer.from(await source.read(path)).equals(Buffer.from(fileBytes(path)))).toBe(true);
    expectNoByteTwice(net.requests);
    // The three small bundles come whole (each adds less than a round trip's bytes); the 550 KB
    // one by its members' ranges, as they are read (SPEC §7 "Needed bytes": a read is a load of one).
    const big = source.index.formatVersion === 3 ? source.index.bundles.find((bundle) => bundle.sizeBytes > 500_000)! : undefined;
    const bigRequests = net.requests.filter((r) => big && r.path.endsWith(big.url));
    expect(bigRequests.every((r) => r.range !== null)).toBe(true);
    const stored = (source.index.files as { bundle?: string; sizeBytes: number }[])
      .filter((file) => file.bundle === big?.sha256)
      .reduce((sum, file) => sum + file.sizeBytes, 0);
    expect(bigRequests.reduce((sum, r) => sum + rangeBytes(r.range), 0)).toBeLessThanOrEqual(stored);
    expect(net.requests.filter((r) => r.path.endsWith('.awkb') && r.range === null)).toHaveLength(3);
  });

  test('every file read at once: one request per bundle', async () => {
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch });
    const all = await Promise.all(PATHS.map((path) => source.read(path)));
    all.forEach((bytes, i) => expect(sha256(bytes)).toBe(sha256(fileBytes(PATHS[i]!))));
    expect(net.bundleRequests()).toBe(source.index.formatVersion === 3 ? source.index.bundles.length : -1);
    expect(net.requests).toHaveLength(1 + 4);
  });

  test('concurrent reads of one bundle share one request', async () => {
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch, cache: new MemoryCache() });
    const assets = PATHS.filter((p) => p.startsWith('assets/'));
    const all = await Promise.all(assets.map((path) => source.read(path)));
    all.forEach((bytes, i) => expect(sha256(bytes)).toBe(sha256(fileBytes(assets[i]!))));
    expect(net.bundleRequests()).toBe(1);
  });

  test('has, entry, paths, and a clear error for a path not in the index', async () => {
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex() });
    expect(source.has('ui/hud.json')).toBe(true);
    expect(source.has('ui/missing.json')).toBe(false);
    expect(source.entry('ui/hud.json')?.sizeBytes).toBe(11);
    expect(source.paths()).toEqual(PATHS);
    const error = await source.read('ui/missing.json').catch((e) => e);
    expect(error).toBeInstanceOf(AssetNotFoundError);
    expect(error.code).toBe('E_NOT_FOUND');
    expect(error.path).toBe('ui/missing.json');
    expect(await source.readJson('ui/hud.json')).toEqual(JSON.parse(readFileSync(join(TREE, 'ui/hud.json'), 'utf8')));
  });

  test('an index with opaque ids is read by path, hashing with its salt', async () => {
    const source = await IndexedAssetSource.open({ indexUrl: `${site}ids/project.index.json` });
    for (const path of PATHS) expect(sha256(await source.read(path))).toBe(sha256(fileBytes(path)));
    expect(source.has('assets/😀.txt')).toBe(true);
    expect(source.paths()).toEqual([]);
    await expect(source.prefetchFolder('assets')).rejects.toThrow(/opaque ids hide the folders/);
  });

  test.each(['small-loads', 'small-loads-target-0.25-ids'])(
    "%s (load groups' data in first-use order, SPEC §5): every file reads back verified, one request per bundle",
    async (name) => {
      const net = countingFetch();
      const cache = new MemoryCache();
      const source = await IndexedAssetSource.open({ indexUrl: `${site}${name}/project.index.json`, fetch: net.fetch, cache });
      for (const path of PATHS) expect(sha256(await source.read(path))).toBe(sha256(fileBytes(path)));
      expectNoByteTwice(net.requests);
      const all = await IndexedAssetSource.open({ indexUrl: `${site}${name}/project.index.json`, fetch: net.fetch });
      net.requests.length = 0;
      await Promise.all(PATHS.map((path) => all.read(path)));
      expect(net.bundleRequests()).toBe(all.index.formatVersion === 3 ? all.index.bundles.length : -1);
    },
  );

  test('an index given as an object reads with baseUrl', async () => {
    const index = JSON.parse(readFileSync(join(root, 'bundled/project.index.json'), 'utf8'));
    const source = await IndexedAssetSource.open({ index, baseUrl: `${site}bundled/` });
    expect(sha256(await source.read('ui/hud.json'))).toBe(sha256(fileBytes('ui/hud.json')));
  });

  test('a formatVersion it does not know is refused, naming it', async () => {
    const error = await IndexedAssetSource.open({ indexUrl: `${site}v4.index.json` }).catch((e) => e);
    expect(error).toBeInstanceOf(UnsupportedIndexVersionError);
    expect(error.message).toMatch(/formatVersion 4.*2 and 3/);
    expect(error.url).toBe(`${site}v4.index.json`);
  });
});

describe('loose and bundled indexes share one cache', () => {
  test('after reading through the loose index, the bundled one fetches nothing', async () => {
    const cache = new MemoryCache();
    const net = countingFetch();
    const looseSource = await IndexedAssetSource.open({ indexUrl: `${site}loose/project.index.json`, fetch: net.fetch, cache });
    for (const path of PATHS) await looseSource.read(path);
    // crate.glb and crate-copy.glb share a content: the second comes from the cache.
    expect(net.count('/loose/files/')).toBe(new Set(loose.files.map((f: { sha256: string }) => f.sha256)).size);
    const bundled = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch, cache });
    for (const path of PATHS) expect(sha256(await bundled.read(path))).toBe(sha256(fileBytes(path)));
    expect(net.bundleRequests()).toBe(0);
  });

  test('after reading through the bundled index, the loose one fetches nothing', async () => {
    const cache = new NodeFolderCache(temporaryDir('awkb-cache-'));
    const net = countingFetch();
    const bundled = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch, cache });
    await bundled.prefetch(PATHS);
    const looseSource = await IndexedAssetSource.open({ indexUrl: `${site}loose/project.index.json`, fetch: net.fetch, cache });
    for (const path of PATHS) expect(sha256(await looseSource.read(path))).toBe(sha256(fileBytes(path)));
    expect(net.count('/loose/files/')).toBe(0);
  });
});

describe('prefetch', () => {
  test('downloads whole bundles once each, reports byte progress, and skips what is cached', async () => {
    const net = countingFetch();
    const cache = new MemoryCache();
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch, cache });
    const events: { loadedBytes: number; totalBytes: number; requestsDone: number }[] = [];
    await source.prefetch(PATHS, { onProgress: (p) => events.push(p) });
    const total = source.index.formatVersion === 3 ? source.index.bundles.reduce((sum, b) => sum + b.sizeBytes, 0) : 0;
    expect(net.bundleRequests()).toBe(4);
    expect(events.at(-1)).toMatchObject({ loadedBytes: total, totalBytes: total, requestsDone: 4, requestsTotal: 4 });
    for (let i = 1; i < events.length; i++) expect(events[i]!.loadedBytes).toBeGreaterThanOrEqual(events[i - 1]!.loadedBytes);
    await source.prefetch(PATHS);
    for (const path of PATHS) await source.read(path);
    expect(net.bundleRequests()).toBe(4);
  });

  test('prefetchFolder fetches only the bundles of that folder', async () => {
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch, cache: new MemoryCache() });
    const paths = await source.prefetchFolder('scenes/');
    expect(paths).toEqual(['scenes/main.scene.json', 'scenes/pier.scene.json']);
    expect(net.bundleRequests()).toBe(1);
  });

  test('load waits for the cache write; with waitForCache: false it resolves once its files are verified and held, the write still going on', async () => {
    const paths = ['scenes/main.scene.json', 'scenes/pier.scene.json'];
    const waited = new HeldWrites();
    const waiting = await IndexedAssetSource.open({ indexUrl: bundledIndex(), cache: waited });
    let resolved = false;
    const loading = waiting.load(paths).then(() => (resolved = true));
    while (waited.started.length === 0) await new Promise((wake) => setTimeout(wake, 5));
    await new Promise((wake) => setTimeout(wake, 50));
    expect(resolved).toBe(false); // the write has started and not ended: load has not resolved
    waited.release();
    await loading;

    const net = countingFetch();
    const held = new HeldWrites();
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch, cache: held });
    expect(await source.load(paths, { waitForCache: false })).toEqual(paths);
    let stored = false;
    const storing = source.whenStored().then(() => (stored = true));
    // Resolved with the write still held: the files are read from memory, no second request.
    for (const path of paths) expect(sha256(await source.read(path))).toBe(source.entry(path)!.sha256);
    expect(net.bundleRequests()).toBe(1);
    expect(stored).toBe(false);
    held.release();
    await storing;
    expect(await held.hasMany(paths.map((path) => source.entry(path)!.sha256))).toEqual([true, true]);
  });

  test('with no cache, prefetched members wait in memory up to pendingBytes, oldest dropped first', async () => {
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch, pendingBytes: 60_000 });
    await source.prefetch(['assets/sounds/bell.ogg', 'assets/Ａ.txt']);
    expect(net.bundleRequests()).toBe(1);
    // bell.ogg (50,000 bytes) and the small texts fit the budget; the 200,000-byte models did not stay.
    await source.read('assets/sounds/bell.ogg');
    await source.read('assets/Ａ.txt');
    expect(net.bundleRequests()).toBe(1);
    await source.read('assets/models/buoy.glb');
    expect(net.bundleRequests()).toBe(2);
  });
});

describe('a load of many paths', () => {
  test('looks them up in turns of the event loop, each path once in the order first named, folders too', async () => {
    // 10,000 tiny files of one bundle: more paths than one turn looks up.
    const dir = join(temporaryDir('awkb-many-'), 'site');
    mkdirSync(join(dir, 'bundles'), { recursive: true });
    const members = Array.from({ length: 10_000 }, (_, i) => {
      const bytes = new TextEncoder().encode(`file ${i}`);
      return { key: `${i % 2 === 0 ? 'even' : 'odd'}/${String(i).padStart(5, '0')}.txt`, bytes, sha256: sha256(bytes) };
    });
    const bundle = encodeBundle(members);
    const bundleSha = sha256(bundle);
    writeFileSync(join(dir, `bundles/${bundleSha}.awkb`), bundle);
    const records = decodeBundle(bundle).records;
    writeFileSync(
      join(dir, 'project.index.json'),
      JSON.stringify({
        formatVersion: 3,
        rootPath: '/many',
        bundles: [{ sha256: bundleSha, sizeBytes: bundle.length, url: `bundles/${bundleSha}.awkb` }],
        files: records.map((record) => ({
          path: record.key,
          sizeBytes: record.sizeBytes,
          sha256: record.sha256,
          bundle: bundleSha,
          offset: record.offset,
        })),
      }),
    );
    const many = await startStaticServer({ root: dir });
    try {
      const source = await IndexedAssetSource.open({ indexUrl: `${many.url}project.index.json`, cache: null, hashWorkers: 0 });
      const odd = members.filter((_, i) => i % 2 === 1).map((member) => member.key);
      const even = members.filter((_, i) => i % 2 === 0).map((member) => member.key);
      // Odd paths, one of them twice, some even ones, then (in another turn's share) the folder of even ones and an odd path again.
      const items = [...odd, odd[0]!, ...even.slice(0, 4_000), 'even', odd[4_999]!];
      expect(items.length).toBeGreaterThan(8_192);
      const loading = source.load(items);
      // The paths are gone through in turns: none is recorded yet when the call returns.
      expect(source.recordedLoads().loads).toEqual([]);
      const paths = await loading;
      expect(paths).toEqual([...odd, ...even]);
      expect(source.recordedLoads().loads).toEqual([{ name: 'main', paths: [...odd, ...even] }]);
      // What load() gave back is the caller's: changing it changes nothing recorded.
      paths.length = 0;
      expect(source.recordedLoads().loads[0]!.paths).toHaveLength(10_000);
      expect(new TextDecoder().decode(await source.read(even[123]!))).toBe('file 246');
      await expect(source.load([...odd, 'nowhere/else.txt'])).rejects.toThrow(AssetNotFoundError);
      source.dispose();
    } finally {
      await many.close();
    }
  });
});

describe('damaged bundles are rejected whole, nothing cached, every damaged member named', () => {
  const damagedDir = join(FIXTURES, 'damaged');
  const expected = JSON.parse(readFileSync(join(damagedDir, 'expected.json'), 'utf8'));
  let damagedServer: StaticServer;
  let damagedRoot: string;
  beforeAll(async () => {
    damagedRoot = temporaryDir('awkb-damaged-');
    damagedServer = await startStaticServer({ root: damagedRoot });
  });
  afterAll(() => damagedServer.close());

  test.each(
    expected.cases.filter((c: { expect: { ok?: boolean } }) => !c.expect.ok) as {
      file: string;
      expect: { part?: string; damaged?: string[]; says?: string };
    }[],
  )('$file', async ({ file, expect: expectation }) => {
    const dir = join(damagedRoot, file);
    mkdirSync(join(dir, 'bundles'), { recursive: true });
    cpSync(join(damagedDir, file), join(dir, 'bundles', `${expected.good.sha256}.awkb`));
    const index = {
      formatVersion: 3,
      rootPath: '/p',
      bundles: [{ sha256: expected.good.sha256, sizeBytes: expected.good.sizeBytes, url: `bundles/${expected.good.sha256}.awkb` }],
      files: expected.members.map((m: { key: string; offset: number; sizeBytes: number; sha256: string }) => ({
        path: m.key,
        sizeBytes: m.sizeBytes,
        sha256: m.sha256,
        bundle: expected.good.sha256,
        offset: m.offset,
      })),
    };
    writeFileSync(join(dir, 'project.index.json'), JSON.stringify(index));
    const cache = new MemoryCache();
    const source = await IndexedAssetSource.open({
      indexUrl: `${damagedServer.url}${file}/project.index.json`,
      cache,
      retry: { attempts: 1 },
    });
    const error = await source.read('a/two.txt').catch((e) => e);
    expect(error).toBeInstanceOf(BundleIntegrityError);
    expect(error.url).toBe(`${damagedServer.url}${file}/bundles/${expected.good.sha256}.awkb`);
    if (expectation.part) expect(error.part).toBe(expectation.part);
    if (expectation.damaged) expect([...error.damaged].sort()).toEqual(expectation.damaged);
    if (expectation.says) expect(error.message).toContain(expectation.says);
    expect(cache.size).toBe(0);
    await expect(source.prefetch(['a/one.txt'])).rejects.toBeInstanceOf(BundleIntegrityError);
    expect(cache.size).toBe(0);
  });
});

describe('errors name what they concern', () => {
  test('a missing bundle is an HttpError with its URL and the path that was read', async () => {
    const dir = temporaryDir('awkb-missing-');
    cpSync(join(FIXTURES, 'expected/small-default'), dir, { recursive: true });
    const index = JSON.parse(readFileSync(join(dir, 'project.index.json'), 'utf8'));
    const bundle = index.bundles.find(
      (b: { sha256: string }) => b.sha256 === index.files.find((f: { path: string }) => f.path === 'ui/hud.json').bundle,
    );
    const source = await IndexedAssetSource.open({ index, baseUrl: `${site}nowhere/`, retry: { attempts: 1 } });
    const error = await source.read('ui/hud.json').catch((e) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ code: 'E_HTTP', status: 404, path: 'ui/hud.json', url: `${site}nowhere/${bundle.url}` });
  });
});

describe('the cache is re-checked on read', () => {
  test('a Node folder cache entry damaged on disk is dropped and fetched again', async () => {
    const dir = temporaryDir('awkb-folder-cache-');
    const cache = new NodeFolderCache(dir);
    const first = await IndexedAssetSource.open({ indexUrl: bundledIndex(), cache });
    await first.prefetch(PATHS);
    const hud = fileBytes('ui/hud.json');
    const onDisk = join(dir, sha256(hud).slice(0, 2), sha256(hud));
    expect(readFileSync(onDisk)).toEqual(Buffer.from(hud));
    writeFileSync(onDisk, 'garbage');
    const net = countingFetch();
    const second = await IndexedAssetSource.open({ indexUrl: bundledIndex(), cache, fetch: net.fetch });
    expect(Buffer.from(await second.read('ui/hud.json')).equals(Buffer.from(hud))).toBe(true);
    expect(net.bundleRequests()).toBe(1);
    await second.whenStored(); // the cache is written off the read's path
    expect(readFileSync(onDisk)).toEqual(Buffer.from(hud));
    for (const path of PATHS) await second.read(path);
    expect(net.bundleRequests()).toBe(1);
  });

  test('a corrupted entry is dropped and fetched again', async () => {
    const cache = new MemoryCache();
    const path = 'ui/hud.json';
    const good = fileBytes(path);
    await cache.put(sha256(good), new TextEncoder().encode('{"tampered":1}'));
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch, cache });
    expect(Buffer.from(await source.read(path)).equals(Buffer.from(good))).toBe(true);
    expect(net.bundleRequests()).toBe(1);
    await source.whenStored(); // the bundle's members are cached once it passed whole (SPEC §7 "Streamed members")
    expect(Buffer.from((await cache.get(sha256(good)))!).equals(Buffer.from(good))).toBe(true);
  });

  test('a cache that throws is a miss, and a put that throws does not fail the load', async () => {
    const broken: ContentCache = {
      get: async () => {
        throw new Error('disk gone');
      },
      put: async () => {
        throw new Error('quota');
      },
    };
    const reported: string[] = [];
    const source = await IndexedAssetSource.open({
      indexUrl: bundledIndex(),
      cache: broken,
      onCacheError: (error, { operation }) => reported.push(`${operation}: ${(error as Error).message}`),
    });
    expect(sha256(await source.read('ui/hud.json'))).toBe(sha256(fileBytes('ui/hud.json')));
    await source.whenStored();
    expect(reported).toEqual(['get: disk gone', 'put: quota']);
  });
});

describe('range reads', () => {
  test('one uncached member is one range request for just its bytes', async () => {
    const net = countingFetch();
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch, rangeReads: true });
    const entry = source.entry('assets/sounds/bell.ogg')!;
    expect(sha256(await source.read('assets/sounds/bell.ogg'))).toBe(entry.sha256);
    const ranged = net.requests.filter((r) => r.path.endsWith('.awkb'));
    expect(ranged).toEqual([
      { path: expect.stringMatching(/\.awkb$/), range: `bytes=${entry.offset}-${entry.offset! + entry.sizeBytes - 1}` },
    ]);
  });

  test('a member read again while its cache write is pending waits for that write: no second range request', async () => {
    const net = countingFetch();
    const cache = new HeldWrites();
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex(), fetch: net.fetch, rangeReads: true, cache });
    const path = 'assets/sounds/bell.ogg';
    const { sha256: expected } = source.entry(path)!;
    expect(sha256(await source.read(path))).toBe(expected);
    while (!cache.started.includes(expected)) await new Promise((wake) => setTimeout(wake, 5));
    const again = source.read(path);
    cache.release();
    expect(sha256(await again)).toBe(expected);
    expect(net.bundleRequests()).toBe(1);
  });

  test('a server that ignores Range sends the whole bundle, which is checked and cut', async () => {
    const plain = await startWholeFileServer(root);
    try {
      const cache = new MemoryCache();
      const source = await IndexedAssetSource.open({ indexUrl: `${plain.base}bundled/project.index.json`, rangeReads: true, cache });
      expect(sha256(await source.read('assets/Ａ.txt'))).toBe(sha256(fileBytes('assets/Ａ.txt')));
      // The whole bundle was verified, so its other members are now cached too.
      expect(await cache.get(sha256(fileBytes('assets/sounds/bell.ogg')))).toBeDefined();
    } finally {
      await plain.close();
    }
  });
});

describe('tokens, retries, aborts', () => {
  test('a token-authorized fetch reads a host that wants a token; without it, a typed 401', async () => {
    const guarded = await startStaticServer({ root, token: 'sesame' });
    try {
      const indexUrl = `${guarded.url}bundled/project.index.json`;
      const source = await IndexedAssetSource.open({ indexUrl, fetch: tokenAuthorizedFetch({ token: 'sesame' }) });
      expect(sha256(await source.read('ui/hud.json'))).toBe(sha256(fileBytes('ui/hud.json')));
      const error = await IndexedAssetSource.open({ indexUrl }).catch((e) => e);
      expect(error).toBeInstanceOf(HttpError);
      expect(error.status).toBe(401);
      expect(error.code).toBe('E_HTTP');
      expect(error.url).toBe(indexUrl);
    } finally {
      await guarded.close();
    }
  });

  test('reads go through a host that fails half its requests with 503 + Retry-After and resets', async () => {
    const flaky = await startStaticServer({
      root,
      faults: [
        { fault: 503, probability: 0.3 },
        { fault: 'reset', probability: 0.2 },
      ],
      seed: 7,
    });
    try {
      const source = await IndexedAssetSource.open({
        indexUrl: `${flaky.url}bundled/project.index.json`,
        retry: { attempts: 10, baseDelayMs: 1, maxDelayMs: 5 },
      });
      for (const path of PATHS) expect(sha256(await source.read(path))).toBe(sha256(fileBytes(path)));
    } finally {
      await flaky.close();
    }
  });

  test('dispose aborts reads in flight and revokes object URLs', async () => {
    const slow = await startStaticServer({ root, latencyMs: 2000 });
    try {
      const fast = await IndexedAssetSource.open({ indexUrl: bundledIndex() });
      const url = await fast.url('ui/hud.json');
      expect(url).toMatch(/^blob:/);
      expect(await fast.url('ui/hud.json')).toBe(url);
      const blob = resolveObjectURL(url)!;
      expect(blob.type).toBe('application/json');
      expect(sha256(new Uint8Array(await blob.arrayBuffer()))).toBe(sha256(fileBytes('ui/hud.json')));
      fast.release('ui/hud.json');
      expect(resolveObjectURL(url)).toBeUndefined();

      const index = JSON.parse(readFileSync(join(root, 'bundled/project.index.json'), 'utf8'));
      const source = await IndexedAssetSource.open({ index, baseUrl: `${slow.url}bundled/` });
      const reading = source.read('ui/hud.json');
      source.dispose();
      await expect(reading).rejects.toMatchObject({ code: 'E_ABORTED' });
    } finally {
      await slow.close();
    }
  });
});

describe('the index: its own timeout and attempts', () => {
  test('a host that accepts and never answers the index: open fails with RequestTimeoutError after indexAttempts attempts of indexTimeoutMs', async () => {
    const host = await startHeldServer(root);
    host.stall('/bundled/project.index.json');
    try {
      const indexUrl = `${host.origin}/bundled/project.index.json`;
      // Bundles keep their own (longer) timeoutMs; the index gives up on its own.
      const error = await IndexedAssetSource.open({ indexUrl, indexTimeoutMs: 50, timeoutMs: 5_000, retry: { baseDelayMs: 1 } }).catch(
        (e) => e,
      );
      expect(error).toBeInstanceOf(RequestTimeoutError);
      expect(error).toMatchObject({ name: 'RequestTimeoutError', code: 'E_TIMEOUT', url: indexUrl, timeoutMs: 50, attempts: 2 });
      expect(error.message).toContain('gave up after 2 attempts');
      expect(host.count('/bundled/project.index.json')).toBe(2);
      const three = await IndexedAssetSource.open({ indexUrl, indexTimeoutMs: 50, indexAttempts: 3, retry: { baseDelayMs: 1 } }).catch(
        (e) => e,
      );
      expect(three).toMatchObject({ code: 'E_TIMEOUT', timeoutMs: 50, attempts: 3 });
      expect(host.count('/bundled/project.index.json')).toBe(5);
    } finally {
      await host.close();
    }
  });

  test('by default the index gets 15 s of quiet and 2 attempts; bundle requests keep timeoutMs and retry.attempts', async () => {
    expect([DEFAULT_INDEX_TIMEOUT_MS, DEFAULT_INDEX_ATTEMPTS]).toEqual([15_000, 2]);
    const asked: { url: string; timeoutMs: number | undefined; attempts: number | undefined }[] = [];
    class Recording extends Transport {
      override getBytesWithHeaders(url: string, options: BodyRequestOptions = {}) {
        asked.push({ url, timeoutMs: options.timeoutMs, attempts: options.attempts });
        return super.getBytesWithHeaders(url, options);
      }
      override stream(...args: Parameters<Transport['stream']>) {
        asked.push({ url: args[0], timeoutMs: args[1].timeoutMs, attempts: args[1].attempts });
        return super.stream(...args);
      }
    }
    const source = await IndexedAssetSource.open({ indexUrl: bundledIndex(), transport: new Recording({ retry: { attempts: 5 } }) });
    expect(asked).toEqual([{ url: bundledIndex(), timeoutMs: 15_000, attempts: 2 }]);
    await source.read('ui/hud.json');
    // The bundle, streamed: the transport's own timeout and attempts.
    expect(asked.slice(1)).toHaveLength(1);
    expect(asked.slice(1).every((request) => request.timeoutMs === undefined && request.attempts === undefined)).toBe(true);
  });

  test('indexTimeoutMs and indexAttempts are checked before any request', async () => {
    for (const options of [{ indexTimeoutMs: -1 }, { indexTimeoutMs: Number.NaN }, { indexAttempts: 0 }, { indexAttempts: 1.5 }]) {
      await expect(IndexedAssetSource.open({ indexUrl: 'http://127.0.0.1:9/none.json', ...options })).rejects.toMatchObject({
        code: 'E_OPTION',
      });
    }
  });
});

describe('an index that is not UTF-8', () => {
  /** The loose index with `files[1].path` holding the bytes FF FE, as a server would send them. */
  function indexWithBadPath(): Buffer {
    const index = JSON.parse(JSON.stringify(loose));
    index.files[1].path = 'assets/@@.txt';
    const [before, after] = JSON.stringify(index).split('@@') as [string, string];
    return Buffer.concat([Buffer.from(before), Buffer.from([0xff, 0xfe]), Buffer.from(after)]);
  }

  test('a path holding bytes FF FE: open refuses the index with E_INDEX_INVALID naming files[1].path', async () => {
    mkdirSync(join(root, 'not-utf8'), { recursive: true });
    writeFileSync(join(root, 'not-utf8/project.index.json'), indexWithBadPath());
    const indexUrl = `${site}not-utf8/project.index.json`;
    const error = await IndexedAssetSource.open({ indexUrl }).catch((e) => e);
    expect(error).toBeInstanceOf(IndexValidationError);
    expect(error).toMatchObject({ code: 'E_INDEX_INVALID', url: indexUrl });
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toMatch(
      /^files\[1\]\.path "assets\/\\xFF\\xFE\.txt" is not UTF-8 \(bytes FF FE\); the first at byte \d+ \(FF\) of the index$/,
    );
    expect(error.message).toContain(indexUrl);
  });

  test('bytes that break the JSON itself: the URL and the byte offset', async () => {
    writeFileSync(
      join(root, 'not-utf8/broken.index.json'),
      Buffer.concat([Buffer.from('{"formatVersion": 2,'), Buffer.from([0xc3, 0x28]), Buffer.from('"rootPath": "/p", "files": []}')]),
    );
    const indexUrl = `${site}not-utf8/broken.index.json`;
    const error = await IndexedAssetSource.open({ indexUrl }).catch((e) => e);
    expect(error).toMatchObject({
      name: 'IndexValidationError',
      code: 'E_INDEX_INVALID',
      url: indexUrl,
      problems: ['is not UTF-8: the first at byte 20 (C3)'],
    });
  });
});
