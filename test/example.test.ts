/**
 * The README's main job: `npm run example` publishes examples/assets and stages the example page;
 * the project's own server serves it, and Chromium shows every file verified. Reloading reads
 * everything from the persistent cache.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startStaticServer, type StaticServer } from '../core/node/index.js';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser';
import { REPO } from './helpers/cli';

let server: StaticServer;
let chromium: LaunchedBrowser;

beforeAll(async () => {
  const staged = spawnSync(process.execPath, [join(REPO, 'scripts/example.mjs'), '--no-serve'], { encoding: 'utf8' });
  expect(staged.status).toBe(0);
  server = await startStaticServer({ root: join(REPO, 'build/example') });
  chromium = await launchBrowser();
});

afterAll(async () => {
  await chromium?.close();
  await server?.close();
});

test('the example page reads and verifies every example asset, then reloads from the cache', async () => {
  const index = JSON.parse(readFileSync(join(REPO, 'build/example/published/project.index.json'), 'utf8'));
  const page = await chromium.browser.newPage();
  const bundleResponses: string[] = [];
  page.on('response', (response) => {
    if (response.url().endsWith('.awkb')) bundleResponses.push(response.url());
  });
  await page.goto(server.url, { waitUntil: 'load' });
  await page.waitForFunction(() => (window as { exampleResult?: unknown }).exampleResult !== undefined, { timeout: 30_000 });
  expect(await page.evaluate(() => (window as { exampleResult?: unknown }).exampleResult)).toEqual({
    ok: true,
    files: index.files.length,
    bundles: index.bundles.length,
  });
  expect(await page.$$eval('td .ok', (cells) => cells.length)).toBe(index.files.length);
  expect(new Set(bundleResponses).size).toBe(index.bundles.length);

  bundleResponses.length = 0;
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => (window as { exampleResult?: unknown }).exampleResult !== undefined, { timeout: 30_000 });
  expect(await page.evaluate(() => (window as { exampleResult?: { ok: boolean } }).exampleResult?.ok)).toBe(true);
  expect(bundleResponses).toEqual([]);
  await page.screenshot({ path: join(REPO, 'build/example-screenshot.png'), fullPage: true });
});
