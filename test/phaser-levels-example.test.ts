/**
 * The Phaser levels example (examples/phaser-levels), built by its webpack config with the
 * plugin's defaults (no loads file: `--group auto`) and served by the project's own server: in
 * Chromium level 1 runs to its first frame with every asset from bundles, and asks for no bundle
 * that holds none of its files (level 2's map is in one of its own); "NEXT LEVEL" then loads
 * level 2 through the same source, without another index request.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startStaticServer, type StaticServer } from '../core/node/index.js';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser';
import { REPO } from './helpers/cli';

/** What level 1 loads (examples/phaser-levels/src/main.ts, at devicePixelRatio 1). */
const LEVEL_ONE = [
  'maps/level-1.json',
  'tiles/kenney-tileset-64px-extruded.png',
  'sprites/emoji.png',
  'sprites/emoji.json',
  'sprites/player.png',
  'sprites/slime.png',
  'fonts/font-16x16.png',
  'images/background.png',
  'images/particle.png',
  'audio/theme-4.ogg',
  'audio/coin.ogg',
  'audio/laser1.ogg',
];

let server: StaticServer;
let chromium: LaunchedBrowser;
const site = join(REPO, 'build/phaser-levels-example');

beforeAll(async () => {
  // Development mode: the same code and publish as production, unminified, built in seconds.
  const built = spawnSync(
    process.execPath,
    [
      join(REPO, 'node_modules/webpack-cli/bin/cli.js'),
      '--config',
      join(REPO, 'examples/phaser-levels/webpack.config.cjs'),
      '--env',
      `out=${site}`,
    ],
    { encoding: 'utf8' },
  );
  expect(built.stderr).toBe('');
  expect(built.status).toBe(0);
  server = await startStaticServer({ root: site });
  chromium = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await chromium?.close();
  await server?.close();
});

test('level 1 runs from the bundles that hold its files, level 2 loads on demand', async () => {
  const index = JSON.parse(readFileSync(join(site, 'published/project.index.json'), 'utf8')) as {
    files: { path: string; bundle: string }[];
    bundles: { sha256: string; url: string }[];
  };
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
    level: 1,
    textures: 7,
    emojiFrames: 24,
    mapLayers: 3,
    sounds: 3,
    indexFiles: index.files.length,
  });
  expect(problems).toEqual([]);

  const levelOne = requested.filter((path) => path.startsWith('/published/'));
  expect(levelOne[0]).toBe('/published/project.index.json');
  const bundleOf = new Map(index.bundles.map((bundle) => [`/published/${bundle.url}`, bundle.sha256]));
  const needed = new Set(index.files.filter((file) => LEVEL_ONE.includes(file.path)).map((file) => file.bundle));
  expect(needed.size).toBeGreaterThan(1);
  const fetched = new Set(levelOne.slice(1).map((path) => bundleOf.get(path)));
  // Every request after the index is a bundle, and one that holds a file level 1 loads.
  expect([...fetched].every((sha256) => sha256 !== undefined && needed.has(sha256))).toBe(true);
  expect(fetched).toEqual(needed);

  const canvas = (await (await page.$('canvas'))!.boundingBox())!;
  requested.length = 0;
  // "NEXT LEVEL", right-aligned at the top of the 640 × 320 game.
  await page.mouse.click(canvas.x + (canvas.width * 560) / 640, canvas.y + (canvas.height * 20) / 320);
  await page.waitForFunction(() => (window as { exampleLevel2Ready?: unknown }).exampleLevel2Ready !== undefined, { timeout: 30_000 });
  expect(await page.evaluate(() => (window as { exampleLevel2Ready?: unknown }).exampleLevel2Ready)).toEqual({
    level: 2,
    textures: 3,
    mapLayers: 3,
    sounds: 3,
  });
  expect(problems).toEqual([]);
  const levelTwo = requested.filter((path) => path.startsWith('/published/'));
  expect(levelTwo.length).toBeGreaterThan(0);
  expect(levelTwo.every((path) => bundleOf.has(path))).toBe(true);
});
