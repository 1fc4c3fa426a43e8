/**
 * Publishing safely (SPEC §8, FORMAT.md "Command line"): temporary files of a killed publish are
 * cleaned up, a damaged bundle is never trusted by its size, paths that collide on a
 * case-insensitive host are refused, and a publish never writes outside --out nor leaks path
 * text with opaque ids.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, runCli, temporaryDir } from './helpers/cli.js';
import { indexViolations, seededBytes, sha256Hex, temporaryFilesIn, writeTree } from './helpers/trees.js';

/** The pid of a process that has exited (so `kill(pid, 0)` fails with ESRCH). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function smallTree(): string {
  const tree = temporaryDir();
  writeTree(tree, {
    'art/a.bin': seededBytes(40_000, 1),
    'art/b.bin': seededBytes(30_000, 2),
    'sounds/c.ogg': seededBytes(20_000, 3),
    'readme.txt': 'hello\n',
  });
  return tree;
}

describe('temporary files of a publish that did not finish', () => {
  test('the next publish removes those of dead processes and keeps those of live ones', () => {
    const tree = smallTree();
    const out = temporaryDir();
    mkdirSync(join(out, 'bundles'));
    const dead = deadPid();
    const stale = [
      join('bundles', `${'a'.repeat(64)}.awkb.tmp-${dead}-1`),
      join('bundles', `.incoming.awkb.tmp-${dead}-7`),
      `project.index.json.tmp-${dead}-3`,
    ];
    const live = join('bundles', `${'b'.repeat(64)}.awkb.tmp-${process.pid}-1`); // this test's own process is alive
    const unrelated = join('bundles', 'notes.tmp-1-1'); // not a name a publish makes
    for (const name of [...stale, live, unrelated]) writeFileSync(join(out, name), 'partial');

    const result = runCli([tree, '--out', out, '--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    for (const name of stale) expect(existsSync(join(out, name))).toBe(false);
    expect(existsSync(join(out, live))).toBe(true);
    expect(existsSync(join(out, unrelated))).toBe(true);
    expect(JSON.parse(result.stdout).staleTemporaryFilesRemoved).toBe(stale.length);
    expect(indexViolations(out)).toEqual([]);
  });

  test.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)("%s mid-write removes the publish's own temporary files and exits %i", async (signal, expectedCode) => {
    const tree = temporaryDir();
    // One file far above the target: its bundle is streamed into a temporary file for a while.
    writeTree(tree, { 'big/movie.bin': seededBytes(96 * 1024 * 1024, 9), 'small.txt': 'x' });
    const out = temporaryDir();
    mkdirSync(join(out, 'bundles'));
    const child = spawn(process.execPath, [CLI, tree, '--out', out, '--target-mb', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    // Signal the moment a temporary file appears (fs.watch reports its creation).
    const watcher = watch(join(out, 'bundles'));
    let sawTemporary = false;
    await new Promise<void>((resolve) => {
      const check = () => {
        if (temporaryFilesIn(out).length > 0) {
          sawTemporary = true;
          resolve();
        }
      };
      watcher.on('change', check);
      void exited.then(() => resolve());
      check();
    });
    watcher.close();
    expect(sawTemporary).toBe(true);
    child.kill(signal);
    const { code } = await exited;
    expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(code).toBe(expectedCode);
    expect(temporaryFilesIn(out)).toEqual([]);
    expect(indexViolations(out)).toEqual([]);
  });
});

describe('a bundle already in the out folder', () => {
  test('a damaged bundle of the right size is rewritten, and the report says so', () => {
    const tree = smallTree();
    const out = temporaryDir();
    expect(runCli([tree, '--out', out]).code).toBe(0);
    const index = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'));
    const bundle = index.bundles[0];
    const path = join(out, bundle.url);
    const bytes = readFileSync(path);
    bytes[bytes.length - 1] ^= 0xff; // same size, other bytes
    writeFileSync(path, bytes);

    const again = runCli([tree, '--out', out, '--json']);
    expect(again.code).toBe(0);
    const summary = JSON.parse(again.stdout);
    expect(summary.rewrittenBundles).toEqual([bundle.url]);
    expect(summary.existingBundles).toBe(index.bundles.length - 1);
    expect(sha256Hex(readFileSync(path))).toBe(bundle.sha256);

    const text = runCli([tree, '--out', out]);
    expect(text.stdout).toMatch(/rewritten: +0 damaged bundles/);
    expect(readFileSync(path).length).toBe(bundle.sizeBytes); // still readable
    writeFileSync(path, Buffer.alloc(bundle.sizeBytes)); // zeros of the right size
    const third = runCli([tree, '--out', out]);
    expect(third.stdout).toMatch(/rewritten: +1 damaged bundle /);
    expect(third.stdout).toContain(bundle.url);
    expect(runCli(['verify', out]).code).toBe(0);
  });
});

describe('paths that collide on a case-insensitive host', () => {
  test.each([
    ['case', 'Art/Hero.png', 'art/hero.png'],
    ['Unicode normalization (NFC vs NFD)', 'caf\u00e9.txt', 'cafe\u0301.txt'],
    ['a file and a folder', 'Level', 'level/map.json'],
  ])('%s: refused naming both paths; --allow-case-collisions only warns', (_kind, first, second) => {
    const tree = temporaryDir();
    writeTree(tree, { [first]: 'one', [second]: 'two' });
    const out = temporaryDir();
    const refused = runCli([tree, '--out', out]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(JSON.stringify(first));
    expect(refused.stderr).toContain(JSON.stringify(second));
    expect(refused.stderr).toContain('--allow-case-collisions');
    expect(existsSync(join(out, 'project.index.json'))).toBe(false);

    const allowed = runCli([tree, '--out', out, '--allow-case-collisions']);
    expect(allowed.code).toBe(0);
    expect(allowed.stderr).toMatch(/warning: .*collide/);
    expect(JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8')).files).toHaveLength(2);
  });
});

test('a link to a folder inside whose name starts with two dots ("..data") stays inside: it is published, not refused', () => {
  const tree = temporaryDir();
  writeTree(tree, { '..data/level.json': '{"n":1}\n' });
  symlinkSync(join(tree, '..data'), join(tree, 'levels'));
  const out = temporaryDir();
  const result = runCli([tree, '--out', out]);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const paths = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'))
    .files.map((file: { path: string }) => file.path)
    .sort();
  expect(paths).toEqual(['..data/level.json', 'levels/level.json']);
});

describe('a publish never writes outside --out', () => {
  test('out/bundles that is a symbolic link leading outside --out is refused', () => {
    const tree = smallTree();
    const out = temporaryDir();
    const elsewhere = temporaryDir();
    symlinkSync(elsewhere, join(out, 'bundles'));
    const result = runCli([tree, '--out', out]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/bundles.*symbolic link.*outside/);
    expect(readdirSync(elsewhere)).toEqual([]);
    expect(existsSync(join(out, 'project.index.json'))).toBe(false);
  });

  test('a bundle or index name that is a symbolic link to an outside file is replaced, the outside file untouched', () => {
    const tree = smallTree();
    const first = temporaryDir();
    expect(runCli([tree, '--out', first]).code).toBe(0);
    const index = JSON.parse(readFileSync(join(first, 'project.index.json'), 'utf8'));
    const bundle = index.bundles[0];

    const out = temporaryDir();
    const elsewhere = temporaryDir();
    mkdirSync(join(out, 'bundles'));
    // The outside file even holds the right bytes: a link is still not a bundle of this folder.
    writeFileSync(join(elsewhere, 'bundle'), readFileSync(join(first, bundle.url)));
    writeFileSync(join(elsewhere, 'index'), 'outside\n');
    symlinkSync(join(elsewhere, 'bundle'), join(out, bundle.url));
    symlinkSync(join(elsewhere, 'index'), join(out, 'project.index.json'));
    const result = runCli([tree, '--out', out, '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).rewrittenBundles).toEqual([bundle.url]);
    expect(lstatSync(join(out, bundle.url)).isFile()).toBe(true);
    expect(lstatSync(join(out, 'project.index.json')).isFile()).toBe(true);
    expect(readFileSync(join(elsewhere, 'index'), 'utf8')).toBe('outside\n');
    expect(sha256Hex(readFileSync(join(elsewhere, 'bundle')))).toBe(bundle.sha256);
    expect(readdirSync(elsewhere).sort()).toEqual(['bundle', 'index']);
    expect(runCli(['verify', out]).code).toBe(0);
  });

  test('a symbolic link to a folder outside the input, and a folder link loop, are refused by name', () => {
    const outside = temporaryDir();
    writeTree(outside, { 'secret/key.txt': 'x' });
    const tree = smallTree();
    symlinkSync(join(outside, 'secret'), join(tree, 'art', 'borrowed'));
    const leaves = runCli([tree, '--out', temporaryDir()]);
    expect(leaves.code).toBe(1);
    expect(leaves.stderr).toMatch(/art\/borrowed: symbolic link leaves the folder/);

    const loop = smallTree();
    symlinkSync('..', join(loop, 'art', 'up'));
    const looped = runCli([loop, '--out', temporaryDir()]);
    expect(looped.code).toBe(1);
    expect(looped.stderr).toMatch(/art\/up: symbolic link loop/);
    expect(readlinkSync(join(loop, 'art', 'up'))).toBe('..');
  });
});

describe('opaque ids: no path text in any published byte', () => {
  test('neither a path nor any segment longer than 3 characters appears, as UTF-8 or UTF-16', () => {
    const tree = temporaryDir();
    const paths = [
      'zebracorn/quuxfile-alpha.png',
      'zebracorn/deep/nested/wombatfolder/glimmer.json',
      'Sp\u00e4ce Station/\u00dcberkrater.ogg',
      'levels/\u6f22\u5b57\u30d5\u30a1\u30a4\u30eb.dat',
      'toplevel-marker.txt',
    ];
    writeTree(tree, Object.fromEntries(paths.map((path, i) => [path, seededBytes(5000 + i, 40 + i)])));
    const out = temporaryDir();
    expect(runCli([tree, '--out', out, '--opaque-ids', '--salt', 'pepper', '--target-mb', '0.004']).code).toBe(0);
    const published = readdirSync(out, { recursive: true, encoding: 'utf8' })
      .filter((name) => lstatSync(join(out, name)).isFile())
      .map((name) => ({ name, bytes: readFileSync(join(out, name)) }));
    expect(published.length).toBeGreaterThan(3); // the index and several bundles
    const needles = new Set<string>();
    for (const path of paths) {
      needles.add(path);
      for (const segment of path.split('/')) if (segment.length > 3) needles.add(segment);
      for (const segment of path.split(/[/.\- ]/)) if (segment.length > 3) needles.add(segment);
    }
    const leaks: string[] = [];
    for (const needle of needles) {
      for (const form of [needle, needle.normalize('NFD')]) {
        const encodings = [Buffer.from(form, 'utf8'), Buffer.from(form, 'utf16le'), Buffer.from(form, 'utf16le').swap16()];
        for (const { name, bytes } of published) {
          if (encodings.some((encoded) => bytes.includes(encoded))) leaks.push(`${JSON.stringify(form)} in ${name}`);
        }
      }
    }
    expect(leaks).toEqual([]);
  });
});
