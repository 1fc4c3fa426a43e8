/**
 * `npm run demo`: the Phaser example (webpack 5 + ts-loader) built once, its assets published by
 * the CLI, served by the project's own server; in Chromium the game runs to its first frame with
 * every asset from bundles: the server sees the page, its script, the index and each bundle once.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startStaticServer, type StaticServer } from '../core/node/index.js';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser';
import { REPO } from './helpers/cli';

let server: StaticServer;
let chromium: LaunchedBrowser;
const site = join(REPO, 'build/phaser-example');

beforeAll(async () => {
  const built = spawnSync(process.execPath, [join(REPO, 'scripts/demo.mjs'), '--no-serve'], { encoding: 'utf8' });
  expect(built.stderr).toBe('');
  expect(built.status).toBe(0);
  server = await startStaticServer({ root: site });
  chromium = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await chromium?.close();
  await server?.close();
});

test('the example game runs to its first frame, every asset read from bundles', async () => {
  const index = JSON.parse(readFileSync(join(site, 'published/project.index.json'), 'utf8'));
  const page = await chromium.browser.newPage();
  const requested: string[] = [];
  const problems: string[] = [];
  page.on('request', (request) => requested.push(new URL(request.url()).pathname));
  page.on('pageerror', (error) => problems.push(String(error)));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  await page.goto(server.url, { waitUntil: 'load' });
  await page.waitForFunction(() => (window as { exampleReady?: unknown }).exampleReady !== undefined, { timeout: 60_000 });
  expect(await page.evaluate(() => (window as { exampleReady?: unknown }).exampleReady)).toEqual({
    textures: 7,
    emojiFrames: 24,
    mapLayers: 3,
    sounds: 3,
    indexFiles: index.files.length,
  });
  expect(problems).toEqual([]);
  const published = requested.filter((path) => path.startsWith('/published/'));
  expect(published[0]).toBe('/published/project.index.json');
  const bundles = published.slice(1);
  expect(bundles.every((path) => path.startsWith('/published/bundles/') && path.endsWith('.awkb'))).toBe(true);
  expect(new Set(bundles).size).toBe(bundles.length);
  // Only the bundles the scene needs: not the glTF models published beside them.
  expect(bundles.length).toBeLessThan(index.bundles.length);
  await page.screenshot({ path: join(REPO, 'build/phaser-example-screenshot.png') });
});
