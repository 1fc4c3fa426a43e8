/**
 * The Babylon example (webpack 5 + ts-loader) built once, its assets published by the CLI, served
 * by the project's own server: in Chromium the scene renders with every model, texture and sound
 * read from bundles: below published/ the page asks for the index and bundles only, each once.
 * It is served from a sub-folder, as `npm run demo` serves it beside the Phaser example (/babylon/).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';
import { startStaticServer, type StaticServer } from '../core/node/index.js';
import { CHROMIUM_ARGS, chromiumExecutablePath, createProfile, removeProfile } from './helpers/browser';
import { REPO } from './helpers/cli';

let server: StaticServer;
let browser: Browser;
let profile: string;
const site = join(REPO, 'build/babylon-example');

beforeAll(async () => {
  const built = spawnSync(process.execPath, [join(REPO, 'scripts/demo-babylon.mjs'), '--no-serve'], { encoding: 'utf8' });
  expect(built.stderr).toBe('');
  expect(built.status).toBe(0);
  server = await startStaticServer({ root: join(site, '..') });
  profile = createProfile();
  browser = await puppeteer.launch({
    executablePath: chromiumExecutablePath(),
    args: [...CHROMIUM_ARGS, '--autoplay-policy=no-user-gesture-required', `--user-data-dir=${profile}`],
    headless: true,
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (profile) removeProfile(profile);
  await server?.close();
});

test('the example scene renders, every asset read from bundles', async () => {
  const index = JSON.parse(readFileSync(join(site, 'published/project.index.json'), 'utf8'));
  const page = await browser.newPage();
  const requested: string[] = [];
  const problems: string[] = [];
  page.on('request', (request) => requested.push(new URL(request.url()).pathname));
  page.on('pageerror', (error) => problems.push(String(error)));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
  });
  await page.goto(`${server.url}babylon-example/`, { waitUntil: 'load' });
  await page.waitForFunction(
    () =>
      (window as { exampleReady?: unknown; exampleFailed?: unknown }).exampleReady !== undefined ||
      (window as { exampleFailed?: unknown }).exampleFailed !== undefined,
    { timeout: 90_000 },
  );
  expect(await page.evaluate(() => (window as { exampleFailed?: unknown }).exampleFailed)).toBeUndefined();
  const ready = (await page.evaluate(() => (window as { exampleReady?: unknown }).exampleReady)) as {
    meshes: number;
    animations: number;
    texture: unknown;
    soundMs: number;
  };
  expect(ready).toMatchObject({ texture: { width: 128, height: 128 } });
  expect(ready.meshes).toBeGreaterThan(5);
  expect(ready.animations).toBeGreaterThan(0);
  expect(ready.soundMs).toBeGreaterThan(100);
  expect(problems).toEqual([]);
  const published = requested.filter((path) => path.startsWith('/babylon-example/published/'));
  expect(published[0]).toBe('/babylon-example/published/project.index.json');
  const bundles = published.slice(1);
  expect(bundles.length).toBeGreaterThan(0);
  expect(bundles.every((path) => path.startsWith('/babylon-example/published/bundles/') && path.endsWith('.awkb'))).toBe(true);
  expect(new Set(bundles).size).toBe(bundles.length);
  // Only the bundles the scene needs, not every bundle of examples/assets.
  expect(bundles.length).toBeLessThan(index.bundles.length);
  await page.screenshot({ path: join(REPO, 'build/babylon-example-screenshot.png') });
});
