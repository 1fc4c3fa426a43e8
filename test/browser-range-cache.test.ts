/**
 * Range requests past the browser's HTTP cache, in Chromium and Firefox ESR, against the
 * project's own server (`serve`: bundles `Cache-Control: immutable`, as hosts send them). A glTF
 * between its buffer and its image in one bundle: the glTF's own range, then the buffer's and
 * the image's. Chromium's HTTP cache, holding the glTF's range of that immutable bundle, sent the
 * image's range to the server twice, identical, for one request of the page (the bench's 9-model
 * gallery: every truck's JPEG twice, 1.2 MB at 20 Mbit/s, behind nginx and the bench's throttled
 * relay). The reader caches what ranges bring itself; its range requests go past the HTTP cache
 * (`cache: 'no-store'`). This test has not made Chromium send the second request on this machine
 * (the bench's line and load did, 3 visits in 3 at 40 ms + 20 Mbit/s); it holds the reader to one
 * request per member's range with the HTTP cache on, on one origin, by every path a glTF's read takes.
 */
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { startStaticServer, type StaticServer } from '../core/node/index.js';
import { launchBrowser, TESTED_BROWSERS, type LaunchedBrowser } from './helpers/browser';
import { REPO, runCli, temporaryDir } from './helpers/cli';
import { seededBytes, writeTree } from './helpers/trees';

const KiB = 1024;
const BIN = seededBytes(600 * KiB, 31);
const JPG = seededBytes(300 * KiB, 32);
const GLTF = JSON.stringify({
  asset: { version: '2.0' },
  buffers: [{ uri: 'truck.bin', byteLength: BIN.length }],
  images: [{ uri: 'truck.jpg' }],
});

let site: StaticServer;
const logged: string[] = [];

beforeAll(async () => {
  const tree = temporaryDir('awkb-range-cache-tree-');
  writeTree(tree, { 'truck/truck.bin': BIN, 'truck/truck.gltf': GLTF, 'truck/truck.jpg': JPG });
  const root = temporaryDir('awkb-range-cache-site-');
  const published = runCli([tree, '--out', join(root, 'published')]);
  if (published.code !== 0) throw new Error(published.stderr);
  // The page, the package and the bundles on one origin, as a game ships them.
  cpSync(join(REPO, 'dist'), join(root, 'dist'), { recursive: true });
  cpSync(join(REPO, 'node_modules/@noble'), join(root, 'node_modules/@noble'), { recursive: true });
  const imports = { 'awake-bundle': '/dist/core/internal.js', '@noble/hashes/': '/node_modules/@noble/hashes/' };
  writeFileSync(
    join(root, 'index.html'),
    `<!doctype html><meta charset="utf-8"><script type="importmap">${JSON.stringify({ imports })}</script><title>range cache</title>`,
  );
  site = await startStaticServer({ root, latencyMs: 40, log: (line) => logged.push(line) });
}, 60_000);

afterAll(async () => {
  await site?.close();
});

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  let browser: LaunchedBrowser;
  let page: Page;

  beforeAll(async () => {
    browser = await launchBrowser({ kind });
    page = await browser.browser.newPage();
    await page.goto(`${site.url}index.html`);
  });

  afterAll(async () => {
    await browser?.close();
  });

  test('a member read after another member of its bundle is asked of the server once, with the HTTP cache on', async () => {
    logged.length = 0;
    const indexUrl = `${site.url}published/project.index.json`;
    // As source text: jest compiles this file to CommonJS, which would rewrite an `import()` in a function.
    const lengths = await page.evaluate(`(async () => {
      const core = await import('awake-bundle');
      // The defaults: the persistent cache, the workers, read-ahead (the glTF's references start as it is read).
      const source = await core.IndexedAssetSource.open({ indexUrl: ${JSON.stringify(indexUrl)} });
      const gltf = await source.read('truck/truck.gltf');
      const [bin, jpg] = await Promise.all([source.read('truck/truck.bin'), source.read('truck/truck.jpg')]);
      await source.whenStored();
      source.dispose();
      return [gltf.length, bin.length, jpg.length];
    })()`);
    expect(lengths).toEqual([GLTF.length, BIN.length, JPG.length]);
    // Each member's bytes once: three ranges (the glTF's, then the buffer's and the image's).
    const bundleRequests = logged.filter((line) => line.includes('.awkb'));
    const bytes = bundleRequests.reduce((sum, line) => sum + Number(/ (\d+)B /.exec(line)![1]), 0);
    expect({ requests: bundleRequests.length, bytes }).toEqual({ requests: 3, bytes: GLTF.length + BIN.length + JPG.length });
  });
});
