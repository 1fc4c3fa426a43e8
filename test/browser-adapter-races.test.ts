/**
 * No byte twice, through the real adapters in headless Chromium and Firefox
 * ESR, with the default browser cache (`openBrowserCache()`, no `cache` option) and the reader's
 * workers on: a member that arrived is never requested again while the page holds it or its
 * cache write is pending. A user saw a bundle that had arrived whole requested again as a Range
 * request (a 9-model Babylon scene), and a Phaser scene request one of its 9 bundles twice.
 *
 * Each test makes several page loads ("visits"), cold (the origin's storage cleared first) and
 * return visits (the cache as the last visit left it: a Babylon visit does not wait for its
 * cache writes, as a player who reloads does not), and reads the server's log of each visit:
 * every bundle's requested byte ranges (no Range header: the whole bundle) may cover a byte once.
 * Bytes, not requests: a load may bring only a bundle's missing members, by several ranges.
 *
 * The races need luck to show; one does not: a Phaser scene that reads a file whose bundle the
 * previous scene brought, while the game loads its next level in the background, had that bundle
 * requested again as a Range request (the other loads kept the workers' cache write of it waiting,
 * and the scene's `source.load` asked the store, not the pending writes). That test holds the
 * server's answers to make the order certain.
 *
 * Then the read-ahead of references (core/read/load/read-ahead.ts, on by default): a .gltf whose
 * buffer and image live in other bundles has those bundles requested before the glTF loader is
 * handed the .gltf at all, so a model costs one round trip, not two.
 *
 * AWKB_QUICK=1 makes fewer visits.
 */
import { copyFileSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { launchBrowser, TESTED_BROWSERS, type LaunchedBrowser } from './helpers/browser';
import { BABYLON_PAGE } from './helpers/babylon-site';
import { REPO, runCli, temporaryDir } from './helpers/cli';
import { PHASER_PAGES } from './helpers/phaser-site';
import { seededBytes } from './helpers/trees';
import { bytesAskedTwice, startVisitServer, type AskedTwice, type VisitRequest, type VisitServer } from './helpers/visit-server';

const QUICK = /^(1|true|yes)$/i.test(process.env.AWKB_QUICK ?? '');
/**
 * Page loads per browser, every other one a return visit: a Babylon one takes 2–5 s (its ~1,000
 * modules, then the scene), a Phaser one 1–2 s. `AWKB_RACE_VISITS=40` hunts longer, for both.
 */
const HUNT = Number(process.env.AWKB_RACE_VISITS ?? '') || undefined;
const BABYLON_VISITS = HUNT ?? (QUICK ? 2 : 4);
const PHASER_VISITS = HUNT ?? (QUICK ? 4 : 6);

const ASSETS = join(REPO, 'examples/assets');

interface Published {
  /** Bundle URL path (`/site/<name>/published/bundles/….awkb`) → its size. */
  bundleSizes: Map<string, number>;
  /** Project path → the URL path of its bundle. */
  bundleOf: Map<string, string>;
  /** Project path → where its bytes are in its bundle. */
  memberOf: Map<string, { offset: number; sizeBytes: number; storedBytes: number }>;
}

function publish(site: string, name: string, extra: string[] = []): Published {
  const loose = join(site, name, 'loose');
  const published = runCli([loose, '--out', join(site, name, 'published'), ...extra]);
  if (published.code !== 0) throw new Error(published.stderr);
  const index = JSON.parse(readFileSync(join(site, name, 'published/project.index.json'), 'utf8')) as {
    bundles: { sha256: string; url: string; sizeBytes: number }[];
    files: { path: string; bundle: string; offset: number; sizeBytes: number; storedBytes?: number }[];
  };
  const urlOf = new Map(index.bundles.map((bundle) => [bundle.sha256, `/site/${name}/published/${bundle.url}`]));
  return {
    bundleSizes: new Map(index.bundles.map((bundle) => [urlOf.get(bundle.sha256)!, bundle.sizeBytes])),
    bundleOf: new Map(index.files.map((file) => [file.path, urlOf.get(file.bundle)!])),
    memberOf: new Map(
      index.files.map((file) => [
        file.path,
        { offset: file.offset, sizeBytes: file.sizeBytes, storedBytes: file.storedBytes ?? file.sizeBytes },
      ]),
    ),
  };
}

/**
 * Nine models in eight bundles, 6.5 MB, published by folder (the CLI's default): three copies of
 * the milk truck in folders of their own, each with its buffer padded to 600 KB of its own bytes
 * and its JPEG made distinct by bytes after its end; two more and a ship at the top, whose
 * buffers and images live in `buffers/` and `textures/` (other bundles: Babylon's glTF loader
 * refuses a `..` in a URI, so a model names files below its own folder); two .glb files in one
 * bundle; and the textured box.
 */
function stageBabylon(site: string): string[] {
  const loose = join(site, 'babylon', 'loose');
  const truck = JSON.parse(readFileSync(join(ASSETS, 'gltf/CesiumMilkTruck/CesiumMilkTruck.gltf'), 'utf8'));
  const truckBin = readFileSync(join(ASSETS, 'gltf/CesiumMilkTruck/CesiumMilkTruck_data.bin'));
  // A small picture (227×150) stands in for the truck's 2048² one: decoding that six times on SwiftShader costs seconds a visit.
  const truckJpg = readFileSync(join(ASSETS, 'images/StainedGlassLamp/screenshot-x150.jpg'));
  const models: string[] = [];
  const write = (path: string, bytes: string | Buffer) => {
    mkdirSync(join(loose, path, '..'), { recursive: true });
    writeFileSync(join(loose, path), bytes);
  };
  /** A truck at `gltf` whose buffer and JPEG are at `bin` and `jpg`, relative to its folder. */
  const truckAt = (gltfPath: string, bin: string, jpg: string) => {
    const folder = gltfPath.includes('/') ? gltfPath.slice(0, gltfPath.lastIndexOf('/') + 1) : '';
    const padded = Buffer.concat([truckBin, seededBytes(600 * 1024 - truckBin.length, models.length)]);
    const gltf = structuredClone(truck);
    gltf.buffers[0] = { ...gltf.buffers[0], uri: bin, byteLength: padded.length };
    gltf.images[0] = { ...gltf.images[0], uri: jpg };
    write(gltfPath, JSON.stringify(gltf));
    write(folder + bin, padded);
    // A JPEG decoder stops at its end-of-image marker: what follows makes the file distinct, and 300 KB.
    write(folder + jpg, Buffer.concat([truckJpg, seededBytes(300 * 1024 - truckJpg.length, 100 + models.length)]));
    models.push(gltfPath);
  };
  for (let i = 1; i <= 3; i++) truckAt(`truck-${i}/truck.gltf`, 'truck.bin', 'truck.jpg');
  for (const name of ['truck-4', 'truck-5', 'ship']) truckAt(`${name}.gltf`, `buffers/${name}.bin`, `textures/${name}.jpg`);
  mkdirSync(join(loose, 'glb'), { recursive: true });
  for (const glb of ['CesiumMan.glb', 'CesiumMilkTruck.glb']) {
    copyFileSync(join(ASSETS, 'glb', glb), join(loose, 'glb', glb));
    models.push(`glb/${glb}`);
  }
  cpSync(join(ASSETS, 'gltf/BoxTextured'), join(loose, 'box'), { recursive: true });
  models.push('box/BoxTextured.gltf');
  return models;
}

/**
 * A `models/` folder of eleven models, 15.5 MB, published at the CLI's defaults (one bundle): the
 * milk truck (its .gltf, buffer and JPEG, 0.45 MB) and ten others of 1.5 MB each that the scene
 * never loads. A glTF scene that loads the truck alone must cost the truck's bytes, not the folder's.
 */
function stageFolderOfModels(site: string): void {
  const models = join(site, 'folder', 'loose', 'models');
  mkdirSync(models, { recursive: true });
  for (const file of ['CesiumMilkTruck.gltf', 'CesiumMilkTruck.jpg', 'CesiumMilkTruck_data.bin', 'LICENSE-CesiumMilkTruck.md'])
    copyFileSync(join(ASSETS, 'gltf/CesiumMilkTruck', file), join(models, file));
  const box = JSON.parse(readFileSync(join(ASSETS, 'gltf/BoxTextured/BoxTextured.gltf'), 'utf8'));
  for (let i = 0; i < 10; i++) {
    const bin = seededBytes(1536 * 1024, 900 + i);
    const gltf = structuredClone(box);
    gltf.buffers[0] = { ...gltf.buffers[0], uri: `rock-${i}.bin`, byteLength: bin.length };
    writeFileSync(join(models, `rock-${i}.gltf`), JSON.stringify(gltf));
    writeFileSync(join(models, `rock-${i}.bin`), bin);
  }
}

/** The example assets and the Phaser fixtures, as the Phaser adapter's tests have them. */
function stagePhaser(site: string): void {
  const loose = join(site, 'phaser', 'loose');
  for (const folder of ['atlas', 'audio', 'bitmapfont', 'images', 'spritesheet', 'tilemap'])
    cpSync(join(ASSETS, folder), join(loose, folder), { recursive: true });
  cpSync(join(REPO, 'test/fixtures/phaser'), join(loose, 'fixtures'), { recursive: true });
}

/**
 * A scene's preload of 18 loads, 14 files of 11 types (run-scene.js QUEUE): an image under two
 * keys, a spritesheet, an atlas and the atlas's JSON again as json, a bitmap font, a Tiled map and
 * its tileset, a sound under two keys, another as ogg or mp3, text, XML, binary and SVG.
 * Published two folder levels deep (`--depth 2`), they come from 10 bundles.
 */
const PHASER_QUEUE = ['image', 'imageAgain', 'spritesheet', 'atlas', 'json', 'bitmapFont', 'tilemapTiledJSON'];
PHASER_QUEUE.push('audio', 'audioMulti', 'text', 'xml', 'binary', 'svg');

/** The Babylon APIs a level's models are loaded through, in turn. */
const APIS = ['ImportMeshAsync', 'AppendSceneAsync', 'SceneLoader.ImportMeshAsync', 'SceneLoader.AppendAsync', 'LoadAssetContainerAsync'];

let site: string;
let server: VisitServer;
let babylonModels: string[];
let babylon: Published;
let phaser: Published;
let folder: Published;
let visits = 0;

beforeAll(async () => {
  site = temporaryDir('awkb-adapter-races-');
  babylonModels = stageBabylon(site);
  babylon = publish(site, 'babylon');
  stagePhaser(site);
  phaser = publish(site, 'phaser', ['--depth', '2']);
  stageFolderOfModels(site);
  folder = publish(site, 'folder');
  server = await startVisitServer({ '/site/': site, '/page/': BABYLON_PAGE, '/phaser-page/': PHASER_PAGES });
}, 120_000);

afterAll(async () => {
  await server?.close();
});

/** What one visit asked of the server: its site requests, and the bytes among them asked twice. */
function visitLog(visit: number, published: Published) {
  const requests = server.requests.filter((request) => request.visit === visit);
  return { requests, twice: bytesAskedTwice(requests, published.bundleSizes) };
}

/** A visit's finding; where a byte was asked twice, with every bundle request of the visit in the order they came (to tell the race). */
function finding(visit: number, cold: boolean, requests: VisitRequest[], twice: AskedTwice[]) {
  const order = requests.filter((r) => r.path.endsWith('.awkb')).map((r) => `${r.path.slice(-16)} ${r.range ?? 'whole'}`);
  return { visit, cold, twice, ...(twice.length > 0 ? { order } : {}) };
}

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  let browser: LaunchedBrowser;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    browser = await launchBrowser({ kind });
    page = await browser.browser.newPage();
    page.on('pageerror', (error) => errors.push(String(error)));
  });

  afterAll(async () => {
    await browser?.close();
  });

  /**
   * A new visit number; for a cold visit, the origin's storage emptied first (the reader's
   * IndexedDB and its first-visit mark in localStorage), from a blank page that holds none of it open.
   */
  async function nextVisit(cold: boolean): Promise<number> {
    if (cold) {
      await page.goto(`${server.origin}/blank.html`);
      await page.evaluate(async () => {
        localStorage.clear();
        const names = (await indexedDB.databases?.())?.map((database) => database.name!) ?? ['awake-bundle'];
        for (const name of names)
          await new Promise((resolve, reject) => {
            const request = indexedDB.deleteDatabase(name);
            request.onsuccess = resolve;
            request.onerror = () => reject(request.error);
          });
      });
    }
    return ++visits;
  }

  describe('Babylon', () => {
    /** Headless Firefox on Linux has no WebGL: NullEngine there (see babylon-adapter.test.ts). */
    const engine = kind === 'chromium' ? '' : '?engine=null';

    const call = <T>(fn: (t: any, ...args: any[]) => Promise<T> | T, ...args: unknown[]): Promise<T> =>
      page
        .evaluate(
          async (source, args) => {
            const result = await new Function('t', 'args', `return (${source})(t, ...args)`)(
              (window as unknown as { babylonTest: unknown }).babylonTest,
              args,
            );
            return result === undefined ? undefined : JSON.stringify(result);
          },
          fn.toString(),
          args,
        )
        .then((text) => (text === undefined ? undefined : JSON.parse(text))) as Promise<T>;

    async function openScenePage(): Promise<void> {
      await page.goto(`${server.origin}/page/index.html${engine}`, { waitUntil: 'load' });
      await page.waitForFunction(() => (window as { babylonReady?: boolean }).babylonReady === true, { timeout: 30_000 });
    }

    const modelsOf = (visit: number, folder: string) =>
      babylonModels.map((model, i) => ({ api: APIS[i % APIS.length], url: `/visit-${visit}/site/babylon/${folder}/${model}` }));

    /**
     * A scene summary as every visit sees it: textures are named by URL (the same URL in every
     * visit), and models loading at once finish in any order (each list sorted whole).
     */
    const sameInEveryVisit = (summary: unknown): Record<string, unknown[]> => {
      const named = JSON.parse(JSON.stringify(summary).replace(/\/visit-\d+\//g, '/')) as Record<string, unknown[]>;
      const sorted = (list: unknown[]) => list.map((item) => JSON.stringify(item)).sort();
      return Object.fromEntries(Object.entries(named).map(([key, value]) => [key, Array.isArray(value) ? sorted(value) : value]));
    };

    test(
      `${BABYLON_VISITS} page loads of a 9-model scene, cold and return visits: no byte of a bundle is requested twice in one`,
      async () => {
        let loose: Record<string, unknown[]> | undefined;
        const found: ReturnType<typeof finding>[] = [];
        for (let i = 0; i < BABYLON_VISITS; i++) {
          const cold = i % 2 === 0;
          const visit = await nextVisit(cold);
          await openScenePage();
          // First, the scene from loose files, to compare with (before registering: those URLs then load from bundles).
          loose ??= sameInEveryVisit(await call((t, models) => t.loadTogether(models), modelsOf(visit, 'loose')));
          expect(loose.meshes!.length).toBeGreaterThan(9);
          const before = server.requests.length;
          const scene = await call(
            async (t, indexUrl, root, models) => {
              await t.register({ indexUrl, root });
              return t.loadTogether(models);
            },
            `/visit-${visit}/site/babylon/published/project.index.json`,
            `/visit-${visit}/site/babylon/loose/`,
            modelsOf(visit, 'loose'),
          );
          expect(sameInEveryVisit(scene)).toEqual(loose);
          const requests = server.requests.slice(before).filter((request) => request.visit === visit);
          // Only the index and bundles: never a loose file.
          expect(requests.filter((r) => !r.path.endsWith('.awkb') && !r.path.endsWith('project.index.json'))).toEqual([]);
          if (cold)
            expect(new Set(requests.filter((r) => r.path.endsWith('.awkb')).map((r) => r.path)).size).toBe(babylon.bundleSizes.size);
          found.push(finding(visit, cold, requests, bytesAskedTwice(requests, babylon.bundleSizes)));
        }
        expect(found.filter((visit) => visit.twice.length > 0)).toEqual([]);
        expect(errors).toEqual([]);
      },
      BABYLON_VISITS * 20_000,
    );

    test('one model of a folder of eleven (one 15.5 MB bundle) fetches its own bytes: every read a load of one (SPEC §7 "Needed bytes")', async () => {
      const visit = await nextVisit(true);
      await openScenePage();
      const model = await call(
        async (t, indexUrl, root, url) => {
          await t.register({ indexUrl, root });
          return t.loadModel('ImportMeshAsync', url);
        },
        `/visit-${visit}/site/folder/published/project.index.json`,
        `/visit-${visit}/site/folder/loose/`,
        `/visit-${visit}/site/folder/loose/models/CesiumMilkTruck.gltf`,
      );
      expect(model.meshes.length).toBeGreaterThan(0);
      const { requests, twice } = visitLog(visit, folder);
      expect(twice).toEqual([]);
      const truck = ['CesiumMilkTruck.gltf', 'CesiumMilkTruck.jpg', 'CesiumMilkTruck_data.bin'].map((file) => `models/${file}`);
      // What the scene uses, as stored (an encoded member's stored bytes: what a range of it costs).
      const used = truck.reduce((sum, path) => sum + folder.memberOf.get(path)!.storedBytes, 0);
      const fetched = requests.filter((r) => r.path.endsWith('.awkb')).reduce((sum, r) => sum + r.bodyBytes, 0);
      // Without it, the .gltf's read took the whole 15.5 MB bundle (34× what the scene uses).
      const order = requests.filter((r) => r.path.endsWith('.awkb')).map((r) => `${r.range ?? 'whole'}: ${r.bodyBytes}`);
      expect({ order, fetchedPerUsed: fetched / used <= 1.05 }).toEqual({ order, fetchedPerUsed: true });
      expect(errors).toEqual([]);
    });

    test('read-ahead: a .gltf’s buffer and image bundles are requested before the glTF loader is handed the .gltf', async () => {
      const visit = await nextVisit(true);
      await openScenePage();
      const gltf = 'ship.gltf';
      await call(
        async (t, indexUrl, root, gltf) => {
          await t.register({ indexUrl, root });
          // The engine's every read, named; the .gltf's bytes are held from it until the test lets go.
          const registration = t.registration;
          const read = registration.read.bind(registration);
          t.asked = [];
          t.gate = new Promise((open) => (t.openGate = open));
          registration.read = async (path: string, options: unknown) => {
            t.asked.push(path);
            const bytes = await read(path, options);
            if (path === gltf) await t.gate;
            return bytes;
          };
        },
        `/visit-${visit}/site/babylon/published/project.index.json`,
        `/visit-${visit}/site/babylon/loose/`,
        gltf,
      );
      await call((t, url) => void (t.loading = t.loadModel('ImportMeshAsync', url)), `/visit-${visit}/site/babylon/loose/${gltf}`);
      const ahead = ['buffers/ship.bin', 'textures/ship.jpg'].map((path) => babylon.bundleOf.get(path)!);
      // Both requests arrive while the engine has not had the .gltf (without read-ahead they never would: bounded).
      let bound: ReturnType<typeof setTimeout> | undefined;
      const withinBound = new Promise<'none'>((resolve) => (bound = setTimeout(() => resolve('none'), 15_000)));
      const arrived = await Promise.race([
        Promise.all(ahead.map((path) => server.arrival((r) => r.visit === visit && r.path === path))),
        withinBound,
      ]).finally(() => clearTimeout(bound));
      expect(arrived === 'none' ? 'no request for the buffer and image bundles while the engine waited for the .gltf' : 'requested').toBe(
        'requested',
      );
      expect(await call((t) => t.asked)).toEqual([gltf]);
      const model = await call(async (t) => {
        t.openGate();
        return t.loading;
      });
      expect(model.meshes.length).toBeGreaterThan(0);
      // The engine then asked for both, and was served by the loads already made.
      expect(await call((t) => t.asked)).toEqual(expect.arrayContaining(['buffers/ship.bin', 'textures/ship.jpg']));
      const { requests, twice } = visitLog(visit, babylon);
      expect(twice).toEqual([]);
      for (const path of ahead) expect(requests.filter((r) => r.path === path)).toHaveLength(1);
      expect(errors).toEqual([]);
    });
  });

  describe('Phaser', () => {
    const renderer = kind === 'firefox' ? 'CANVAS' : 'WEBGL';

    async function openGamePage(): Promise<void> {
      await page.goto(`${server.origin}/phaser-page/phaser4.html`, { waitUntil: 'load' });
      await page.waitForFunction(() => typeof (globalThis as { runScene?: unknown }).runScene === 'function', { timeout: 30_000 });
    }

    // The image's bundle comes whole, streamed, in both: with needed bytes on, a request is priced
    // above the bundle's size, since a range would not stream up to a held tail.
    test.each([
      ['needed bytes off', { neededBytes: false }],
      ['needed bytes on', { neededBytes: { roundTripBytes: 8 * 1024 * 1024 } }],
    ])(
      'a second scene reads a file whose bundle the first brought while the next level loads in the background (%s): that bundle is requested once',
      async (_, indexOptions) => {
        const image = 'images/kenney/coin.png';
        const level = 'audio/superpowers/theme-4.ogg';
        const imageBundle = phaser.bundleOf.get(image)!;
        const member = phaser.memberOf.get(image)!;
        expect(member.offset + member.sizeBytes).toBeLessThan(phaser.bundleSizes.get(imageBundle)!);
        const options = (visit: number, more: Record<string, unknown>) => ({
          renderer,
          baseURL: `/visit-${visit}/site/phaser/published/`,
          index: { url: 'project.index.json', options: indexOptions },
          ...more,
        });
        // A player's earlier visit made the cache (its text file only): on this one the workers write it.
        const earlier = await nextVisit(true);
        await openGamePage();
        await page.evaluate((o) => (globalThis as any).runScene(o).then(() => undefined), options(earlier, { queue: ['text'] }));
        const visit = await nextVisit(false);
        // The index waits until the reader's workers have answered, so that bundles stream (and are written) in them.
        const index = server.hold('/site/phaser/published/project.index.json');
        // The first scene's image arrives, streamed; the rest of its bundle waits until the level's background load is under way.
        const tail = server.hold(imageBundle, { afterBytes: member.offset + member.sizeBytes });
        const background = server.hold(phaser.bundleOf.get(level)!);
        await openGamePage();
        await page.evaluate(
          (o) => {
            const game = globalThis as unknown as { running: Promise<string>; runScene(o: unknown): Promise<unknown> };
            game.running = game.runScene(o).then((result) => JSON.stringify(result));
          },
          options(visit, { queue: ['image'], background: [level], secondScene: { queue: ['imageAgain'] } }),
        );
        await index.arrived;
        await page.waitForFunction("import('/dist/core/internal.js').then((core) => core.sharedDigestPool().usingWorkers === true)");
        index.release();
        await tail.arrived;
        await background.arrived;
        // The second scene's load has decided (its first `awkbprogress`, after asking the cache): it
        // joined the image's load, whose tail is still held, and so did its read, whose bytes the
        // first scene took (RELIABILITY.md item 35: the read then waited for that load's cache write).
        await page.waitForFunction("globalThis.awkbSceneEvents?.awkbprogressOf.includes('second')", { timeout: 30_000 });
        // The image's load ends now, with the level's still in flight: the workers write its members once no load is (flushStores).
        tail.release();
        // The second scene's loader completes (its create then waits for the cache writes, which wait for the level's load).
        await page.waitForFunction("globalThis.awkbSceneEvents?.complete.some(([scene]) => scene === 'second')", { timeout: 30_000 });
        background.release();
        const result = JSON.parse(await page.evaluate(() => (globalThis as unknown as { running: Promise<string> }).running));
        expect(result.events.loaderror).toEqual([]);
        expect(result.second.imageAgain).toEqual(result.first.caches.image);
        const { requests, twice } = visitLog(visit, phaser);
        expect(twice).toEqual([]);
        expect(requests.filter((r) => r.path === imageBundle)).toHaveLength(1);
        expect(errors).toEqual([]);
      },
    );

    test(
      `${PHASER_VISITS} page loads of a scene preloading 14 files of 11 types from 10 bundles: no byte of a bundle is requested twice in one`,
      async () => {
        const found: ReturnType<typeof finding>[] = [];
        let bundled = 0;
        for (let i = 0; i < PHASER_VISITS; i++) {
          const cold = i % 2 === 0;
          const visit = await nextVisit(cold);
          await openGamePage();
          const result = JSON.parse(
            await page.evaluate(
              async (options) => JSON.stringify(await (globalThis as any).runScene(options)),
              // No cache option: the adapter's default, openBrowserCache().
              { renderer, baseURL: `/visit-${visit}/site/phaser/published/`, index: { url: 'project.index.json' }, queue: PHASER_QUEUE },
            ),
          );
          expect(result.events.loaderror).toEqual([]);
          const caches = result.first.caches;
          expect(Object.keys(caches).sort()).toEqual([...PHASER_QUEUE].sort());
          for (const name of PHASER_QUEUE) expect([name, caches[name]]).not.toEqual([name, null]);
          const { requests, twice } = visitLog(visit, phaser);
          const bundles = new Set(requests.filter((r) => r.path.endsWith('.awkb')).map((r) => r.path));
          if (cold) bundled = bundles.size;
          found.push(finding(visit, cold, requests, twice));
        }
        expect(bundled).toBeGreaterThanOrEqual(9);
        expect(found.filter((visit) => visit.twice.length > 0)).toEqual([]);
        expect(errors).toEqual([]);
      },
      PHASER_VISITS * 15_000,
    );
  });
});
