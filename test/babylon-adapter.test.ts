/**
 * awake-bundle/babylon in real Chromium with Babylon 9 (WebGL on SwiftShader): models, textures,
 * cube textures and sounds loaded through every listed API from bundles, compared with a loose
 * load of the same URLs; only the index and the bundles on the network; a damaged bundle named;
 * `dispose()` gives Babylon its loose loads back.
 *
 * The registrations use `root: '/site/loose/'`: the very URLs that load loose files before
 * registering load from `/site/published/` bundles after it, so a request for a loose file shows.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { CHROMIUM_ARGS, chromiumExecutablePath, createProfile, removeProfile, startRepoServer, type RepoServer } from './helpers/browser';
import { BABYLON_PAGE, CUBE_FACES, DAMAGED_MEMBER, babylonSiteDir, publishSite, stageLoose, type BabylonSite } from './helpers/babylon-site';

let server: RepoServer;
let browser: Browser;
let profile: string;
let page: Page;
let site: BabylonSite;

const MODELS = ['gltf/BoxTextured/BoxTextured.gltf', 'gltf/CesiumMilkTruck/CesiumMilkTruck.gltf', 'glb/CesiumMilkTruck.glb', 'gltf/Box Textured/Box Textured.gltf'];
const LOOSE = '/site/loose/';
const INDEX = '/site/published/project.index.json';
const FACES = CUBE_FACES.map((face) => `_${face}.png`);

type Page_ = { babylonTest: any };
const call = <T>(fn: (t: any, ...args: any[]) => Promise<T> | T, ...args: unknown[]): Promise<T> =>
  page.evaluate((source, args) => new Function('t', 'args', `return (${source})(t, ...args)`)((window as unknown as Page_).babylonTest, args), fn.toString(), args) as Promise<T>;

beforeAll(async () => {
  const dir = babylonSiteDir();
  stageLoose(dir);
  server = await startRepoServer({ mounts: { '/site/': dir, '/page/': BABYLON_PAGE } });
  profile = createProfile();
  browser = await puppeteer.launch({ executablePath: chromiumExecutablePath(), args: [...CHROMIUM_ARGS, '--autoplay-policy=no-user-gesture-required', `--user-data-dir=${profile}`], headless: true, handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false });
  page = await browser.newPage();
  page.on('pageerror', (error) => console.error(`[page error] ${String(error)}`));
  page.on('console', (message) => { if (message.type() === 'error') console.error(`[console] ${message.text()}`); });
  await page.goto(`${server.origin}/page/index.html`, { waitUntil: 'load' });
  await page.waitForFunction(() => (window as { babylonReady?: boolean }).babylonReady === true, { timeout: 20_000 });
  // An .env made by Babylon itself from the six loose faces, published with the rest.
  const env = await call((t, url, extensions) => t.makeEnv(url, extensions), `${LOOSE}textures/cube/sky`, FACES);
  writeFileSync(join(dir, 'loose/textures/sky.env'), Buffer.from(env, 'base64'));
  site = publishSite(dir);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (profile) removeProfile(profile);
  await server?.close();
});

/** Requests below /site/ since the last reset, in order. */
function siteRequests(): string[] {
  return server.requests.filter((r) => r.path.startsWith('/site/')).map((r) => r.path);
}

function expectOnlyIndexAndBundles(requests: string[], indexUrl = INDEX): void {
  const bundles = new Set(site.index.bundles.map((bundle) => `/site/published/${bundle.url}`));
  expect(requests.filter((path) => path !== indexUrl && !bundles.has(path))).toEqual([]);
}

async function register(options: Record<string, unknown> = {}) {
  return call((t, options) => t.register(options), { indexUrl: INDEX, root: LOOSE, ...options });
}

async function dispose() {
  await call((t) => t.dispose());
}

const withoutProgress = ({ progress, ...rest }: { progress?: unknown }) => rest;

describe.each(['ImportMeshAsync', 'LoadAssetContainerAsync', 'AppendSceneAsync', 'SceneLoader.ImportMesh', 'SceneLoader.Append', 'SceneLoader.LoadAssetContainer', 'SceneLoader.ImportMeshAsync', 'SceneLoader.AppendAsync', 'SceneLoader.LoadAssetContainerAsync'])('%s', (api) => {
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
