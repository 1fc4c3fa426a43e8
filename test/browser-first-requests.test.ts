/**
 * A game's first requests go out before the engine's first frame, in real
 * Chromium and Firefox ESR with the real Phaser, against a server on 127.0.0.1:
 * - the Phaser adapter holds the game's first frame until its index has opened and the files of
 *   that first load have asked for their bundles (adapters/phaser/first-frame.ts), at most for its
 *   limit, and never holds a frame of a game already running;
 * - an index the page preloads with a marked link (`data-awkb-index`, as the build plugins write
 *   it) is asked for by the reader as the page is parsed, and the source's open takes that answer
 *   instead of asking again (core/read/open/early-index.ts).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { launchBrowser, startRepoServer, TESTED_BROWSERS, type LaunchedBrowser, type RepoServer } from './helpers/browser';
import { REPO, temporaryDir } from './helpers/cli';

const INDEX = '/site/published/project.index.json';
const IMPORTS = {
  imports: {
    phaser: '/node_modules/phaser/dist/phaser.esm.js',
    'awake-bundle': '/dist/core/internal.js',
    '@noble/hashes/': '/node_modules/@noble/hashes/',
  },
};

/**
 * A Phaser game whose first scene's preload adds the index (with `options`, as JSON) and two
 * images from it. It records when the reader called fetch for each URL (through the `fetch`
 * option: the platform's fetch, timed), when the game rendered each frame, and when the scene
 * was created. `?later`: the index is added by a second scene, started once the game rendered
 * three frames.
 */
const PHASER_GAME = `<!doctype html>
<html><head><meta charset="utf-8">
<script type="importmap">${JSON.stringify(IMPORTS)}</script>
<script type="module">
import * as Phaser from 'phaser';
import '/dist/adapters/phaser/index.js';
const params = new URLSearchParams(location.search);
const options = JSON.parse(params.get('options') ?? '{}');
const state = (window.gameState = { fetches: [], renders: [], created: undefined, textures: [] });
const timedFetch = (input, init) => {
  state.fetches.push([String(input instanceof Request ? input.url : input), performance.now()]);
  return fetch(input, init);
};
const loadScene = {
  key: 'load',
  preload() {
    this.load.setPath('/site/published/');
    this.load.awkbIndex('assets', 'project.index.json', { ...options, fetch: timedFetch });
    this.load.image('coin', 'images/kenney/coin.png');
    this.load.image('particle', 'images/kenney/particle.png');
  },
  create() {
    state.created = performance.now();
    state.textures = ['coin', 'particle'].filter((key) => this.textures.exists(key));
  },
};
const idleScene = {
  key: 'idle',
  update() {
    if (state.renders.length === 3 && !this.started) {
      this.started = true;
      this.scene.launch('load');
    }
  },
};
const game = new Phaser.Game({
  type: Phaser.CANVAS, width: 32, height: 32, banner: false, audio: { noAudio: true },
  scene: params.has('later') ? [idleScene, { ...loadScene, active: false }] : [loadScene],
});
game.events.on('postrender', () => state.renders.push(performance.now()));
</script></head><body></body></html>
`;

/**
 * A page that preloads the index with a marked link after its script, as the built pages do. Its
 * script records the URL of every fetch the page makes (and each Worker it starts), lets the reader ask for what a first load
 * needs (`importFirstLoadParts`, what an adapter calls as it is imported), then opens the source
 * and reads a file.
 */
const EARLY_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><meta name="awake-bundle-preload" content="links-after-scripts">
<script type="importmap">${JSON.stringify(IMPORTS)}</script>
<script type="module">
const fetches = [];
const platformFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  fetches.push(String(input instanceof Request ? input.url : input));
  return platformFetch(input, init);
};
// The pool's workers, in the same list: spawned once the first load's requests are out.
const PlatformWorker = globalThis.Worker;
globalThis.Worker = class extends PlatformWorker {
  constructor(...args) {
    fetches.push('worker');
    super(...args);
  }
};
const { importFirstLoadParts } = await import('/dist/core/read/open/open-source.js');
const { IndexedAssetSource, sha256Hex } = await import('awake-bundle');
importFirstLoadParts();
const askedFirst = fetches.filter((url) => url.endsWith('project.index.json')).length;
const source = await IndexedAssetSource.open({ indexUrl: '${INDEX}', cache: null });
const coin = await sha256Hex(await source.read('images/kenney/coin.png'));
const firstBundle = fetches.findIndex((url) => url.endsWith('.awkb'));
const firstWorker = fetches.indexOf('worker');
window.early = {
  askedFirst,
  indexFetches: fetches.filter((url) => url.endsWith('project.index.json')).length,
  coin,
  bundleBeforeWorkers: firstBundle >= 0 && (firstWorker === -1 || firstBundle < firstWorker),
};
</script></head>
<body><link rel="preload" as="fetch" crossorigin href="${INDEX}" data-awkb-index></body></html>
`;

let siteDir: string;
let coinSha: string;

beforeAll(() => {
  siteDir = temporaryDir('awkb-first-requests-');
  const loose = join(siteDir, 'loose');
  mkdirSync(join(loose, 'images/kenney'), { recursive: true });
  for (const name of ['coin.png', 'particle.png'])
    cpSync(join(REPO, 'examples/assets/images/kenney', name), join(loose, 'images/kenney', name));
  cpSync(join(REPO, 'examples/assets/audio/kenney-platformer-kit/coin.ogg'), join(loose, 'audio/coin.ogg'));
  const run = spawnSync(process.execPath, [join(REPO, 'dist/cli/main.js'), loose, '--out', join(siteDir, 'published')], {
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`publish failed: ${run.stderr}`);
  const index = JSON.parse(readFileSync(join(siteDir, 'published/project.index.json'), 'utf8'));
  coinSha = index.files.find((file: { path: string }) => file.path === 'images/kenney/coin.png').sha256;
  const pages = join(siteDir, 'pages');
  mkdirSync(pages, { recursive: true });
  writeFileSync(join(pages, 'phaser.html'), PHASER_GAME);
  writeFileSync(join(pages, 'early.html'), EARLY_PAGE);
});

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  let server: RepoServer;
  let browser: LaunchedBrowser;

  beforeAll(async () => {
    server = await startRepoServer({ mounts: { '/site/': siteDir, '/pages/': join(siteDir, 'pages') } });
    browser = await launchBrowser({ kind });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  interface GameState {
    fetches: [string, number][];
    renders: number[];
    created: number | undefined;
    textures: string[];
  }

  async function openGame(query: string): Promise<Page> {
    const page = await browser.browser.newPage();
    await page.goto(`${server.origin}/pages/phaser.html?${query}`, { waitUntil: 'load' });
    return page;
  }

  const gameState = (page: Page): Promise<GameState> => page.evaluate(() => (globalThis as any).gameState as GameState);

  async function created(page: Page): Promise<GameState> {
    await page.waitForFunction(() => (globalThis as any).gameState?.created !== undefined, { timeout: 30_000 });
    return gameState(page);
  }

  const framesRendered = (page: Page, count: number) =>
    page.waitForFunction((n: number) => (globalThis as any).gameState.renders.length >= n, { timeout: 30_000 }, count);
  const options = (value: object) => `options=${encodeURIComponent(JSON.stringify(value))}`;

  test("the game's first frame waits for the first load's bundle requests", async () => {
    // A limit no loaded machine reaches: the order is the hold's, not the clock's.
    const page = await openGame(options({ holdFirstFrame: 60_000 }));
    try {
      const state = await created(page);
      expect(state.textures).toEqual(['coin', 'particle']);
      const bundles = state.fetches.filter(([url]) => url.endsWith('.awkb'));
      expect(bundles.length).toBeGreaterThan(0);
      expect(state.renders.length).toBeGreaterThan(0);
      // Every request of the first load went out before the first frame.
      expect(Math.max(...bundles.map(([, at]) => at))).toBeLessThan(state.renders[0]!);
    } finally {
      await page.close();
    }
  }, 60_000);

  /**
   * Opens the game with its index held by the server; once `framesBeforeIndex(page, rendered)`
   * (frames rendered so far) resolves, the index goes, and the game must load its two images.
   */
  async function whileIndexHeld(query: string, framesBeforeIndex: (page: Page, rendered: number) => Promise<unknown>): Promise<void> {
    const held = server.hold(INDEX);
    const page = await openGame(query);
    try {
      await held.arrived;
      await framesBeforeIndex(page, (await gameState(page)).renders.length);
      expect((await gameState(page)).created).toBeUndefined();
      held.release();
      expect((await created(page)).textures).toEqual(['coin', 'particle']);
    } finally {
      held.release();
      await page.close();
    }
  }

  test('an index slower than the limit does not hold the first frame past it; the game loads once it comes', async () => {
    // Frames render while the index is still held.
    await whileIndexHeld(options({ holdFirstFrame: 200 }), (page) => framesRendered(page, 2));
  }, 60_000);

  test('an index added once the game is running holds no frame', async () => {
    await whileIndexHeld('later', (page, rendered) => framesRendered(page, rendered + 3));
  }, 60_000);

  test('holdFirstFrame: false renders the first frame at once', async () => {
    await whileIndexHeld(options({ holdFirstFrame: false }), (page) => framesRendered(page, 1));
  }, 60_000);

  test("a marked preloaded index is asked for as the page is parsed, and the source's open takes that answer (one request)", async () => {
    server.resetRequests();
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${server.origin}/pages/early.html`, { waitUntil: 'load' });
      await page.waitForFunction(() => (globalThis as any).early !== undefined, { timeout: 30_000 });
      const early = await page.evaluate(() => (globalThis as any).early);
      // Asked for by importFirstLoadParts itself, and never again by the open. The pool's workers
      // were not spawned on the way to the first bundle request (their start costs the page 4–6 ms
      // each; a cold page's first bundles do not wait for them).
      expect(early).toEqual({ askedFirst: 1, indexFetches: 1, coin: coinSha, bundleBeforeWorkers: true });
      expect(server.requestCount(INDEX)).toBe(1);
    } finally {
      await page.close();
    }
  }, 60_000);
});
