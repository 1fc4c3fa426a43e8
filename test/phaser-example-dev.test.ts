/**
 * The Phaser example in development: `webpack serve` with the example's own config (the
 * awake-bundle plugin in it) publishes nothing and answers published/project.index.json with a
 * loose index of examples/assets; in Chromium the game runs to its first frame with every asset
 * read through that index: the page asks for the index, then for loose files it lists (no bundles).
 */
import { join } from 'node:path';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser';
import { REPO } from './helpers/cli';
import { sha256Hex } from './helpers/trees';
import { startWebpackServe, type RunningDevServer } from './helpers/webpack-project';
import { readFileSync } from 'node:fs';

let server: RunningDevServer;
let chromium: LaunchedBrowser;

beforeAll(async () => {
  server = await startWebpackServe(join(REPO, 'examples/phaser/webpack.config.cjs'), REPO);
  chromium = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await chromium?.close();
  await server?.stop();
});

test('the example game runs against webpack serve, every asset read through the loose index', async () => {
  const index = await (await fetch(new URL('published/project.index.json', server.url))).json();
  expect(index.formatVersion).toBe(2);
  const listed = new Map<string, { path: string; sha256: string }>(index.files.map((file: { url: string; path: string; sha256: string }) => [`/published/${file.url}`, file]));
  const page = await chromium.browser.newPage();
  const answered: { path: string; status: number }[] = [];
  const problems: string[] = [];
  page.on('response', (response) => answered.push({ path: new URL(response.url()).pathname, status: response.status() }));
  page.on('pageerror', (error) => problems.push(String(error)));
  page.on('console', (message) => { if (message.type() === 'error') problems.push(message.text()); });
  await page.goto(server.url, { waitUntil: 'load' });
  await page.waitForFunction(() => (window as { exampleReady?: unknown }).exampleReady !== undefined, { timeout: 90_000 });
  expect(await page.evaluate(() => (window as { exampleReady?: unknown }).exampleReady)).toEqual({ textures: 7, emojiFrames: 24, mapLayers: 3, sounds: 3, indexFiles: index.files.length });
  expect(problems).toEqual([]);
  const published = answered.filter(({ path }) => path.startsWith('/published/'));
  // The dev server answered the index first, then each file the scene loads, from the folder on disk.
  expect(published[0]).toEqual({ path: '/published/project.index.json', status: 200 });
  const files = published.slice(1);
  expect(files.length).toBeGreaterThanOrEqual(10);
  for (const { path, status } of files) {
    const entry = listed.get(path);
    expect({ path, listed: entry !== undefined, status }).toEqual({ path, listed: true, status: 200 });
    expect(sha256Hex(readFileSync(join(REPO, 'examples/assets', ...decodeURIComponent(path.slice('/published/files/'.length)).split('/'))))).toBe(entry!.sha256);
  }
  expect(published.some(({ path }) => path.includes('/bundles/'))).toBe(false);
});
