/**
 * Preload at build: the webpack and Vite plugins add `<link rel="preload" as="fetch"
 * crossorigin>` for the index and the first load's bundles to the built HTML (Vite's
 * `transformIndexHtml`; html-webpack-plugin's hooks when it is in the build), and the browser hands
 * the reader the preloaded responses: the server sees one request for each. The links come after
 * the page's scripts, so the script is asked for first. Built as users build,
 * served from 127.0.0.1, run in Chromium.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { launchBrowser, startRepoServer, type LaunchedBrowser, type RepoServer } from './helpers/browser';
import { REPO, temporaryDir } from './helpers/cli';
import { writeTree } from './helpers/trees';
import { createViteProject, removeViteProjects, runVite } from './helpers/vite-project';
import { WEBPACK_CLI, WEBPACK_PLUGIN } from './helpers/webpack-project';

const ASSET_FILES = [
  'images/kenney/coin.png',
  'audio/kenney-platformer-kit/coin.ogg',
  'atlas/emoji/emoji.json',
  'atlas/emoji/emoji.png',
  'images/kenney/particle.png',
];
const assets = () => Object.fromEntries(ASSET_FILES.map((path) => [path, readFileSync(join(REPO, 'examples/assets', path))]));
/** The first load reads two files of one bundle; the rest are grouped by folder. */
const LOADS = {
  formatVersion: 1,
  loads: [
    { name: 'title', paths: ['images/kenney/coin.png', 'audio/kenney-platformer-kit/coin.ogg'] },
    { name: 'level', paths: ['atlas/emoji/emoji.json'] },
  ],
};

/** The game: opens the index the page preloaded, reads the first load's files, says how it went. */
const GAME = (indexUrl: string) => `import { IndexedAssetSource, sha256Hex } from 'awake-bundle';
const source = await IndexedAssetSource.open({ indexUrl: ${JSON.stringify(indexUrl)}, cache: null });
const paths = ${JSON.stringify(LOADS.loads[0]!.paths)};
window.gameDone = await Promise.all(paths.map(async (path) => sha256Hex(await source.read(path))));
`;

interface Built {
  html: string;
  index: { bundles: { sha256: string; url: string }[]; files: { path: string; sha256: string; bundle: string }[] };
}

/** The hrefs of `<link rel="preload" as="fetch" crossorigin>` in `html` (attributes quoted or not, as minifiers leave them). */
function preloads(html: string): string[] {
  const attribute = (tag: string, name: string) => new RegExp(`\\s${name}(?:=(?:"([^"]*)"|([^\\s>"]+)))?`).exec(tag);
  const value = (tag: string, name: string) => {
    const match = attribute(tag, name);
    return match ? (match[1] ?? match[2] ?? '') : undefined;
  };
  return [...html.matchAll(/<link\b[^>]*>/g)]
    .map((match) => match[0])
    .filter((tag) => value(tag, 'rel') === 'preload' && value(tag, 'as') === 'fetch' && value(tag, 'crossorigin') !== undefined)
    .map((tag) => value(tag, 'href')!);
}

/** The hrefs of the preload links marked `data-awkb-index`. */
function marked(html: string): string[] {
  return [...html.matchAll(/<link\b[^>]*>/g)]
    .map((match) => match[0])
    .filter((tag) => /\sdata-awkb-index(?:[\s=>])/.test(tag))
    .map((tag) => /\shref=(?:"([^"]*)"|([^\s>"]+))/.exec(tag)!)
    .map((match) => match[1] ?? match[2]!);
}

let browser: LaunchedBrowser;
let server: RepoServer;

beforeAll(async () => {
  server = await startRepoServer();
  browser = await launchBrowser({ kind: 'chromium' });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  removeViteProjects();
});

/** Serves `dist` at `/<name>/`, opens its index.html, waits for the game; the requests it made below the mount. */
async function runBuiltPage(name: string, dist: string, built: Built) {
  server.mount(`/${name}/`, dist);
  server.resetRequests();
  const page = await browser.browser.newPage();
  try {
    await page.goto(`${server.origin}/${name}/index.html`, { waitUntil: 'load' });
    await page.waitForFunction(() => (window as { gameDone?: unknown }).gameDone !== undefined, { timeout: 30_000 });
    const shas = await page.evaluate(() => (window as unknown as { gameDone: string[] }).gameDone);
    expect(shas).toEqual(LOADS.loads[0]!.paths.map((path) => built.index.files.find((file) => file.path === path)!.sha256));
  } finally {
    await page.close();
  }
  return server.requests.map((r) => r.path).filter((path) => path.startsWith(`/${name}/published/`));
}

/**
 * The links come after the page's scripts (at the end of the body): the browser asks for the
 * script first, which has to run before anything uses the index or a bundle; over HTTP/1.1 a link
 * ahead of it took a connection the browser had open and made the script wait for a new one. A
 * meta in the head says the links follow (core/read/open/page-preloads.ts `documentParsed`).
 */
function expectPreloadsAfterScripts(html: string): void {
  const scripts = [...html.matchAll(/<script\b/g)].map((match) => match.index!);
  // rel="preload" only: Vite adds `modulepreload` links for the game's own chunks (a name like
  // `preload-helper-….js` among them), which belong with the scripts.
  const links = [...html.matchAll(/<link\b[^>]*\srel=(?:"preload"|preload\b)[^>]*>/g)].map((match) => match.index!);
  expect(scripts.length).toBeGreaterThan(0);
  expect(links.length).toBeGreaterThan(0);
  expect(Math.min(...links)).toBeGreaterThan(Math.max(...scripts));
  expect(Math.min(...links)).toBeGreaterThan(html.indexOf('<body'));
  // The head says so before any script: a reader opened by a blocking script waits for the parse only then.
  const marker = html.search(/<meta\b[^>]*\sname=(?:"awake-bundle-preload"|awake-bundle-preload\b)/);
  expect(marker).toBeGreaterThan(-1);
  expect(marker).toBeLessThan(Math.min(...scripts));
  expect(marker).toBeLessThan(html.indexOf('<body'));
}

function expectPreloadsUsed(requests: string[], prefix: string, built: Built, hrefs: string[], html: string): void {
  const bundle = built.index.bundles.find(
    (b) => b.sha256 === built.index.files.find((file) => file.path === LOADS.loads[0]!.paths[0])!.bundle,
  )!;
  // The index, then the first load's bundle (both files are in it): nothing else, nothing twice.
  expect(hrefs).toEqual([`${prefix}published/project.index.json`, `${prefix}published/${bundle.url}`]);
  // The index's link alone is marked: the adapters ask for it as the page is parsed (core/read/open/early-index.ts).
  expect(marked(html)).toEqual([`${prefix}published/project.index.json`]);
  const counts = new Map<string, number>();
  for (const path of requests) counts.set(path, (counts.get(path) ?? 0) + 1);
  for (const href of hrefs) expect(counts.get(new URL(href, 'http://x/').pathname)).toBe(1);
  expect([...counts.values()].every((count) => count === 1)).toBe(true);
}

test("vite build: the built index.html preloads the index and the first load's bundle, and the page uses them (one request each)", async () => {
  const project = createViteProject({
    assets: assets(),
    plugin: { assets: 'assets' },
    config: "base: '/vite-game/',",
    files: { 'awkb-loads.json': JSON.stringify(LOADS), 'main.js': GAME('/vite-game/published/project.index.json') },
  });
  const build = runVite(project.dir, ['build']);
  expect(build.code).toBe(0);
  const dist = join(project.dir, 'dist');
  const built: Built = {
    html: readFileSync(join(dist, 'index.html'), 'utf8'),
    index: JSON.parse(readFileSync(join(dist, 'published/project.index.json'), 'utf8')),
  };
  const hrefs = preloads(built.html);
  expectPreloadsAfterScripts(built.html);
  expectPreloadsUsed(await runBuiltPage('vite-game', dist, built), '/vite-game/', built, hrefs, built.html);
}, 180_000);

// html-webpack-plugin's default (`defer`) runs the game after the page is parsed. A `blocking`
// script runs before the parser reaches the links after it, and the game opens its source at once
// (top-level await): the reader waits for the parse, else its fetch would take the preloaded
// response and the link, parsed next, would fetch the index and the bundle again.
test.each(['defer', 'blocking'])(
  "webpack with html-webpack-plugin (scriptLoading: '%s'): the built page preloads the index and the first load's bundle, and uses them (one request each)",
  async (scriptLoading) => {
    const name = `webpack-game-${scriptLoading}`;
    const dir = temporaryDir('awkb-webpack-preload-');
    writeTree(join(dir, 'assets'), assets());
    writeFileSync(join(dir, 'awkb-loads.json'), JSON.stringify(LOADS));
    mkdirSync(join(dir, 'src'), { recursive: true });
    writeFileSync(join(dir, 'src/main.js'), GAME(`/${name}/published/project.index.json`));
    const config = join(dir, 'webpack.config.mjs');
    writeFileSync(
      config,
      [
        `import { AwakeBundlePlugin } from ${JSON.stringify(pathToFileURL(WEBPACK_PLUGIN).href)};`,
        `import HtmlWebpackPlugin from ${JSON.stringify(pathToFileURL(join(REPO, 'node_modules/html-webpack-plugin/index.js')).href)};`,
        'export default {',
        "  mode: 'production',",
        `  context: ${JSON.stringify(dir)},`,
        "  entry: './src/main.js',",
        `  output: { path: ${JSON.stringify(join(dir, 'dist'))}, publicPath: '/${name}/', clean: true },`,
        `  resolve: { alias: { 'awake-bundle': ${JSON.stringify(join(REPO, 'dist/core/index.js'))} } },`,
        '  experiments: { topLevelAwait: true },',
        `  plugins: [new HtmlWebpackPlugin({ scriptLoading: '${scriptLoading}' }), new AwakeBundlePlugin({ assets: 'assets' })],`,
        "  stats: 'errors-warnings',",
        '};',
        '',
      ].join('\n'),
    );
    const build = spawnSync(process.execPath, [WEBPACK_CLI, '--config', config], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(`${build.stdout}${build.stderr}`).not.toMatch(/ERROR/);
    expect(build.status).toBe(0);
    const dist = join(dir, 'dist');
    const built: Built = {
      html: readFileSync(join(dist, 'index.html'), 'utf8'),
      index: JSON.parse(readFileSync(join(dist, 'published/project.index.json'), 'utf8')),
    };
    const hrefs = preloads(built.html);
    expectPreloadsAfterScripts(built.html);
    if (scriptLoading === 'blocking') expect(built.html).toMatch(/<script src=[^>]*main\.js"?><\/script>/);
    expectPreloadsUsed(await runBuiltPage(name, dist, built), `/${name}/`, built, hrefs, built.html);
  },
  180_000,
);
