/**
 * IndexedAssetSource in real headless Chromium (SPEC §7): the built core loaded through the
 * harness page, a published project served on 127.0.0.1, requests counted by the server and by
 * the page's own fetch (so the browser's HTTP cache cannot hide a request).
 */
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { launchBrowser, reloadHarness, startRepoServer, type LaunchedBrowser, type RepoServer } from './helpers/browser';
import { FIXTURES, temporaryDir } from './helpers/cli';

const TREE = join(FIXTURES, 'trees/small');
const loose = JSON.parse(readFileSync(join(FIXTURES, 'trees/small.loose.index.json'), 'utf8'));
const PATHS: string[] = loose.files.map((file: { path: string }) => file.path);
const EXPECTED_SHA = Object.fromEntries(loose.files.map((file: { path: string; sha256: string }) => [file.path, file.sha256]));

let server: RepoServer;
let chromium: LaunchedBrowser;
let page: Page;

beforeAll(async () => {
  const site = temporaryDir('awkb-browser-site-');
  cpSync(join(FIXTURES, 'expected/small-default'), join(site, 'small'), { recursive: true });
  // A damaged copy: the index lists good.awkb, the server holds member-two-damaged.awkb under its name.
  const damaged = JSON.parse(readFileSync(join(FIXTURES, 'damaged/expected.json'), 'utf8'));
  mkdirSync(join(site, 'damaged/bundles'), { recursive: true });
  cpSync(join(FIXTURES, 'damaged/member-two-damaged.awkb'), join(site, 'damaged/bundles', `${damaged.good.sha256}.awkb`));
  writeFileSync(join(site, 'damaged/project.index.json'), JSON.stringify({
    formatVersion: 3, rootPath: '/p',
    bundles: [{ ...damaged.good, url: `bundles/${damaged.good.sha256}.awkb` }],
    files: damaged.members.map((m: { key: string; offset: number; sizeBytes: number; sha256: string }) => ({ path: m.key, sizeBytes: m.sizeBytes, sha256: m.sha256, bundle: damaged.good.sha256, offset: m.offset })),
  }));
  server = await startRepoServer({ mounts: { '/published/': site } });
  chromium = await launchBrowser();
  page = await chromium.openHarness(server);
});

afterAll(async () => {
  await chromium?.close();
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
    const source = await core.IndexedAssetSource.open({ indexUrl: `/published/${index ?? 'small'}/project.index.json`, fetch: countingFetch, cache, rangeReads });
    const progress: number[] = [];
    if (prefetch) await source.prefetch(paths, { onProgress: (p: { loadedBytes: number }) => progress.push(p.loadedBytes) });
    const hashes: Record<string, string> = {};
    for (const path of paths) hashes[path] = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', await source.read(path))));
    return { hashes, fetched, progress };
  }, options);
}

test('reads and prefetches a published project, one request per bundle, every file verified', async () => {
  server.resetRequests();
  const result = await readInPage({ paths: PATHS, prefetch: true });
  expect(result.hashes).toEqual(EXPECTED_SHA);
  expect(result.fetched.filter((path) => path.endsWith('.awkb'))).toHaveLength(4);
  expect(result.progress.length).toBeGreaterThan(0);
  expect(server.requests.filter((r) => r.path.endsWith('.awkb'))).toHaveLength(4);
});

test('the persistent cache survives a reload: the second load requests only the index', async () => {
  const first = await readInPage({ paths: PATHS, persistent: true, prefetch: true });
  expect(first.hashes).toEqual(EXPECTED_SHA);
  await reloadHarness(page);
  server.resetRequests();
  const second = await readInPage({ paths: PATHS, persistent: true, prefetch: true });
  expect(second.hashes).toEqual(EXPECTED_SHA);
  expect(second.fetched).toEqual(['/published/small/project.index.json']);
  expect(server.requests.filter((r) => r.path.startsWith('/published/')).map((r) => r.path)).toEqual(['/published/small/project.index.json']);
});

test('range reads ask for one member\'s bytes', async () => {
  server.resetRequests();
  const index = JSON.parse(readFileSync(join(FIXTURES, 'expected/small-default/project.index.json'), 'utf8'));
  const entry = index.files.find((f: { path: string }) => f.path === 'assets/sounds/bell.ogg');
  const result = await readInPage({ paths: ['assets/sounds/bell.ogg'], rangeReads: true });
  expect(result.hashes['assets/sounds/bell.ogg']).toBe(entry.sha256);
  const ranged = server.requests.filter((r) => r.path.endsWith('.awkb'));
  expect(ranged).toEqual([expect.objectContaining({ range: `bytes=${entry.offset}-${entry.offset + entry.sizeBytes - 1}`, status: 206 })]);
});

test('a damaged bundle is refused, naming the damaged member, and nothing reaches the page', async () => {
  const outcome = await page.evaluate(async () => {
    const core = await harnessImport('awake-bundle');
    const cache = new core.MemoryCache();
    const source = await core.IndexedAssetSource.open({ indexUrl: '/published/damaged/project.index.json', cache, retry: { attempts: 1 } });
    try {
      await source.read('a/one.txt');
      return { accepted: true };
    } catch (error) {
      const e = error as { name: string; code: string; part: string; damaged: string[]; message: string };
      return { accepted: false, name: e.name, code: e.code, part: e.part, damaged: e.damaged, message: e.message, cached: cache.size };
    }
  });
  expect(outcome).toMatchObject({ accepted: false, name: 'BundleIntegrityError', code: 'E_BUNDLE_INTEGRITY', part: 'members', damaged: ['a/two.txt'], cached: 0 });
  expect(outcome.message).toContain('a/two.txt');
});

test('object URLs of verified bytes load as images in the page', async () => {
  const dir = temporaryDir('awkb-img-');
  const png = readFileSync(join(__dirname, '..', 'examples/assets/atlas/emoji/emoji.png'));
  mkdirSync(join(dir, 'in/img'), { recursive: true });
  writeFileSync(join(dir, 'in/img/emoji.png'), png);
  const { spawnSync } = await import('node:child_process');
  const published = spawnSync(process.execPath, [join(__dirname, '..', 'dist/cli/main.js'), join(dir, 'in'), '--out', join(dir, 'out')], { encoding: 'utf8' });
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
