/**
 * The package as users get it: `npm pack`, installed into a fresh project, where `npx awake-bundle`
 * runs and `awake-bundle` / `awake-bundle/node` import from ESM; and npm resolves it beside the
 * oldest Vite and webpack-dev-server of its peer ranges (issue 21: Vite 5 met ERESOLVE).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Script } from 'node:vm';
import { FIXTURES, REPO, temporaryDir } from './helpers/cli';
import { installedVersion } from './helpers/peer-versions';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** Files of the repository that the package leaves out, though the README links one. */
const NOT_SHIPPED = ['BENCHMARKS.md'];
let project: string;
let tarball: string;

beforeAll(() => {
  const packDir = temporaryDir('awkb-pack-');
  // --ignore-scripts: dist/ is already built by `npm test`; packing must not rebuild it mid-run.
  execFileSync(npm, ['pack', '--ignore-scripts', '--pack-destination', packDir], { cwd: REPO, stdio: 'pipe' });
  tarball = join(
    packDir,
    readdirSync(packDir).find((name) => name.endsWith('.tgz'))!,
  );
  project = temporaryDir('awkb-user-');
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'a-game', version: '1.0.0', private: true, type: 'module' }));
  execFileSync(npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: project, stdio: 'pipe' });
}, 180_000);

test('a project with Vite 5, webpack 5 and webpack-dev-server 4 resolves the package without ERESOLVE (its optional peers admit them)', () => {
  // The resolution npm install does (and where ERESOLVE is raised), without fetching the packages:
  // the versions this repository tests, from its node_modules aliases.
  const dir = temporaryDir('awkb-peers-');
  const wanted = {
    vite: installedVersion('vite5'),
    webpack: installedVersion('webpack'),
    'webpack-dev-server': installedVersion('webpack-dev-server4'),
  };
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name: 'a-vite-5-game',
      version: '1.0.0',
      private: true,
      devDependencies: { ...wanted, 'awake-bundle': `file:${tarball}` },
    }),
  );
  const result = spawnSync(npm, ['install', '--package-lock-only', '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(result.stderr).not.toContain('ERESOLVE');
  expect(result.status).toBe(0);
  const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  expect(Object.fromEntries(Object.keys(wanted).map((name) => [name, lock.packages[`node_modules/${name}`]?.version]))).toEqual(wanted);
  expect(lock.packages['node_modules/awake-bundle']?.version).toBe(JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version);
}, 120_000);

test('npx awake-bundle publishes in a project that installed the package', () => {
  const out = join(project, 'published');
  const result = spawnSync(npm, ['exec', '--', 'awake-bundle', join(FIXTURES, 'trees/small'), '--out', out], {
    cwd: project,
    encoding: 'utf8',
  });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  expect(existsSync(join(out, 'project.index.json'))).toBe(true);
});

test('npx awake-bundle sw writes the prebuilt worker from the installed package', () => {
  const site = join(project, 'site');
  const result = spawnSync(npm, ['exec', '--', 'awake-bundle', 'sw', '--out', site], { cwd: project, encoding: 'utf8' });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  const worker = readFileSync(join(site, 'awake-bundle-sw.js'), 'utf8');
  // Self-contained: it parses as a classic script (no static import or export), and no code line
  // (comments aside) loads anything at run time.
  expect(() => new Script(worker)).not.toThrow();
  const code = worker.split('\n').filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line));
  expect(code.filter((line) => /\bimport\s*\(|\bimportScripts\s*\(/.test(line))).toEqual([]);
  // Minified: its messages to pages are strings, kept as written.
  expect(worker).toContain('awkb:refresh');
  expect(worker.split('\n').length).toBeLessThan(5);
});

/** Runs an ES module script in the installed project: what it printed, trimmed, and its stderr. */
function runModule(script: string): { stderr: string; stdout: string } {
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8' });
  return { stderr: result.stderr, stdout: result.stdout.trim() };
}

test('awake-bundle/sw imports by its package name', () => {
  const script =
    "import { createAwkbFetchHandler, installAwkbServiceWorker } from 'awake-bundle/sw'; console.log(typeof createAwkbFetchHandler, typeof installAwkbServiceWorker);";
  expect(runModule(script)).toEqual({ stderr: '', stdout: 'function function' });
});

test('awake-bundle/webpack imports by its package name in a project without webpack (an optional peer)', () => {
  expect(existsSync(join(project, 'node_modules/webpack'))).toBe(false);
  const script =
    "import { AwakeBundlePlugin } from 'awake-bundle/webpack'; const plugin = new AwakeBundlePlugin({ assets: 'public/assets' }); console.log(typeof plugin.apply);";
  expect(runModule(script)).toEqual({ stderr: '', stdout: 'function' });
});

test('awake-bundle/vite imports by its package name in a project without Vite (an optional peer)', () => {
  expect(existsSync(join(project, 'node_modules/vite'))).toBe(false);
  const script = [
    "import { awakeBundle } from 'awake-bundle/vite';",
    "console.log(typeof awakeBundle, awakeBundle({ assets: 'assets' }).name);",
  ].join('\n');
  expect(runModule(script)).toEqual({ stderr: '', stdout: 'function awake-bundle' });
});

test('the core, format and node entries import from ESM by their package names', () => {
  const script = [
    "import { IndexedAssetSource, sha256Hex } from 'awake-bundle';",
    "import { BundleWriter, decodeBundle } from 'awake-bundle/format';",
    "import { publishToDirectory, startStaticServer, BundleWriter as NodeWriter } from 'awake-bundle/node';",
    'console.log(typeof IndexedAssetSource.open, typeof BundleWriter, typeof decodeBundle, NodeWriter === BundleWriter, typeof publishToDirectory, typeof startStaticServer, await sha256Hex(new Uint8Array()));',
  ].join('\n');
  expect(runModule(script)).toEqual({
    stderr: '',
    stdout: 'function function function true function function e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  });
});

test('the package ships compiled JavaScript with type declarations, and no tests', () => {
  const files = execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: REPO, encoding: 'utf8' });
  const paths: string[] = JSON.parse(files)[0].files.map((file: { path: string }) => file.path);
  expect(paths).toEqual(
    expect.arrayContaining([
      'dist/core/index.js',
      'dist/core/index.d.ts',
      'dist/core/format-entry.js',
      'dist/core/format-entry.d.ts',
      'dist/cli/main.js',
      'dist/core/node/index.js',
      'dist/integrations/vite/index.js',
      'dist/integrations/vite/index.d.ts',
    ]),
  );
  expect(paths.filter((path) => path.startsWith('test/') || path.includes('fixtures'))).toEqual([]);
  // The CLI is run, not imported: no declarations for it.
  expect(paths.filter((path) => path.startsWith('dist/cli/') && path.endsWith('.d.ts'))).toEqual([]);
  expect(paths).toEqual(expect.arrayContaining(['LICENSE', 'docs/SPEC.md']));
});

test('every file the README and FORMAT.md link to is in the package', () => {
  const files = execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: REPO, encoding: 'utf8' });
  const paths = new Set<string>(JSON.parse(files)[0].files.map((file: { path: string }) => file.path));
  for (const document of ['README.md', 'FORMAT.md']) {
    const text = readFileSync(join(REPO, document), 'utf8');
    const links = [...text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((match) => match[1]!).filter((link) => !/^[a-z]+:/.test(link));
    expect(links.length).toBeGreaterThan(0);
    // BENCHMARKS.md is the repository's measurements (64 KB), kept out of the package to keep it small.
    for (const link of links.filter((link) => !NOT_SHIPPED.includes(link)))
      expect({ document, link, shipped: paths.has(link) }).toEqual({ document, link, shipped: true });
  }
});

test("the package leaves out BENCHMARKS.md and source maps (the service worker's is 600 KB) and packs under 0.6 MB", () => {
  const [packed] = JSON.parse(execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: REPO, encoding: 'utf8' })) as {
    size: number;
    files: { path: string }[];
  }[];
  const paths = packed!.files.map((file) => file.path);
  expect(paths.filter((path) => path.endsWith('.map') || NOT_SHIPPED.includes(path))).toEqual([]);
  // What users need is still there: the documents, the worker script, JavaScript with its declarations.
  expect(paths).toEqual(
    expect.arrayContaining([
      'README.md',
      'LICENSE',
      'FORMAT.md',
      'RELIABILITY.md',
      'docs/SPEC.md',
      'dist/sw/awake-bundle-sw.js',
      'dist/cli/main.js',
      'dist/adapters/service-worker/index.js',
      'dist/adapters/service-worker/index.d.ts',
    ]),
  );
  for (const path of paths.filter(
    (path) => path.startsWith('dist/') && path.endsWith('.js') && !path.startsWith('dist/cli/') && !path.startsWith('dist/sw/'),
  ))
    expect({ path, declared: paths.includes(path.replace(/\.js$/, '.d.ts')) }).toEqual({ path, declared: true });
  expect(packed!.size).toBeLessThan(600_000);
});

test('the installed package has the service worker and no source maps, nor comments pointing at any (a bundler would warn of each)', () => {
  const installed = join(project, 'node_modules/awake-bundle');
  expect(existsSync(join(installed, 'dist/sw/awake-bundle-sw.js'))).toBe(true);
  const names = readdirSync(installed, { recursive: true, encoding: 'utf8' });
  expect(names.filter((name) => name.endsWith('.map') || name === 'BENCHMARKS.md')).toEqual([]);
  expect(names.filter((name) => name.endsWith('.js') && readFileSync(join(installed, name), 'utf8').includes('sourceMappingURL='))).toEqual(
    [],
  );
});
