/**
 * IndexedAssetSource in real headless Chromium and Firefox ESR (SPEC §7): the built core loaded through the
 * harness page, a published project served on 127.0.0.1, requests counted by the server and by
 * the page's own fetch (so the browser's HTTP cache cannot hide a request).
 */
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import {
  holdWorkerPongs,
  gotoHarness,
  launchBrowser,
  REPO_ROOT,
  reloadHarness,
  startRepoServer,
  testIf,
  TESTED_BROWSERS,
  type LaunchedBrowser,
  type RepoServer,
} from './helpers/browser';
import { FIXTURES, runCli, temporaryDir } from './helpers/cli';
import { startGatedServer } from './helpers/gated-server';
import { seededBytes, writeTree } from './helpers/trees';

const loose = JSON.parse(readFileSync(join(FIXTURES, 'trees/small.loose.index.json'), 'utf8'));
const PATHS: string[] = loose.files.map((file: { path: string }) => file.path);
const EXPECTED_SHA = Object.fromEntries(loose.files.map((file: { path: string; sha256: string }) => [file.path, file.sha256]));
const SMALL_INDEX = JSON.parse(readFileSync(join(FIXTURES, 'expected/small-default/project.index.json'), 'utf8'));
/** The URL, relative to the index, of the bundle that holds `path` in the published small project. */
function bundleUrlOf(path: string): string {
  const file = SMALL_INDEX.files.find((f: { path: string }) => f.path === path);
  return SMALL_INDEX.bundles.find((b: { sha256: string }) => b.sha256 === file.bundle).url;
}
/** Sites whose first bundle has one byte of its head flipped: in the magic (byte 0), in the table (byte 20, its first key). */
const BAD_HEADS = [
  ['bad-magic', 0],
  ['bad-table', 20],
] as const;
/** A file of the small project's first bundle. */
const FIRST_BUNDLE_PATH: string = SMALL_INDEX.files.find((f: { bundle?: string }) => f.bundle === SMALL_INDEX.bundles[0].sha256).path;
/** Two versions of a project for delta reads: 20 files of 16 KiB in one bundle; v2 changes files 3 and 15. */
const DELTA_FILES = Array.from({ length: 20 }, (_, i) => `levels/chunk-${String(i).padStart(2, '0')}.bin`);
const DELTA_CHANGED = [3, 15];

function publishDeltaVersions(site: string): void {
  for (const version of ['v1', 'v2']) {
    const tree = temporaryDir(`awkb-browser-delta-${version}-`);
    writeTree(
      tree,
      Object.fromEntries(
        DELTA_FILES.map((path, i) => [path, seededBytes(16 * 1024, version === 'v2' && DELTA_CHANGED.includes(i) ? 500 + i : i)]),
      ),
    );
    const published = runCli([tree, '--out', join(site, 'delta', version)]);
    if (published.code !== 0) throw new Error(published.stderr);
  }
  // A copy of v2 whose bundle has one byte of changed file 15 flipped.
  cpSync(join(site, 'delta/v2'), join(site, 'delta/v2-damaged'), { recursive: true });
  const index = JSON.parse(readFileSync(join(site, 'delta/v2-damaged/project.index.json'), 'utf8'));
  const target = index.files.find((f: { path: string }) => f.path === DELTA_FILES[15]);
  const file = join(site, 'delta/v2-damaged', index.bundles.find((b: { sha256: string }) => b.sha256 === target.bundle).url);
  const bytes = readFileSync(file);
  bytes[target.offset + 7]! ^= 0xff;
  writeFileSync(file, bytes);
}

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  let server: RepoServer;
  let browser: LaunchedBrowser;
  let page: Page;
  let siteDir: string;

  beforeAll(async () => {
    const site = temporaryDir('awkb-browser-site-');
    siteDir = site;
    cpSync(join(FIXTURES, 'expected/small-default'), join(site, 'small'), { recursive: true });
    // A damaged copy: the index lists good.awkb, the server holds member-two-damaged.awkb under its name.
    const damaged = JSON.parse(readFileSync(join(FIXTURES, 'damaged/expected.json'), 'utf8'));
    mkdirSync(join(site, 'damaged/bundles'), { recursive: true });
    cpSync(join(FIXTURES, 'damaged/member-two-damaged.awkb'), join(site, 'damaged/bundles', `${damaged.good.sha256}.awkb`));
    writeFileSync(
      join(site, 'damaged/project.index.json'),
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
    // An oversized copy: every bundle served with 8 MiB more than the index lists (SPEC §7 "Verified").
    cpSync(join(FIXTURES, 'expected/small-default'), join(site, 'oversized'), { recursive: true });
    for (const bundle of JSON.parse(readFileSync(join(site, 'oversized/project.index.json'), 'utf8')).bundles as { url: string }[]) {
      const path = join(site, 'oversized', bundle.url);
      writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.alloc(8 * 1024 * 1024, 0x5a)]));
    }
    // Copies whose first bundle's head is not the canonical one: its magic, or a byte of its table.
    for (const [name, at] of BAD_HEADS) {
      cpSync(join(FIXTURES, 'expected/small-default'), join(site, name), { recursive: true });
      const path = join(site, name, SMALL_INDEX.bundles[0].url);
      const bytes = readFileSync(path);
      bytes[at]! ^= 0xff;
      writeFileSync(path, bytes);
    }
    publishDeltaVersions(site);
    server = await startRepoServer({ mounts: { '/published/': site } });
    browser = await launchBrowser({ kind });
    page = await browser.openHarness(server);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /** Opens the source in the page, reads `paths`, and returns their SHA-256s and the page's own fetches. */
  async function readInPage(options: { paths: string[]; persistent?: boolean; rangeReads?: boolean; prefetch?: boolean; index?: string }) {
    return page.evaluate(async ({ paths, persistent, rangeReads, prefetch, index }) => {
      const core = await harnessImport('awake-bundle');
      const fetched: string[] = [];
      const countingFetch: typeof fetch = (input, init) => {
        fetched.push(new URL(String(input instanceof Request ? input.url : input), location.href).pathname);
        return fetch(input, init);
      };
      const cache = persistent ? await core.openBrowserCache({ name: 'reader-test' }) : undefined;
      const source = await core.IndexedAssetSource.open({
        indexUrl: `/published/${index ?? 'small'}/project.index.json`,
        fetch: countingFetch,
        cache,
        rangeReads,
      });
      const progress: number[] = [];
      if (prefetch) await source.prefetch(paths, { onProgress: (p: { loadedBytes: number }) => progress.push(p.loadedBytes) });
      const hashes: Record<string, string> = {};
      for (const path of paths) hashes[path] = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', await source.read(path))));
      return { hashes, fetched, progress };
    }, options);
  }

  /** What the server was asked below /published/small/, as paths. */
  const smallRequests = () => server.requests.map((r) => r.path).filter((path) => path.startsWith('/published/small/'));

  test('reads and prefetches a published project, one request per bundle, every file verified', async () => {
    server.resetRequests();
    const result = await readInPage({ paths: PATHS, prefetch: true });
    expect(result.hashes).toEqual(EXPECTED_SHA);
    expect(result.fetched.filter((path) => path.endsWith('.awkb'))).toHaveLength(4);
    expect(result.progress.length).toBeGreaterThan(0);
    expect(server.requests.filter((r) => r.path.endsWith('.awkb'))).toHaveLength(4);
  });

  test('a turn the reader takes (a large load or plan) is a task of its own: after the current one and its microtasks, in order, none lost', async () => {
    const order = await page.evaluate(async () => {
      const { nextTurn } = await harnessImport('/dist/core/read/turns.js');
      const seen: (string | number)[] = [];
      const turns = Promise.all([1, 2, 3].map((i) => nextTurn().then(() => seen.push(i))));
      seen.push('now');
      await Promise.resolve();
      seen.push('microtask');
      await turns;
      // A chain of turns, as a load of many paths takes them, one after another.
      for (let i = 0; i < 40; i++) await nextTurn();
      seen.push('chain');
      return seen;
    });
    expect(order).toEqual(['now', 'microtask', 1, 2, 3, 'chain']);
  });

  test('the persistent cache survives a reload: the second load requests only the index', async () => {
    const first = await readInPage({ paths: PATHS, persistent: true, prefetch: true });
    expect(first.hashes).toEqual(EXPECTED_SHA);
    await reloadHarness(page);
    server.resetRequests();
    const second = await readInPage({ paths: PATHS, persistent: true, prefetch: true });
    expect(second.hashes).toEqual(EXPECTED_SHA);
    expect(second.fetched).toEqual(['/published/small/project.index.json']);
    expect(server.requests.filter((r) => r.path.startsWith('/published/')).map((r) => r.path)).toEqual([
      '/published/small/project.index.json',
    ]);
  });

  // A first visit: this browser has never opened the cache's database, so it holds nothing, and
  // the reader asks it nothing: the source opens and the first bundle requests go out while the
  // database is still being created (held here until the reads are done). Its entries are
  // written once it is open; the next visit, which waits for the open, reads from it.
  test("a first visit's reads wait for no IndexedDB open: the database is created meanwhile, and the next visit reads from it", async () => {
    const name = `first-visit-${Date.now()}`;
    const path = 'assets/sounds/bell.ogg';
    const visit = (hold: boolean) =>
      page.evaluate(
        async (name: string, path: string, hold: boolean) => {
          const core = await harnessImport('awake-bundle');
          let release = () => {};
          const held = new Promise<void>((resolve) => (release = resolve));
          const realOpen = IDBFactory.prototype.open;
          let opening = false;
          if (hold)
            // The success (and error) of this database's open wait for `release`; other databases open as usual.
            IDBFactory.prototype.open = function (this: IDBFactory, database: string, version?: number) {
              const request = realOpen.call(this, database, version);
              if (database !== name) return request;
              opening = true;
              const late: Record<string, ((event: Event) => void) | null> = { onupgradeneeded: null, onsuccess: null, onerror: null };
              request.onupgradeneeded = (event) => late.onupgradeneeded?.(event);
              request.onsuccess = (event) => void held.then(() => late.onsuccess?.(event));
              request.onerror = (event) => void held.then(() => late.onerror?.(event));
              return Object.defineProperties(late, {
                result: { get: () => request.result },
                error: { get: () => request.error },
              }) as unknown as IDBOpenDBRequest;
            };
          try {
            const cache = await core.openBrowserCache({ name });
            const holdsNothing = cache.holdsNothing;
            const source = await core.IndexedAssetSource.open({ indexUrl: '/published/small/project.index.json', cache });
            const bytes = await source.read(path);
            const hash = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)));
            release();
            await source.whenStored();
            await cache.primary.open();
            source.dispose();
            return { holdsNothing, hash, openHeld: opening, marked: localStorage.getItem(`awake-bundle:indexeddb-opened:${name}`) };
          } finally {
            IDBFactory.prototype.open = realOpen;
            release();
          }
        },
        name,
        path,
        hold,
      );
    const bundle = `/published/small/${bundleUrlOf(path)}`;
    server.resetRequests();
    const first = await visit(true);
    expect(first).toEqual({ holdsNothing: true, hash: EXPECTED_SHA[path], openHeld: true, marked: '1' });
    expect(smallRequests()).toEqual(['/published/small/project.index.json', bundle]);
    await reloadHarness(page);
    server.resetRequests();
    const second = await visit(false);
    expect(second).toEqual({ holdsNothing: false, hash: EXPECTED_SHA[path], openHeld: false, marked: '1' });
    expect(smallRequests()).toEqual(['/published/small/project.index.json']);
  });

  // A database this browser made before the mark existed (an earlier version of awake-bundle):
  // the first lookups may miss, and once the open finds it there, the cache is asked again.
  test('a database opened before without the localStorage mark is asked once its open finds it there', async () => {
    const result = await page.evaluate(async (name: string) => {
      const core = await harnessImport('awake-bundle');
      const idb = await harnessImport('/dist/core/cache/idb-store.js');
      const access = { database: name, objectStore: 'entries' };
      const key = 'ab'.repeat(32);
      await idb.putEntries(access, [[key, new Uint8Array([1, 2, 3])]]);
      idb.closeStore(access);
      localStorage.removeItem(`awake-bundle:indexeddb-opened:${name}`);
      const cache = await core.openBrowserCache({ name });
      const atOnce = cache.holdsNothing;
      await cache.primary.open();
      return { atOnce, afterOpen: cache.holdsNothing, bytes: Array.from(await cache.get(key)) };
    }, `pre-mark-${Date.now()}`);
    expect(result).toEqual({ atOnce: true, afterOpen: false, bytes: [1, 2, 3] });
  });

  // Entries put through an IndexedDBCache made directly (not by openBrowserCache) mark the
  // database too: the next openBrowserCache of that name waits for the open and asks it.
  test('entries put through IndexedDBCache alone mark the database: openBrowserCache then asks it from the start', async () => {
    const name = `direct-${Date.now()}`;
    const key = 'cd'.repeat(32);
    const marked = await page.evaluate(
      async (name: string, key: string) => {
        const core = await harnessImport('awake-bundle');
        localStorage.removeItem(`awake-bundle:indexeddb-opened:${name}`);
        const direct = new core.IndexedDBCache({ name });
        await direct.put(key, new Uint8Array([7, 8]));
        direct.close();
        return localStorage.getItem(`awake-bundle:indexeddb-opened:${name}`);
      },
      name,
      key,
    );
    expect(marked).toBe('1');
    await reloadHarness(page);
    const result = await page.evaluate(
      async (name: string, key: string) => {
        const core = await harnessImport('awake-bundle');
        const cache = await core.openBrowserCache({ name });
        return { holdsNothing: cache.holdsNothing, bytes: Array.from(await cache.get(key)) };
      },
      name,
      key,
    );
    expect(result).toEqual({ holdsNothing: false, bytes: [7, 8] });
  });

  // Issue 26 (6): a classic script opens the source while the HTML still streams (the server
  // holds the page right after that script), on a page whose head says preload links follow its
  // scripts (as the build plugins' pages do), so the reader waits for the parse (documentParsed)
  // before it asks for the index. That wait ends on the caller's signal, typed as every abort is,
  // and lasts at most indexTimeoutMs: past it the index is fetched, the HTML still held. A page
  // without that meta has no links to wait for: the index request goes out at once.
  describe('opened by a blocking script while the HTML still streams', () => {
    const HELD_AT = '<!-- the server holds the page here -->';
    /** A page whose classic script opens the source with `options` (aborting it at once when `abort`) and logs how that ended. */
    const streamedPage = (options: string, abort: boolean, marker = true) => `<!doctype html>
<html><head><meta charset="utf-8"><title>streamed</title>${marker ? '\n<meta name="awake-bundle-preload" content="links-after-scripts">' : ''}
<script type="importmap">${JSON.stringify({ imports: { '@noble/hashes/': '/node_modules/@noble/hashes/', 'awake-bundle': '/dist/core/internal.js' } })}</script>
</head><body>
<script>
const controller = new AbortController();
import('awake-bundle').then((core) => {
  const opening = core.IndexedAssetSource.open({ indexUrl: '/published/small/project.index.json', signal: controller.signal, ${options} });
  ${abort ? 'controller.abort();' : ''}
  opening.then(
    (source) => console.log('awkb-result ' + JSON.stringify({ files: source.paths().length, readyState: document.readyState })),
    (error) => console.log('awkb-result ' + JSON.stringify({ name: error.name, code: error.code, readyState: document.readyState })),
  );
});
</script>
${HELD_AT}
<p>the rest of the page</p>
</body></html>
`;

    /** Loads `html` from a server that holds it at HELD_AT; what the page logged, and the index requests by then, before the rest is sent. */
    async function openWhileStreaming(html: string) {
      const root = temporaryDir('awkb-streamed-');
      for (const folder of ['dist', 'node_modules']) symlinkSync(join(REPO_ROOT, folder), join(root, folder));
      symlinkSync(siteDir, join(root, 'published'));
      writeFileSync(join(root, 'game.html'), html);
      const host = await startGatedServer(root);
      const streamed = await browser.browser.newPage();
      let gate: ReturnType<typeof host.gate> | undefined;
      try {
        const logged = new Promise<unknown>((resolve) =>
          streamed.on('console', (message) => {
            if (message.text().startsWith('awkb-result ')) resolve(JSON.parse(message.text().slice('awkb-result '.length)));
          }),
        );
        gate = host.gate('/game.html', html.indexOf(HELD_AT));
        const loaded = streamed.goto(`${host.origin}/game.html`, { waitUntil: 'load' });
        loaded.catch(() => undefined); // awaited below, once the page may finish; not unhandled if the test fails first
        await gate.reached;
        // Bounded, so that a reader still waiting for the parse fails the test rather than hang it.
        const outcome = await Promise.race([
          logged,
          new Promise((resolve) => setTimeout(() => resolve('nothing while the HTML was held'), 10_000)),
        ]);
        const indexRequests = host.requests.filter((path) => path === '/published/small/project.index.json').length;
        gate.release();
        await loaded;
        return { outcome, indexRequests };
      } finally {
        gate?.release();
        await streamed.close();
        await host.close();
      }
    }

    test('an abort ends the wait at once: E_ABORTED while the HTML is held, and no index request', async () => {
      expect(await openWhileStreaming(streamedPage('', true))).toEqual({
        outcome: { name: 'RequestAbortedError', code: 'E_ABORTED', readyState: 'loading' },
        indexRequests: 0,
      });
    }, 30_000);

    test('past indexTimeoutMs it stops waiting: the source opens while the HTML is held', async () => {
      expect(await openWhileStreaming(streamedPage('indexTimeoutMs: 1000', false))).toEqual({
        outcome: { files: PATHS.length, readyState: 'loading' },
        indexRequests: 1,
      });
    }, 30_000);

    test('on a page with no preload links to come (no meta saying so) it waits for nothing: the source opens while the HTML is held', async () => {
      // No limit on the wait (indexTimeoutMs: 0): before, the reader waited for a parse the held HTML never finished.
      expect(await openWhileStreaming(streamedPage('indexTimeoutMs: 0', false, false))).toEqual({
        outcome: { files: PATHS.length, readyState: 'loading' },
        indexRequests: 1,
      });
    }, 30_000);
  });

  // Issue 26 (7): IndexedDB refuses every open (the page's indexedDB.open fires `error`), Cache
  // Storage works. A first visit starts on IndexedDB without waiting for its open; once that
  // fails, the cache falls over to Cache Storage, and the writes made meanwhile go there.
  test('where IndexedDB refuses to open, a first visit falls over to Cache Storage with its writes: the next visit fetches no bundle', async () => {
    const host = await startRepoServer({ mounts: { '/published/': siteDir } }); // an origin of its own: nothing stored there yet
    const refusing = await browser.browser.newPage();
    const path = 'assets/sounds/bell.ogg';
    try {
      await refusing.evaluateOnNewDocument(() => {
        IDBFactory.prototype.open = function () {
          const request = { error: new DOMException('refused by the test', 'UnknownError') } as unknown as IDBOpenDBRequest;
          queueMicrotask(() => request.onerror?.(new Event('error')));
          return request;
        };
      });
      await gotoHarness(refusing, host);
      const visit = () =>
        refusing.evaluate(async (path: string) => {
          const core = await harnessImport('awake-bundle');
          const cache = await core.openBrowserCache({ name: 'idb-refused' });
          const source = await core.IndexedAssetSource.open({ indexUrl: '/published/small/project.index.json', cache });
          const hash = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', await source.read(path))));
          await source.whenStored();
          source.dispose();
          return { hash, backend: cache.primary?.backend, inMemory: cache.memory.size };
        }, path);
      const requests = () => host.requests.map((r) => r.path).filter((p) => p.startsWith('/published/'));
      expect(await visit()).toEqual({ hash: EXPECTED_SHA[path], backend: 'cache-storage', inMemory: 0 });
      expect(requests()).toEqual(['/published/small/project.index.json', `/published/small/${bundleUrlOf(path)}`]);
      await reloadHarness(refusing);
      host.resetRequests();
      expect(await visit()).toEqual({ hash: EXPECTED_SHA[path], backend: 'cache-storage', inMemory: 0 });
      expect(requests()).toEqual(['/published/small/project.index.json']);
    } finally {
      await refusing.close();
      await host.close();
    }
  });

  // Issue 26 (8): a localStorage full (game saves do that) cannot take the first-visit mark, so
  // no visit can tell it is a first one: each waits for the IndexedDB open, and every return
  // visit reads what the first one stored.
  testIf(kind === 'chromium')(
    'with localStorage full, four visits request the bundle once: no return visit is taken for a first one',
    async () => {
      const host = await startRepoServer({ mounts: { '/published/': siteDir } }); // an origin of its own
      const full = await browser.browser.newPage();
      const path = 'assets/sounds/bell.ogg';
      try {
        await gotoHarness(full, host);
        const filled = await full.evaluate(() => {
          // Halving the item until even one character does not fit.
          for (let i = 0, chunk = 'x'.repeat(1 << 20); chunk.length > 0;) {
            try {
              localStorage.setItem(`save-${i++}`, chunk);
            } catch (error) {
              if ((error as DOMException).name !== 'QuotaExceededError') throw error;
              chunk = chunk.slice(0, chunk.length >> 1);
            }
          }
          try {
            localStorage.setItem('awake-bundle:indexeddb-opened:full-storage', '1');
            return 'room left';
          } catch (error) {
            return (error as DOMException).name;
          }
        });
        expect(filled).toBe('QuotaExceededError');
        const visits: { hash: string; holdsNothing: boolean }[] = [];
        for (let i = 0; i < 4; i++) {
          if (i > 0) await reloadHarness(full);
          visits.push(
            await full.evaluate(async (path: string) => {
              const core = await harnessImport('awake-bundle');
              const cache = await core.openBrowserCache({ name: 'full-storage' });
              const holdsNothing: boolean = cache.holdsNothing;
              const source = await core.IndexedAssetSource.open({ indexUrl: '/published/small/project.index.json', cache });
              const hash = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', await source.read(path))));
              await source.whenStored();
              source.dispose();
              return { hash, holdsNothing };
            }, path),
          );
        }
        expect({ visits, bundleRequests: host.requestCount(`/published/small/${bundleUrlOf(path)}`) }).toEqual({
          visits: Array(4).fill({ hash: EXPECTED_SHA[path], holdsNothing: false }),
          bundleRequests: 1,
        });
      } finally {
        await full.close();
        await host.close();
      }
    },
  );

  test("range reads ask for one member's bytes", async () => {
    server.resetRequests();
    const index = JSON.parse(readFileSync(join(FIXTURES, 'expected/small-default/project.index.json'), 'utf8'));
    const entry = index.files.find((f: { path: string }) => f.path === 'assets/sounds/bell.ogg');
    const result = await readInPage({ paths: ['assets/sounds/bell.ogg'], rangeReads: true });
    expect(result.hashes['assets/sounds/bell.ogg']).toBe(entry.sha256);
    const ranged = server.requests.filter((r) => r.path.endsWith('.awkb'));
    expect(ranged).toEqual([
      expect.objectContaining({ range: `bytes=${entry.offset}-${entry.offset + entry.sizeBytes - 1}`, status: 206 }),
    ]);
  });

  test.each([
    ['in Web Workers', {}],
    ['on the page thread', { hashWorkers: 0 }],
  ])(
    'delta reads %s: with v1 in IndexedDB, loading v2 asks only for its changed members, in one multi-range request',
    async (_, options) => {
      const cacheName = `delta-${Object.keys(options).length}`;
      const load = (version: string) =>
        page.evaluate(
          async (version: string, cacheName: string, options: object) => {
            const core = await harnessImport('awake-bundle');
            const cache = await core.openBrowserCache({ name: cacheName });
            const source = await core.IndexedAssetSource.open({
              indexUrl: `/published/delta/${version}/project.index.json`,
              cache,
              // A round trip priced at its floor: a loaded machine's measured one can make the whole
              // bundle cost less than another request (needed bytes), and this is about the ranges.
              neededBytes: { roundTripBytes: 16 * 1024 },
              ...options,
            });
            const paths = source.paths();
            const progress: { loadedBytes: number; totalBytes: number }[] = [];
            await source.prefetch(paths, { onProgress: (p: { loadedBytes: number; totalBytes: number }) => progress.push(p) });
            const hashes: Record<string, string> = {};
            for (const path of paths)
              hashes[path] = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', await source.read(path))));
            await source.whenStored();
            source.dispose();
            return JSON.stringify({ hashes, progress: progress.at(-1) });
          },
          version,
          cacheName,
          options,
        );
      const v1 = JSON.parse(await load('v1'));
      expect(Object.keys(v1.hashes)).toHaveLength(20);
      await reloadHarness(page);
      server.resetRequests();
      const v2 = JSON.parse(await load('v2'));
      const index = JSON.parse(readFileSync(join(siteDir, 'delta/v2/project.index.json'), 'utf8'));
      expect(v2.hashes).toEqual(Object.fromEntries(index.files.map((f: { path: string; sha256: string }) => [f.path, f.sha256])));
      const changed = DELTA_CHANGED.map((i) => index.files.find((f: { path: string }) => f.path === DELTA_FILES[i]));
      const bundleRequests = server.requests.filter((r) => r.path.endsWith('.awkb'));
      // Both ranges in one request, answered multipart/byteranges (parsed on the page, each member checked where the hashing is).
      const sorted = [...changed].sort((a: { offset: number }, b: { offset: number }) => a.offset - b.offset);
      expect(bundleRequests.map((r) => ({ range: r.range, status: r.status }))).toEqual([
        {
          range: `bytes=${sorted.map((f: { offset: number; sizeBytes: number }) => `${f.offset}-${f.offset + f.sizeBytes - 1}`).join(',')}`,
          status: 206,
        },
      ]);
      expect(v2.progress).toMatchObject({ loadedBytes: 2 * 16 * 1024, totalBytes: 2 * 16 * 1024 });
      // The changed members went to IndexedDB: a third load asks for no bundle at all.
      await reloadHarness(page);
      server.resetRequests();
      await load('v2');
      expect(server.requests.filter((r) => r.path.endsWith('.awkb'))).toEqual([]);
    },
  );

  test('a damaged delta range, checked in Web Workers: BundleIntegrityError naming the member, and IndexedDB gets neither changed member', async () => {
    const outcome = await page.evaluate(async () => {
      const core = await harnessImport('awake-bundle');
      const cache = await core.openBrowserCache({ name: 'delta-damaged' });
      const v1 = await core.IndexedAssetSource.open({ indexUrl: '/published/delta/v1/project.index.json', cache });
      await v1.prefetch(v1.paths(), { keep: false });
      await v1.whenStored();
      const v2 = await core.IndexedAssetSource.open({
        indexUrl: '/published/delta/v2-damaged/project.index.json',
        cache,
        retry: { attempts: 1 },
      });
      const error = await v2.prefetch(v2.paths()).then(
        () => undefined,
        (e: { name: string; code: string; part: string; damaged: string[]; message: string }) => e,
      );
      await v2.whenStored();
      const changed = ['levels/chunk-03.bin', 'levels/chunk-15.bin'].map((path) => v2.entry(path).sha256);
      return JSON.stringify({
        name: error?.name,
        code: error?.code,
        part: error?.part,
        damaged: error?.damaged,
        message: error?.message,
        present: await cache.hasMany(changed),
      });
    });
    expect(JSON.parse(outcome)).toEqual({
      name: 'BundleIntegrityError',
      code: 'E_BUNDLE_INTEGRITY',
      part: 'members',
      damaged: ['levels/chunk-15.bin'],
      message: expect.stringContaining('in the ranges of a delta read'),
      present: [false, false],
    });
  });

  test('a damaged bundle is refused, naming the damaged member: the member before it, verified, was handed out; nothing is cached', async () => {
    const outcome = await page.evaluate(async () => {
      const core = await harnessImport('awake-bundle');
      const cache = new core.MemoryCache();
      const source = await core.IndexedAssetSource.open({
        indexUrl: '/published/damaged/project.index.json',
        cache,
        retry: { attempts: 1 },
      });
      // SPEC §7 "Streamed members": a/one.txt passed before the damaged a/two.txt arrived.
      const [one, two] = await Promise.allSettled([source.read('a/one.txt'), source.read('a/two.txt')]);
      await source.whenStored();
      const e = (two as PromiseRejectedResult).reason as
        { name: string; code: string; part: string; damaged: string[]; message: string } | undefined;
      return {
        one: one.status === 'fulfilled' ? new TextDecoder().decode(one.value) : String((one as PromiseRejectedResult).reason),
        accepted: two.status === 'fulfilled',
        name: e?.name,
        code: e?.code,
        part: e?.part,
        damaged: e?.damaged,
        message: e?.message,
        cached: cache.size,
      };
    });
    expect(outcome).toMatchObject({
      one: 'first member\n',
      accepted: false,
      name: 'BundleIntegrityError',
      code: 'E_BUNDLE_INTEGRITY',
      part: 'members',
      damaged: ['a/two.txt'],
      cached: 0,
    });
    expect(outcome.message).toContain('a/two.txt');
  });

  test('a bundle served larger than listed is refused at its Content-Length, in the worker that reads it and on the page', async () => {
    const outcomes = await page.evaluate(async () => {
      const core = await harnessImport('awake-bundle');
      const attempt = async (options: object) => {
        // No fetch of our own: the default pool's workers read the bodies (BodyFetcher); with one, the page does.
        const source = await core.IndexedAssetSource.open({
          indexUrl: '/published/oversized/project.index.json',
          retry: { attempts: 1 },
          ...options,
        });
        const error = await source.read('ui/hud.json').then(
          () => undefined,
          (e: Error) => e as Error & { code: string; part: string; url: string },
        );
        source.dispose();
        return JSON.stringify({ name: error?.name, code: error?.code, part: error?.part, url: error?.url, message: error?.message });
      };
      return { worker: await attempt({}), page: await attempt({ fetch: (input: RequestInfo, init?: RequestInit) => fetch(input, init) }) };
    });
    for (const outcome of [JSON.parse(outcomes.worker), JSON.parse(outcomes.page)]) {
      expect(outcome).toMatchObject({ name: 'BundleIntegrityError', code: 'E_BUNDLE_INTEGRITY', part: 'bundle' });
      expect(outcome.url).toMatch(/\/published\/oversized\/bundles\/[0-9a-f]{64}\.awkb$/);
      expect(outcome.message).toMatch(/Content-Length says \d+/);
    }
  });

  test.each(BAD_HEADS.map(([name]) => name))(
    'a bundle whose head is not the canonical one (%s) is refused with the same error whether a worker or the page streamed it',
    async (site) => {
      const outcomes = await page.evaluate(
        async (site: string, path: string) => {
          const core = await harnessImport('awake-bundle');
          // A pool whose worker has answered: bundles stream in it (a cold pool streams them on the page).
          const pool = new core.WorkerDigestPool({ size: 1 });
          pool.warm();
          for (let i = 0; i < 400 && pool.usingWorkers !== true; i++) await new Promise((resolve) => setTimeout(resolve, 25));
          const attempt = async (options: object) => {
            const source = await core.IndexedAssetSource.open({
              indexUrl: `/published/${site}/project.index.json`,
              retry: { attempts: 1 },
              ...options,
            });
            const error = await source.read(path).then(
              () => undefined,
              (e: Error) => e as Error & { code: string; part: string; damaged: string[]; path: string },
            );
            source.dispose();
            return {
              name: error?.name,
              code: error?.code,
              part: error?.part,
              damaged: error?.damaged,
              path: error?.path,
              message: error?.message,
            };
          };
          const worker = await attempt({ hashWorkers: pool });
          const inWorker = pool.usingWorkers;
          pool.terminate();
          return { worker, inWorker, page: await attempt({ hashWorkers: 0 }) };
        },
        site,
        FIRST_BUNDLE_PATH,
      );
      expect(outcomes.inWorker).toBe(true);
      expect(outcomes.worker).toEqual(outcomes.page);
      expect(outcomes.page).toMatchObject({
        name: 'BundleIntegrityError',
        code: 'E_BUNDLE_INTEGRITY',
        part: site === 'bad-magic' ? 'header' : 'table',
        damaged: [],
        path: FIRST_BUNDLE_PATH,
      });
      expect(outcomes.page.message).toBe(
        `bundle ${SMALL_INDEX.bundles[0].sha256}: ${site === 'bad-magic' ? 'AWKB header: bad magic be574b42, expected 41574b42 ("AWKB")' : 'AWKB table: record 0 key is not valid UTF-8'}`,
      );
    },
  );

  test('a damaged bundle leaves nothing in the persistent cache, not even its good members', async () => {
    const outcome = await page.evaluate(async () => {
      const core = await harnessImport('awake-bundle');
      const cache = await core.openBrowserCache({ name: 'damaged-test' });
      const source = await core.IndexedAssetSource.open({
        indexUrl: '/published/damaged/project.index.json',
        cache,
        retry: { attempts: 1 },
      });
      const error = await source.prefetch(source.paths()).catch((e: Error) => e);
      await source.whenStored();
      const shas = source.paths().map((path: string) => source.entry(path).sha256);
      return { name: error?.name, present: await cache.hasMany(shas) };
    });
    expect(outcome.name).toBe('BundleIntegrityError');
    expect(outcome.present).toEqual([false, false, false]);
  });

  test('object URLs of verified bytes load as images in the page', async () => {
    const dir = temporaryDir('awkb-img-');
    const png = readFileSync(join(__dirname, '..', 'examples/assets/atlas/emoji/emoji.png'));
    mkdirSync(join(dir, 'in/img'), { recursive: true });
    writeFileSync(join(dir, 'in/img/emoji.png'), png);
    const { spawnSync } = await import('node:child_process');
    const published = spawnSync(process.execPath, [join(__dirname, '..', 'dist/cli/main.js'), join(dir, 'in'), '--out', join(dir, 'out')], {
      encoding: 'utf8',
    });
    expect(published.status).toBe(0);
    server.mount('/img-site/', join(dir, 'out'));
    const size = await page.evaluate(async () => {
      const core = await harnessImport('awake-bundle');
      const source = await core.IndexedAssetSource.open({ indexUrl: '/img-site/project.index.json' });
      const image = new Image();
      image.src = await source.url('img/emoji.png');
      await image.decode();
      source.release('img/emoji.png');
      return [image.naturalWidth, image.naturalHeight];
    });
    expect(size).toEqual([1771, 74]);
    expect(createHash('sha256').update(png).digest('hex')).toMatch(/^[0-9a-f]{64}$/);
  });

  describe('hashing in Web Workers, ownership, the warm load', () => {
    test('the default pool hashes in Web Workers: buffers move to a worker (transferred, not copied) and come back', async () => {
      const result = await page.evaluate(async () => {
        const core = await harnessImport('awake-bundle');
        const pool = core.sharedDigestPool();
        const bytes = new Uint8Array(3 * 1024 * 1024).map((_, i) => i % 251);
        const expected = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)));
        const { inputs, digests, parts } = await pool.digest({
          inputs: [bytes],
          ranges: [
            { input: 0, offset: 0, length: bytes.length },
            { input: 0, offset: 10, length: 0 },
          ],
          split: true,
          transfer: true,
        });
        // The original view stays detached: its buffer went to a worker and came back as another.
        const transferred = bytes.byteLength === 0 && inputs[0] !== bytes;
        return {
          worker: pool instanceof core.WorkerDigestPool && pool.usingWorkers,
          transferred,
          back: inputs[0].byteLength,
          same: digests[0] === expected,
          empty: digests[1],
          parts: parts.map((p: Uint8Array) => p.byteLength),
        };
      });
      expect(result).toEqual({
        worker: true,
        transferred: true,
        back: 3 * 1024 * 1024,
        same: true,
        empty: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
        parts: [3 * 1024 * 1024, 0],
      });
    });

    test('two concurrent reads own their bytes: one transferred to a worker and one written, the other unchanged', async () => {
      const result = await page.evaluate(async () => {
        const core = await harnessImport('awake-bundle');
        const source = await core.IndexedAssetSource.open({ indexUrl: '/published/small/project.index.json' });
        const [a, b] = await Promise.all([source.read('assets/sounds/bell.ogg'), source.read('assets/sounds/bell.ogg')]);
        structuredClone(a.buffer, { transfer: [a.buffer] });
        const bFirst = b[0];
        b.fill(0);
        const c = await source.read('assets/sounds/bell.ogg');
        const hex = async (bytes: Uint8Array) => core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource)));
        return { aDetached: a.byteLength === 0, bFirst, c: await hex(c) };
      });
      expect(result.aDetached).toBe(true);
      expect(result.c).toBe(EXPECTED_SHA['assets/sounds/bell.ogg']);
    });

    /**
     * A fresh page whose workers' ping answers are held back (holdWorkerPongs), `run` on it, then the
     * requests below /published/small/ the server saw meanwhile; the page is closed either way.
     */
    async function onHeldPongsPage<T>(run: (page: Page) => Promise<T>): Promise<{ result: T; requests: string[] }> {
      const coldPage = await browser.openHarness(server);
      try {
        await holdWorkerPongs(coldPage);
        server.resetRequests();
        const result = await run(coldPage);
        return { result, requests: smallRequests() };
      } finally {
        await coldPage.close();
      }
    }

    test("neither the index request nor the first bundle requests wait for a worker: with a memory cache every file reads while every worker's ping answer is held back", async () => {
      const { result, requests } = await onHeldPongsPage((coldPage) =>
        coldPage.evaluate(async (paths: string[]) => {
          const core = await harnessImport('awake-bundle');
          // A pool of its own, started as the source opens (warm()): its workers are up but not heard from.
          const source = await core.IndexedAssetSource.open({
            indexUrl: '/published/small/project.index.json',
            cache: new core.MemoryCache(),
            hashWorkers: 2,
          });
          const pool = (source as unknown as { pool: { usingWorkers: boolean | undefined } }).pool;
          const hashes: Record<string, string> = {};
          for (const path of paths)
            hashes[path] = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', await source.read(path))));
          const heardBeforeRelease = pool.usingWorkers;
          (globalThis as unknown as { releasePongs: () => void }).releasePongs();
          source.dispose();
          return { hashes, heardBeforeRelease };
        }, PATHS),
      );
      // Every file read, its bundle fetched on the page, before any worker was heard from.
      expect(result.hashes).toEqual(EXPECTED_SHA);
      expect(result.heardBeforeRelease).toBeUndefined();
      expect(requests[0]).toBe('/published/small/project.index.json');
      expect(requests.filter((path) => path.endsWith('.awkb')).length).toBeGreaterThan(0);
    });

    // With the persistent cache (the adapters' default) the index is fetched and read all the
    // same; a load asks the store what it holds on the page until a worker has answered (one
    // key-only transaction), so its bundle requests wait for no worker either.
    test("with the persistent cache the index request goes out, the source opens and a load fetches its bundles, while every worker's ping answer is held back", async () => {
      const { result: opened, requests } = await onHeldPongsPage((coldPage) =>
        coldPage.evaluate(async (paths: string[]) => {
          const core = await harnessImport('awake-bundle');
          const source = await core.IndexedAssetSource.open({
            indexUrl: '/published/small/project.index.json',
            cache: core.openBrowserCache({ name: 'held-pongs-test' }),
            hashWorkers: 2,
          });
          const pool = (source as unknown as { pool: { usingWorkers: boolean | undefined } }).pool;
          const heard = pool.usingWorkers;
          await source.load(paths);
          const heardAfterLoad = pool.usingWorkers;
          (globalThis as unknown as { releasePongs: () => void }).releasePongs();
          source.dispose();
          return { files: source.paths().length, heard, heardAfterLoad };
        }, PATHS),
      );
      expect(opened).toEqual({ files: PATHS.length, heard: undefined, heardAfterLoad: undefined });
      expect(requests[0]).toBe('/published/small/project.index.json');
      expect(requests.filter((path) => path.endsWith('.awkb')).length).toBeGreaterThan(0);
    });

    // A single read, with the persistent cache, on a page whose workers have not answered: it
    // asks the store on the page (one read transaction) and, the file not being there, sends its
    // bundle request at once, streamed on the page.
    test("with the persistent cache a read of an uncached file fetches its bundle and resolves with verified bytes while every worker's ping answer is held back", async () => {
      const { result, requests } = await onHeldPongsPage((coldPage) =>
        coldPage.evaluate(async (name: string) => {
          const core = await harnessImport('awake-bundle');
          const source = await core.IndexedAssetSource.open({
            indexUrl: '/published/small/project.index.json',
            cache: core.openBrowserCache({ name }),
            hashWorkers: 2,
          });
          const pool = (source as unknown as { pool: { usingWorkers: boolean | undefined } }).pool;
          const bytes = await source.read('assets/sounds/bell.ogg');
          const hash = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)));
          const heard = pool.usingWorkers;
          (globalThis as unknown as { releasePongs: () => void }).releasePongs();
          source.dispose();
          return { hash, heard };
        }, `held-pongs-read-${Date.now()}`),
      );
      expect(result).toEqual({ hash: EXPECTED_SHA['assets/sounds/bell.ogg'], heard: undefined });
      expect(requests[0]).toBe('/published/small/project.index.json');
      expect(requests.filter((path) => path.endsWith('.awkb'))).toHaveLength(1);
    });

    // The same page, the files cached: a read takes them from the store on the page and hashes
    // them there, with no request; an entry whose bytes were changed in the store fails that
    // check, is dropped and comes again from its bundle (SPEC §7 "Cache": re-checked when read).
    test("with the persistent cache warm, reads take verified bytes from the store while every worker's ping answer is held back; a damaged entry is fetched again", async () => {
      const name = `held-pongs-warm-${Date.now()}`;
      await page.evaluate(async (name: string) => {
        const core = await harnessImport('awake-bundle');
        const source = await core.IndexedAssetSource.open({
          indexUrl: '/published/small/project.index.json',
          cache: core.openBrowserCache({ name }),
        });
        await source.prefetch(source.paths());
        await source.whenStored();
        source.dispose();
      }, name);
      const damaged = 'assets/sounds/bell.ogg';
      const good = PATHS.find((path) => path !== damaged && bundleUrlOf(path) !== bundleUrlOf(damaged))!;
      const { result, requests } = await onHeldPongsPage((coldPage) =>
        coldPage.evaluate(
          async ({ name, good, damaged }) => {
            const core = await harnessImport('awake-bundle');
            const source = await core.IndexedAssetSource.open({
              indexUrl: '/published/small/project.index.json',
              cache: core.openBrowserCache({ name }),
              hashWorkers: 2,
            });
            const pool = (source as unknown as { pool: { usingWorkers: boolean | undefined } }).pool;
            const hex = async (bytes: Uint8Array) =>
              core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource)));
            const goodHash = await hex(await source.read(good));
            // The stored copy of `damaged` gets other bytes of the same size.
            const entry = source.entry(damaged)!;
            await new core.IndexedDBCache({ name }).put(entry.sha256, new Uint8Array(entry.sizeBytes).fill(7));
            const damagedHash = await hex(await source.read(damaged));
            const heard = pool.usingWorkers;
            (globalThis as unknown as { releasePongs: () => void }).releasePongs();
            source.dispose();
            return { goodHash, damagedHash, heard };
          },
          { name, good, damaged },
        ),
      );
      expect(result).toEqual({ goodHash: EXPECTED_SHA[good], damagedHash: EXPECTED_SHA[damaged], heard: undefined });
      // The good file: no request. The damaged one: its bundle, once (a range of it: a delta read).
      expect(requests).toEqual(['/published/small/project.index.json', `/published/small/${bundleUrlOf(damaged)}`]);
    });

    test('a page whose CSP forbids workers still reads, hashing on its own thread', async () => {
      const cspPage = await browser.browser.newPage();
      try {
        await cspPage.goto(`${server.origin}/harness.html?csp=no-workers`, { waitUntil: 'load' });
        await cspPage.waitForFunction(() => typeof (globalThis as { harnessImport?: unknown }).harnessImport === 'function');
        const result = await cspPage.evaluate(async (paths: string[]) => {
          const core = await harnessImport('awake-bundle');
          const source = await core.IndexedAssetSource.open({ indexUrl: '/published/small/project.index.json' });
          const hashes: Record<string, string> = {};
          for (const path of paths)
            hashes[path] = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', await source.read(path))));
          return { hashes, usingWorkers: core.sharedDigestPool().usingWorkers };
        }, PATHS);
        expect(result.hashes).toEqual(EXPECTED_SHA);
        expect(result.usingWorkers).toBe(false);
      } finally {
        await cspPage.close();
      }
    });

    test('a warm load is the index request and one IndexedDB read (in a worker) per bundle; the page itself touches no store', async () => {
      const load = () =>
        page.evaluate(async () => {
          const core = await harnessImport('awake-bundle');
          const transactions: string[] = [];
          const original = IDBDatabase.prototype.transaction;
          IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<IDBDatabase['transaction']>) {
            transactions.push(String(args[1] ?? 'readonly'));
            return original.apply(this, args);
          };
          // Each readStored is one read transaction in a worker: count them.
          const pool = core.sharedDigestPool();
          const readStored = pool.readStored;
          const workerReads: number[] = [];
          pool.readStored = function (this: unknown, access: unknown, wanted: unknown[]) {
            workerReads.push(wanted.length);
            return readStored.call(this, access, wanted);
          };
          try {
            const cache = await core.openBrowserCache({ name: 'warm-load-test' });
            const source = await core.IndexedAssetSource.open({ indexUrl: '/published/small/project.index.json', cache });
            const paths = source.paths();
            await source.prefetch(paths);
            const sizes = await Promise.all(paths.map(async (path: string) => (await source.read(path)).byteLength));
            return { transactions, workerReads, files: sizes.length, bundles: source.index.bundles.length };
          } finally {
            IDBDatabase.prototype.transaction = original;
            pool.readStored = readStored;
          }
        });
      await load();
      await reloadHarness(page);
      server.resetRequests();
      const warm = await load();
      expect(server.requests.filter((r) => r.path.startsWith('/published/')).map((r) => r.path)).toEqual([
        '/published/small/project.index.json',
      ]);
      expect(warm.workerReads).toHaveLength(warm.bundles);
      // The page reads no entry: the workers read them. Only while no worker has answered yet
      // (a page just loaded) does the page ask the store which keys it holds, in one read-only
      // transaction, so the first bundle requests wait for no worker.
      expect(warm.transactions.length).toBeLessThanOrEqual(1);
      expect(warm.transactions.every((mode) => mode === 'readonly')).toBe(true);
    });
  });
});
