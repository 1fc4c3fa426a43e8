/**
 * The CLI's manners: --version, a mistyped command named as one (exit 2, "did you
 * mean"), a busy port said as such (serve and the npm scripts' PORT), counts in agreement.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { REPO, runCli, temporaryDir } from './helpers/cli.js';

const STACK_LINE = /^\s+at .+[:(]/m;
const version = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version as string;

describe('--version', () => {
  test.each([['--version'], ['-v']])('%s prints the package version and exits 0', (flag) => {
    const result = runCli([flag]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${version}\n`);
  });

  test('from another working folder too (read beside the built file, not from the cwd)', () => {
    expect(runCli(['--version'], { cwd: temporaryDir() }).stdout).toBe(`${version}\n`);
  });

  test('the main help lists it', () => {
    expect(runCli(['--help']).stdout).toContain('-v, --version');
  });
});

describe('a mistyped command', () => {
  test.each([
    ['serv', 'serve'],
    ['inspec', 'inspect'],
    ['verfy', 'verify'],
    ['idnex', 'index'],
    ['pubish', 'publish'],
  ])('%s is a wrong command line (exit 2) suggesting %s, and publishes nothing', (typed, meant) => {
    const cwd = temporaryDir();
    const result = runCli([typed, 'x'], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`did you mean \`${meant}\`?`);
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(existsSync(join(cwd, 'build'))).toBe(false);
  });

  test('an existing folder of that name is published, as the default command promises', () => {
    const cwd = temporaryDir();
    mkdirSync(join(cwd, 'serv'));
    writeFileSync(join(cwd, 'serv', 'a.txt'), 'a');
    const result = runCli(['serv', '--out', 'out'], { cwd });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Published 1 file in 1 bundle');
  });

  test('a missing path far from every command name stays a missing input (exit 1)', () => {
    const result = runCli(['no-such-assets-folder'], { cwd: temporaryDir() });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no-such-assets-folder: no such file or folder');
  });
});

describe('counts agree with their nouns', () => {
  test('publish, index, verify and inspect of one file say "1 file", "1 bundle", "1 member"', () => {
    const dir = temporaryDir();
    mkdirSync(join(dir, 'in'));
    writeFileSync(join(dir, 'in', 'only.txt'), 'x');
    const published = runCli(['in', '--out', 'out'], { cwd: dir });
    expect(published.stdout).toMatch(/^Published 1 file in 1 bundle \(/);
    expect(published.stdout).toMatch(/new: +1 bundle, /);
    expect(published.stdout).toMatch(/already there: +0 bundles, /);
    expect(runCli(['index', 'in', '--out', 'i.json'], { cwd: dir }).stdout).toMatch(/^Indexed 1 file \(1 B\)/);
    expect(runCli(['verify', 'out'], { cwd: dir }).stdout).toBe('OK: 1 bundle and 1 file match the index\n');
    const index = JSON.parse(readFileSync(join(dir, 'out', 'project.index.json'), 'utf8'));
    expect(runCli(['inspect', join('out', index.bundles[0].url)], { cwd: dir }).stdout).toContain('AWKB version 1, 1 member, table ');
  });
});

/** Holds a port on 127.0.0.1 until closed. */
async function occupyPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

describe('a busy port', () => {
  let held: { port: number; server: Server };
  beforeAll(async () => {
    held = await occupyPort();
  });
  afterAll(() => new Promise<void>((resolve) => held.server.close(() => resolve())));

  test('serve names it and says how to pick another (exit 1)', () => {
    const site = temporaryDir();
    const result = runCli(['serve', site, '--port', String(held.port)]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`port ${held.port} on 127.0.0.1 is busy`);
    expect(result.stderr).toContain('--port');
    expect(result.stderr).not.toMatch(STACK_LINE);
  });

  // npm run example / demo / demo:babylon serve through scripts/serve-site.mjs.
  test('the npm scripts name it and say to set PORT (exit 1)', () => {
    const site = temporaryDir();
    const code = `const { serveSite } = await import(${JSON.stringify(join(REPO, 'scripts/serve-site.mjs'))}); await serveSite(${JSON.stringify(REPO)}, ${JSON.stringify(site)}, 'example');`;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
      env: { ...process.env, PORT: String(held.port) },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`example: port ${held.port} on 127.0.0.1 is busy`);
    expect(result.stderr).toContain(`PORT=8081 npm run example`);
    expect(result.stderr).not.toMatch(STACK_LINE);
  });

  test('a PORT that is not a port is named', () => {
    const code = `const { serveSite } = await import(${JSON.stringify(join(REPO, 'scripts/serve-site.mjs'))}); await serveSite(${JSON.stringify(REPO)}, '.', 'demo');`;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
      env: { ...process.env, PORT: 'eighty' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('demo: PORT must be an integer from 0 to 65535, got "eighty"');
  });
});

describe('the CLI names its own flags where the library names options', () => {
  test('a loose index whose url is not a local file: "pass --root <folder>" (exit 1)', () => {
    const dir = temporaryDir();
    const index = {
      formatVersion: 2,
      rootPath: '/project',
      files: [
        {
          path: 'a.txt',
          sizeBytes: 1,
          sha256: 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb',
          url: 'https://cdn.example/a.txt',
        },
      ],
    };
    writeFileSync(join(dir, 'loose.json'), JSON.stringify(index));
    const result = runCli(['loose.json', '--out', 'out'], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('a.txt: url "https://cdn.example/a.txt" is not a local file');
    expect(result.stderr).toContain('pass --root <folder>');
    expect(result.stderr).not.toMatch(STACK_LINE);
  });
});
