/**
 * `awake-bundle/vite`, run as users run it: `vite build`, `vite` and `vite preview` in child
 * processes, in a project whose vite.config.mjs imports the plugin by its package name
 * (test/helpers/vite-project.ts).
 *
 * - `vite build` writes `<outDir>/published/` byte-identical to `npx awake-bundle <assets> --out`,
 *   with the defaults and with opaque ids, a URL prefix and a small target; a second build writes
 *   no bundle again; a folder the CLI refuses fails the build with the CLI's message.
 * - `vite` answers a formatVersion 2 index whose hashes match the files it serves, and lists a
 *   file's new hash once it changed on disk; the Phaser example game runs against it in Chromium.
 * - Every Vite in the peer range (5, 6, 7, 8; test/helpers/peer-versions.ts), each installed as
 *   the project's own `vite`: a build publishes what the CLI publishes and preloads the first
 *   load, and the dev server answers the loose index, its files and the recordLoads endpoint.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser';
import { importGraph } from './helpers/imports';
import { REPO, runCli } from './helpers/cli';
import { installedVersion, TESTED_VITES } from './helpers/peer-versions';
import {
  createViteProject,
  removeViteProjects,
  runVite,
  spawnVite,
  startVite,
  temporaryViteDir,
  type RunningVite,
  type ViteProject,
} from './helpers/vite-project';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** A few of the example assets: images, an atlas (json + png), a sound, a tilemap. */
const EXAMPLE_FILES = [
  'images/kenney/coin.png',
  'images/kenney/particle.png',
  'atlas/emoji/emoji.json',
  'atlas/emoji/emoji.png',
  'audio/kenney-platformer-kit/coin.ogg',
  'tilemap/tilemaps/simple-map.json',
];
const exampleAssets = () => Object.fromEntries(EXAMPLE_FILES.map((path) => [path, readFileSync(join(REPO, 'examples/assets', path))]));

/** Every file below `dir`, by relative path, with its bytes' SHA-256. */
function treeHashes(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()) {
    const path = join(dir, name);
    if (lstatSync(path).isFile()) files[name.split('\\').join('/')] = sha256(readFileSync(path));
  }
  return files;
}

/** The plugin's default grouping, as the CLI's flags (the CLI's own default is --group folder). */
const PLUGIN_DEFAULT_FLAGS = ['--group', 'auto'];

/** What the CLI publishes from the same folder with these flags. */
function publishWithCli(assets: string, flags: string[]): string {
  const out = join(temporaryViteDir('awkb-vite-cli-'), 'published');
  const result = runCli([assets, '--out', out, ...flags]);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return out;
}

function expectBuilt(project: ViteProject) {
  const build = runVite(project.dir, ['build']);
  expect({ code: build.code, output: build.output }).toEqual({ code: 0, output: build.output });
  return build;
}

afterAll(() => removeViteProjects());

describe('vite build', () => {
  test('with the default options, dist/published is what the CLI publishes with --group auto, byte for byte', () => {
    const project = createViteProject({ assets: exampleAssets(), plugin: { assets: 'assets' } });
    expectBuilt(project);
    const published = treeHashes(join(project.dir, 'dist/published'));
    expect(published).toEqual(treeHashes(publishWithCli(project.assets, PLUGIN_DEFAULT_FLAGS)));
    expect(Object.keys(published)).toContain('project.index.json');
    // The page was built as usual, beside it.
    expect(existsSync(join(project.dir, 'dist/index.html'))).toBe(true);
  });

  test('opaque ids with a salt, a URL prefix and a small target: several bundles, still identical to the CLI', () => {
    const project = createViteProject({
      assets: exampleAssets(),
      plugin: {
        assets: 'assets',
        output: 'game-data',
        opaqueIds: true,
        salt: 'harbour-7',
        urlPrefix: 'cdn/awkb',
        targetBundleBytes: Math.floor(0.01 * 1048576),
      },
    });
    expectBuilt(project);
    const published = treeHashes(join(project.dir, 'dist/game-data'));
    expect(published).toEqual(
      treeHashes(
        publishWithCli(project.assets, [
          ...PLUGIN_DEFAULT_FLAGS,
          '--opaque-ids',
          '--salt',
          'harbour-7',
          '--url-prefix',
          'cdn/awkb',
          '--target-mb',
          '0.01',
        ]),
      ),
    );
    const index = JSON.parse(readFileSync(join(project.dir, 'dist/game-data/project.index.json'), 'utf8'));
    expect(index.bundles.length).toBeGreaterThanOrEqual(4);
    expect(index.bundles.every((bundle: { url: string }) => bundle.url.startsWith('cdn/awkb/'))).toBe(true);
    expect(JSON.stringify(index)).not.toContain('emoji');
  });

  test("awkb-loads.json in Vite's root groups by its loads, the folder grouping for the rest: the CLI's --loads output", () => {
    const loads = {
      formatVersion: 1,
      loads: [{ name: 'title', paths: ['images/kenney/coin.png', 'audio/kenney-platformer-kit/coin.ogg', 'atlas/emoji/emoji.json'] }],
    };
    const project = createViteProject({
      assets: exampleAssets(),
      plugin: { assets: 'assets' },
      files: { 'awkb-loads.json': JSON.stringify(loads) },
    });
    expectBuilt(project);
    const published = join(project.dir, 'dist/published');
    expect(treeHashes(published)).toEqual(
      treeHashes(publishWithCli(project.assets, ['--loads', join(project.dir, 'awkb-loads.json'), '--group', 'folder'])),
    );
    const index = JSON.parse(readFileSync(join(published, 'project.index.json'), 'utf8')) as { files: { path: string; bundle: string }[] };
    const bundleOf = (path: string) => index.files.find((file) => file.path === path)!.bundle;
    expect(new Set(loads.loads[0]!.paths.map(bundleOf)).size).toBe(1);
    // Folder grouping for the rest: the atlas's PNG stays in folder:atlas, not with its JSON.
    expect(bundleOf('atlas/emoji/emoji.png')).not.toBe(bundleOf('atlas/emoji/emoji.json'));
    expect(bundleOf('images/kenney/particle.png')).not.toBe(bundleOf('images/kenney/coin.png'));
  });

  test('a second build writes no bundle again; a changed file costs only its own bundle', () => {
    const project = createViteProject({ assets: exampleAssets(), plugin: { assets: 'assets' } });
    const first = expectBuilt(project);
    expect(first.output).toMatch(/awake-bundle: .*: 4 bundles, 4 written, 0 unchanged/);
    const cacheRoot = join(project.dir, 'node_modules/.vite/awake-bundle');
    const [key] = readdirSync(cacheRoot);
    const cached = join(cacheRoot, key!, 'published/bundles');
    const before = bundleFiles(cached);

    const second = expectBuilt(project);
    expect(second.output).toMatch(/awake-bundle: .*: 4 bundles, 0 written, 4 unchanged/);
    // Not rewritten: the same files (inode) with the same modification times.
    expect(bundleFiles(cached)).toEqual(before);
    // Vite emptied dist/ and the bundles are there again: the cached files themselves (hard links).
    expect(treeHashes(join(project.dir, 'dist/published'))).toEqual(treeHashes(publishWithCli(project.assets, PLUGIN_DEFAULT_FLAGS)));
    expect(
      Object.fromEntries(Object.keys(before).map((name) => [name, lstatSync(join(project.dir, 'dist/published/bundles', name)).ino])),
    ).toEqual(Object.fromEntries(Object.entries(before).map(([name, file]) => [name, file.ino])));

    writeFileSync(join(project.assets, 'audio/kenney-platformer-kit/coin.ogg'), 'a new sound');
    const third = expectBuilt(project);
    expect(third.output).toMatch(/awake-bundle: .*: 4 bundles, 1 written, 3 unchanged/);
    expect(treeHashes(join(project.dir, 'dist/published'))).toEqual(treeHashes(publishWithCli(project.assets, PLUGIN_DEFAULT_FLAGS)));
    // The cache keeps only the bundles the index names.
    expect(Object.keys(bundleFiles(cached))).toHaveLength(4);
  });

  test('vite build --watch publishes again when an asset changes', async () => {
    const project = createViteProject({ assets: exampleAssets(), plugin: { assets: 'assets' } });
    const watching = spawnVite(project.dir, ['build', '--watch']);
    const published = (output: string) => output.match(/awake-bundle: published .*/g) ?? [];
    try {
      await watching.waitForOutput((output) => published(output).length === 1, 'first publish');
      expect(published(watching.output())[0]).toMatch(/4 bundles, 4 written, 0 unchanged/);
      // One change event: written beside the folder and moved in. A plain write truncates and then
      // writes, which the watcher may see as two changes; the second one's rebuild empties dist/
      // and could still be running when the watcher is closed below (CI saw that once).
      const changed = join(project.dir, 'coin.png.new');
      writeFileSync(changed, 'a new coin');
      renameSync(changed, join(project.assets, 'images/kenney/coin.png'));
      await watching.waitForOutput((output) => published(output).length === 2, 'publish after the change');
      expect(published(watching.output())[1]).toMatch(/4 bundles, 1 written, 3 unchanged/);
    } finally {
      await watching.close();
    }
    // Every build the watcher started has published: none was cut off by the close.
    expect(watching.output().match(/^build started/gm)).toHaveLength(published(watching.output()).length);
    expect(treeHashes(join(project.dir, 'dist/published'))).toEqual(treeHashes(publishWithCli(project.assets, PLUGIN_DEFAULT_FLAGS)));
  });

  test('with emptyOutDir: false, a build over an earlier one keeps its published files and still matches the CLI', () => {
    const project = createViteProject({ assets: exampleAssets(), plugin: { assets: 'assets' }, config: 'build: { emptyOutDir: false },' });
    expectBuilt(project);
    const index = join(project.dir, 'dist/published/project.index.json');
    writeFileSync(join(project.assets, 'images/kenney/coin.png'), 'a new coin');
    expect(expectBuilt(project).output).toMatch(/4 bundles, 1 written, 3 unchanged/);
    expect(
      JSON.parse(readFileSync(index, 'utf8')).files.find((file: { path: string }) => file.path === 'images/kenney/coin.png').sha256,
    ).toBe(sha256(Buffer.from('a new coin')));
    // The bundle the new index no longer names stays, as the CLI leaves it (players mid-load).
    const published = treeHashes(join(project.dir, 'dist/published'));
    const cli = treeHashes(publishWithCli(project.assets, PLUGIN_DEFAULT_FLAGS));
    expect(published).toEqual(expect.objectContaining(cli));
    expect(Object.keys(published).length).toBe(Object.keys(cli).length + 1);
  });

  test('an outDir inside the assets folder is left out of the input, as the CLI leaves out its --out', () => {
    const project = createViteProject({
      assets: exampleAssets(),
      plugin: { assets: 'assets' },
      config: "build: { outDir: 'assets/site', emptyOutDir: false },",
    });
    expectBuilt(project);
    // A second build sees the first one's output inside the assets folder, and must not publish it.
    expectBuilt(project);
    const index = JSON.parse(readFileSync(join(project.dir, 'assets/site/published/project.index.json'), 'utf8')) as {
      files: { path: string }[];
    };
    expect(index.files.map((file) => file.path).sort()).toEqual([...EXAMPLE_FILES].sort());
  });

  test("an assets folder inside public/ is published, with a warning after Vite's own lines that Vite copies it loose as well", () => {
    const project = createViteProject({ plugin: { assets: 'public/assets' }, files: { 'public/assets/images/coin.png': 'a coin' } });
    const build = expectBuilt(project);
    const warning = build.output.indexOf("awake-bundle: warning: the assets folder public/assets lies inside Vite's publicDir (public)");
    expect(warning).toBeGreaterThanOrEqual(0);
    // Where it is seen: after Vite's banner and the list of what it built, beside the publish summary.
    expect(build.output.lastIndexOf('building')).toBeLessThan(warning);
    expect(build.output.indexOf('awake-bundle: published public/assets into dist/published')).toBeLessThan(warning);
    expect(build.output).toContain("or set assetsInPublicDir: 'fail' to fail the build");
    expect(existsSync(join(project.dir, 'dist/published/project.index.json'))).toBe(true);
  });

  test("assetsInPublicDir: 'fail' fails the build at once, naming the folder, with nothing written", () => {
    const project = createViteProject({
      plugin: { assets: 'public/assets', assetsInPublicDir: 'fail' },
      files: { 'public/assets/images/coin.png': 'a coin' },
    });
    const build = runVite(project.dir, ['build']);
    expect(build.code).not.toBe(0);
    expect(build.output).toContain("awake-bundle: the assets folder public/assets lies inside Vite's publicDir (public)");
    expect(existsSync(join(project.dir, 'dist/published/project.index.json'))).toBe(false);
  });

  test("a link that leaves the assets folder fails the build with the CLI's message naming it", () => {
    const project = createViteProject({ assets: exampleAssets(), plugin: { assets: 'assets' } });
    writeFileSync(join(project.dir, 'secret.txt'), 'not an asset');
    symlinkSync('../../secret.txt', join(project.assets, 'images/leak.txt'));
    const cli = runCli([project.assets, '--out', join(temporaryViteDir(), 'out')]);
    expect(cli.code).toBe(1);
    const message = cli.stderr.replace(/^awake-bundle: /, '').trim();
    expect(message).toContain(join(project.assets, 'images/leak.txt'));
    const build = runVite(project.dir, ['build']);
    expect(build.code).not.toBe(0);
    expect(build.output).toContain(message);
    expect(existsSync(join(project.dir, 'dist/published/project.index.json'))).toBe(false);
  });

  test("an unsafe file name fails the build with the CLI's message naming it", () => {
    const project = createViteProject({ assets: { ...exampleAssets(), 'images/back\\slash.png': 'x' }, plugin: { assets: 'assets' } });
    const cli = runCli([project.assets, '--out', join(temporaryViteDir(), 'out')]);
    expect(cli.code).toBe(1);
    const message = cli.stderr.replace(/^awake-bundle: /, '').trim();
    expect(message).toContain('images/back\\\\slash.png');
    const build = runVite(project.dir, ['build']);
    expect(build.code).not.toBe(0);
    expect(build.output).toContain(message);
  });

  test('a wrong option fails the build naming the option', () => {
    const project = createViteProject({ assets: exampleAssets(), plugin: { assets: 'assets', targetBundleBytes: -1 } });
    const build = runVite(project.dir, ['build']);
    expect(build.code).not.toBe(0);
    expect(build.output).toContain('targetBundleBytes');
  });

  test('serviceWorker: true also emits awake-bundle-sw.js, as `awake-bundle sw` writes it', () => {
    const project = createViteProject({ assets: exampleAssets(), plugin: { assets: 'assets', serviceWorker: true } });
    expectBuilt(project);
    expect(readFileSync(join(project.dir, 'dist/awake-bundle-sw.js'), 'utf8')).toBe(workerFromCli('published/project.index.json'));
    expect(existsSync(join(project.dir, 'dist/published/project.index.json'))).toBe(true);
  });

  test('vite preview serves the built index and bundles; recordLoads, a development option, exists nowhere in the build', async () => {
    const project = createViteProject({ assets: exampleAssets(), plugin: { assets: 'assets', recordLoads: true } });
    expectBuilt(project);
    const preview = await startVite(project.dir, 'preview');
    try {
      const indexUrl = new URL('published/project.index.json', preview.url);
      const answer = await fetch(indexUrl);
      // No ask for recorded loads, and no endpoint to post them to.
      expect(answer.headers.get('x-awake-bundle-loads')).toBeNull();
      const posted = await fetch(new URL('__awake-bundle/loads', preview.url), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{"formatVersion":1,"loads":[{"name":"a","paths":["images/kenney/coin.png"]}]}',
      });
      expect(posted.status).toBeGreaterThanOrEqual(400);
      expect(existsSync(join(project.dir, 'awkb-loads.json'))).toBe(false);
      const index = await answer.json();
      expect(index.formatVersion).toBe(3);
      for (const bundle of index.bundles) {
        const bytes = new Uint8Array(await (await fetch(new URL(bundle.url, indexUrl))).arrayBuffer());
        expect(sha256(bytes)).toBe(bundle.sha256);
      }
    } finally {
      await preview.close();
    }
  });
});

/** What `awake-bundle sw --index <index>` writes. */
function workerFromCli(index: string): string {
  const site = temporaryViteDir('awkb-vite-sw-');
  const result = runCli(['sw', '--out', site, '--index', index]);
  expect(result.code).toBe(0);
  return readFileSync(join(site, 'awake-bundle-sw.js'), 'utf8');
}

/** Each bundle file in `dir` with what says it was not written again. */
function bundleFiles(dir: string): Record<string, { ino: number; mtimeMs: number }> {
  const files: Record<string, { ino: number; mtimeMs: number }> = {};
  for (const name of readdirSync(dir)) {
    const info = lstatSync(join(dir, name));
    files[name] = { ino: info.ino, mtimeMs: info.mtimeMs };
  }
  return files;
}

interface LooseIndexJson {
  formatVersion: number;
  files: { path: string; sizeBytes: number; sha256: string; url: string }[];
}

/** The index the dev server answers, each file fetched at its URL and checked against it. */
async function fetchDevIndex(indexUrl: URL): Promise<LooseIndexJson> {
  const response = await fetch(indexUrl);
  expect(response.status).toBe(200);
  return (await response.json()) as LooseIndexJson;
}

describe('vite (the dev server)', () => {
  let project: ViteProject;
  let dev: RunningVite;

  beforeAll(async () => {
    project = createViteProject({ assets: exampleAssets(), plugin: { assets: 'assets', serviceWorker: true }, config: "base: '/game/'," });
    dev = await startVite(project.dir, 'dev');
  });

  afterAll(async () => {
    await dev?.close();
  });

  test("answers a formatVersion 2 index under Vite's base, whose files it serves with matching hashes", async () => {
    expect(new URL(dev.url).pathname).toBe('/game/');
    const indexUrl = new URL('published/project.index.json', dev.url);
    const index = await fetchDevIndex(indexUrl);
    expect(index.formatVersion).toBe(2);
    expect(index.files.map((file) => file.path)).toEqual([...EXAMPLE_FILES].sort());
    for (const file of index.files) {
      const onDisk = readFileSync(join(project.assets, file.path));
      expect({ path: file.path, sha256: file.sha256, sizeBytes: file.sizeBytes }).toEqual({
        path: file.path,
        sha256: sha256(onDisk),
        sizeBytes: onDisk.length,
      });
      const served = new Uint8Array(await (await fetch(new URL(file.url, indexUrl))).arrayBuffer());
      expect({ path: file.path, sha256: sha256(served) }).toEqual({ path: file.path, sha256: file.sha256 });
    }
  });

  test('serves the service worker at the URL it has in the build (under the base)', async () => {
    const response = await fetch(new URL('awake-bundle-sw.js', dev.url));
    expect(response.headers.get('content-type')).toMatch(/javascript/);
    expect(await response.text()).toBe(workerFromCli('published/project.index.json'));
  });

  test('after a file changes on disk, the next index lists its new hash', async () => {
    const indexUrl = new URL('published/project.index.json', dev.url);
    const path = 'images/kenney/particle.png';
    const before = (await fetchDevIndex(indexUrl)).files.find((file) => file.path === path)!;
    const changed = Buffer.from('a particle, redrawn');
    writeFileSync(join(project.assets, path), changed);
    // The watcher sees the change within moments; poll the index (bounded), never sleep blindly.
    let entry = before;
    for (let attempt = 0; attempt < 200 && entry.sha256 === before.sha256; attempt++) {
      await new Promise((done) => setTimeout(done, 50));
      entry = (await fetchDevIndex(indexUrl)).files.find((file) => file.path === path)!;
    }
    expect({ sha256: entry.sha256, sizeBytes: entry.sizeBytes }).toEqual({ sha256: sha256(changed), sizeBytes: changed.length });
    const served = new Uint8Array(await (await fetch(new URL(entry.url, indexUrl))).arrayBuffer());
    expect(sha256(served)).toBe(sha256(changed));
  });
});

describe('the Phaser example game on the Vite dev server, in Chromium', () => {
  let dev: RunningVite;
  let chromium: LaunchedBrowser;
  let project: ViteProject;

  beforeAll(async () => {
    // The example's own code (examples/phaser/src/main.ts), unchanged: Vite compiles it; its
    // `this.load.setPath('published/'); this.load.awkbIndex('assets', 'project.index.json')`
    // meets the plugin's loose index of examples/assets.
    // The example's page is html-webpack-plugin's template (no script of its own): Vite's page gets the module.
    const template = readFileSync(join(REPO, 'examples/phaser/index.html'), 'utf8');
    const page = template.replace(
      '</body>',
      `<script type="module" src="/@fs${join(REPO, 'examples/phaser/src/main.ts')}"></script>\n</body>`,
    );
    if (page === template) throw new Error('examples/phaser/index.html has no </body>');
    project = createViteProject({
      plugin: { assets: join(REPO, 'examples/assets'), recordLoads: true },
      indexHtml: page,
      // As the example's webpack config: awake-bundle/phaser is this repository's build.
      config: `resolve: { alias: { 'awake-bundle/phaser': ${JSON.stringify(join(REPO, 'dist/adapters/phaser/index.js'))} } }, server: { fs: { allow: ['.', ${JSON.stringify(REPO)}] } }, optimizeDeps: { include: ['phaser'] },`,
    });
    // Phaser installed in the game's project, as users have it.
    symlinkSync(join(REPO, 'node_modules/phaser'), join(project.dir, 'node_modules/phaser'), 'dir');
    dev = await startVite(project.dir, 'dev');
    chromium = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await chromium?.close();
    await dev?.close();
  });

  test('the game runs to its first frame, every asset read through the loose index', async () => {
    const indexUrl = new URL('published/project.index.json', dev.url);
    const index = await fetchDevIndex(indexUrl);
    const page = await chromium.browser.newPage();
    const requested: string[] = [];
    const failed: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requested.push(new URL(request.url()).pathname));
    // The recorded loads' post (recordLoads: a keepalive request after the scene's load) is
    // checked by the recorded-loads tests; a machine under load may still have it in flight here.
    page.on('requestfailed', (request) => {
      if (!request.url().endsWith('/__awake-bundle/loads')) failed.push(`${request.url()} (${request.failure()?.errorText})`);
    });
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    page.on('pageerror', (error) => problems.push(String(error)));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    await page.goto(dev.url, { waitUntil: 'load' });
    await page
      .waitForFunction(() => (window as { exampleReady?: unknown }).exampleReady !== undefined, { timeout: 60_000 })
      .catch((error: Error) => {
        throw new Error(
          `the game did not reach its first frame: ${error.message}\npage: ${JSON.stringify({ problems, failed })}\nvite:\n${dev.output()}`,
        );
      });
    expect(await page.evaluate(() => (window as { exampleReady?: unknown }).exampleReady)).toEqual({
      textures: 7,
      emojiFrames: 24,
      mapLayers: 3,
      sounds: 3,
      indexFiles: index.files.length,
    });
    expect({ problems, failed }).toEqual({ problems: [], failed: [] });
    // The index, then the files the scene loads, each at the URL the index gives it (below
    // /published/files/): none at the URL the game names (/published/<path>).
    const published = requested.filter((path) => path.startsWith('/published/'));
    expect(published[0]).toBe('/published/project.index.json');
    const listed = new Set(index.files.map((file) => new URL(file.url, indexUrl).pathname));
    const files = published.slice(1);
    expect(files.filter((path) => !listed.has(path))).toEqual([]);
    for (const path of [
      'tilemap/tilemaps/simple-map.json',
      'atlas/emoji/emoji.png',
      'atlas/emoji/emoji.json',
      'images/kenney/particle.png',
      'audio/superpowers/theme-4.ogg',
    ]) {
      expect(files).toContain(`/published/files/${path}`);
    }

    // recordLoads: the page posted its scene's load (after the loader's complete) to the dev
    // server, which wrote awkb-loads.json beside the config: the load is named by the scene key,
    // with every file the scene read.
    const loadsFile = join(project.dir, 'awkb-loads.json');
    for (let attempt = 0; attempt < 200 && !existsSync(loadsFile); attempt++) await new Promise((done) => setTimeout(done, 50));
    const recorded = JSON.parse(readFileSync(loadsFile, 'utf8'));
    const read = files.map((path) => decodeURIComponent(path.slice('/published/files/'.length)));
    expect(recorded.formatVersion).toBe(1);
    expect(recorded.loads.map((load: { name: string }) => load.name)).toEqual(['preload']);
    expect([...recorded.loads[0].paths].sort()).toEqual([...new Set(read)].sort());
    expect(requested).toContain('/__awake-bundle/loads');

    // A second post (another play-through) merges in, first use first.
    const posted = await fetch(new URL('__awake-bundle/loads', dev.url), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        formatVersion: 1,
        loads: [
          { name: 'harbour', paths: ['images/kenney/coin.png'] },
          { name: 'preload', paths: ['images/kenney/coin.png', recorded.loads[0].paths[0]] },
        ],
      }),
    });
    expect(posted.status).toBe(204);
    expect(JSON.parse(readFileSync(loadsFile, 'utf8'))).toEqual({
      formatVersion: 1,
      loads: [
        { name: 'preload', paths: [...recorded.loads[0].paths, 'images/kenney/coin.png'] },
        { name: 'harbour', paths: ['images/kenney/coin.png'] },
      ],
    });
  }, 120_000);
});

/**
 * The peer range, tested: each Vite major of package.json's `peerDependencies.vite` runs the
 * plugin as the project's own `vite` (a link to this repository's alias, e.g. node_modules/vite5,
 * which resolves its own esbuild and Rollup). One build and one dev server each: the other tests
 * above run on the devDependency (Vite 8).
 */
describe.each(TESTED_VITES)("Vite %s (major %d) as the project's vite", (alias, major) => {
  const loads = { formatVersion: 1, loads: [{ name: 'title', paths: ['images/kenney/coin.png', 'atlas/emoji/emoji.json'] }] };
  let project: ViteProject;

  beforeAll(() => {
    project = createViteProject({
      assets: exampleAssets(),
      plugin: { assets: 'assets', recordLoads: true },
      config: "base: '/game/',",
      files: { 'awkb-loads.json': JSON.stringify(loads) },
      vite: alias,
    });
  });

  test("vite build publishes what the CLI publishes, and the built page preloads the index and the first load's bundles", () => {
    const version = installedVersion(alias);
    expect(version.split('.')[0]).toBe(String(major));
    const build = expectBuilt(project);
    // This Vite ran the build (it prints its version), and the plugin published.
    expect(build.output).toContain(`vite v${version} building`);
    expect(build.output).toMatch(/awake-bundle: published assets into dist\/published: \d+ bundles, \d+ written/);
    const published = join(project.dir, 'dist/published');
    expect(treeHashes(published)).toEqual(
      treeHashes(publishWithCli(project.assets, ['--loads', join(project.dir, 'awkb-loads.json'), '--group', 'folder'])),
    );
    const index = JSON.parse(readFileSync(join(published, 'project.index.json'), 'utf8')) as {
      files: { path: string; bundle: string }[];
      bundles: { sha256: string; url: string }[];
    };
    const firstLoad = [...new Set(loads.loads[0]!.paths.map((path) => index.files.find((file) => file.path === path)!.bundle))];
    const expected = [
      '/game/published/project.index.json',
      ...firstLoad.map((sha) => `/game/published/${index.bundles.find((bundle) => bundle.sha256 === sha)!.url}`),
    ];
    const html = readFileSync(join(project.dir, 'dist/index.html'), 'utf8');
    const links = [...html.matchAll(/<link rel="preload" as="fetch" crossorigin(?:="")? href="([^"]+)"( data-awkb-index(?:="")?)?>/g)];
    expect(links.map((match) => match[1])).toEqual(expected);
    // The index's link is marked, for the adapters to ask for it as the page is parsed (core/read/open/early-index.ts); no other.
    expect(links.map((match) => match[2] !== undefined)).toEqual(expected.map((_, i) => i === 0));
  });

  test('vite (the dev server) answers the loose index under the base, its files, and the recordLoads endpoint', async () => {
    const dev = await startVite(project.dir, 'dev');
    try {
      expect(dev.output()).toContain(`VITE v${installedVersion(alias)}`);
      const indexUrl = new URL('published/project.index.json', dev.url);
      const answer = await fetch(indexUrl);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('x-awake-bundle-loads')).toBe('/game/__awake-bundle/loads');
      const index = (await answer.json()) as LooseIndexJson;
      expect(index.formatVersion).toBe(2);
      expect(index.files.map((file) => file.path)).toEqual([...EXAMPLE_FILES].sort());
      const coin = index.files.find((file) => file.path === 'images/kenney/coin.png')!;
      const served = new Uint8Array(await (await fetch(new URL(coin.url, indexUrl))).arrayBuffer());
      expect(sha256(served)).toBe(coin.sha256);
      const posted = await fetch(new URL('__awake-bundle/loads', dev.url), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ formatVersion: 1, loads: [{ name: 'level', paths: ['tilemap/tilemaps/simple-map.json'] }] }),
      });
      expect(posted.status).toBe(204);
      expect(JSON.parse(readFileSync(join(project.dir, 'awkb-loads.json'), 'utf8'))).toEqual({
        formatVersion: 1,
        loads: [...loads.loads, { name: 'level', paths: ['tilemap/tilemaps/simple-map.json'] }],
      });
    } finally {
      await dev.close();
    }
  });
});

describe('awake-bundle/vite as a package entry', () => {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));

  test('is exported with its declarations; Vite is an optional peer dependency', () => {
    expect(pkg.exports['./vite']).toEqual({ types: './dist/integrations/vite/index.d.ts', default: './dist/integrations/vite/index.js' });
    for (const file of Object.values<string>(pkg.exports['./vite'])) expect(existsSync(join(REPO, file))).toBe(true);
    expect(pkg.typesVersions['*'].vite).toEqual(['./dist/integrations/vite/index.d.ts']);
    expect(pkg.files).toContain('dist/integrations');
    expect(pkg.peerDependenciesMeta.vite.optional).toBe(true);
    expect(pkg.devDependencies.vite).toBeDefined();
  });

  test('it loads nothing of Vite at run time (only its types), and the core and the node entry never reach it', () => {
    const plugin = importGraph(join(REPO, 'dist/integrations/vite/index.js'));
    expect([...plugin.bare].filter((name) => !name.startsWith('node:') && !name.startsWith('@noble/hashes'))).toEqual([]);
    for (const entry of ['dist/core/index.js', 'dist/core/node/index.js']) {
      const graph = importGraph(join(REPO, entry));
      expect({ entry, bare: [...graph.bare].filter((name) => name === 'vite' || name.startsWith('vite/')) }).toEqual({ entry, bare: [] });
      expect({ entry, integrations: [...graph.files].filter((file) => file.includes(`${sep}integrations${sep}`)) }).toEqual({
        entry,
        integrations: [],
      });
    }
  });
});
