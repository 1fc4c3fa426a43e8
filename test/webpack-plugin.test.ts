/**
 * `awake-bundle/webpack`: a small project built with webpack 5 (webpack-cli, as users run it)
 * publishes its asset folder into the build output byte for byte as the CLI does, writes no
 * bundle again on the next build, fails the build naming an unsafe input; `webpack serve`
 * answers the same index URL with a loose index that follows the files on disk, on each
 * webpack-dev-server of the peer range (4 and 5; test/helpers/peer-versions.ts).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, runCli, temporaryDir } from './helpers/cli';
import { importGraph } from './helpers/imports';
import { seededBytes, sha256Hex, writeTree } from './helpers/trees';
import { installedVersion, TESTED_WEBPACK_DEV_SERVERS } from './helpers/peer-versions';
import { filesBelow, runWebpack, startWebpackServe, WEBPACK_PLUGIN, writeWebpackProject } from './helpers/webpack-project';

/** A game's asset folder: root files, folders two levels deep, a repeated content, sizes that split at a small target. */
function writeAssets(dir: string): void {
  writeTree(dir, {
    'awake.project.json': '{"name":"a game"}\n',
    'art/hero.png': seededBytes(30_000, 1),
    'art/hero-copy.png': seededBytes(30_000, 1),
    'art/tiles/grass.png': seededBytes(50_000, 2),
    'art/tiles/water.png': seededBytes(20_000, 3),
    'audio/theme.ogg': seededBytes(90_000, 4),
    'levels/1 first.json': '{"tiles":[1,2,3]}\n',
    'levels/café.json': '{"tiles":[]}\n',
  });
}

/** Builds `options` with webpack, publishes the same folder with the CLI and `flags`; returns both folders. */
function buildAndPublish(options: Record<string, unknown>, flags: string[]) {
  const project = temporaryDir('awkb-webpack-');
  writeAssets(join(project, 'assets'));
  const config = writeWebpackProject(project, { assets: 'assets', ...options });
  const build = runWebpack(config, project);
  expect(build.output).not.toMatch(/ERROR/);
  expect(build.code).toBe(0);
  const cliOut = join(project, 'cli-published');
  const cli = runCli([join(project, 'assets'), '--out', cliOut, ...flags]);
  expect(cli.code).toBe(0);
  return { project, published: join(project, 'dist', (options.output as string | undefined) ?? 'published'), cliOut, config };
}

function expectSameFiles(actual: string, expected: string): void {
  const ours = filesBelow(actual);
  const theirs = filesBelow(expected);
  expect([...ours.keys()]).toEqual([...theirs.keys()]);
  for (const [name, bytes] of theirs) expect({ name, same: ours.get(name)!.equals(bytes) }).toEqual({ name, same: true });
}

/** Each bundle's inode and mtime: a bundle written again (atomically, by rename) changes both. */
function bundleIdentities(published: string, prefix = 'bundles'): Map<string, string> {
  const identities = new Map<string, string>();
  for (const name of filesBelow(join(published, prefix)).keys()) {
    const info = statSync(join(published, prefix, name));
    identities.set(name, `${info.ino}:${info.mtimeMs}`);
  }
  return identities;
}

describe('webpack build', () => {
  test('publishes byte for byte what the CLI publishes (the default grouping is --group auto), and a second build writes no bundle again', () => {
    const { project, published, cliOut, config } = buildAndPublish({}, ['--group', 'auto']);
    expectSameFiles(published, cliOut);
    expect(readFileSync(join(project, 'dist/main.js'), 'utf8')).toContain('a game');
    const before = bundleIdentities(published);
    expect(before.size).toBeGreaterThan(1);

    const again = runWebpack(config, project);
    expect(again.code).toBe(0);
    // output.clean is on: the published folder is kept, and every bundle is the same file as before.
    expect(bundleIdentities(published)).toEqual(before);
    expectSameFiles(published, cliOut);
  });

  test('opaque ids with a salt, a URL prefix and a small target: the CLI bytes, several bundles, and the service worker', () => {
    const options = {
      output: 'game/data',
      opaqueIds: true,
      salt: 'pepper',
      urlPrefix: 'packs',
      targetBundleBytes: 65536,
      grouping: 'folder',
      depth: 2,
      serviceWorker: true,
    };
    const { project, published, cliOut, config } = buildAndPublish(options, [
      '--opaque-ids',
      '--salt',
      'pepper',
      '--url-prefix',
      'packs',
      '--target-mb',
      '0.0625',
      '--depth',
      '2',
    ]);
    expectSameFiles(published, cliOut);
    const index = JSON.parse(readFileSync(join(published, 'project.index.json'), 'utf8'));
    expect(index.pathIds).toEqual({ algorithm: 'hmac-sha256', salt: 'pepper' });
    expect(index.bundles.length).toBeGreaterThanOrEqual(5);
    expect(index.bundles.every((bundle: { url: string }) => bundle.url.startsWith('packs/'))).toBe(true);

    // The worker is `awake-bundle sw` with the index URL baked in, at the output root.
    const site = join(project, 'cli-site');
    expect(runCli(['sw', '--out', site, '--index', 'game/data/project.index.json']).code).toBe(0);
    expect(readFileSync(join(project, 'dist/awake-bundle-sw.js')).equals(readFileSync(join(site, 'awake-bundle-sw.js')))).toBe(true);

    const before = bundleIdentities(published, 'packs');
    expect(runWebpack(config, project).code).toBe(0);
    expect(bundleIdentities(published, 'packs')).toEqual(before);
  });

  test("awkb-loads.json beside the config (webpack's context) groups by its loads, the folder grouping for the rest, as --loads does", () => {
    const project = temporaryDir('awkb-webpack-loads-');
    writeAssets(join(project, 'assets'));
    const loadsFile = join(project, 'awkb-loads.json');
    writeFileSync(
      loadsFile,
      JSON.stringify({
        formatVersion: 1,
        loads: [{ name: 'level 1', paths: ['levels/1 first.json', 'art/tiles/grass.png', 'audio/theme.ogg', 'art/gone.png'] }],
      }),
    );
    const config = writeWebpackProject(project, { assets: 'assets' });
    const build = runWebpack(config, project);
    expect(build.code).toBe(0);
    // The warning about a path that is no file, as the CLI prints it, among webpack's warnings.
    expect(build.output).toContain(
      'awake-bundle: warning: load "level 1" lists "art/gone.png", which is not a file of this publish: ignored',
    );
    const cliOut = join(project, 'cli-published');
    expect(runCli([join(project, 'assets'), '--out', cliOut, '--loads', loadsFile, '--group', 'folder']).code).toBe(0);
    const published = join(project, 'dist/published');
    expectSameFiles(published, cliOut);
    const index = JSON.parse(readFileSync(join(published, 'project.index.json'), 'utf8')) as { files: { path: string; bundle: string }[] };
    const bundleOf = (path: string) => index.files.find((file) => file.path === path)!.bundle;
    expect(new Set(['levels/1 first.json', 'art/tiles/grass.png', 'audio/theme.ogg'].map(bundleOf)).size).toBe(1);
    expect(bundleOf('art/tiles/water.png')).not.toBe(bundleOf('art/tiles/grass.png'));

    // A loads file the CLI refuses fails the build with its message, and nothing new is indexed.
    const before = readFileSync(join(published, 'project.index.json'));
    writeFileSync(loadsFile, '{"formatVersion": 2, "loads": []}');
    const refused = runWebpack(config, project);
    expect(refused.code).toBe(1);
    expect(refused.output).toContain(`awake-bundle: loads file ${loadsFile}: formatVersion is 2`);
    expect(readFileSync(join(published, 'project.index.json')).equals(before)).toBe(true);
  });

  test('an output.path inside the asset folder is left out of the input, as the CLI leaves out its --out', () => {
    const project = temporaryDir('awkb-webpack-inside-');
    writeAssets(join(project, 'assets'));
    const expected = [...filesBelow(join(project, 'assets')).keys()].sort();
    const config = writeWebpackProject(project, { assets: 'assets' }, { output: { path: join(project, 'assets/site'), clean: true } });
    expect(runWebpack(config, project).code).toBe(0);
    // The second build sees the first one's main.js and published/ inside the asset folder.
    expect(runWebpack(config, project).code).toBe(0);
    const index = JSON.parse(readFileSync(join(project, 'assets/site/published/project.index.json'), 'utf8')) as {
      files: { path: string }[];
    };
    expect(index.files.map((file) => file.path).sort()).toEqual(expected);
  });

  test("a link that leaves the asset folder fails the build with the CLI's message, and nothing is indexed", () => {
    const project = temporaryDir('awkb-webpack-unsafe-');
    writeAssets(join(project, 'assets'));
    writeFileSync(join(project, 'secret.txt'), 'not an asset');
    symlinkSync(join(project, 'secret.txt'), join(project, 'assets/art/leak.txt'));
    const cli = runCli([join(project, 'assets'), '--out', join(project, 'cli-published')]);
    expect(cli.code).toBe(1);
    const message = cli.stderr.trim().replace(/^awake-bundle: /, '');
    expect(message).toContain('art/leak.txt');

    const build = runWebpack(writeWebpackProject(project, { assets: 'assets' }), project);
    expect(build.code).toBe(1);
    expect(build.output).toContain(`awake-bundle: ${message}`);
    expect(() => statSync(join(project, 'dist/published/project.index.json'))).toThrow();
  });

  test('a wrong option fails when the configuration loads, naming the option', () => {
    const project = temporaryDir('awkb-webpack-option-');
    writeAssets(join(project, 'assets'));
    const build = runWebpack(writeWebpackProject(project, { assets: 'assets', salt: 'pepper' }), project);
    expect(build.code).not.toBe(0);
    expect(build.output).toContain('option salt: is only used with opaqueIds: true');
  });
});

describe('webpack serve', () => {
  test("answers the index URL with a loose index of the folder, its files, and a changed file's new hash on the next request", async () => {
    const project = temporaryDir('awkb-webpack-serve-');
    const assets = join(project, 'assets');
    writeAssets(assets);
    const config = writeWebpackProject(
      project,
      { assets: 'assets', opaqueIds: true, salt: 'pepper', serviceWorker: true },
      { mode: 'development' },
    );
    const server = await startWebpackServe(config, project);
    try {
      const indexUrl = new URL('published/project.index.json', server.url);
      const first = await fetch(indexUrl);
      expect(first.status).toBe(200);
      expect(first.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const index = await first.json();
      // Loose: paths, not ids, even though production publishes opaque ids; the reader code is the same.
      expect(index.formatVersion).toBe(2);
      const onDisk = filesBelow(assets);
      expect(index.files.map((file: { path: string }) => file.path)).toEqual([...onDisk.keys()].sort());
      for (const file of index.files) {
        const bytes = onDisk.get(file.path)!;
        expect(file).toEqual({ path: file.path, sizeBytes: bytes.length, sha256: sha256Hex(bytes), url: file.url });
        const served = await fetch(new URL(file.url, indexUrl));
        expect(served.status).toBe(200);
        expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
      }
      const png = index.files.find((file: { path: string }) => file.path === 'art/hero.png');
      const range = await fetch(new URL(png.url, indexUrl), { headers: { Range: 'bytes=10-19' } });
      expect(range.status).toBe(206);
      expect(range.headers.get('content-type')).toBe('image/png');
      expect(Buffer.from(await range.arrayBuffer()).equals(onDisk.get('art/hero.png')!.subarray(10, 20))).toBe(true);
      // The page's own code comes from webpack's dev middleware, as without the plugin.
      expect((await fetch(new URL('main.js', server.url))).status).toBe(200);
      // The service worker, with the same index URL baked in.
      const worker = await fetch(new URL('awake-bundle-sw.js', server.url));
      expect(worker.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect(await worker.text()).toMatch(/^self\.AWKB_SW_INDEX_URL = "published\/project\.index\.json";\n/);
      // Nothing was published: development serves the loose files.
      expect(() => statSync(join(project, 'dist/published'))).toThrow();

      const changed = Buffer.from('{"tiles":[4,5,6,7]}\n');
      writeFileSync(join(assets, 'levels/1 first.json'), changed);
      writeFileSync(join(assets, 'levels/2 second.json'), '{}\n');
      rmSync(join(assets, 'art/hero-copy.png'));
      const next = await (await fetch(indexUrl)).json();
      const entry = (path: string) => next.files.find((file: { path: string }) => file.path === path);
      expect(entry('levels/1 first.json')).toMatchObject({ sizeBytes: changed.length, sha256: sha256Hex(changed) });
      expect(entry('levels/2 second.json')).toMatchObject({ sha256: sha256Hex(Buffer.from('{}\n')) });
      expect(entry('art/hero-copy.png')).toBeUndefined();
      expect(Buffer.from(await (await fetch(new URL(entry('levels/1 first.json').url, indexUrl))).arrayBuffer()).equals(changed)).toBe(
        true,
      );
      expect((await fetch(new URL('files/art/hero-copy.png', indexUrl))).status).toBe(404);
    } finally {
      await server.stop();
    }
  });

  test('recordLoads: the index asks for the recorded loads, and posts merge into awkb-loads.json beside the config, first use first; a build has none of it', async () => {
    const project = temporaryDir('awkb-webpack-loads-');
    writeAssets(join(project, 'assets'));
    const loadsFile = join(project, 'awkb-loads.json');
    const server = await startWebpackServe(
      writeWebpackProject(project, { assets: 'assets', recordLoads: true }, { mode: 'development' }),
      project,
    );
    const post = (loads: { name: string; paths: string[] }[]) =>
      fetch(new URL('__awake-bundle/loads', server.url), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ formatVersion: 1, loads }),
      });
    try {
      const index = await fetch(new URL('published/project.index.json', server.url));
      expect(index.headers.get('x-awake-bundle-loads')).toBe('/__awake-bundle/loads');
      expect((await post([{ name: 'title', paths: ['art/hero.png', 'audio/theme.ogg'] }])).status).toBe(204);
      expect(JSON.parse(readFileSync(loadsFile, 'utf8'))).toEqual({
        formatVersion: 1,
        loads: [{ name: 'title', paths: ['art/hero.png', 'audio/theme.ogg'] }],
      });
      expect(
        (
          await post([
            { name: 'level 1', paths: ['levels/1 first.json', 'art/hero.png'] },
            { name: 'title', paths: ['art/tiles/grass.png', 'art/hero.png'] },
          ])
        ).status,
      ).toBe(204);
      expect(JSON.parse(readFileSync(loadsFile, 'utf8'))).toEqual({
        formatVersion: 1,
        loads: [
          { name: 'title', paths: ['art/hero.png', 'audio/theme.ogg', 'art/tiles/grass.png'] },
          { name: 'level 1', paths: ['levels/1 first.json', 'art/hero.png'] },
        ],
      });
      expect((await post([{ name: '', paths: [] }])).status).toBe(400);
    } finally {
      await server.stop();
    }
    // The same option in a build: published as without it; the loads file is left alone.
    const recorded = readFileSync(loadsFile, 'utf8');
    const build = runWebpack(writeWebpackProject(project, { assets: 'assets', recordLoads: true }), project);
    expect(build.code).toBe(0);
    expect(JSON.parse(readFileSync(join(project, 'dist/published/project.index.json'), 'utf8')).formatVersion).toBe(3);
    expect(readFileSync(loadsFile, 'utf8')).toBe(recorded);
  });

  test('a link that leaves the folder is named in the answer, never served', async () => {
    const project = temporaryDir('awkb-webpack-serve-unsafe-');
    writeAssets(join(project, 'assets'));
    writeFileSync(join(project, 'secret.txt'), 'not an asset');
    symlinkSync(join(project, 'secret.txt'), join(project, 'assets/art/leak.txt'));
    const server = await startWebpackServe(writeWebpackProject(project, { assets: 'assets' }, { mode: 'development' }), project);
    try {
      const answer = await fetch(new URL('published/project.index.json', server.url));
      expect(answer.status).toBe(500);
      expect(await answer.text()).toContain('art/leak.txt');
      const file = await fetch(new URL('published/files/art/leak.txt', server.url));
      expect(file.status).toBe(500);
      expect(await file.text()).not.toContain('not an asset');
    } finally {
      await server.stop();
    }
  });
});

/**
 * The peer range, tested: each webpack-dev-server major of package.json's
 * `peerDependencies['webpack-dev-server']` under `webpack serve` (webpack-cli's
 * `WEBPACK_DEV_SERVER_PACKAGE` picks this repository's alias, e.g. node_modules/webpack-dev-server4).
 * The project's own `devServer.setupMiddlewares` (which the plugin wraps) reports which dev server
 * called it, and adds a middleware of its own that must still answer.
 */
describe.each(TESTED_WEBPACK_DEV_SERVERS)('webpack serve with %s (major %d)', (alias, major) => {
  test("serves the loose index, its files and the page's code, takes recorded loads, keeps the project's own setupMiddlewares, and publishes nothing", async () => {
    const version = installedVersion(alias);
    expect(version.split('.')[0]).toBe(String(major));
    const project = temporaryDir('awkb-webpack-wds-');
    const assets = join(project, 'assets');
    writeAssets(assets);
    const own = [
      "devServer: await import('node:module').then(({ createRequire }) => ({ setupMiddlewares: (middlewares, server) => {",
      `  const requireFromRepo = createRequire(${JSON.stringify(join(REPO, 'package.json'))});`,
      `  const ran = server.constructor === requireFromRepo(${JSON.stringify(alias)}) ? requireFromRepo(${JSON.stringify(`${alias}/package.json`)}).version : 'another dev server';`,
      '  console.log(`own setupMiddlewares called by webpack-dev-server ${ran}`);',
      "  return [...middlewares, { name: 'own', path: '/own', middleware: (request, response) => response.end('own middleware') }];",
      '} })),',
    ].join('\n');
    const config = writeWebpackProject(project, { assets: 'assets', recordLoads: true }, { mode: 'development' }, own);
    const server = await startWebpackServe(config, project, [], alias);
    try {
      expect(server.output()).toContain(`own setupMiddlewares called by webpack-dev-server ${version}`);
      const indexUrl = new URL('published/project.index.json', server.url);
      const answer = await fetch(indexUrl);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('x-awake-bundle-loads')).toBe('/__awake-bundle/loads');
      const index = await answer.json();
      expect(index.formatVersion).toBe(2);
      const onDisk = filesBelow(assets);
      expect(index.files.map((file: { path: string }) => file.path)).toEqual([...onDisk.keys()].sort());
      const hero = index.files.find((file: { path: string }) => file.path === 'art/hero.png');
      expect(Buffer.from(await (await fetch(new URL(hero.url, indexUrl))).arrayBuffer()).equals(onDisk.get('art/hero.png')!)).toBe(true);
      expect((await fetch(new URL('main.js', server.url))).status).toBe(200);
      expect(await (await fetch(new URL('own', server.url))).text()).toBe('own middleware');
      const posted = await fetch(new URL('__awake-bundle/loads', server.url), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ formatVersion: 1, loads: [{ name: 'title', paths: ['art/hero.png'] }] }),
      });
      expect(posted.status).toBe(204);
      expect(JSON.parse(readFileSync(join(project, 'awkb-loads.json'), 'utf8'))).toEqual({
        formatVersion: 1,
        loads: [{ name: 'title', paths: ['art/hero.png'] }],
      });
      expect(() => statSync(join(project, 'dist/published'))).toThrow();
    } finally {
      await server.stop();
    }
  });
});

test('the development index hashes each file once per change, however many requests', () => {
  const assets = temporaryDir('awkb-loose-dev-');
  writeAssets(assets);
  const script = `
    import { writeFileSync } from 'node:fs';
    import { LooseDevIndex, resolveBuildOptions } from ${JSON.stringify(join(REPO, 'dist/integrations/build/shared.js'))};
    const dev = new LooseDevIndex(resolveBuildOptions({ assets: ${JSON.stringify(assets)} }, '/'));
    const counts = [];
    await dev.index(); counts.push(dev.filesHashed);
    await dev.index(); counts.push(dev.filesHashed);
    writeFileSync(${JSON.stringify(join(assets, 'audio/theme.ogg'))}, 'a new theme');
    const index = await dev.index(); counts.push(dev.filesHashed);
    await dev.index(); counts.push(dev.filesHashed);
    await dev.close();
    console.log(JSON.stringify({ counts, theme: index.files.find((file) => file.path === 'audio/theme.ogg') }));`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  expect(result.stderr).toBe('');
  const { counts, theme } = JSON.parse(result.stdout);
  expect(counts).toEqual([8, 8, 9, 9]);
  expect(theme).toEqual({
    path: 'audio/theme.ogg',
    sizeBytes: 11,
    sha256: sha256Hex(Buffer.from('a new theme')),
    url: 'files/audio/theme.ogg',
  });
});

describe('the awake-bundle/webpack entry', () => {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));

  test('is exported with its declarations; webpack and webpack-dev-server are optional peers', () => {
    expect(pkg.exports['./webpack']).toEqual({
      types: './dist/integrations/webpack/index.d.ts',
      default: './dist/integrations/webpack/index.js',
    });
    expect(pkg.typesVersions['*'].webpack).toEqual(['./dist/integrations/webpack/index.d.ts']);
    expect(pkg.files).toContain('dist/integrations');
    for (const name of ['webpack', 'webpack-dev-server']) {
      expect(pkg.peerDependencies[name]).toBeDefined();
      expect(pkg.peerDependenciesMeta[name]).toEqual({ optional: true });
    }
    expect(statSync(WEBPACK_PLUGIN).isFile()).toBe(true);
  });

  test('awake-bundle and awake-bundle/node never load webpack; the plugin itself imports no bundler either', () => {
    for (const entry of ['dist/core/index.js', 'dist/core/node/index.js', 'dist/integrations/webpack/index.js']) {
      const bare = [...importGraph(join(REPO, entry)).bare];
      expect({ entry, bundlers: bare.filter((name) => /webpack|vite/.test(name)) }).toEqual({ entry, bundlers: [] });
    }
    // And at run time: importing both entries leaves webpack out of the module cache.
    const script = `
      import { createRequire } from 'node:module';
      await import(${JSON.stringify(join(REPO, 'dist/core/index.js'))});
      await import(${JSON.stringify(join(REPO, 'dist/core/node/index.js'))});
      await import(${JSON.stringify(WEBPACK_PLUGIN)});
      const require = createRequire(${JSON.stringify(join(REPO, 'package.json'))});
      console.log(Object.keys(require.cache).filter((path) => /node_modules[\\\\/]webpack/.test(path)).length);`;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe('0');
  });
});
