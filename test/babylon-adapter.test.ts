/**
 * awake-bundle/babylon in real Chromium with Babylon 9 (WebGL on SwiftShader), and in Firefox ESR
 * (NullEngine, see below): models, textures,
 * cube textures and sounds loaded through every listed API from bundles, compared with a loose
 * load of the same URLs; only the index and the bundles on the network; a damaged bundle named;
 * `dispose()` gives Babylon its loose loads back.
 *
 * The registrations use `root: '/site/loose/'`: the very URLs that load loose files before
 * registering load from `/site/published/` bundles after it, so a request for a loose file shows.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { launchBrowser, startRepoServer, testIf, TESTED_BROWSERS, type LaunchedBrowser, type RepoServer } from './helpers/browser';
import {
  BABYLON_PAGE,
  CUBE_FACES,
  DAMAGED_MEMBER,
  babylonSiteDir,
  publishSite,
  stageLoose,
  type BabylonSite,
} from './helpers/babylon-site';

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  /**
   * Headless Firefox on Linux has no WebGL (FEATURE_FAILURE_WEBGL_EXHAUSTED_DRIVERS; Mozilla bug
   * 1375585): there the page runs Babylon's NullEngine (`?engine=null`), which loads models,
   * requests glTF images and plays sounds as usual but decodes no texture, so the two texture
   * tests (sizes, a WebGL context's restore) run in Chromium only.
   */
  const WEBGL = kind === 'chromium';

  let server: RepoServer;
  let browser: LaunchedBrowser;
  let page: Page;
  /** Every path the server was asked for while the test page loaded (the adapter imported, nothing registered). */
  let askedOnImport: string[] = [];
  let site: BabylonSite;

  const MODELS = [
    'gltf/BoxTextured/BoxTextured.gltf',
    'gltf/CesiumMilkTruck/CesiumMilkTruck.gltf',
    'glb/CesiumMilkTruck.glb',
    'gltf/Box Textured/Box Textured.gltf',
  ];
  const LOOSE = '/site/loose/';
  const INDEX = '/site/published/project.index.json';
  const FACES = CUBE_FACES.map((face) => `_${face}.png`);

  /**
   * Runs `fn(babylonTest, ...args)` in the page (test/fixtures/babylon-page/babylon-test.js). The
   * function travels as source text: jest compiles this file to CommonJS, which would rewrite an
   * `import()` or helper inside a function handed to `page.evaluate` directly.
   */
  const call = <T>(fn: (t: any, ...args: any[]) => Promise<T> | T, ...args: unknown[]): Promise<T> =>
    page
      .evaluate(
        async (source, args) => {
          const result = await new Function('t', 'args', `return (${source})(t, ...args)`)(
            (window as unknown as { babylonTest: unknown }).babylonTest,
            args,
          );
          // As JSON text, as CDP would copy it: WebDriver BiDi (Firefox) sends an object met twice in a
          // result as a reference, which puppeteer hands back as undefined.
          return result === undefined ? undefined : JSON.stringify(result);
        },
        fn.toString(),
        args,
      )
      .then((text) => (text === undefined ? undefined : JSON.parse(text))) as Promise<T>;

  beforeAll(async () => {
    const dir = babylonSiteDir();
    stageLoose(dir);
    server = await startRepoServer({ mounts: { '/site/': dir, '/page/': BABYLON_PAGE } });
    // Firefox: autoplay is allowed by the harness's preferences (FIREFOX_PREFS).
    browser = await launchBrowser({ kind, chromiumArgs: ['--autoplay-policy=no-user-gesture-required'] });
    page = await browser.browser.newPage();
    page.on('pageerror', (error) => console.error(`[page error] ${String(error)}`));
    await page.goto(`${server.origin}/page/index.html${WEBGL ? '' : '?engine=null'}`, { waitUntil: 'load' });
    await page.waitForFunction(() => (window as { babylonReady?: boolean }).babylonReady === true, { timeout: 20_000 });
    askedOnImport = server.requests.map((request) => request.path);
    expect(await call((t) => t.engineKind)).toBe(WEBGL ? 'webgl' : 'null');
    if (WEBGL) {
      // An .env made by Babylon itself from the six loose faces, published with the rest.
      const env = await call((t, url, extensions) => t.makeEnv(url, extensions), `${LOOSE}textures/cube/sky`, FACES);
      writeFileSync(join(dir, 'loose/textures/sky.env'), Buffer.from(env, 'base64'));
    }
    site = publishSite(dir);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  // The parts a first load uses (the range requests, the reference reader) are static imports of
  // the adapter: asked for with it, before any registerAwkb, never as a chunk in front of a load.
  test("importing the adapter asks for the range reads' module and the reference reader, before any registerAwkb", () => {
    expect(askedOnImport).toEqual(
      expect.arrayContaining([
        '/dist/core/read/fetch/bundle-ranges.js',
        '/dist/core/net/transport-ranges.js',
        '/dist/core/read/load/read-ahead-references.js',
      ]),
    );
    expect(askedOnImport.filter((path) => path.startsWith('/site/'))).toEqual([]);
  });

  /** Requests below /site/ since the last reset, in order. */
  function siteRequests(): string[] {
    return server.requests.filter((r) => r.path.startsWith('/site/')).map((r) => r.path);
  }

  function expectOnlyIndexAndBundles(requests: string[], indexUrl = INDEX): void {
    const bundles = new Set(site.index.bundles.map((bundle) => `/site/published/${bundle.url}`));
    expect(requests.filter((path) => path !== indexUrl && !bundles.has(path))).toEqual([]);
  }

  /** No cache unless a test asks for one, so every load shows its bundle requests. */
  async function register(options: Record<string, unknown> = {}) {
    return call((t, options) => t.register(options), { indexUrl: INDEX, root: LOOSE, cache: null, ...options });
  }

  async function dispose() {
    await call((t) => t.dispose());
  }

  const withoutProgress = (summary: unknown) => {
    const { progress, ...rest } = summary as { progress?: unknown };
    return rest;
  };

  describe.each([
    'ImportMeshAsync',
    'LoadAssetContainerAsync',
    'AppendSceneAsync',
    'SceneLoader.ImportMesh',
    'SceneLoader.Append',
    'SceneLoader.LoadAssetContainer',
    'SceneLoader.ImportMeshAsync',
    'SceneLoader.AppendAsync',
    'SceneLoader.LoadAssetContainerAsync',
  ])('%s', (api) => {
    test('loads each model from bundles exactly as from loose files, requesting only the index and bundles', async () => {
      const loose: Record<string, unknown> = {};
      for (const model of MODELS) loose[model] = await call((t, api, url) => t.loadModel(api, url), api, LOOSE + encodeURI(model));
      server.resetRequests();
      await register();
      try {
        for (const model of MODELS) {
          const bundled = await call((t, api, url) => t.loadModel(api, url), api, LOOSE + encodeURI(model));
          expect({ model, ...withoutProgress(bundled as object) }).toEqual({ model, ...withoutProgress(loose[model] as object) });
          expect((bundled as { meshes: unknown[] }).meshes.length).toBeGreaterThan(0);
        }
      } finally {
        await dispose();
      }
      expectOnlyIndexAndBundles(siteRequests());
    });
  });

  test('two models loading at once make one request per bundle (whole bundles), and with cache: null the console shows no cache error', async () => {
    const models = ['gltf/BoxTextured/BoxTextured.gltf', 'gltf/CesiumMilkTruck/CesiumMilkTruck.gltf'];
    const messages: string[] = [];
    const listen = (message: { type(): string; text(): string }) => messages.push(`${message.type()}: ${message.text()}`);
    page.on('console', listen);
    server.resetRequests();
    // SPEC §7 "One request per bundle"; with needed bytes (the default) each model's reads take
    // their own ranges of a shared bundle, no byte twice: test/browser-adapter-races.test.ts.
    await register({ neededBytes: false });
    try {
      const loaded = await call(
        (t, api, a, b) => Promise.all([t.loadModel(api, a), t.loadModel(api, b)]),
        'ImportMeshAsync',
        LOOSE + models[0],
        LOOSE + models[1],
      );
      expect((loaded as { meshes: unknown[] }[]).every((model) => model.meshes.length > 0)).toBe(true);
    } finally {
      await dispose();
      page.off('console', listen);
    }
    const requests = siteRequests();
    expectOnlyIndexAndBundles(requests);
    const bundles = requests.filter((path) => path.endsWith('.awkb'));
    expect(bundles.length).toBeGreaterThan(0);
    expect(new Set(bundles).size).toBe(bundles.length);
    expect(messages.filter((message) => /cache|getMany/i.test(message))).toEqual([]);
  });

  test('beginLoad names the load the reads after it belong to (source.recordedLoads()); before any, "main"', async () => {
    await register();
    try {
      const recorded = await call(async (t, loose) => {
        await t.loadModel('ImportMeshAsync', `${loose}glb/CesiumMilkTruck.glb`);
        t.registration.beginLoad('garage');
        await t.loadModel('ImportMeshAsync', `${loose}gltf/BoxTextured/BoxTextured.gltf`);
        t.registration.beginLoad('street');
        await t.loadModel('ImportMeshAsync', `${loose}gltf/Box%20Textured/Box%20Textured.gltf`);
        await t.loadModel('ImportMeshAsync', `${loose}glb/CesiumMilkTruck.glb`);
        // No development server asked for them: nothing to post.
        const posted = await t.registration.flushRecordedLoads();
        return { posted, loads: t.registration.source.recordedLoads() };
      }, LOOSE);
      expect(recorded).toEqual({
        posted: false,
        loads: {
          formatVersion: 1,
          loads: [
            { name: 'main', paths: ['glb/CesiumMilkTruck.glb'] },
            {
              name: 'garage',
              paths: ['gltf/BoxTextured/BoxTextured.gltf', 'gltf/BoxTextured/BoxTextured0.bin', 'gltf/BoxTextured/CesiumLogoFlat.png'],
            },
            {
              name: 'street',
              paths: [
                'gltf/Box Textured/Box Textured.gltf',
                'gltf/Box Textured/Box Textured0.bin',
                'gltf/Box Textured/Cesium Logo Flat.png',
                'glb/CesiumMilkTruck.glb',
              ],
            },
          ],
        },
      });
    } finally {
      await dispose();
    }
  });

  test("with a development server's ask (recordLoads), the registration posts the recorded loads once reads settle and on beginLoad", async () => {
    const origin = server.origin;
    expect(await call((t, options) => t.registerWithDevAsk(options), { indexUrl: INDEX, root: LOOSE })).toEqual({
      loadsEndpoint: `${origin}/__awake-bundle/loads`,
    });
    try {
      const posts = await call(async (t, loose) => {
        t.registration.beginLoad('garage'); // nothing recorded yet: nothing posted
        await t.loadModel('ImportMeshAsync', `${loose}glb/CesiumMilkTruck.glb`);
        // Posted once its reads have settled for a moment.
        for (let i = 0; i < 250 && t.posts.length === 0; i++) await new Promise((next) => setTimeout(next, 20));
        t.registration.beginLoad('street');
        await t.loadModel('ImportMeshAsync', `${loose}gltf/BoxTextured/BoxTextured.gltf`);
        // Posted now if the reads' moment has not passed yet, else already: once either way.
        t.registration.beginLoad('pier');
        for (let i = 0; i < 250 && t.posts.length < 2; i++) await new Promise((next) => setTimeout(next, 20));
        await t.registration.flushRecordedLoads(); // nothing new: nothing posted
        return t.posts;
      }, LOOSE);
      const garage = { name: 'garage', paths: ['glb/CesiumMilkTruck.glb'] };
      const street = {
        name: 'street',
        paths: ['gltf/BoxTextured/BoxTextured.gltf', 'gltf/BoxTextured/BoxTextured0.bin', 'gltf/BoxTextured/CesiumLogoFlat.png'],
      };
      const post = (loads: unknown[]) => ({
        url: `${origin}/__awake-bundle/loads`,
        keepalive: true,
        type: 'application/json',
        body: { formatVersion: 1, loads },
      });
      expect(posts).toEqual([post([garage]), post([garage, street])]);
    } finally {
      await dispose();
    }
  });

  test('a mistyped URL below the root loads loose with one warning naming the listed path it is a slip from; none with warnNearMisses: false', async () => {
    const warnings: string[] = [];
    const listen = (message: { type(): string; text(): string }) => {
      if (message.text().includes('did you mean')) warnings.push(`${message.type()}: ${message.text()}`);
    };
    page.on('console', listen);
    const loadSlip = () =>
      call(
        (t, url) =>
          t.loadModel('ImportMeshAsync', url).then((result: { error?: string }) => (result.error === undefined ? 'loaded' : 'failed')),
        `${LOOSE}glb/CesiumMilkTruk.glb`,
      );
    try {
      await register();
      server.resetRequests();
      try {
        expect(await loadSlip()).toMatch(/^"?failed/);
        expect(await loadSlip()).toMatch(/^"?failed/);
      } finally {
        await dispose();
      }
      expect(siteRequests().filter((path) => path.endsWith('CesiumMilkTruk.glb')).length).toBeGreaterThanOrEqual(1);
      const origin = server.origin;
      expect(warnings).toEqual([
        `warn: awake-bundle: glb/CesiumMilkTruk.glb is below the root ${origin}${LOOSE} but not in the index ${origin}${INDEX}; did you mean glb/CesiumMilkTruck.glb? Loading it loose`,
      ]);
      warnings.length = 0;
      await register({ warnNearMisses: false });
      try {
        await loadSlip();
      } finally {
        await dispose();
      }
      expect(warnings).toEqual([]);
    } finally {
      page.off('console', listen);
    }
  });

  test('URLs that miss the index while it lists their tails: one warning naming the root that would serve them; none with that root', async () => {
    const warnings: string[] = [];
    const listen = (message: { type(): string; text(): string }) => {
      if (message.text().includes('load loose')) warnings.push(`${message.type()}: ${message.text()}`);
    };
    page.on('console', listen);
    const loadTwo = () =>
      call(
        (t, a, b) => t.loadModel('ImportMeshAsync', a).then(() => t.loadModel('ImportMeshAsync', b)),
        `${LOOSE}gltf/BoxTextured/BoxTextured.gltf`,
        `${LOOSE}glb/CesiumMilkTruck.glb`,
      );
    try {
      // No root: the index's folder, /site/published/; the page asks for /site/loose/….
      await register({ root: undefined });
      server.resetRequests();
      try {
        await loadTwo();
      } finally {
        await dispose();
      }
      expect(siteRequests().filter((path) => path.startsWith(LOOSE)).length).toBeGreaterThanOrEqual(4);
      const origin = server.origin;
      // Told as the first file goes loose (Babylon asks for a glTF's other files once it has read it).
      expect(warnings).toEqual([
        `warn: awake-bundle: 1 file under ${origin}${LOOSE} load loose, but the index ${origin}${INDEX} lists it below its root ${origin}/site/published/; set root: '${origin}${LOOSE}' (or '${LOOSE}') to serve them from bundles`,
      ]);

      warnings.length = 0;
      await register();
      server.resetRequests();
      try {
        await loadTwo();
      } finally {
        await dispose();
      }
      expectOnlyIndexAndBundles(siteRequests());
      expect(warnings).toEqual([]);
    } finally {
      page.off('console', listen);
    }
  });

  test('a file a bundle holds that the page fetches itself, outside Babylon, is named once in a console.debug line', async () => {
    const url = `${server.origin}${LOOSE}textures/README-kenney.md`;
    const lines: string[] = [];
    const listen = (message: { type(): string; text(): string }) => {
      if (message.text().includes(url)) lines.push(`${message.type()}: ${message.text()}`);
    };
    page.on('console', listen);
    try {
      await register();
      try {
        // Twice, as a loader outside Babylon might; then until the page's Resource Timing has both
        // (the registration's observer, made before this one, has seen them by then).
        await page.evaluate(async (href) => {
          let seen = 0;
          const both = new Promise<void>((resolve) => {
            const observer = new PerformanceObserver((list) => {
              seen += list.getEntries().filter((entry) => entry.name === href).length;
              if (seen < 2) return;
              observer.disconnect();
              resolve();
            });
            observer.observe({ type: 'resource' });
          });
          for (let i = 0; i < 2; i++) await (await fetch(href, { cache: 'no-store' })).arrayBuffer();
          await both;
        }, url);
      } finally {
        await dispose();
      }
    } finally {
      page.off('console', listen);
    }
    expect(lines).toEqual([
      `debug: awake-bundle: ${url} was downloaded on its own, and its bundle holds it too (textures/README-kenney.md): it downloads twice. ` +
        "Load it through the engine's loader or the source (source.url('textures/README-kenney.md'), source.read), or install the service worker (awake-bundle/sw), which answers such requests from bundles",
    ]);
  });

  describe("the 'awkb' scene-loader plugin (pluginExtension: '.awkb')", () => {
    test('loads a URL below the root, or a bare project path, through the index and hands it to the glTF loader', async () => {
      const model = 'gltf/CesiumMilkTruck/CesiumMilkTruck.gltf';
      const loose = await call((t, url) => t.loadModel('ImportMeshAsync', url), LOOSE + model);
      server.resetRequests();
      // No root: the folder that holds the index (/site/published/) maps to the project root.
      await register({ root: undefined });
      try {
        const byUrl = await call((t, url) => t.loadModel('ImportMeshAsync', url, { pluginExtension: '.awkb' }), `/site/published/${model}`);
        const byPath = await call((t, path) => t.loadModel('LoadAssetContainerAsync', path, { pluginExtension: '.awkb' }), model);
        const glb = await call((t, path) => t.loadModel('AppendSceneAsync', path, { pluginExtension: '.awkb' }), 'glb/CesiumMilkTruck.glb');
        const glbLoose = await call((t, url) => t.loadModel('AppendSceneAsync', url), `${LOOSE}glb/CesiumMilkTruck.glb`);
        const rename = (summary: { textures: { name: string }[] }) => ({
          ...summary,
          textures: summary.textures.map((texture) => ({ ...texture, name: texture.name.replace(/^\/site\/published\//, '') })),
        });
        expect(withoutProgress(rename(byUrl as never))).toEqual(withoutProgress(loose as never));
        expect(withoutProgress(byPath as never)).toMatchObject({ meshes: (loose as { meshes: unknown[] }).meshes });
        expect(withoutProgress(glb as never)).toEqual(withoutProgress(glbLoose as never));
        server.resetRequests();
        const missing = await call((t, path) => t.loadModel('ImportMeshAsync', path, { pluginExtension: '.awkb' }), 'models/none.glb');
        expect((missing as { error: string }).error).toContain('"models/none.glb" is not below the root of any registered index');
      } finally {
        await dispose();
      }
      expect(siteRequests().filter((path) => !path.startsWith('/site/loose/'))).toEqual([]);
    });

    test('an index with opaque ids (no paths listed) serves the same URLs', async () => {
      const model = `${LOOSE}gltf/CesiumMilkTruck/CesiumMilkTruck.gltf`;
      const loose = await call((t, url) => t.loadModel('ImportMeshAsync', url), model);
      server.resetRequests();
      await register({ indexUrl: '/site/opaque/project.index.json' });
      try {
        expect(withoutProgress(await call((t, url) => t.loadModel('ImportMeshAsync', url), model))).toEqual(withoutProgress(loose));
      } finally {
        await dispose();
      }
      const requests = siteRequests();
      expect(requests[0]).toBe('/site/opaque/project.index.json');
      expect(requests.slice(1).every((path) => /^\/site\/opaque\/bundles\/[0-9a-f]{64}\.awkb$/.test(path))).toBe(true);
    });

    test('reports byte progress through onProgress, ending at the file size', async () => {
      await register();
      try {
        const glb = site.index.files.find((file) => file.path === 'glb/CesiumMilkTruck.glb')!;
        const viaHook = (await call((t, url) => t.loadModel('ImportMeshAsync', url), `${LOOSE}glb/CesiumMilkTruck.glb`)) as {
          progress: { loaded: number; total: number; lengthComputable: boolean }[];
        };
        const viaPlugin = (await call(
          (t, path) => t.loadModel('ImportMeshAsync', path, { pluginExtension: '.awkb' }),
          'glb/CesiumMilkTruck.glb',
        )) as typeof viaHook;
        for (const { progress } of [viaHook, viaPlugin]) {
          expect(progress.length).toBeGreaterThan(0);
          expect(progress.at(-1)).toEqual({ loaded: glb.sizeBytes, total: glb.sizeBytes, lengthComputable: true });
          expect(progress.every((event, i) => i === 0 || event.loaded >= progress[i - 1]!.loaded)).toBe(true);
        }
      } finally {
        await dispose();
      }
    });
  });

  describe('textures and sounds', () => {
    testIf(WEBGL)(
      'new Texture(url), CubeTexture (six faces and .env) load from bundles with the sizes of a loose load (WebGL only)',
      async () => {
        const load = () =>
          Promise.all([
            call((t, url) => t.loadTexture(url), `${LOOSE}textures/coin.png`),
            call((t, url, extensions) => t.loadCube(url, extensions), `${LOOSE}textures/cube/sky`, FACES),
            call((t, url) => t.loadCube(url), `${LOOSE}textures/sky.env`),
          ]);
        const loose = await load();
        expect(loose[0]).toEqual({ width: 128, height: 128, ready: true });
        expect(loose[1]).toEqual({ width: 128, height: 128, ready: true, isCube: true });
        expect(loose[2]).toMatchObject({ ready: true, isCube: true });
        server.resetRequests();
        await register();
        try {
          expect(await load()).toEqual(loose);
        } finally {
          await dispose();
        }
        expectOnlyIndexAndBundles(siteRequests());
      },
    );

    testIf(WEBGL)(
      'a texture rebuilt after a lost WebGL context is requested by its URL again, and served from its bundle (WebGL only)',
      async () => {
        await register();
        server.resetRequests();
        try {
          expect(await call((t, url) => t.rebuildTexture(url), `${LOOSE}textures/coin.png`)).toEqual({
            width: 128,
            height: 128,
            ready: true,
          });
        } finally {
          await dispose();
        }
        const requests = siteRequests();
        expectOnlyIndexAndBundles(requests);
        // Read once for the load and again for the restore (no cache in this test): its bundle twice.
        expect(requests.filter((path) => path.endsWith('.awkb'))).toHaveLength(2);
      },
    );

    test('CreateSoundAsync, CreateStreamingSoundAsync and the legacy Sound play files from bundles', async () => {
      const urls = { static: `${LOOSE}audio/coin.ogg`, streaming: `${LOOSE}audio/theme-4.ogg`, legacy: `${LOOSE}audio/laser1.wav` };
      const loose = await call((t, urls) => t.sounds(urls), urls);
      expect(loose).toEqual({
        staticDuration: expect.any(Number),
        streamingDuration: expect.any(Number),
        streamingFrom: 'http:',
        legacyDuration: expect.any(Number),
      });
      expect((loose as { streamingDuration: number }).streamingDuration).toBeGreaterThan(20_000);
      server.resetRequests();
      await register();
      try {
        // The streaming sound's <audio> plays an object URL of the verified bytes.
        expect(await call((t, urls) => t.sounds(urls), urls)).toEqual({ ...(loose as object), streamingFrom: 'blob:' });
      } finally {
        await dispose();
      }
      expectOnlyIndexAndBundles(siteRequests());
    });
  });

  describe('failures, dispose and registering twice', () => {
    test('a damaged bundle rejects the load with an error naming the member', async () => {
      await register({ indexUrl: '/site/damaged/project.index.json', retry: { attempts: 1 } });
      try {
        for (const options of [{}, { pluginExtension: '.awkb' }]) {
          const outcome = (await call(
            (t, url, options) => t.loadModel('ImportMeshAsync', url, options),
            `${LOOSE}gltf/BoxTextured/BoxTextured.gltf`,
            options,
          )) as { error?: string };
          expect(outcome.error).toContain(DAMAGED_MEMBER);
          // A member that came in its bundle's answer fails as the bundle's; one that came by a
          // range of its own (a read is a load of one, SPEC §7 "Needed bytes") as a single member.
          expect(outcome.error).toMatch(/(Bundle|File)IntegrityError|E_(BUNDLE|FILE)_INTEGRITY/);
        }
      } finally {
        await dispose();
      }
    });

    test('dispose() removes every hook: the same URLs load loose again, and .awkb loads refuse', async () => {
      const url = `${LOOSE}gltf/BoxTextured/BoxTextured.gltf`;
      await register();
      server.resetRequests();
      await call((t, url) => t.loadModel('ImportMeshAsync', url), url);
      expect(siteRequests().filter((path) => path.startsWith('/site/loose/'))).toEqual([]);
      await dispose();
      server.resetRequests();
      const after = (await call((t, url) => t.loadModel('ImportMeshAsync', url), url)) as { meshes: unknown[] };
      expect(after.meshes.length).toBeGreaterThan(0);
      expect(siteRequests()).toEqual(
        expect.arrayContaining([
          '/site/loose/gltf/BoxTextured/BoxTextured.gltf',
          '/site/loose/gltf/BoxTextured/BoxTextured0.bin',
          '/site/loose/gltf/BoxTextured/CesiumLogoFlat.png',
        ]),
      );
      expect(await call((t) => t.hooks())).toEqual({ open: false, fetchAsync: false, modifiers: 0, streaming: 0 });
      const refused = (await call((t, url) => t.loadModel('ImportMeshAsync', url, { pluginExtension: '.awkb' }), url)) as { error: string };
      expect(refused.error).toContain('no live registration');
    });

    testIf(WEBGL)(
      'dispose() while a texture loads fails that load with a RequestAbortedError naming the path, logged once (WebGL only)',
      async () => {
        const messages: string[] = [];
        const listen = (message: { type(): string; text(): string }) => messages.push(`${message.type()}: ${message.text()}`);
        page.on('console', listen);
        try {
          await register();
          server.resetRequests();
          // The order the README once showed: new Texture(url), then dispose() at once.
          const outcome = (await call((t, url) => t.textureThenDispose(url, { waitForScene: false }), `${LOOSE}textures/coin.png`)) as {
            settled: boolean;
            loaded: boolean;
            exception?: { message: string };
          };
          expect(outcome).toMatchObject({ settled: true, loaded: false });
          // Babylon's error carries the adapter's statusText: the error's name, the path, and why.
          expect(outcome.exception?.message).toMatch(/RequestAbortedError \(E_ABORTED\)/);
          expect(outcome.exception?.message).toContain('could not serve textures/coin.png');
          expect(outcome.exception?.message).toContain('was disposed while it loaded');
          // Babylon shows its fallback texture and says nothing: the adapter logs the failure, once.
          expect(messages.filter((message) => message.includes('disposed while it loaded'))).toEqual([
            `error: awake-bundle: textures/coin.png: the awkb registration of ${server.origin}${INDEX} was disposed while it loaded; call dispose() once the loads that need it have finished`,
          ]);
          // Neither the bundle nor the loose file: the registration was gone before anything was fetched.
          expect(siteRequests()).toEqual([]);
        } finally {
          page.off('console', listen);
          await dispose();
        }
      },
    );

    testIf(WEBGL)(
      "the README's order, dispose() after await scene.whenReadyAsync(): the texture loaded from its bundle (WebGL only)",
      async () => {
        await register();
        server.resetRequests();
        expect(await call((t, url) => t.textureThenDispose(url, { waitForScene: true }), `${LOOSE}textures/coin.png`)).toEqual({
          settled: true,
          loaded: true,
          width: 128,
          height: 128,
        });
        const requests = siteRequests();
        expectOnlyIndexAndBundles(requests);
        expect(requests.filter((path) => path.endsWith('.awkb'))).toHaveLength(1);
      },
    );

    test('by default verified files go to the persistent browser cache: a later registration loads with the index request only', async () => {
      const url = `${LOOSE}gltf/CesiumMilkTruck/CesiumMilkTruck.gltf`;
      const loose = await call((t, url) => t.loadModel('ImportMeshAsync', url), url);
      await register({ cache: undefined });
      try {
        expect(withoutProgress(await call((t, url) => t.loadModel('ImportMeshAsync', url), url))).toEqual(withoutProgress(loose));
        await call((t) => t.registration.source.whenStored());
      } finally {
        await dispose();
      }
      server.resetRequests();
      await register({ cache: undefined });
      try {
        expect(withoutProgress(await call((t, url) => t.loadModel('ImportMeshAsync', url), url))).toEqual(withoutProgress(loose));
      } finally {
        await dispose();
      }
      expect(siteRequests()).toEqual([INDEX]);
    });

    test('registering the same index twice gives the same registration, and one dispose() ends it', async () => {
      expect(await call((t, options) => t.registerTwice(options), { indexUrl: INDEX, root: LOOSE })).toBe(true);
      const hooks = await call((t) => t.hooks());
      expect(hooks).toMatchObject({ open: true, fetchAsync: true, modifiers: 1 });
      await dispose();
      expect(await call((t) => t.hooks())).toEqual({ open: false, fetchAsync: false, modifiers: 0, streaming: 0 });
    });
  });
});
