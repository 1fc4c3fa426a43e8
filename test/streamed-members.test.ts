/**
 * Streamed members (SPEC §7) in real Chromium and Firefox ESR: a server that holds a bundle's body
 * at a byte the test chooses (test/helpers/gated-server.ts) shows what the reader hands out while
 * the bundle is only partly in: the first member before the bundle's end; a damaged tail leaves
 * the earlier members served and the later reads failing, nothing cached; a damaged table serves
 * nothing and is refused before the body ends; a load's byte total never changes; and Phaser's
 * `progress` moves while a bundle arrives. No timers: the test waits on the server and the page.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { launchBrowser, startRepoServer, TESTED_BROWSERS, type LaunchedBrowser, type RepoServer } from './helpers/browser';
import { runCli, temporaryDir } from './helpers/cli';
import { startGatedServer, type GatedServer } from './helpers/gated-server';
import { seededBytes, writeTree } from './helpers/trees';

const KiB = 1024;
/** One bundle: a small first member, then eight of 128 KiB (key order). */
const FIRST = 'a/first.txt';
const BIG = Array.from({ length: 8 }, (_, i) => `b/big-${i}.bin`);
const PATHS = [FIRST, ...BIG];

interface Site {
  dir: string;
  index: {
    bundles: { sha256: string; url: string; sizeBytes: number }[];
    files: { path: string; sha256: string; offset: number; sizeBytes: number }[];
  };
  bundlePath(copy: string): string;
  entry(path: string): { sha256: string; offset: number; sizeBytes: number };
}

function buildSite(): Site {
  const tree = temporaryDir('awkb-stream-tree-');
  writeTree(tree, Object.fromEntries([[FIRST, seededBytes(2 * KiB, 1)], ...BIG.map((path, i) => [path, seededBytes(128 * KiB, 10 + i)])]));
  const dir = temporaryDir('awkb-stream-site-');
  const published = runCli([tree, '--out', join(dir, 'good'), '--group', 'one']);
  if (published.code !== 0) throw new Error(published.stderr);
  const index = JSON.parse(readFileSync(join(dir, 'good/project.index.json'), 'utf8'));
  const bundle = index.bundles[0];
  const entry = (path: string) => index.files.find((file: { path: string }) => file.path === path);
  // Copies served under the same bundle name: the last member damaged; a byte of the table damaged.
  for (const [copy, at] of [
    ['tail', entry(BIG.at(-1)!).offset + 100],
    ['table', 16 + 2 + FIRST.length + 20],
  ] as const) {
    cpSync(join(dir, 'good'), join(dir, copy), { recursive: true });
    const file = join(dir, copy, bundle.url);
    const bytes = readFileSync(file);
    bytes[at]! ^= 0xff;
    writeFileSync(file, bytes);
  }
  mkdirSync(join(dir, 'empty'), { recursive: true });
  return { dir, index, bundlePath: (copy) => `/${copy}/${bundle.url}`, entry };
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  let site: Site;
  let gated: GatedServer;
  let server: RepoServer;
  let browser: LaunchedBrowser;
  let page: Page;

  beforeAll(async () => {
    site = buildSite();
    gated = await startGatedServer(site.dir);
    server = await startRepoServer({ mounts: { '/page/': join(__dirname, 'fixtures/phaser-page') } });
    browser = await launchBrowser({ kind });
    page = await browser.openHarness(server);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await gated?.close();
  });

  /** Runs `source` (an async function's text, given `core` and `args`) in the harness page. */
  const inPage = <T>(source: string, args: unknown): Promise<T> =>
    page
      .evaluate(
        async (source, args) => {
          const core = await (globalThis as any).harnessImport('awake-bundle');
          return JSON.stringify(await new Function('core', 'args', `return (${source})(core, args)`)(core, args));
        },
        source,
        args,
      )
      .then((text) => JSON.parse(text as string));

  test("the first member arrives before the bundle's end", async () => {
    const first = site.entry(FIRST);
    const gate = gated.gate(site.bundlePath('good'), first.offset + first.sizeBytes + 4 * KiB);
    // A load of every file brings the whole bundle, one request (its reads join it); while the
    // server holds the rest of it, the first read resolves, verified.
    const firstSha = await inPage<string>(
      `async (core, { indexUrl, path, paths }) => {
      const source = await core.IndexedAssetSource.open({ indexUrl, cache: null });
      globalThis.streamSource = source;
      globalThis.streamLoad = source.load(paths, { waitForCache: false });
      return core.sha256Hex(await source.read(path));
    }`,
      { indexUrl: `${gated.origin}/good/project.index.json`, path: FIRST, paths: PATHS },
    );
    expect(firstSha).toBe(first.sha256);
    await gate.reached;
    gate.release();
    const last = await inPage<string>(
      `async (core, { path }) => { await globalThis.streamLoad; return core.sha256Hex(await globalThis.streamSource.read(path)); }`,
      { path: BIG.at(-1) },
    );
    expect(last).toBe(site.entry(BIG.at(-1)!).sha256);
    expect(gated.requests.filter((path) => path === site.bundlePath('good'))).toHaveLength(1);
  });

  test('a damaged tail: earlier members are served verified, later reads fail naming the damage, nothing is cached', async () => {
    const outcome = await inPage<Record<string, any>>(
      `async (core, { indexUrl, paths, name }) => {
      const cache = await core.openBrowserCache({ name });
      const source = await core.IndexedAssetSource.open({ indexUrl, cache, retry: { attempts: 1 } });
      const reads = await Promise.allSettled(paths.map((path) => source.read(path).then((bytes) => core.sha256Hex(bytes))));
      await source.whenStored();
      const shas = source.index.files.map((file) => file.sha256);
      return {
        reads: reads.map((read) => (read.status === 'fulfilled' ? read.value : { name: read.reason.name, part: read.reason.part, damaged: read.reason.damaged })),
        cached: (await cache.hasMany(shas)).filter(Boolean).length,
      };
    }`,
      { indexUrl: `${gated.origin}/tail/project.index.json`, paths: PATHS, name: `stream-tail-${kind}` },
    );
    // The first seven members passed before the damaged eighth arrived: they were handed out.
    expect(outcome.reads.slice(0, 8)).toEqual(PATHS.slice(0, 8).map((path) => site.entry(path).sha256));
    expect(outcome.reads[8]).toEqual({ name: 'BundleIntegrityError', part: 'members', damaged: [BIG.at(-1)] });
    expect(outcome.cached).toBe(0);
  });

  test('a damaged table: nothing is served, and the bundle is refused before its body ends', async () => {
    const gate = gated.gate(site.bundlePath('table'), 8 * KiB);
    try {
      const outcome = await inPage<Record<string, any>>(
        `async (core, { indexUrl, paths, name }) => {
        const cache = await core.openBrowserCache({ name });
        const source = await core.IndexedAssetSource.open({ indexUrl, cache, retry: { attempts: 1 } });
        const reads = await Promise.allSettled(paths.map((path) => source.read(path)));
        await source.whenStored();
        return {
          reads: reads.map((read) => (read.status === 'fulfilled' ? 'served' : { name: read.reason.name, part: read.reason.part })),
          cached: (await cache.hasMany(source.index.files.map((file) => file.sha256))).filter(Boolean).length,
        };
      }`,
        { indexUrl: `${gated.origin}/table/project.index.json`, paths: PATHS, name: `stream-table-${kind}` },
      );
      // Every read failed while the server still held most of the body.
      expect(outcome.reads).toEqual(PATHS.map(() => ({ name: 'BundleIntegrityError', part: 'table' })));
      expect(outcome.cached).toBe(0);
    } finally {
      gate.release();
    }
  });

  test("a load's byte total is fixed from its first event, and bytes count as they arrive", async () => {
    const bundle = site.index.bundles[0]!;
    const gate = gated.gate(site.bundlePath('good'), Math.floor(bundle.sizeBytes / 2));
    await inPage(
      `async (core, { indexUrl, paths }) => {
      const source = await core.IndexedAssetSource.open({ indexUrl, cache: null });
      globalThis.events = [];
      globalThis.files = {};
      globalThis.loading = source.load(paths, {
        onProgress: (progress) => globalThis.events.push(progress),
        onFileProgress: ({ path, loadedBytes, totalBytes }) => (globalThis.files[path] = [loadedBytes, totalBytes]),
      });
      return null;
    }`,
      { indexUrl: `${gated.origin}/good/project.index.json`, paths: ['a', 'b/'] },
    );
    await gate.reached;
    // Events arrive while the server holds the second half: part of the total, the first file whole.
    await page.waitForFunction(
      (first) => {
        const g = globalThis as any;
        return (
          g.events.some(
            (event: { loadedBytes: number; totalBytes: number }) => event.loadedBytes > 0 && event.loadedBytes < event.totalBytes,
          ) && g.files[first]?.[0] === g.files[first]?.[1]
        );
      },
      { timeout: 20_000 },
      FIRST,
    );
    const midway = await inPage<{ loadedBytes: number; totalBytes: number }[]>('async () => globalThis.events', null);
    gate.release();
    const events = await inPage<{ loadedBytes: number; totalBytes: number; requestsDone: number; requestsTotal: number }[]>(
      'async () => { await globalThis.loading; return globalThis.events; }',
      null,
    );
    expect(midway.every((event) => event.loadedBytes < bundle.sizeBytes)).toBe(true);
    expect(new Set(events.map((event) => event.totalBytes))).toEqual(new Set([bundle.sizeBytes]));
    expect(events.at(-1)).toMatchObject({ loadedBytes: bundle.sizeBytes, totalBytes: bundle.sizeBytes, requestsDone: 1, requestsTotal: 1 });
    for (let i = 1; i < events.length; i++) expect(events[i]!.loadedBytes).toBeGreaterThanOrEqual(events[i - 1]!.loadedBytes);
    const files = await inPage<Record<string, [number, number]>>('async () => globalThis.files', null);
    for (const path of PATHS) expect(files[path]).toEqual([site.entry(path).sizeBytes, site.entry(path).sizeBytes]);
  });

  test("Phaser's progress moves while a bundle arrives", async () => {
    const phaserPage = await browser.browser.newPage();
    try {
      await phaserPage.goto(`${server.origin}/page/phaser4.html`, { waitUntil: 'load' });
      await phaserPage.waitForFunction(() => typeof (globalThis as { runScene?: unknown }).runScene === 'function', { timeout: 30_000 });
      const bundle = site.index.bundles[0]!;
      const gate = gated.gate(site.bundlePath('good'), Math.floor(bundle.sizeBytes / 2));
      await phaserPage.evaluate(`(async () => {
        const Phaser = await import('phaser');
        await import('/dist/adapters/phaser/index.js');
        const root = ${JSON.stringify(`${gated.origin}/good/`)};
        const paths = ${JSON.stringify(PATHS)};
        globalThis.phaserEvents = { progress: [], awkb: [], complete: false };
        new Phaser.Game({
          type: Phaser.HEADLESS, width: 64, height: 64, banner: false, audio: { noAudio: true },
          scene: { preload() {
            this.load.awkbIndex('assets', root + 'project.index.json', { cache: null });
            for (const path of paths) this.load.binary(path, root + path);
            this.load.on('progress', (value) => globalThis.phaserEvents.progress.push(value));
            this.load.on('awkbprogress', (progress) => globalThis.phaserEvents.awkb.push(progress));
            this.load.on('complete', () => (globalThis.phaserEvents.complete = true));
          } },
        });
      })()`);
      await gate.reached;
      // Files processed while the server holds half the bundle: progress between 0 and 1, before complete.
      await phaserPage.waitForFunction(() => (globalThis as any).phaserEvents.progress.some((value: number) => value > 0 && value < 1), {
        timeout: 30_000,
      });
      expect(await phaserPage.evaluate(() => (globalThis as any).phaserEvents.complete)).toBe(false);
      gate.release();
      await phaserPage.waitForFunction(() => (globalThis as any).phaserEvents.complete === true, { timeout: 30_000 });
      const events = await phaserPage
        .evaluate(() => JSON.stringify((globalThis as any).phaserEvents))
        .then((text) => JSON.parse(text as string));
      expect(events.progress.at(-1)).toBe(1);
      // awkbprogress: one load, its total fixed from the first event, bytes moving before the end.
      expect(new Set(events.awkb.map((event: { totalBytes: number }) => event.totalBytes))).toEqual(new Set([bundle.sizeBytes]));
      expect(events.awkb.some((event: { loadedBytes: number }) => event.loadedBytes > 0 && event.loadedBytes < bundle.sizeBytes)).toBe(
        true,
      );
      expect(events.awkb.at(-1)).toEqual({ loadedBytes: bundle.sizeBytes, totalBytes: bundle.sizeBytes });
    } finally {
      await phaserPage.close();
    }
  });

  test('an index and a bundle the page preloads (<link rel="preload" as="fetch" crossorigin>) are requested once: the reader uses the preloaded responses', async () => {
    const indexUrl = `${gated.origin}/good/project.index.json`;
    const bundleUrl = `${gated.origin}${site.bundlePath('good')}`;
    const before = gated.requests.length;
    const shas = await inPage<string[]>(
      `async (core, { urls, paths, indexUrl }) => {
      // As the build plugins write them into the page's HTML; here added, then waited for.
      await Promise.all(urls.map((href) => new Promise((resolve, reject) => {
        const link = Object.assign(document.createElement('link'), { rel: 'preload', as: 'fetch', crossOrigin: 'anonymous', href, onload: resolve, onerror: reject });
        document.head.append(link);
      })));
      const source = await core.IndexedAssetSource.open({ indexUrl, cache: null });
      const shas = await Promise.all(paths.map(async (path) => core.sha256Hex(await source.read(path))));
      for (const link of document.querySelectorAll('link[rel="preload"]')) link.remove();
      return shas;
    }`,
      { urls: [indexUrl, bundleUrl], paths: PATHS, indexUrl },
    );
    expect(shas).toEqual(PATHS.map((path) => site.entry(path).sha256));
    const requests = gated.requests.slice(before);
    expect(requests.filter((path) => path === '/good/project.index.json')).toHaveLength(1);
    expect(requests.filter((path) => path === site.bundlePath('good'))).toHaveLength(1);
  });

  test('the same bundle streamed with no workers (page thread, as under a CSP) serves the first member early too', async () => {
    const first = site.entry(FIRST);
    const gate = gated.gate(site.bundlePath('good'), first.offset + first.sizeBytes + 4 * KiB);
    const firstSha = await inPage<string>(
      `async (core, { indexUrl, path }) => {
      const source = await core.IndexedAssetSource.open({ indexUrl, cache: null, hashWorkers: 0 });
      globalThis.pageThreadSource = source;
      return core.sha256Hex(await source.read(path));
    }`,
      { indexUrl: `${gated.origin}/good/project.index.json`, path: FIRST },
    );
    expect(firstSha).toBe(first.sha256);
    await gate.reached;
    gate.release();
    const all = await inPage<string[]>(
      `async (core, { paths }) => Promise.all(paths.map(async (path) => core.sha256Hex(await globalThis.pageThreadSource.read(path))))`,
      { paths: PATHS },
    );
    expect(all).toEqual(PATHS.map((path) => site.entry(path).sha256));
    void sha256;
  });
});
