/**
 * The examples in development: `webpack serve` with each example's own config (the awake-bundle
 * plugin in it) publishes nothing and answers published/project.index.json with a loose index of
 * examples/assets; in Chromium the Phaser game runs to its first frame, and the Babylon scene
 * renders, with every asset read through that index: the page asks for the index, then for loose
 * files it lists (no bundles), each with the bytes the index names.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser';
import { REPO } from './helpers/cli';
import { sha256Hex } from './helpers/trees';
import { startWebpackServe, type RunningDevServer } from './helpers/webpack-project';

/** What each example reports when ready (`window.exampleReady`), checked against the index it read, and how many files its scene loads at least. */
const EXAMPLES = [
  [
    'phaser',
    10,
    (ready: Record<string, unknown>, index: { files: unknown[] }) =>
      expect(ready).toEqual({ textures: 7, emojiFrames: 24, mapLayers: 3, sounds: 3, indexFiles: index.files.length }),
  ],
  [
    'babylon',
    5,
    (ready: Record<string, unknown>) => {
      expect(ready).toMatchObject({ texture: { width: 128, height: 128 } });
      expect(ready.meshes).toBeGreaterThan(5);
      expect(ready.soundMs).toBeGreaterThan(100);
    },
  ],
] as const;

describe.each(EXAMPLES)('the %s example on webpack serve', (name, minimumFiles, checkReady) => {
  let server: RunningDevServer;
  let chromium: LaunchedBrowser;

  beforeAll(async () => {
    server = await startWebpackServe(join(REPO, `examples/${name}/webpack.config.cjs`), REPO);
    chromium = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
  });

  test('it runs, every asset read through the loose index', async () => {
    const index = await (await fetch(new URL('published/project.index.json', server.url))).json();
    expect(index.formatVersion).toBe(2);
    const listed = new Map<string, { path: string; sha256: string }>(
      index.files.map((file: { url: string; path: string; sha256: string }) => [`/published/${file.url}`, file]),
    );
    const page = await chromium.browser.newPage();
    const answered: { path: string; status: number }[] = [];
    const problems: string[] = [];
    page.on('response', (response) => answered.push({ path: new URL(response.url()).pathname, status: response.status() }));
    page.on('pageerror', (error) => problems.push(String(error)));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    await page.goto(server.url, { waitUntil: 'load' });
    await page.waitForFunction(
      () =>
        (window as { exampleReady?: unknown; exampleFailed?: unknown }).exampleReady !== undefined ||
        (window as { exampleFailed?: unknown }).exampleFailed !== undefined,
      { timeout: 90_000 },
    );
    expect(await page.evaluate(() => (window as { exampleFailed?: unknown }).exampleFailed)).toBeUndefined();
    checkReady((await page.evaluate(() => (window as { exampleReady?: unknown }).exampleReady)) as Record<string, unknown>, index);
    expect(problems).toEqual([]);
    const published = answered.filter(({ path }) => path.startsWith('/published/'));
    // The dev server answered the index first, then each file the scene loads, from the folder on disk.
    expect(published[0]).toEqual({ path: '/published/project.index.json', status: 200 });
    const files = published.slice(1);
    expect(files.length).toBeGreaterThanOrEqual(minimumFiles);
    for (const { path, status } of files) {
      const entry = listed.get(path);
      expect({ path, listed: entry !== undefined, status }).toEqual({ path, listed: true, status: 200 });
      expect(
        sha256Hex(readFileSync(join(REPO, 'examples/assets', ...decodeURIComponent(path.slice('/published/files/'.length)).split('/')))),
      ).toBe(entry!.sha256);
    }
    expect(published.some(({ path }) => path.includes('/bundles/'))).toBe(false);
  });
});
