/**
 * awake-bundle/phaser in real Chromium and Firefox ESR with real Phaser (4.x, and 3.90 through the `phaser3`
 * alias): one scene queues every file type, once from loose files and once through
 * `this.load.awkbIndex` from bundles published by the CLI; what lands in Phaser's caches must be
 * the same (sizes, frames, durations, texture pixels), and the server must see only the index
 * and one request per bundle. The page (test/fixtures/phaser-page) imports the built adapter and
 * Phaser's ESM build through an import map; Phaser is taken from that import, never a global.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { launchBrowser, startRepoServer, TESTED_BROWSERS, type LaunchedBrowser, type RepoServer } from './helpers/browser';
import { buildPhaserSite, DAMAGED_MEMBER, PHASER_PAGES, type PhaserSite } from './helpers/phaser-site';

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  /**
   * Headless Firefox on Linux has no WebGL (context creation fails with
   * FEATURE_FAILURE_WEBGL_EXHAUSTED_DRIVERS; Mozilla bug 1375585), so there the "every file type"
   * test runs on Phaser's Canvas renderer, and Phaser.AUTO falls back to Canvas elsewhere.
   */
  const RENDERER = kind === 'firefox' ? 'CANVAS' : 'WEBGL';
  /**
   * coin.ogg decoded by Web Audio, in seconds to 2 places: Chromium's decoder gives 12515 frames at
   * 44.1 kHz (0.284 s), Firefox's 12643 (0.287 s); the same bytes, loose or bundled, in both.
   */
  const COIN_WEBAUDIO_SECONDS = kind === 'firefox' ? 0.29 : 0.28;

  let site: PhaserSite;
  let server: RepoServer;
  let browser: LaunchedBrowser;

  interface RunResult {
    first: {
      caches: Record<string, any>;
      source: { paths: number; viaPlugin: boolean | null; viaGetter: boolean } | null;
      renderer: string;
      parallelAfter: number;
      video?: Record<string, unknown>;
      videoSrc?: string;
    };
    second?: Record<string, any>;
    sameSource?: boolean;
    events: {
      progress: [string, number][];
      fileprogress: [string, number, number][];
      loaderror: { type: string; key: string; error: string | null }[];
      /** Each loader's `complete`: its scene, totalComplete, totalFailed (the event's arguments) and totalToLoad. */
      complete: [string, number, number, number][];
      /** Each loader's totalToLoad as its `start` event goes out. */
      start: [string, number][];
      awkbprogress: { loadedBytes: number; totalBytes: number }[];
      pluginProgress: { loadedBytes: number; totalBytes: number }[];
      /** The highest maxParallelDownloads seen during the load. */
      parallel?: number;
    };
    keptUrls: { count: number; aliveBeforeDestroy: boolean[]; aliveAfterDestroy: boolean[] };
    afterVideoRemoved?: { video: boolean; others: boolean[] };
    /** `source.recordedLoads()` of the game's source, before the game is destroyed. */
    recordedLoads?: { formatVersion: 1; loads: { name: string; paths: string[] }[] };
  }

  beforeAll(async () => {
    site = buildPhaserSite();
    // A pack outside the index that queues the index first, then files the index holds.
    mkdirSync(join(site.dir, 'packs'), { recursive: true });
    writeFileSync(
      join(site.dir, 'packs/with-index.json'),
      JSON.stringify({
        main: {
          files: [
            { type: 'awkbIndex', key: 'assets', url: 'project.index.json' },
            { type: 'image', key: 'packCoin', url: './images/kenney/coin.png' },
            { type: 'text', key: 'packNotes', url: 'fixtures/../fixtures/notes.txt?v=3' },
          ],
        },
      }),
    );
    server = await startRepoServer({ mounts: { '/site/': site.dir, '/page/': PHASER_PAGES } });
    browser = await launchBrowser({ kind });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  async function openPage(version: 'phaser4' | 'phaser3', log?: string[]): Promise<Page> {
    const page = await browser.browser.newPage();
    page.on('console', (message) => log?.push(`${message.type()}: ${message.text()}`));
    page.on('pageerror', (error) => log?.push(`pageerror: ${String(error)}`));
    await page.goto(`${server.origin}/page/${version}.html`, { waitUntil: 'load' });
    await page.waitForFunction(() => typeof (globalThis as { runScene?: unknown }).runScene === 'function', { timeout: 30_000 });
    // Phaser's ESM builds set no window.Phaser: the adapter works from the imported module.
    expect(await page.evaluate(() => (globalThis as any).pageInfo)).toEqual({
      version: version === 'phaser4' ? '4.2.1' : '3.90.0',
      hasGlobalPhaser: false,
    });
    return page;
  }

  async function run(version: 'phaser4' | 'phaser3', options: Record<string, unknown>, log?: string[]): Promise<RunResult> {
    const page = await openPage(version, log);
    try {
      // As JSON text: the result holds one object twice (each byte-progress event is in
      // `awkbprogress` and in `pluginProgress`), and WebDriver BiDi sends a repeated object as a
      // reference that puppeteer hands back as undefined; CDP (Chromium) copies it each time.
      return JSON.parse(await page.evaluate(async (o) => JSON.stringify(await (globalThis as any).runScene(o)), options));
    } finally {
      await page.close();
    }
  }

  /** What the server was asked below /site/, as paths. */
  function siteRequests(): string[] {
    return server.requests.map((r) => r.path).filter((path) => path.startsWith('/site/'));
  }

  /** Cache results with the one expected difference taken out: bundled media play from object URLs. */
  function withoutBlobFlags(caches: Record<string, any>): Record<string, any> {
    return JSON.parse(JSON.stringify(caches, (key, value) => (key === 'blob' ? undefined : value)));
  }

  function expectMonotonicProgressEndingAtOne(progress: [string, number][]): void {
    const values = progress.map(([, value]) => value);
    for (let i = 1; i < values.length; i++) expect(values[i]).toBeGreaterThanOrEqual(values[i - 1]!);
    expect(values[values.length - 1]).toBe(1);
    expect(values.filter((value) => value === 1)).toHaveLength(1);
  }

  function bundleSize(url: string): number {
    return (site.index.bundles as { url: string; sizeBytes?: number }[]).find((b) => b.url === url)?.sizeBytes ?? 0;
  }

  describe.each(['phaser4', 'phaser3'] as const)('%s', (version) => {
    test(`every file type lands in Phaser's caches from bundles as from loose files (${RENDERER}), one request per bundle`, async () => {
      const loose = await run(version, { renderer: RENDERER, baseURL: '/site/loose/' });
      server.resetRequests();
      const bundled = await run(version, {
        renderer: RENDERER,
        baseURL: '/site/published/',
        // Whole bundles, one request each (SPEC §7 "One request per bundle"); needed bytes: test/browser-adapter-races.test.ts, test/needed-bytes.test.ts.
        index: { url: 'project.index.json', options: { cache: 'memory', neededBytes: false } },
        plugin: true,
      });

      expect(bundled.first.renderer).toBe(RENDERER);
      expect(withoutBlobFlags(bundled.first.caches)).toEqual(withoutBlobFlags(loose.first.caches));
      // Spot checks against the real files, so "equal" cannot mean "equally empty".
      const caches = bundled.first.caches;
      expect(caches.image).toMatchObject({ width: 128, height: 128 });
      expect(caches.imageAgain.pixels).toBe(caches.image.pixels);
      expect(caches.spritesheet.frames).toBe(32);
      expect(caches.atlas).toMatchObject({ frames: 24, width: 1771, height: 74 });
      expect(caches.atlasArray.frames).toBe(24);
      expect(caches.atlasXML.frames).toBe(24);
      expect(caches.multiatlas.frames).toBe(8);
      expect(caches.unityAtlas.frames).toBe(6);
      expect(caches.aseprite.anims).toEqual([['open', 6]]);
      expect(caches.bitmapFont).toMatchObject({ chars: 95, lineHeight: 16 });
      expect(caches).toMatchObject({
        json: 24,
        text: 'awake-bundle phaser fixture: text\n',
        xml: 'harbor',
        binary: 13934,
        glsl: true,
        css: '123px',
        script: 1,
        font: true,
      });
      expect(caches.tilemapTiledJSON).toMatchObject({ width: 29, height: 12, tileset: 374 });
      expect(caches.tilemapCSV).toEqual({ width: 5, height: 3 });
      expect(caches.pack.slime.frames).toBe(25);
      expect(caches.audio.coin).toMatchObject({ kind: 'webaudio', duration: COIN_WEBAUDIO_SECONDS });
      expect(caches.audio.again).toEqual(caches.audio.coin);
      expect(caches.audioMulti).toMatchObject({ kind: 'webaudio', duration: 1.61 });
      expect(caches.audioSprite.sprites).toEqual(['zap', 'tail']);
      expect(caches.video).toEqual({ blob: true, duration: 1, width: 64 });

      // Only the index and each bundle once; never a loose URL.
      const requests = siteRequests();
      expect(requests.filter((path) => path.endsWith('project.index.json'))).toEqual(['/site/published/project.index.json']);
      const bundles = requests.filter((path) => path.endsWith('.awkb'));
      expect(new Set(bundles).size).toBe(bundles.length);
      expect(requests).toHaveLength(1 + bundles.length);

      expect(bundled.events.loaderror).toEqual([]);
      expectMonotonicProgressEndingAtOne(bundled.events.progress);
      const lastBytes = bundled.events.awkbprogress.at(-1)!;
      expect(lastBytes.loadedBytes).toBe(lastBytes.totalBytes);
      expect(lastBytes.totalBytes).toBe(bundles.reduce((sum, path) => sum + bundleSize(path.replace('/site/published/', '')), 0));
      expect(bundled.events.pluginProgress.at(-1)).toEqual(lastBytes);
      const coinSize = site.index.files.find((f) => f.path === 'images/kenney/coin.png')!.sizeBytes;
      expect(bundled.events.fileprogress.filter(([key]) => key === 'coin').at(-1)).toEqual(['coin', coinSize, coinSize]);
      expect(bundled.first.source).toEqual({ paths: site.index.files.length, viaPlugin: true, viaGetter: true });
      // The video's object URL lives as long as the game, and no longer.
      expect(bundled.keptUrls).toEqual({ count: 1, aliveBeforeDestroy: [true], aliveAfterDestroy: [false] });
    });

    test('Canvas renderer, HTMLImageElement loading and HTML5 audio from bundles', async () => {
      const settings = { renderer: 'CANVAS', imageLoadType: 'HTMLImageElement', disableWebAudio: true };
      const loose = await run(version, { ...settings, baseURL: '/site/loose/' });
      server.resetRequests();
      const bundled = await run(version, {
        ...settings,
        baseURL: '/site/published/',
        index: { url: 'project.index.json', options: { cache: 'memory' } },
        removeVideo: true,
      });

      expect(bundled.first.renderer).toBe('CANVAS');
      expect(withoutBlobFlags(bundled.first.caches)).toEqual(withoutBlobFlags(loose.first.caches));
      expect(bundled.first.caches.audio.coin).toEqual({ kind: 'html5', blob: true, duration: 0.3, width: null });
      expect(bundled.first.caches.audioSprite.audio).toMatchObject({ kind: 'html5', blob: true, duration: 1.6 });
      expect(siteRequests().filter((path) => !path.endsWith('.awkb'))).toEqual(['/site/published/project.index.json']);
      expect(bundled.events.loaderror).toEqual([]);
      expectMonotonicProgressEndingAtOne(bundled.events.progress);
      // HTML5 audio (three keys) and video keep their object URLs while in the cache: removing the
      // video from its cache revokes its URL alone; destroying the game revokes the rest.
      expect(bundled.afterVideoRemoved).toEqual({ video: false, others: [true, true, true] });
      expect(bundled.keptUrls).toEqual({
        count: 4,
        aliveBeforeDestroy: [true, true, true, true],
        aliveAfterDestroy: [false, false, false, false],
      });
    });
  });

  const bundledIndex = { url: 'project.index.json', options: { cache: 'memory' } };

  describe.each(['phaser4', 'phaser3'] as const)('%s: scenes, packs, failures', (version) => {
    test('a second scene reuses the source from the registry: no second index request, its files from bundles', async () => {
      server.resetRequests();
      const result = await run(version, {
        baseURL: '/site/published/',
        index: bundledIndex,
        queue: ['image', 'text'],
        secondScene: { index: bundledIndex, queue: ['atlas', 'audio', 'pack'] },
      });
      expect(result.sameSource).toBe(true);
      expect(result.second!.atlas.frames).toBe(24);
      expect(result.second!.audio.coin.duration).toBe(COIN_WEBAUDIO_SECONDS);
      expect(result.second!.pack.data).toEqual({ fixture: 'json', numbers: [1, 2, 3] });
      const requests = siteRequests();
      expect(requests.filter((path) => path.endsWith('project.index.json'))).toHaveLength(1);
      expect(requests.filter((path) => !path.endsWith('.awkb') && !path.endsWith('project.index.json'))).toEqual([]);
      expect(result.events.loaderror).toEqual([]);
      expectMonotonicProgressEndingAtOne(result.events.progress.filter(([scene]) => scene === 'second'));
    });

    test("each scene's loads are recorded as a load named by its scene key, paths in the order the scene used them", async () => {
      const result = await run(version, {
        baseURL: '/site/published/',
        index: { url: 'project.index.json', options: { cache: 'memory', prefetch: ['tilemap/tilemaps/simple-map.json'] } },
        queue: ['image', 'text', 'json'],
        secondScene: { queue: ['xml', 'binary'] },
      });
      expect(result.events.loaderror).toEqual([]);
      expect(result.recordedLoads).toEqual({
        formatVersion: 1,
        loads: [
          // The index's `prefetch` is part of the scene's load.
          {
            name: 'first',
            paths: ['tilemap/tilemaps/simple-map.json', 'images/kenney/coin.png', 'fixtures/notes.txt', 'atlas/emoji/emoji.json'],
          },
          { name: 'second', paths: ['fixtures/data.xml', 'audio/superpowers/4.wav'] },
        ],
      });
    });

    test('files whose URLs miss the index while it lists their tails: one warning naming the root that would serve them; none with that root', async () => {
      const log: string[] = [];
      const index = (options: Record<string, unknown>) => ({
        url: '../published/project.index.json',
        options: { cache: 'memory', ...options },
      });
      const queue = ['image', 'atlas', 'text'];
      server.resetRequests();
      const misrooted = await run(version, { baseURL: '/site/loose/', index: index({}), queue }, log);
      // Loaded, but loose: the index sits in published/, the game asks for loose/….
      expect(misrooted.first.caches.atlas.frames).toBe(24);
      expect(siteRequests().filter((path) => path.startsWith('/site/loose/'))).toHaveLength(4);
      expect(misrooted.recordedLoads).toEqual({ formatVersion: 1, loads: [] });
      const origin = server.origin;
      expect(log.filter((line) => line.includes('load loose'))).toEqual([
        `warn: awake-bundle: 4 files under ${origin}/site/loose/ load loose, but the index ${origin}/site/published/project.index.json lists them below its root ${origin}/site/published/; set root: '${origin}/site/loose/' (or './') to serve them from bundles`,
      ]);

      log.length = 0;
      server.resetRequests();
      const rooted = await run(version, { baseURL: '/site/loose/', index: index({ root: './' }), queue }, log);
      expect(rooted.first.caches).toEqual(misrooted.first.caches);
      expect(siteRequests().filter((path) => path.startsWith('/site/loose/'))).toEqual([]);
      expect(log.filter((line) => line.includes('load loose'))).toEqual([]);
      expect(rooted.recordedLoads!.loads.map((load) => load.name)).toEqual(['first']);
    });

    test('a mistyped path below the root loads loose with one warning naming the listed path it is a slip from; none with warnNearMisses: false', async () => {
      const log: string[] = [];
      const index = (options: Record<string, unknown>) => ({ url: 'project.index.json', options: { cache: 'memory', ...options } });
      server.resetRequests();
      const slipped = await run(version, { baseURL: '/site/published/', index: index({}), queue: ['image', 'typo', 'typo'] }, log);
      // The slip went loose (and failed there, as it would without the adapter); the rest came from bundles.
      expect(siteRequests().filter((path) => path.endsWith('/coni.png'))).toEqual(['/site/published/images/kenney/coni.png']);
      expect(slipped.events.loaderror.length).toBeGreaterThan(0);
      const origin = server.origin;
      expect(log.filter((line) => line.includes('did you mean'))).toEqual([
        `warn: awake-bundle: images/kenney/coni.png is below the root ${origin}/site/published/ but not in the index ${origin}/site/published/project.index.json; did you mean images/kenney/coin.png? Loading it loose`,
      ]);
      log.length = 0;
      await run(version, { baseURL: '/site/published/', index: index({ warnNearMisses: false }), queue: ['image', 'typo'] }, log);
      expect(log.filter((line) => line.includes('did you mean'))).toEqual([]);
    });

    test('`type: "awkbIndex"` in a pack file: the files after it come from bundles, with ./, .. and a query', async () => {
      server.resetRequests();
      const result = await run(version, { baseURL: '/site/published/', queue: ['packWithIndex'] });
      expect(result.first.caches.packWithIndex).toEqual({
        coin: expect.objectContaining({ width: 128, height: 128 }),
        notes: 'awake-bundle phaser fixture: text\n',
      });
      expect(siteRequests().filter((path) => !path.endsWith('.awkb'))).toEqual([
        '/site/packs/with-index.json',
        '/site/published/project.index.json',
      ]);
      expect(result.events.loaderror).toEqual([]);
    });

    test('an index queued after its files, behind a small parallel-download limit, still serves them', async () => {
      server.resetRequests();
      const result = await run(version, {
        baseURL: '/site/published/',
        index: bundledIndex,
        indexLast: true,
        maxParallelDownloads: 2,
        queue: ['image', 'atlas', 'json', 'text', 'xml', 'audio'],
      });
      expect(result.events.loaderror).toEqual([]);
      expect(result.first.caches).toMatchObject({
        json: 24,
        xml: 'harbor',
        atlas: { frames: 24 },
        audio: { coin: { duration: COIN_WEBAUDIO_SECONDS } },
      });
      expect(siteRequests().filter((path) => !path.endsWith('.awkb'))).toEqual(['/site/published/project.index.json']);
      expectMonotonicProgressEndingAtOne(result.events.progress);
      // Files from bundles are not held back by Phaser's per-step download limit; the limit comes back after.
      expect(result.events.parallel).toBeGreaterThan(1000);
      expect(result.first.parallelAfter).toBe(2);
    });

    test('a damaged bundle fails the files that need it with loaderror naming the member; the rest load', async () => {
      const log: string[] = [];
      server.resetRequests();
      const result = await run(
        version,
        // A whole bundle streamed (SPEC §7 "Streamed members"), not the queue's needed ranges.
        {
          baseURL: '/site/damaged/',
          index: { ...bundledIndex, options: { ...bundledIndex.options, neededBytes: false } },
          queue: ['image', 'atlas', 'text', 'xml', 'css', 'audio'],
        },
        log,
      );
      const failed = result.events.loaderror;
      // SPEC §7 "Streamed members": fixtures/level.xml passed before the damaged fixtures/notes.txt
      // arrived and was handed out, verified; the damaged member and those after it fail.
      expect(failed.map((f) => f.key).sort()).toEqual(['notes', 'style']);
      expect(result.first.caches.xml).toBe('harbor');
      for (const file of failed) expect(file.error).toContain(DAMAGED_MEMBER);
      expect(result.first.caches.text).toBeNull();
      expect(result.first.caches.image).toMatchObject({ width: 128, height: 128 });
      expect(result.first.caches.atlas.frames).toBe(24);
      expect(result.first.caches.audio.coin.duration).toBe(COIN_WEBAUDIO_SECONDS);
      expect(log.some((line) => line.startsWith('error: awake-bundle: text "notes"') && line.includes(DAMAGED_MEMBER))).toBe(true);
      // The damaged bundle was asked for once, not once per file.
      const bundles = siteRequests().filter((path) => path.endsWith('.awkb'));
      expect(new Set(bundles).size).toBe(bundles.length);
      expectMonotonicProgressEndingAtOne(result.events.progress);
    });

    test("the index file is not one of the game's files: a scene reports the same file counts (`complete`'s arguments, totalToLoad) loose and from bundles", async () => {
      const queue = ['image', 'atlas', 'text', 'audio', 'pack', 'video'];
      const loose = await run(version, { baseURL: '/site/loose/', queue });
      const bundled = await run(version, { baseURL: '/site/published/', index: bundledIndex, queue });
      const [scene, totalComplete, totalFailed, totalToLoad] = loose.events.complete[0]!;
      expect({ scene, totalFailed, counted: totalComplete === totalToLoad && totalComplete > queue.length }).toEqual({
        scene: 'first',
        totalFailed: 0,
        counted: true,
      });
      expect(bundled.events.complete).toEqual(loose.events.complete);
      expect(bundled.events.start).toEqual(loose.events.start);
      // An index that fails is left out too (its `loaderror` still fires), and so is one a pack
      // adds during the load: the pack, then its two files.
      const missing = await run(version, {
        baseURL: '/site/loose/',
        index: { url: '../missing/project.index.json', options: { cache: 'memory' } },
        queue,
      });
      expect(missing.events.loaderror.map((file) => file.type)).toEqual(['awkbIndex']);
      expect(missing.events.complete).toEqual(loose.events.complete);
      const packed = await run(version, { baseURL: '/site/published/', queue: ['packWithIndex'] });
      expect(packed.events.complete).toEqual([['first', 3, 0, 3]]);
    });

    test('a video in preload is not read before `complete`, as Phaser reads none; its Video game object reads it on load, plays it and seeks, from its bundle as from its loose file', async () => {
      const scenario = { queue: ['longVideo', 'image'], markComplete: true, playVideo: 'intro' };
      const videoPath = 'video/testsrc-4s.webm';
      server.resetRequests();
      const loose = await run(version, { ...scenario, baseURL: '/site/loose/' });
      const looseRequests = server.requests.map((r) => r.path);
      server.resetRequests();
      const bundled = await run(version, { ...scenario, baseURL: '/site/published/', index: bundledIndex });
      const requests = server.requests.map((r) => r.path);

      // Loose: Phaser's VideoFile downloads nothing; the element streams the file once the Video plays.
      expect(looseRequests.indexOf(`/site/loose/${videoPath}`)).toBeGreaterThan(looseRequests.indexOf('/mark/complete'));
      // Bundled: the same order. Nothing of the video's bundle before the loader's `complete`; then
      // one request, when the Video loaded it; never its loose URL.
      const member = site.index.files.find((file) => file.path === videoPath)!;
      const videoBundle = `/site/published/${site.index.bundles.find((bundle) => bundle.sha256 === member.bundle)!.url}`;
      const complete = requests.indexOf('/mark/complete');
      expect(complete).toBeGreaterThan(0);
      expect(requests.slice(0, complete)).not.toContain(videoBundle);
      expect(requests.filter((path) => path === videoBundle)).toHaveLength(1);
      expect(requests.indexOf(videoBundle)).toBeGreaterThan(complete);
      expect(requests.filter((path) => path.includes('/video/'))).toEqual([]);

      // It plays (its first frame reached the texture) and seeks, from an object URL of the
      // verified bytes; a second Video of the key gets the same source at once.
      expect(bundled.first.video).toEqual({
        blob: true,
        texture: { width: 96, height: 64 },
        duration: 4,
        seekedTo: '2.5 s on',
        playing: true,
        againSameSource: true,
      });
      expect({ ...loose.first.video, blob: true }).toEqual(bundled.first.video);
      expect(bundled.events.loaderror).toEqual([]);
      // Read as a load of its own, so that grouping by recorded loads keeps it out of the preload's bundles.
      expect(bundled.recordedLoads!.loads).toEqual([
        { name: 'first', paths: ['images/kenney/coin.png'] },
        { name: `video:${videoPath}`, paths: [videoPath] },
      ]);
    });

    test('files a bundle holds that the page fetches itself, outside the loader, are named once each in a console.debug line', async () => {
      const log: string[] = [];
      // The usual layout: loose files beside the published folder, the index rooted at them.
      const index = { url: '../published/project.index.json', options: { cache: 'memory', root: './' } };
      server.resetRequests();
      const result = await run(
        version,
        {
          baseURL: '/site/loose/',
          index,
          queue: ['text', 'json'],
          // notes.txt twice, data.json once: in bundles; the index itself and a missing file are not files the bundles hold.
          plainFetch: [
            'fixtures/notes.txt',
            'fixtures/notes.txt',
            'fixtures/data.json',
            '../published/project.index.json',
            'fixtures/missing.txt',
          ],
        },
        log,
      );
      expect(result.first.caches).toMatchObject({ text: 'awake-bundle phaser fixture: text\n', json: 24 });
      // The loader's own loads came from bundles: the page's fetches were the only loose requests.
      expect(siteRequests().filter((path) => path.startsWith('/site/loose/'))).toEqual([
        '/site/loose/fixtures/notes.txt',
        '/site/loose/fixtures/notes.txt',
        '/site/loose/fixtures/data.json',
        '/site/loose/fixtures/missing.txt',
      ]);
      const base = `${server.origin}/site/loose/fixtures`;
      const line = (file: string) =>
        `debug: awake-bundle: ${base}/${file} was downloaded on its own, and its bundle holds it too (fixtures/${file}): it downloads twice. ` +
        `Load it through the engine's loader or the source (source.url('fixtures/${file}'), source.read), or install the service worker (awake-bundle/sw), which answers such requests from bundles`;
      expect(log.filter((entry) => entry.includes('downloads twice'))).toEqual([line('notes.txt'), line('data.json')]);
    });

    test('a missing index fails the awkbIndex file; the files behind it load from their loose URLs, with a warning', async () => {
      const log: string[] = [];
      const result = await run(
        version,
        {
          baseURL: '/site/loose/',
          index: { url: '../missing/project.index.json', options: { cache: 'memory' } },
          queue: ['image', 'atlas', 'text'],
        },
        log,
      );
      expect(result.events.loaderror).toEqual([{ type: 'awkbIndex', key: 'assets', error: expect.stringContaining('404') }]);
      expect(result.first.caches.image).toMatchObject({ width: 128, height: 128 });
      expect(result.first.caches.atlas.frames).toBe(24);
      expect(result.first.caches.text).toBe('awake-bundle phaser fixture: text\n');
      expect(log.some((line) => line.startsWith('warn: awake-bundle: without index "assets"'))).toBe(true);
    });
  });

  describe('phaser4: options, opaque ids, range reads, the persistent cache', () => {
    test('options: `root` elsewhere than the index, `prefetch` with the index, `cache: null`, and an open `source`', async () => {
      const queue = ['image', 'imageAgain', 'atlas', 'audio', 'text'];
      server.resetRequests();
      const rooted = await run('phaser4', {
        baseURL: '/site/mirror/',
        index: {
          url: '../published/project.index.json',
          options: { cache: 'none', root: '../mirror', prefetch: ['images', 'fixtures/notes.txt'] },
        },
        queue,
      });
      expect(rooted.events.loaderror).toEqual([]);
      expect(rooted.first.caches.imageAgain.pixels).toBe(rooted.first.caches.image.pixels);
      expect(rooted.first.caches.audio.again).toEqual(rooted.first.caches.audio.coin);
      expect(rooted.first.caches.text).toBe('awake-bundle phaser fixture: text\n');
      // Nothing was asked of the mirror folder: every file came from the index's bundles.
      expect(siteRequests().filter((path) => !path.startsWith('/site/published/'))).toEqual([]);
      const bundles = siteRequests().filter((path) => path.endsWith('.awkb'));
      expect(new Set(bundles).size).toBe(bundles.length);
      const bytes = rooted.events.awkbprogress.at(-1)!;
      expect(bytes.loadedBytes).toBe(bytes.totalBytes);

      server.resetRequests();
      const handed = await run('phaser4', {
        baseURL: '/site/published/',
        index: { url: 'project.index.json', options: { source: 'open' } },
        queue,
      });
      expect(handed.first.caches).toEqual(rooted.first.caches);
      expect(siteRequests().filter((path) => path.endsWith('project.index.json'))).toHaveLength(1);
    });

    test('an index with opaque ids, and range reads: one member per request', async () => {
      const queue = ['image', 'atlas', 'audio', 'text'];
      server.resetRequests();
      const opaque = await run('phaser4', {
        baseURL: '/site/opaque/',
        index: { url: 'project.index.json', options: { cache: 'memory' } },
        queue,
      });
      expect(opaque.events.loaderror).toEqual([]);
      expect(opaque.first.source!.paths).toBe(0);
      expect(opaque.first.caches.atlas.frames).toBe(24);
      expect(opaque.first.caches.text).toBe('awake-bundle phaser fixture: text\n');
      expect(siteRequests().every((path) => path.startsWith('/site/opaque/'))).toBe(true);

      server.resetRequests();
      const ranged = await run('phaser4', {
        baseURL: '/site/published/',
        index: { url: 'project.index.json', options: { cache: 'memory', rangeReads: true } },
        queue,
      });
      expect(ranged.first.caches).toEqual(opaque.first.caches);
      const bundleRequests = server.requests.filter((r) => r.path.endsWith('.awkb'));
      // coin.png, emoji.png + emoji.json (neighbours in one bundle, read together: one range,
      // each member verified alone), coin.ogg (one read for its two keys), notes.txt.
      expect(bundleRequests).toHaveLength(4);
      expect(bundleRequests.every((r) => r.status === 206 && /^bytes=\d+-\d+$/.test(r.range ?? ''))).toBe(true);
    });

    test('with the default persistent cache, a second visit requests only the index', async () => {
      const visit = {
        baseURL: '/site/published/',
        index: { url: 'project.index.json' },
        queue: ['image', 'atlas', 'bitmapFont', 'audio', 'text'],
      };
      const first = await run('phaser4', visit);
      server.resetRequests();
      const second = await run('phaser4', visit);
      expect(second.first.caches).toEqual(first.first.caches);
      expect(siteRequests()).toEqual(['/site/published/project.index.json']);
      expectMonotonicProgressEndingAtOne(second.events.progress);
    });
  });
});
