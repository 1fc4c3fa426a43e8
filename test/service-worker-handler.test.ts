/**
 * `createAwkbFetchHandler` (awake-bundle/sw) on its own, in Node against a real local server:
 * which requests it answers and which it leaves alone, and the HTTP answers it builds (200, 206,
 * 416, 502). A `FetchEvent` is only `{ request, respondWith }`, so Node's `Request` serves; the
 * browser test (service-worker.test.ts) runs the same code as a real worker in Chromium.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  bytesResponse,
  createAwkbFetchHandler,
  DEFAULT_INDEX_WAIT_MS,
  failure,
  type AwkbFetchHandlerOptions,
  type IndexStore,
} from '../adapters/service-worker/index.js';
import { BundleIntegrityError } from '../core/errors.js';
import { startStaticServer, type StaticServer } from '../core/node/index.js';
import { MemoryCache } from '../core/cache/memory.js';
import { FIXTURES, runCli, temporaryDir } from './helpers/cli.js';
import { startHeldServer, type HeldServer } from './helpers/held-server.js';
import { seededBytes, writeTree } from './helpers/trees.js';

const TREE = join(FIXTURES, 'trees/small');
let server: StaticServer;
let site: string;
let root: string;

beforeAll(async () => {
  root = temporaryDir('awkb-sw-handler-');
  cpSync(join(FIXTURES, 'expected/small-default'), join(root, 'bundled'), { recursive: true });
  cpSync(join(FIXTURES, 'expected/small-default'), join(root, 'changing'), { recursive: true });
  cpSync(join(FIXTURES, 'expected/small-ids'), join(root, 'ids'), { recursive: true });
  // The damaged fixture: the index lists good.awkb, the server holds member-two-damaged.awkb under its name.
  const damaged = JSON.parse(readFileSync(join(FIXTURES, 'damaged/expected.json'), 'utf8'));
  mkdirSync(join(root, 'damaged/bundles'), { recursive: true });
  cpSync(join(FIXTURES, 'damaged/member-two-damaged.awkb'), join(root, 'damaged/bundles', `${damaged.good.sha256}.awkb`));
  writeFileSync(
    join(root, 'damaged/project.index.json'),
    JSON.stringify({
      formatVersion: 3,
      rootPath: '/p',
      bundles: [{ ...damaged.good, url: `bundles/${damaged.good.sha256}.awkb` }],
      files: damaged.members.map((m: { key: string; offset: number; sizeBytes: number; sha256: string }) => ({
        path: m.key,
        sizeBytes: m.sizeBytes,
        sha256: m.sha256,
        bundle: damaged.good.sha256,
        offset: m.offset,
      })),
    }),
  );
  server = await startStaticServer({ root });
  site = server.url;
});
afterAll(() => server.close());

/** What a service worker's `FetchEvent` gives the handler; `answer` is what it passed to `respondWith`, if anything. */
function fetchEvent(url: string, init: RequestInit = {}) {
  const event = {
    request: new Request(url, init),
    answer: undefined as Promise<Response> | undefined,
    respondWith(response: Response | PromiseLike<Response>) {
      event.answer = Promise.resolve(response);
    },
  };
  return event;
}

function handler(folder: string, options: Partial<AwkbFetchHandlerOptions> = {}) {
  return createAwkbFetchHandler({ indexUrl: `${site}${folder}/project.index.json`, cache: null, ...options });
}

const treeBytes = (path: string) => new Uint8Array(readFileSync(join(TREE, path)));

describe('which requests the handler answers', () => {
  test('a GET of a listed path, percent-encoded as the browser sends it, answers with the file', async () => {
    const sw = handler('bundled');
    await sw.ready;
    const event = fetchEvent(`${site}bundled/assets/sp%C3%A4ce%20name.txt?v=3`);
    expect(sw.handleFetch(event)).toBe(true);
    const response = await event.answer!;
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(treeBytes('assets/späce name.txt'));
  });

  test('everything else is left alone: other methods, origins, folders, the index itself, unlisted paths', async () => {
    const sw = handler('bundled');
    await sw.ready;
    const untouched = [
      fetchEvent(`${site}bundled/assets/empty.txt`, { method: 'POST', body: 'x' }),
      fetchEvent(`${site}bundled/assets/empty.txt`, { method: 'PUT', body: 'x' }),
      fetchEvent('http://example.invalid/bundled/assets/empty.txt'),
      fetchEvent(`${site}elsewhere/assets/empty.txt`),
      fetchEvent(`${site}bundled/project.index.json`),
      fetchEvent(`${site}bundled/assets/not-listed.txt`),
      fetchEvent(`${site}bundled/`),
      fetchEvent(`${site}bundled/assets%2Fempty.txt`),
    ];
    for (const event of untouched) {
      expect({ url: event.request.url, method: event.request.method, answered: sw.handleFetch(event) }).toEqual({
        url: event.request.url,
        method: event.request.method,
        answered: false,
      });
      expect(event.answer).toBeUndefined();
    }
  });

  test('a HEAD request is answered from the index alone: the size, the type, no body, no bundle request', async () => {
    const requested: string[] = [];
    const sw = handler('bundled', {
      fetch: (input, init) => (requested.push(String(input instanceof Request ? input.url : input)), fetch(input, init)),
    });
    await sw.ready;
    const event = fetchEvent(`${site}bundled/assets/models/crate.glb`, { method: 'HEAD' });
    expect(sw.handleFetch(event)).toBe(true);
    const response = await event.answer!;
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String(treeBytes('assets/models/crate.glb').length));
    expect(response.headers.get('content-type')).toBe('model/gltf-binary');
    expect(response.body).toBeNull();
    expect(requested).toEqual([`${site}bundled/project.index.json`]);
  });

  test('the index is asked for past the HTTP cache (no-cache); whole bundles, named by their SHA-256, are not; ranges go past it (no-store)', async () => {
    const asked: [string, RequestCache | undefined, string | null][] = [];
    const sw = handler('bundled', {
      fetch: (input, init) => (
        asked.push([String(input instanceof Request ? input.url : input), init?.cache, new Headers(init?.headers).get('range')]),
        fetch(input, init)
      ),
    });
    await sw.ready;
    // A member alone (a range of its bundle), then every file of the small bundles at once (whole).
    for (const path of ['assets/models/crate.glb', 'ui/hud.json', 'scenes/main.scene.json', 'scenes/pier.scene.json']) {
      const event = fetchEvent(`${site}bundled/${path}`);
      sw.handleFetch(event);
      await event.answer;
    }
    expect(asked[0]).toEqual([`${site}bundled/project.index.json`, 'no-cache', null]);
    const bundles = asked.slice(1);
    expect(bundles.every(([url]) => url.endsWith('.awkb'))).toBe(true);
    // The reader caches what a range brings itself; Chromium's HTTP cache, holding other ranges of an immutable bundle, sent some twice.
    expect(bundles.map(([, cache, range]) => [range !== null, cache])).toEqual(
      bundles.map(([, , range]) => (range === null ? [false, undefined] : [true, 'no-store'])),
    );
    expect(bundles.some(([, , range]) => range === null)).toBe(true);
    expect(bundles.some(([, , range]) => range !== null)).toBe(true);
  });

  test('an index with opaque ids: paths map through their ids', async () => {
    const sw = handler('ids');
    await sw.ready;
    const event = fetchEvent(`${site}ids/assets/models/buoy.glb`);
    expect(sw.handleFetch(event)).toBe(true);
    expect(new Uint8Array(await (await event.answer!).arrayBuffer())).toEqual(treeBytes('assets/models/buoy.glb'));
    expect(sw.handleFetch(fetchEvent(`${site}ids/assets/models/none.glb`))).toBe(false);
  });

  test('before the index is read, a request below the root waits for it', async () => {
    const sw = handler('bundled');
    const event = fetchEvent(`${site}bundled/assets/%F0%9F%98%80.txt`);
    expect(sw.handleFetch(event)).toBe(true);
    expect(new Uint8Array(await (await event.answer!).arrayBuffer())).toEqual(treeBytes('assets/😀.txt'));
  });

  test('an index that cannot be read: requests below the root go to the network, then are left alone', async () => {
    const sw = handler('nowhere');
    const waiting = fetchEvent(`${site}nowhere/file.txt`);
    expect(sw.handleFetch(waiting)).toBe(true);
    expect((await waiting.answer!).status).toBe(404); // the server's own answer
    await expect(sw.ready).rejects.toThrow();
    expect(sw.handleFetch(fetchEvent(`${site}nowhere/file.txt`))).toBe(false);
  });

  test('a worker that starts while its index is unreachable serves the last verified index it kept', async () => {
    const kept = new Map<string, string>();
    const indexStore = { get: async (url: string) => kept.get(url), put: async (url: string, json: string) => void kept.set(url, json) };
    const online = await handler('bundled', { indexStore }).ready;
    expect([...kept.keys()]).toEqual([`${site}bundled/project.index.json`]);
    const offlineFetch: typeof fetch = async (input, init) => {
      if (String(input instanceof Request ? input.url : input).endsWith('project.index.json')) throw new TypeError('Failed to fetch');
      return fetch(input, init);
    };
    const sw = handler('bundled', { indexStore, fetch: offlineFetch, retry: { attempts: 1 } });
    expect((await sw.ready).index).toEqual(online.index);
    const event = fetchEvent(`${site}bundled/assets/models/crate.glb`);
    expect(sw.handleFetch(event)).toBe(true);
    expect(new Uint8Array(await (await event.answer!).arrayBuffer())).toEqual(treeBytes('assets/models/crate.glb'));
    // The kept index serves while the index is read again; a read that fails, even a 404, leaves it serving.
    const anyKept = { get: async () => [...kept.values()][0], put: async () => undefined };
    const gone = handler('nowhere', { indexStore: anyKept });
    expect((await gone.ready).index).toEqual(online.index);
    await gone.whenUpdated();
    expect((await gone.ready).index).toEqual(online.index);
    await expect(gone.refreshIndex()).rejects.toThrow(/404/);
  });

  test('onIndexUpdate hears of a new version: on refresh, and at a start after the index changed', async () => {
    cpSync(join(FIXTURES, 'expected/small-default'), join(root, 'versions'), { recursive: true });
    const indexFile = join(root, 'versions/project.index.json');
    const v1 = readFileSync(indexFile, 'utf8');
    const v2 = JSON.stringify({ ...JSON.parse(v1), rootPath: '/project-v2' });
    const kept = new Map<string, string>();
    const indexStore = { get: async (url: string) => kept.get(url), put: async (url: string, json: string) => void kept.set(url, json) };
    const updates: string[] = [];
    const start = () => handler('versions', { indexStore, onIndexUpdate: (source) => updates.push(source.index.rootPath) });
    const started = async () => {
      const sw = start();
      await sw.ready;
      await sw.whenUpdated();
      return sw;
    };
    const first = await started();
    await first.refreshIndex();
    await started();
    expect(updates).toEqual([]); // the first start, a refresh to the same index, a start with the same index
    writeFileSync(indexFile, v2);
    await first.refreshIndex();
    expect(updates).toEqual(['/project-v2']);
    writeFileSync(indexFile, v1);
    await started();
    expect(updates).toEqual(['/project-v2', '/project']);
  });

  test('refreshIndex serves the new index once checked, and keeps the old one when the new one fails', async () => {
    const sw = handler('changing');
    const first = await sw.ready;
    const indexFile = join(root, 'changing/project.index.json');
    const good = readFileSync(indexFile, 'utf8');
    writeFileSync(indexFile, '{ "formatVersion": 3, "broken": ');
    await expect(sw.refreshIndex()).rejects.toThrow();
    expect(await sw.ready).toBe(first);
    writeFileSync(indexFile, good);
    const second = await sw.refreshIndex();
    expect(second).not.toBe(first);
    expect(await sw.ready).toBe(second);
  });
});

/** An `indexStore` in memory, and what it holds. */
function memoryIndexStore(): IndexStore & { kept: Map<string, string> } {
  const kept = new Map<string, string>();
  return { kept, get: async (url) => kept.get(url), put: async (url, json) => void kept.set(url, json) };
}

/** The small project's index as served by a held server, at `rootPath` (a version marker). */
function indexAt(rootPath: string): string {
  return JSON.stringify({ ...JSON.parse(readFileSync(join(FIXTURES, 'expected/small-default/project.index.json'), 'utf8')), rootPath });
}

describe('index versions', () => {
  let host: HeldServer;
  let folder: string;
  const INDEX = '/project.index.json';

  beforeEach(async () => {
    folder = temporaryDir('awkb-sw-versions-');
    cpSync(join(FIXTURES, 'expected/small-default'), folder, { recursive: true });
    writeFileSync(join(folder, 'project.index.json'), indexAt('/v1'));
    writeFileSync(join(folder, 'from-the-network.txt'), 'from the network\n');
    host = await startHeldServer(folder);
  });
  afterEach(() => host.close());

  const at = (options: Partial<AwkbFetchHandlerOptions> = {}) =>
    createAwkbFetchHandler({ indexUrl: `${host.origin}${INDEX}`, cache: null, indexStore: null, ...options });

  test('refreshes that overlap: the one started last wins; an older index that comes late is neither served, announced nor kept', async () => {
    const store = memoryIndexStore();
    const updates: string[] = [];
    const sw = at({
      indexStore: store,
      onIndexUpdate: (source, { previous }) => updates.push(`${previous.rootPath}→${source.index.rootPath}`),
    });
    await sw.ready;
    await sw.whenUpdated();
    writeFileSync(join(folder, 'project.index.json'), indexAt('/v2'));
    // The first refresh's answer (v2) is held until the second refresh has been answered (v3).
    const held = host.hold(INDEX);
    const slow = sw.refreshIndex();
    await held.arrived;
    writeFileSync(join(folder, 'project.index.json'), indexAt('/v3'));
    const fast = await sw.refreshIndex();
    expect(fast.index.rootPath).toBe('/v3');
    held.release(indexAt('/v2'));
    expect((await slow).index.rootPath).toBe('/v3');
    await sw.whenUpdated();
    expect((await sw.ready).index.rootPath).toBe('/v3');
    expect(updates).toEqual(['/v1→/v3']);
    expect(JSON.parse(store.kept.get(`${host.origin}${INDEX}`)!).rootPath).toBe('/v3');
    expect(host.count(INDEX)).toBe(3);
  });

  test("the index read at start comes after a refresh that began later: the refresh's index serves", async () => {
    const updates: string[] = [];
    const held = host.hold(INDEX);
    const sw = at({ onIndexUpdate: (source) => updates.push(source.index.rootPath) });
    await held.arrived;
    writeFileSync(join(folder, 'project.index.json'), indexAt('/v2'));
    expect((await sw.refreshIndex()).index.rootPath).toBe('/v2');
    // The late answer, an older version that does not list crate.glb yet.
    const older = JSON.parse(indexAt('/v1'));
    older.files = older.files.filter((file: { path: string }) => file.path !== 'assets/models/crate.glb');
    held.release(JSON.stringify(older));
    await sw.whenUpdated();
    expect((await sw.ready).index.rootPath).toBe('/v2');
    const event = fetchEvent(`${host.origin}/assets/models/crate.glb`);
    expect(sw.handleFetch(event)).toBe(true);
    expect(new Uint8Array(await (await event.answer!).arrayBuffer())).toEqual(treeBytes('assets/models/crate.glb'));
    expect(updates).toEqual([]); // nothing kept before: nothing to announce
  });

  test('a start with a kept index and a stalled index host: requests are served from the kept index at once; the fetched index replaces it when it comes', async () => {
    const store = memoryIndexStore();
    const online = at({ indexStore: store });
    await online.ready;
    await online.whenUpdated();
    expect(store.kept.size).toBe(1);
    const updates: string[] = [];
    const held = host.hold(INDEX);
    const sw = at({
      indexStore: store,
      onIndexUpdate: (source, { previous }) => updates.push(`${previous.rootPath}→${source.index.rootPath}`),
    });
    const event = fetchEvent(`${host.origin}/assets/models/crate.glb`);
    expect(sw.handleFetch(event)).toBe(true);
    const response = await event.answer!;
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(treeBytes('assets/models/crate.glb'));
    await held.arrived; // the index was asked for, and is not answered yet
    expect((await sw.ready).index.rootPath).toBe('/v1');
    held.release(indexAt('/v2'));
    await sw.whenUpdated();
    expect((await sw.ready).index.rootPath).toBe('/v2');
    expect(updates).toEqual(['/v1→/v2']);
    expect(JSON.parse(store.kept.get(`${host.origin}${INDEX}`)!).rootPath).toBe('/v2');
  }, 20_000);

  test('no kept index and a stalled index host: requests wait indexWaitMs, then go to the network, and later ones are left alone at once', async () => {
    expect(DEFAULT_INDEX_WAIT_MS).toBe(3_000);
    const held = host.hold(INDEX);
    const waits: number[] = [];
    let elapse!: () => void;
    const sleep = (ms: number) => {
      waits.push(ms);
      return new Promise<void>((resolve) => (elapse = resolve));
    };
    const sw = at({ indexWaitMs: 1234, sleep });
    const waiting = fetchEvent(`${host.origin}/from-the-network.txt`);
    expect(sw.handleFetch(waiting)).toBe(true);
    expect(waits).toEqual([1234]);
    await held.arrived;
    elapse();
    expect(await (await waiting.answer!).text()).toBe('from the network\n');
    // Past the wait, while the index is still being read: left to the browser, with no wait.
    expect(sw.handleFetch(fetchEvent(`${host.origin}/assets/models/crate.glb`))).toBe(false);
    held.release();
    await sw.ready;
    const served = fetchEvent(`${host.origin}/assets/models/crate.glb`);
    expect(sw.handleFetch(served)).toBe(true);
    expect(new Uint8Array(await (await served.answer!).arrayBuffer())).toEqual(treeBytes('assets/models/crate.glb'));
  });

  test('an index whose path holds bytes that are not UTF-8 (FF FE) is refused, naming the entry; requests go to the network', async () => {
    const [before, after] = indexAt('/v1').replace('"assets/empty.txt"', '"assets/@@.txt"').split('@@') as [string, string];
    writeFileSync(join(folder, 'project.index.json'), Buffer.concat([Buffer.from(before), Buffer.from([0xff, 0xfe]), Buffer.from(after)]));
    const sw = at();
    await expect(sw.ready).rejects.toMatchObject({
      code: 'E_INDEX_INVALID',
      message: expect.stringContaining('files[0].path "assets/\\xFF\\xFE.txt" is not UTF-8 (bytes FF FE)'),
    });
    expect(sw.handleFetch(fetchEvent(`${host.origin}/assets/models/crate.glb`))).toBe(false);
  });

  test('no kept index: an index that comes within indexWaitMs answers the requests that waited', async () => {
    const held = host.hold(INDEX);
    const sw = at({ sleep: () => new Promise<void>(() => undefined) });
    const waiting = fetchEvent(`${host.origin}/assets/models/crate.glb`);
    expect(sw.handleFetch(waiting)).toBe(true);
    await held.arrived;
    held.release();
    expect(new Uint8Array(await (await waiting.answer!).arrayBuffer())).toEqual(treeBytes('assets/models/crate.glb'));
    expect(host.count('/assets/models/crate.glb')).toBe(0);
  });
});

describe('pages and updates', () => {
  test('a folder URL is answered with its index.html when the index lists it, so a published page loads offline', async () => {
    const loose = temporaryDir('awkb-sw-pages-');
    writeTree(loose, {
      'index.html': '<!doctype html><title>game</title>\n',
      'levels/index.html': '<p>levels</p>\n',
      'game.js': 'export {};\n',
    });
    expect(runCli([loose, '--out', join(root, 'pages')]).code).toBe(0);
    const sw = handler('pages');
    await sw.ready;
    for (const [url, expected] of [
      [`${site}pages/`, '<!doctype html><title>game</title>\n'],
      [`${site}pages/levels/`, '<p>levels</p>\n'],
      [`${site}pages/index.html`, '<!doctype html><title>game</title>\n'],
    ] as const) {
      const event = fetchEvent(url, { headers: { accept: 'text/html' } });
      expect(sw.handleFetch(event)).toBe(true);
      const response = await event.answer!;
      expect({ url, status: response.status, type: response.headers.get('content-type'), body: await response.text() }).toEqual({
        url,
        status: 200,
        type: 'text/html; charset=utf-8',
        body: expected,
      });
    }
    // A folder without an index.html in the index is left to the server.
    expect(sw.handleFetch(fetchEvent(`${site}pages/other/`))).toBe(false);
  });

  test('a new version: the changed files this player downloaded are brought (delta ranges) before the update is announced, and only they', async () => {
    const loose = temporaryDir('awkb-sw-update-');
    const v1 = {
      'a.bin': seededBytes(20_000, 1),
      'b.bin': seededBytes(20_000, 2),
      'c.bin': seededBytes(20_000, 3),
      'e.bin': seededBytes(20_000, 5),
    };
    writeTree(loose, v1);
    // Two bundles of two files each (a+b, c+e): the player's visit downloads only the first.
    const publish = () => expect(runCli([loose, '--out', join(root, 'updates'), '--target-mb', '0.05']).code).toBe(0);
    publish();
    const requests: { url: string; range: string | null }[] = [];
    const logged = ((input: RequestInfo | URL, init?: RequestInit) => {
      requests.push({ url: String(input instanceof Request ? input.url : input), range: new Headers(init?.headers).get('range') });
      return fetch(input, init);
    }) as typeof fetch;
    const updates: { prefetchedFiles: number; prefetchError?: string }[] = [];
    const sw = handler('updates', {
      cache: new MemoryCache(),
      fetch: logged,
      // A round trip priced at its floor: on a loaded machine the measured one made a's whole
      // bundle cost less than another request (needed bytes, FORMAT.md), and this is about ranges.
      neededBytes: { roundTripBytes: 16 * 1024 },
      onIndexUpdate: (_source, { prefetchedFiles, prefetchError }) =>
        updates.push({ prefetchedFiles, ...(prefetchError ? { prefetchError } : {}) }),
    });
    await sw.ready;
    const read = async (path: string) => {
      const event = fetchEvent(`${site}updates/${path}`);
      expect(sw.handleFetch(event)).toBe(true);
      return new Uint8Array(await (await event.answer!).arrayBuffer());
    };
    for (const path of ['a.bin', 'b.bin']) expect(await read(path)).toEqual(new Uint8Array(v1[path as keyof typeof v1]));
    await (await sw.ready).whenStored();
    // v2: a.bin and c.bin change (c.bin was never downloaded), d.bin is new, e.bin is gone.
    const a2 = seededBytes(20_000, 11);
    writeTree(loose, { 'a.bin': a2, 'c.bin': seededBytes(20_000, 33), 'd.bin': seededBytes(20_000, 4) });
    rmSync(join(loose, 'e.bin'));
    publish();
    const index = JSON.parse(readFileSync(join(root, 'updates/project.index.json'), 'utf8')) as {
      bundles: { sha256: string; url: string; sizeBytes: number }[];
      files: { path: string; bundle: string }[];
    };
    const bundleOfA = index.bundles.find((bundle) => bundle.sha256 === index.files.find((file) => file.path === 'a.bin')!.bundle)!;
    requests.length = 0;
    await sw.refreshIndex();
    expect(updates).toEqual([{ prefetchedFiles: 1 }]);
    // The index, then a.bin's new bytes alone: a range of its bundle, whose other member (b.bin) is cached.
    expect(requests.map((request) => request.url)).toEqual([
      `${site}updates/project.index.json`,
      new URL(bundleOfA.url, `${site}updates/`).href,
    ]);
    const ranged = requests[1]!.range;
    expect(ranged).toMatch(/^bytes=\d+-\d+$/);
    const [start, end] = ranged!.slice(6).split('-').map(Number) as [number, number];
    expect(end - start + 1).toBeLessThan(bundleOfA.sizeBytes);
    requests.length = 0;
    expect(await read('a.bin')).toEqual(new Uint8Array(a2));
    expect(await read('b.bin')).toEqual(new Uint8Array(v1['b.bin']));
    expect(requests).toEqual([]);
  });

  test('prefetchOnUpdate: false announces a new version without fetching anything', async () => {
    cpSync(join(FIXTURES, 'expected/small-default'), join(root, 'quiet'), { recursive: true });
    const indexFile = join(root, 'quiet/project.index.json');
    const updates: number[] = [];
    const sw = handler('quiet', {
      prefetchOnUpdate: false,
      cache: new MemoryCache(),
      onIndexUpdate: (_source, update) => updates.push(update.prefetchedFiles),
    });
    await sw.ready;
    const index = JSON.parse(readFileSync(indexFile, 'utf8'));
    index.files[0].sha256 = '0'.repeat(64);
    writeFileSync(indexFile, JSON.stringify(index));
    await sw.refreshIndex();
    expect(updates).toEqual([0]);
  });
});

describe('the answers', () => {
  const bytes = new Uint8Array(Array.from({ length: 100 }, (_, i) => i));

  test('no Range: 200 with Content-Length; a multi-range request gets the whole file too (RFC 9110 §14.2)', async () => {
    for (const header of [null, 'bytes=0-1,5-6', 'items=0-1', 'bytes=5-2']) {
      const response = bytesResponse(bytes, 'levels/a.bin', header);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-length')).toBe('100');
      expect(response.headers.get('accept-ranges')).toBe('bytes');
      expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes);
    }
  });

  test('one range: 206 with Content-Range, cut from a view without copying the wrong bytes', async () => {
    const view = new Uint8Array(300).fill(0xee).subarray(100, 200);
    view.set(bytes);
    const response = bytesResponse(view, 'sounds/bell.ogg', 'bytes=10-19');
    expect(response.status).toBe(206);
    expect(response.headers.get('content-range')).toBe('bytes 10-19/100');
    expect(response.headers.get('content-length')).toBe('10');
    expect(response.headers.get('content-type')).toBe('audio/ogg');
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes.subarray(10, 20));
    expect(bytesResponse(bytes, 'a.bin', 'bytes=90-500').headers.get('content-range')).toBe('bytes 90-99/100');
    expect(bytesResponse(bytes, 'a.bin', 'bytes=-5').headers.get('content-range')).toBe('bytes 95-99/100');
  });

  test('416 with bytes */size past the end, and for any range of an empty file', () => {
    const past = bytesResponse(bytes, 'a.bin', 'bytes=100-');
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe('bytes */100');
    expect(bytesResponse(new Uint8Array(0), 'empty.txt', 'bytes=0-').status).toBe(416);
    expect(bytesResponse(new Uint8Array(0), 'empty.txt', null).headers.get('content-length')).toBe('0');
  });

  test('a damaged bundle: 502 naming the damaged member; a member before the damage passed on its own and is served', async () => {
    const sw = handler('damaged');
    await sw.ready;
    const event = fetchEvent(`${site}damaged/a/two.txt`);
    expect(sw.handleFetch(event)).toBe(true);
    const response = await event.answer!;
    expect(response.status).toBe(502);
    expect(response.headers.get('x-awkb-error')).toBe('E_BUNDLE_INTEGRITY');
    const text = await response.text();
    expect(text).toContain('awake-bundle: a/two.txt cannot be served verified');
    expect(text).toContain('damaged: a/two.txt');
    // SPEC §7: a bundle that fails is rejected whole, nothing of it cached; a member before the
    // damage passes on its own ("Streamed members"), so a later request for it is served, verified.
    const sibling = fetchEvent(`${site}damaged/a/one.txt`);
    sw.handleFetch(sibling);
    const answer = await sibling.answer!;
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('first member\n');
  });

  test('failure names the part when no member is damaged', async () => {
    const response = failure('x.bin', new BundleIntegrityError('header', 'bundle header does not match the index'));
    expect(await response.text()).toContain('damaged: header');
  });
});
