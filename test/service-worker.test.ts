/**
 * The service worker in real headless Chromium and Firefox ESR (`TESTED_BROWSERS`):
 * `npx awake-bundle sw` writes the prebuilt worker into a site beside a published project, a page
 * registers it, and the page's ordinary loads (`<img>`, `fetch`, a Range request) of indexed URLs
 * are answered with verified bytes from the bundles; the server sees only the index and bundle
 * requests for them. Also `<link rel=stylesheet>` with a background image, `<audio>` seeking,
 * three.js's GLTFLoader, updates, and (Chromium only, through CDP) a restart with the server down.
 */
import { createHash } from 'node:crypto';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import {
  launchBrowser,
  REPO_ROOT,
  startRepoServer,
  TESTED_BROWSERS,
  testIf,
  type LaunchedBrowser,
  type RepoServer,
} from './helpers/browser';
import { requestedRanges } from '../core/format/range-header.js';
import { runCli, temporaryDir } from './helpers/cli';
import { seededBytes, writeTree } from './helpers/trees';
import { startWebpackServe, writeWebpackProject, type RunningDevServer } from './helpers/webpack-project';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

const COIN = readFileSync(join(REPO_ROOT, 'examples/assets/images/kenney/coin.png'));
/** The project: an image, text, and binaries spread over several bundles (target 0.05 MiB). */
const FILES: Record<string, Buffer> = {
  'images/coin.png': COIN,
  'images/particle.png': readFileSync(join(REPO_ROOT, 'examples/assets/images/kenney/particle.png')),
  // A stylesheet from the index whose background image, relative to it, is in the index too.
  'styles/game.css': Buffer.from('#sprite { width: 16px; height: 16px; background-image: url("../images/particle.png"); }\n'),
  'sounds/theme-4.ogg': readFileSync(join(REPO_ROOT, 'examples/assets/audio/superpowers/theme-4.ogg')),
  // A web font through @font-face in a stylesheet, and a seekable video (test/fixtures/media/SOURCES.md).
  'styles/fonts.css': Buffer.from(
    '@font-face { font-family: "Awkb Test"; src: url("../fonts/dejavu-sans-subset.woff2") format("woff2"); }\n',
  ),
  'fonts/dejavu-sans-subset.woff2': readFileSync(join(REPO_ROOT, 'test/fixtures/media/dejavu-sans-subset.woff2')),
  'video/testsrc-4s.webm': readFileSync(join(REPO_ROOT, 'test/fixtures/media/testsrc-4s.webm')),
  // A .gltf with an external .bin and a texture, for three.js's GLTFLoader.
  'models/box/BoxTextured.gltf': readFileSync(join(REPO_ROOT, 'examples/assets/gltf/BoxTextured/BoxTextured.gltf')),
  'models/box/BoxTextured0.bin': readFileSync(join(REPO_ROOT, 'examples/assets/gltf/BoxTextured/BoxTextured0.bin')),
  'models/box/CesiumLogoFlat.png': readFileSync(join(REPO_ROOT, 'examples/assets/gltf/BoxTextured/CesiumLogoFlat.png')),
  'text/hello world.txt': Buffer.from('hello from a verified bundle\n'),
  'levels/a.bin': seededBytes(40 * 1024, 1),
  'levels/b.bin': seededBytes(40 * 1024, 2),
  'levels/c.bin': seededBytes(40 * 1024, 3),
};
/** The test page; three.js (a devDependency) loads from the repository server's /node_modules/, outside the worker's scope. */
const IMPORT_MAP = JSON.stringify({
  imports: { three: '/node_modules/three/build/three.module.js', 'three/addons/': '/node_modules/three/examples/jsm/' },
});
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>sw test</title><script type="importmap">${IMPORT_MAP}</script></head><body></body></html>\n`;

interface IndexShape {
  bundles: { sha256: string; url: string; sizeBytes: number }[];
  files: { path: string; bundle: string; offset: number; sizeBytes: number }[];
}

/** What each path holds in the version published now (the update test publishes a second one). */
const CURRENT: Record<string, Buffer> = { ...FILES };

function buildSite(): { site: string; loose: string; index: IndexShape } {
  const site = temporaryDir('awkb-sw-site-');
  const loose = temporaryDir('awkb-sw-loose-');
  writeTree(loose, FILES);
  const published = runCli([loose, '--out', join(site, 'published'), '--target-mb', '0.05']);
  if (published.code !== 0) throw new Error(published.stderr);
  const written = runCli(['sw', '--out', site]);
  if (written.code !== 0) throw new Error(written.stderr);
  writeFileSync(join(site, 'page.html'), PAGE);
  writeFileSync(join(site, 'plain.txt'), 'not in any index\n');
  writeFileSync(join(site, 'published/not-indexed.txt'), 'below the root, not listed\n');
  const index = JSON.parse(readFileSync(join(site, 'published/project.index.json'), 'utf8')) as IndexShape;
  // A damaged copy: one byte of levels/b.bin flipped inside its bundle.
  cpSync(join(site, 'published'), join(site, 'damaged'), { recursive: true });
  const member = index.files.find((file) => file.path === 'levels/b.bin')!;
  const bundlePath = join(site, 'damaged', index.bundles.find((bundle) => bundle.sha256 === member.bundle)!.url);
  const bytes = readFileSync(bundlePath);
  bytes[member.offset + 5]! ^= 0xff;
  writeFileSync(bundlePath, bytes);
  return { site, loose, index };
}

/** Registers the site's worker with this index (relative to the worker; else the one baked in) and waits until it controls the page. */
async function registerWorker(page: Page, index?: string): Promise<void> {
  await page.evaluate(async (indexPath) => {
    await navigator.serviceWorker.register(
      indexPath === null ? 'awake-bundle-sw.js' : `awake-bundle-sw.js?index=${encodeURIComponent(indexPath)}`,
    );
    await navigator.serviceWorker.ready;
    if (!navigator.serviceWorker.controller) {
      await new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true }));
    }
  }, index ?? null);
}

/** Adds `<link rel=stylesheet href>` to the page and waits for it to load. */
async function addStylesheet(page: Page, href: string): Promise<void> {
  await page.evaluate(async (href) => {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = href;
    const loaded = new Promise(
      (resolve, reject) => ((link.onload = resolve), (link.onerror = () => reject(new Error(`${href} did not load`)))),
    );
    document.head.append(link);
    await loaded;
  }, href);
}

/** `fetch` in the page: status, headers we check, and the body's SHA-256 and text (for small bodies). */
async function fetchInPage(page: Page, url: string, headers: Record<string, string> = {}) {
  return page.evaluate(
    async ({ url, headers }) => {
      const response = await fetch(url, { headers });
      const body = new Uint8Array(await response.arrayBuffer());
      const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', body));
      return {
        status: response.status,
        type: response.headers.get('content-type'),
        length: response.headers.get('content-length'),
        contentRange: response.headers.get('content-range'),
        sha256: [...digest].map((b) => b.toString(16).padStart(2, '0')).join(''),
        size: body.length,
        text: body.length < 4096 ? new TextDecoder().decode(body) : '',
      };
    },
    { url, headers },
  );
}

describe.each(TESTED_BROWSERS)('%s: the service worker', (kind) => {
  let server: RepoServer;
  let browser: LaunchedBrowser;
  let site: string;
  let loose: string;
  let index: IndexShape;

  beforeAll(async () => {
    ({ site, loose, index } = buildSite());
    for (const path of Object.keys(CURRENT)) delete CURRENT[path];
    Object.assign(CURRENT, FILES);
    server = await startRepoServer({ mounts: { '/site/': site } });
    browser = await launchBrowser({ kind });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  test('the site has more than one bundle, so a damaged one leaves the others readable', () => {
    expect(index.bundles.length).toBeGreaterThan(1);
  });

  describe('a published project', () => {
    let page: Page;

    beforeAll(async () => {
      page = await browser.browser.newPage();
      server.resetRequests();
      await page.goto(`${server.origin}/site/page.html`);
      await registerWorker(page, 'published/project.index.json');
    });

    afterAll(async () => {
      await page?.close();
    });

    test('<img> and fetch of indexed files get the verified bytes; the server sees only the index and bundle requests', async () => {
      const image = await page.evaluate(async () => {
        const img = document.createElement('img');
        img.src = 'published/images/coin.png';
        document.body.append(img);
        await img.decode();
        return { width: img.naturalWidth, height: img.naturalHeight };
      });
      expect(image.width).toBeGreaterThan(0);
      expect(image.height).toBeGreaterThan(0);
      for (const [path, bytes] of Object.entries(FILES)) {
        const url = `published/${path.split('/').map(encodeURIComponent).join('/')}`;
        const got = await fetchInPage(page, url);
        expect({ path, status: got.status, sha256: got.sha256, length: got.length }).toEqual({
          path,
          status: 200,
          sha256: sha256(bytes),
          length: String(bytes.length),
        });
      }
      expect((await fetchInPage(page, 'published/images/coin.png')).type).toBe('image/png');
      expect((await fetchInPage(page, 'published/text/hello%20world.txt')).type).toBe('text/plain; charset=utf-8');
      // Since the page opened: the index once (the worker starting), then each bundle, whole or
      // by its members' ranges (one read at a time is a load of one, SPEC §7 "Needed bytes"),
      // never a byte of it twice (a second read of a member comes from the cache); the published
      // folder holds no loose files.
      const seen = server.requests.filter((request) => request.path.startsWith('/site/published/'));
      expect(seen[0]!.path).toBe('/site/published/project.index.json');
      const sizeOf = new Map(index.bundles.map((bundle) => [`/site/published/${bundle.url}`, bundle.sizeBytes]));
      expect([...new Set(seen.slice(1).map((request) => request.path))].sort()).toEqual([...sizeOf.keys()].sort());
      const asked = new Map<string, { start: number; end: number }[]>();
      for (const { path, range } of seen.slice(1)) {
        const spans = requestedRanges(range, sizeOf.get(path)!);
        expect(spans).not.toBe('unsatisfiable');
        const added = spans === 'unsatisfiable' ? [] : (spans ?? [{ start: 0, end: sizeOf.get(path)! - 1 }]);
        const before = asked.get(path) ?? [];
        for (const span of added)
          expect({ path, span, twice: before.some((other) => span.start <= other.end && other.start <= span.end) }).toEqual({
            path,
            span,
            twice: false,
          });
        asked.set(path, [...before, ...added]);
      }
    });

    test('a stylesheet and its background-image, and an <audio> that seeks, come from the bundles', async () => {
      server.resetRequests();
      await addStylesheet(page, 'published/styles/game.css');
      const styled = await page.evaluate(async () => {
        const sprite = document.createElement('div');
        sprite.id = 'sprite';
        document.body.append(sprite);
        const image = new URL('published/images/particle.png', location.href).href;
        // The background image loads once the element is styled; its resource timing says how it was answered.
        const fromCss = () =>
          (performance.getEntriesByName(image) as (PerformanceResourceTiming & { responseStatus?: number })[]).find(
            (e) => e.initiatorType === 'css',
          );
        for (let i = 0; i < 200 && !fromCss(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
        const entry = fromCss();
        return { background: getComputedStyle(sprite).backgroundImage, status: entry?.responseStatus, initiator: entry?.initiatorType };
      });
      expect(styled).toEqual({ background: `url("${server.origin}/site/published/images/particle.png")`, status: 200, initiator: 'css' });
      const audio = await page.evaluate(async () => {
        const element = new Audio();
        element.preload = 'auto';
        element.src = 'published/sounds/theme-4.ogg';
        await new Promise(
          (resolve, reject) => (
            (element.onloadedmetadata = resolve),
            (element.onerror = () => reject(new Error(`audio error ${element.error?.code}`)))
          ),
        );
        const seeked = new Promise((resolve) => (element.onseeked = resolve));
        element.currentTime = element.duration / 2;
        await seeked;
        return { duration: element.duration, currentTime: element.currentTime };
      });
      expect(audio.duration).toBeGreaterThan(1);
      expect(audio.currentTime).toBeCloseTo(audio.duration / 2, 1);
      // Neither the stylesheet, nor its image, nor the sound reached the server as loose files.
      expect(server.requests.map((request) => request.path).filter((path) => !path.endsWith('.awkb'))).toEqual([]);
    });

    test('a web font through @font-face, and a <video> that seeks, come from the bundles', async () => {
      server.resetRequests();
      await addStylesheet(page, 'published/styles/fonts.css');
      const font = await page.evaluate(async () => {
        const faces = await document.fonts.load('16px "Awkb Test"', 'Hello');
        // The face is in use: text measures otherwise than in the fallback (a family that does not exist).
        const context = document.createElement('canvas').getContext('2d')!;
        context.font = '40px "Awkb Test", monospace';
        const withFont = context.measureText('iiiii').width;
        context.font = '40px "No Such Font", monospace';
        const fallback = context.measureText('iiiii').width;
        return {
          faces: faces.map((face) => [face.family.replace(/"/g, ''), face.status]),
          check: document.fonts.check('16px "Awkb Test"'),
          differs: withFont !== fallback,
        };
      });
      expect(font).toEqual({ faces: [['Awkb Test', 'loaded']], check: true, differs: true });
      const video = await page.evaluate(async () => {
        const element = document.createElement('video');
        element.muted = true;
        element.preload = 'auto';
        element.src = 'published/video/testsrc-4s.webm';
        document.body.append(element);
        await new Promise(
          (resolve, reject) => (
            (element.onloadeddata = resolve),
            (element.onerror = () => reject(new Error(`video error ${element.error?.code}: ${element.error?.message}`)))
          ),
        );
        const seeked = new Promise((resolve) => (element.onseeked = resolve));
        element.currentTime = 3;
        await seeked;
        return {
          duration: element.duration,
          currentTime: element.currentTime,
          width: element.videoWidth,
          height: element.videoHeight,
          readyState: element.readyState,
        };
      });
      expect(video).toMatchObject({ width: 96, height: 64, currentTime: 3 });
      expect(video.duration).toBeCloseTo(4, 1);
      expect(video.readyState).toBeGreaterThanOrEqual(2);
      // Neither the stylesheet, nor the font, nor the video reached the server as loose files.
      expect(server.requests.map((request) => request.path).filter((path) => !path.endsWith('.awkb'))).toEqual([]);
    });

    test('three.js GLTFLoader loads a .gltf, its external .bin and its texture from the bundles', async () => {
      server.resetRequests();
      // A string, not a function: jest would compile import() inside a function into require().
      const model = await page.evaluate(`import('three/addons/loaders/GLTFLoader.js').then(async ({ GLTFLoader }) => {
        const gltf = await new GLTFLoader().loadAsync('published/models/box/BoxTextured.gltf');
        let mesh;
        gltf.scene.traverse((object) => { if (object.isMesh) mesh = object; });
        const image = mesh.material.map.image;
        return { vertices: mesh.geometry.attributes.position.count, indices: mesh.geometry.index.count, texture: [image.width, image.height] };
      })`);
      expect(model).toEqual({ vertices: 24, indices: 36, texture: [256, 256] });
      // three.js itself came from /node_modules/; every model file from the worker.
      expect(server.requests.map((request) => request.path).filter((path) => path.startsWith('/site/') && !path.endsWith('.awkb'))).toEqual(
        [],
      );
    });

    test('a Range request gets 206 with the slice, and 416 past the end', async () => {
      const bytes = FILES['levels/c.bin']!;
      const ranged = await fetchInPage(page, 'published/levels/c.bin', { Range: 'bytes=1000-1999' });
      expect(ranged).toMatchObject({
        status: 206,
        contentRange: `bytes 1000-1999/${bytes.length}`,
        length: '1000',
        size: 1000,
        sha256: sha256(bytes.subarray(1000, 2000)),
      });
      const suffix = await fetchInPage(page, 'published/levels/c.bin', { Range: 'bytes=-10' });
      expect(suffix).toMatchObject({
        status: 206,
        contentRange: `bytes ${bytes.length - 10}-${bytes.length - 1}/${bytes.length}`,
        sha256: sha256(bytes.subarray(bytes.length - 10)),
      });
      const past = await fetchInPage(page, 'published/levels/c.bin', { Range: `bytes=${bytes.length}-` });
      expect(past).toMatchObject({ status: 416, contentRange: `bytes */${bytes.length}` });
    });

    test('URLs the index does not list pass through to the server', async () => {
      server.resetRequests();
      expect(await fetchInPage(page, 'plain.txt')).toMatchObject({ status: 200, text: 'not in any index\n' });
      expect(await fetchInPage(page, 'published/not-indexed.txt')).toMatchObject({ status: 200, text: 'below the root, not listed\n' });
      expect((await fetchInPage(page, 'published/missing.bin')).status).toBe(404);
      expect(server.requests.map((request) => request.path)).toEqual([
        '/site/plain.txt',
        '/site/published/not-indexed.txt',
        '/site/published/missing.bin',
      ]);
    });

    test('a page may ask the worker to read the index again', async () => {
      server.resetRequests();
      const answer = await page.evaluate(async () => {
        const channel = new MessageChannel();
        const reply = new Promise((resolve) => (channel.port1.onmessage = (event) => resolve(event.data)));
        navigator.serviceWorker.controller!.postMessage({ type: 'awkb:refresh' }, [channel.port2]);
        return reply;
      });
      expect(answer).toEqual({ type: 'awkb:refreshed' });
      expect(server.requests.map((request) => request.path)).toEqual(['/site/published/project.index.json']);
      expect((await fetchInPage(page, 'published/levels/a.bin')).sha256).toBe(sha256(FILES['levels/a.bin']!));
    });

    test('a new version published into the folder: after awkb:updated the changed files it had downloaded are in, and nothing else was fetched', async () => {
      const changed = { 'levels/c.bin': seededBytes(40 * 1024, 33), 'levels/d.bin': seededBytes(30 * 1024, 4) };
      writeTree(loose, changed);
      Object.assign(CURRENT, changed);
      const published = runCli([loose, '--out', join(site, 'published'), '--target-mb', '0.05']);
      expect(published.code).toBe(0);
      const v2 = JSON.parse(readFileSync(join(site, 'published/project.index.json'), 'utf8')) as IndexShape;
      server.resetRequests();
      // The page helper (awake-bundle/sw, a module with no imports): the same registration, its updates heard.
      const updates = await page.evaluate(`import('/dist/adapters/service-worker/page.js').then(async ({ registerAwkbServiceWorker }) => {
        const updates = [];
        const awkb = await registerAwkbServiceWorker('awake-bundle-sw.js?index=published%2Fproject.index.json', { onUpdate: (indexUrl, update) => updates.push([indexUrl, update]) });
        await awkb.refresh();
        for (let i = 0; i < 200 && updates.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
        awkb.dispose();
        return updates;
      })`);
      // c.bin changed and was downloaded before: brought ahead of its read. d.bin is new: it waits for its first read.
      expect(updates).toEqual([[`${server.origin}/site/published/project.index.json`, { prefetchedFiles: 1 }]]);
      const bundleOf = (path: string) =>
        `/site/published/${v2.bundles.find((bundle) => bundle.sha256 === v2.files.find((file) => file.path === path)!.bundle)!.url}`;
      const seen = server.requests.filter((request) => request.path.startsWith('/site/'));
      expect(seen.map((request) => request.path)).toEqual(['/site/published/project.index.json', bundleOf('levels/c.bin')]);
      // Only c.bin's bytes: a range when its bundle also holds files the cache has, else the bundle (c.bin alone).
      const shared = v2.files.some((file) => bundleOf(file.path) === bundleOf('levels/c.bin') && !(file.path in changed));
      if (shared) expect(seen[1]!.range).toMatch(/^bytes=\d+-\d+$/);
      else
        expect({
          range: seen[1]!.range,
          members: v2.files.filter((file) => bundleOf(file.path) === bundleOf('levels/c.bin')).map((file) => file.path),
        }).toEqual({ range: undefined, members: ['levels/c.bin'] });
      server.resetRequests();
      for (const [path, bytes] of Object.entries(CURRENT)) {
        const got = await fetchInPage(page, `published/${path.split('/').map(encodeURIComponent).join('/')}`);
        expect({ path, status: got.status, sha256: got.sha256 }).toEqual({ path, status: 200, sha256: sha256(bytes) });
      }
      // Every file of the new version from the cache but the new one.
      expect(server.requests.map((request) => request.path).filter((path) => path.startsWith('/site/'))).toEqual([
        bundleOf('levels/d.bin'),
      ]);
    });

    test('refreshes that overlap: the one started last wins, an older index answered late is neither served nor kept; a restart serves the kept index while the index host stalls', async () => {
      const INDEX = '/site/published/project.index.json';
      const older = readFileSync(join(site, 'published/project.index.json'), 'utf8');
      const changed = { 'levels/a.bin': seededBytes(40 * 1024, 11) };
      writeTree(loose, changed);
      Object.assign(CURRENT, changed);
      expect(runCli([loose, '--out', join(site, 'published'), '--target-mb', '0.05']).code).toBe(0);
      const refresh = () =>
        page.evaluate(async () => {
          const channel = new MessageChannel();
          const reply = new Promise((resolve) => (channel.port1.onmessage = (event) => resolve(event.data)));
          navigator.serviceWorker.controller!.postMessage({ type: 'awkb:refresh' }, [channel.port2]);
          return reply;
        });
      // The first refresh's answer is held until the second has been answered with the new index.
      const held = server.hold(INDEX, { headersFirst: true });
      const first = refresh();
      await held.arrived;
      expect(await refresh()).toEqual({ type: 'awkb:refreshed' });
      held.release(older);
      expect(await first).toEqual({ type: 'awkb:refreshed' });
      expect((await fetchInPage(page, 'published/levels/a.bin')).sha256).toBe(sha256(changed['levels/a.bin']));
      if (kind !== 'chromium') return; // stopping a worker takes CDP, which BiDi (Firefox) lacks
      // A worker started afresh while the index host stalls: the kept index (the newest) serves at once.
      const cdp = await page.createCDPSession();
      await cdp.send('ServiceWorker.enable');
      await cdp.send('ServiceWorker.stopAllWorkers');
      await cdp.detach();
      const stalled = server.hold(INDEX);
      try {
        for (const path of ['levels/a.bin', 'levels/b.bin'])
          expect({ path, sha256: (await fetchInPage(page, `published/${path}`)).sha256 }).toEqual({ path, sha256: sha256(CURRENT[path]!) });
        await stalled.arrived; // asked for, and still not answered
      } finally {
        stalled.release();
      }
    });
  });

  test('a damaged bundle: 502 naming the member for its files, the other bundles still serve', async () => {
    // A fresh profile (incognito context), so no verified copy of the member sits in the cache.
    const context = await browser.browser.createBrowserContext();
    try {
      const page = await context.newPage();
      await page.goto(`${server.origin}/site/page.html`);
      await registerWorker(page, 'damaged/project.index.json');
      const damaged = await fetchInPage(page, 'damaged/levels/b.bin');
      expect(damaged.status).toBe(502);
      expect(damaged.text).toContain('levels/b.bin');
      expect(damaged.text).toMatch(/damaged: .*levels\/b\.bin/);
      const bundleOfB = index.files.find((file) => file.path === 'levels/b.bin')!.bundle;
      const elsewhere = index.files.find((file) => file.bundle !== bundleOfB)!;
      const other = await fetchInPage(page, `damaged/${elsewhere.path.split('/').map(encodeURIComponent).join('/')}`);
      expect(other).toMatchObject({ status: 200, sha256: sha256(FILES[elsewhere.path]!) });
    } finally {
      await context.close();
    }
  });

  // Last: it stops the server. Chromium only: stopping a worker takes CDP, which BiDi (Firefox) lacks.
  testIf(kind === 'chromium')(
    'with the server stopped, a restarted worker serves what was read before from the kept index and the cache',
    async () => {
      const page = await browser.browser.newPage();
      await page.goto(`${server.origin}/site/page.html`);
      // Controlled at once: the worker registered by the tests above is active for this scope.
      expect(await page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
      const cdp = await page.createCDPSession();
      await cdp.send('ServiceWorker.enable');
      await cdp.send('ServiceWorker.stopAllWorkers');
      await server.close();
      for (const [path, bytes] of Object.entries(CURRENT)) {
        const got = await fetchInPage(page, `published/${path.split('/').map(encodeURIComponent).join('/')}`);
        expect({ path, status: got.status, sha256: got.sha256 }).toEqual({ path, status: 200, sha256: sha256(bytes) });
      }
      await page.close();
    },
  );
});

/**
 * A game whose page, script, stylesheet and assets are all published in the index (the site's
 * root is the project's root): the first visit comes from the server and registers the worker;
 * the next visit, controlled, reads everything through it; then, with the server stopped, a
 * reload of the game's folder URL serves the page and all it loads from the cache.
 */
describe.each(TESTED_BROWSERS)('%s: a game published whole, offline after one controlled visit', (kind) => {
  const GAME: Record<string, Buffer> = {
    'index.html': Buffer.from(`<!doctype html><html><head><meta charset="utf-8"><title>offline game</title>
<link rel="stylesheet" href="style.css"><script type="module" src="game.js"></script></head>
<body><img id="coin" src="assets/coin.png"><div id="sprite"></div></body></html>\n`),
    'style.css': Buffer.from('#sprite { width: 16px; height: 16px; background-image: url("assets/particle.png"); }\n'),
    'game.js': Buffer.from(`const level = await (await fetch('assets/level.json')).json();
const coin = document.getElementById('coin');
await coin.decode();
window.game = { level, coin: [coin.naturalWidth, coin.naturalHeight], background: getComputedStyle(document.getElementById('sprite')).backgroundImage };
try {
  await navigator.serviceWorker.register('awake-bundle-sw.js');
} catch (error) {
  window.game.registerError = String(error); // offline: the worker in place keeps serving
}
`),
    'assets/coin.png': COIN,
    'assets/particle.png': readFileSync(join(REPO_ROOT, 'examples/assets/images/kenney/particle.png')),
    'assets/level.json': Buffer.from(JSON.stringify({ name: 'level one', tiles: [1, 2, 3] })),
  };
  let server: RepoServer;
  let browser: LaunchedBrowser;
  let site: string;

  beforeAll(async () => {
    const game = temporaryDir('awkb-sw-game-');
    writeTree(game, GAME);
    // The site holds the loose files (the first visit, before the worker) and the published project at its root.
    site = temporaryDir('awkb-sw-game-site-');
    writeTree(site, GAME);
    expect(runCli([game, '--out', site]).code).toBe(0);
    expect(runCli(['sw', '--out', site]).code).toBe(0);
    server = await startRepoServer({ mounts: { '/game/': site } });
    browser = await launchBrowser({ kind });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  const gameState = (page: Page) =>
    page.waitForFunction(() => (window as unknown as { game?: unknown }).game, { timeout: 20_000 }).then((handle) => handle.jsonValue());
  const expected = { level: { name: 'level one', tiles: [1, 2, 3] }, coin: [expect.any(Number), expect.any(Number)] };

  test('the page and everything it loads come from the cache with the server stopped', async () => {
    const page = await browser.browser.newPage();
    // First visit: loose files from the server; the game registers the worker, which claims the page.
    await page.goto(`${server.origin}/game/index.html`);
    expect(await gameState(page)).toMatchObject(expected);
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, { timeout: 20_000 });
    // Second visit, controlled: the page and all it loads through the worker, from the bundles.
    server.resetRequests();
    await page.goto(`${server.origin}/game/`);
    expect(await gameState(page)).toMatchObject({ ...expected, background: `url("${server.origin}/game/assets/particle.png")` });
    const loose = server.requests
      .map((request) => request.path)
      .filter((path) => !path.endsWith('.awkb') && !path.endsWith('/awake-bundle-sw.js'));
    expect(loose).toEqual([]);
    const bundles = server.requests.filter((request) => request.path.endsWith('.awkb'));
    expect(bundles.length).toBeGreaterThan(0);
    // What was read is in the persistent cache (the page helper's stored()).
    await page.evaluate(`import('/dist/adapters/service-worker/page.js').then(async ({ registerAwkbServiceWorker }) => {
      const awkb = await registerAwkbServiceWorker('awake-bundle-sw.js');
      await awkb.stored();
      awkb.dispose();
    })`);
    await server.close();
    if (kind === 'chromium') {
      // A worker started afresh, with no index in memory: the kept index and the cache serve.
      const cdp = await page.createCDPSession();
      await cdp.send('ServiceWorker.enable');
      await cdp.send('ServiceWorker.stopAllWorkers');
      await cdp.detach();
    }
    await page.goto(`${server.origin}/game/`);
    expect(await gameState(page)).toMatchObject({ ...expected, background: `url("${server.origin}/game/assets/particle.png")` });
    expect(await page.title()).toBe('offline game');
    await page.close();
  });
});

/**
 * Development: `webpack serve` with the plugin's `serviceWorker: true` answers the index URL with
 * a loose index (formatVersion 2, files served one by one) and serves the same worker. The page
 * code is the production page's: the worker maps the same URLs to paths, reads each file from
 * its loose URL and checks it against the index's SHA-256 before answering. Without the worker
 * those URLs are 404s on the dev server (it serves the files under published/files/).
 */
describe.each(TESTED_BROWSERS)('%s: the worker on webpack serve (loose index)', (kind) => {
  let server: RunningDevServer;
  let browser: LaunchedBrowser;
  const files = { 'images/coin.png': COIN, 'text/hello world.txt': Buffer.from('hello from a loose file\n') };

  beforeAll(async () => {
    const project = temporaryDir('awkb-sw-dev-');
    writeTree(join(project, 'assets'), files);
    writeTree(join(project, 'static'), { 'page.html': PAGE });
    const config = writeWebpackProject(
      project,
      { assets: 'assets', serviceWorker: true },
      { mode: 'development', devServer: { static: { directory: join(project, 'static'), watch: false } } },
    );
    server = await startWebpackServe(config, project);
    browser = await launchBrowser({ kind });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('the page registers the worker the dev server serves, and the same URLs get the files, verified', async () => {
    const page = await browser.browser.newPage();
    await page.goto(`${server.url}page.html`);
    expect(await fetchInPage(page, 'published/images/coin.png')).toMatchObject({ status: 404 });
    await registerWorker(page); // its index URL baked in by the plugin: published/project.index.json
    for (const [path, bytes] of Object.entries(files)) {
      const got = await fetchInPage(page, `published/${path.split('/').map(encodeURIComponent).join('/')}`);
      expect({ path, status: got.status, sha256: got.sha256 }).toEqual({ path, status: 200, sha256: sha256(bytes) });
    }
    await page.close();
  });
});

// The worker computes opaque ids (SPEC §4) with its own synchronous HMAC-SHA256 (hash-sync.ts, in
// place of @noble/hashes in its build): a project whose index lists ids, not paths, is served
// from its bundles by the URLs of its paths, and URLs it does not list still pass through.
describe.each(TESTED_BROWSERS)('%s: the worker on a project with opaque ids', (kind) => {
  let server: RepoServer;
  let browser: LaunchedBrowser;
  let site: string;
  const files = {
    'text/hello world.txt': Buffer.from('hello from a bundle whose index lists no paths\n'),
    'levels/ünïcödé-マップ.bin': seededBytes(30 * 1024, 7),
    'levels/a.bin': seededBytes(20 * 1024, 8),
  };

  beforeAll(async () => {
    site = temporaryDir('awkb-sw-ids-');
    const loose = temporaryDir('awkb-sw-ids-loose-');
    writeTree(loose, files);
    const published = runCli([loose, '--out', join(site, 'published'), '--opaque-ids', '--salt', 'a salt of the project']);
    if (published.code !== 0) throw new Error(published.stderr);
    expect(runCli(['sw', '--out', site]).code).toBe(0);
    writeFileSync(join(site, 'page.html'), PAGE);
    server = await startRepoServer({ mounts: { '/ids/': site } });
    browser = await launchBrowser({ kind });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  test('files are served verified by their paths; the index names none of them', async () => {
    const index = readFileSync(join(site, 'published/project.index.json'), 'utf8');
    for (const path of Object.keys(files)) expect(index).not.toContain(path.split('/').pop()!);
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${server.origin}/ids/page.html`);
      await registerWorker(page, 'published/project.index.json');
      server.resetRequests();
      for (const [path, bytes] of Object.entries(files)) {
        const got = await fetchInPage(page, `published/${path.split('/').map(encodeURIComponent).join('/')}`);
        expect({ path, status: got.status, sha256: got.sha256 }).toEqual({ path, status: 200, sha256: sha256(bytes) });
      }
      expect(server.requests.filter((request) => !request.path.endsWith('.awkb'))).toEqual([]);
      expect((await fetchInPage(page, 'published/levels/b.bin')).status).toBe(404);
    } finally {
      await page.close();
    }
  });
});
