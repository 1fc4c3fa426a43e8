/**
 * Publishing (SPEC §6, §8): determinism, change locality, incremental publishes, and bad input
 * refused with a clear message and the SPEC's exit code, with nothing published.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BundleWriter,
  decodeBundle,
  groupByFolder,
  oneGroup,
  PublishInputError,
  serializeIndex,
  type FinishedBundle,
  type LooseIndex,
} from '../core/internal.js';
import { looseIndexFromFolder } from '../core/node/index.js';
import { FIXTURES, runCli, temporaryDir } from './helpers/cli.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (sub: string) => {
    for (const entry of readdirSync(join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else out[rel] = sha256(readFileSync(join(dir, rel)));
    }
  };
  walk('');
  return out;
}

/** Writes files in the given order, so creation order (and inode order) differs between trees. */
function writeTree(root: string, files: Record<string, string | Uint8Array>, order: string[] = Object.keys(files)) {
  for (const path of order) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), files[path]!);
  }
}

function pseudoRandom(size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

const project: Record<string, Uint8Array> = {};
for (let i = 0; i < 12; i++) project[`levels/one/tex${String(i).padStart(2, '0')}.bin`] = pseudoRandom(30_000, i + 1);
for (let i = 0; i < 4; i++) project[`sounds/s${i}.ogg`] = pseudoRandom(5_000, 100 + i);
project['awake.project.json'] = new TextEncoder().encode('{"name":"demo"}');
project['levels/one/copy-of-tex00.bin'] = project['levels/one/tex00.bin']!;

describe('determinism', () => {
  test('the same tree published twice, with other mtimes and creation order, gives identical bytes', () => {
    const a = temporaryDir();
    const b = temporaryDir();
    writeTree(a, project);
    writeTree(b, project, Object.keys(project).reverse());
    for (const path of Object.keys(project)) utimesSync(join(b, path), new Date(2001, 1, 1), new Date(2001, 1, 1));
    const outA = temporaryDir();
    const outB = temporaryDir();
    const outA2 = temporaryDir();
    for (const [tree, out] of [
      [a, outA],
      [b, outB],
      [a, outA2],
    ] as const) {
      expect(runCli([tree, '--out', out, '--target-mb', '0.1']).code).toBe(0);
    }
    expect(snapshot(outB)).toEqual(snapshot(outA));
    expect(snapshot(outA2)).toEqual(snapshot(outA));
  });

  test('changing one file changes only its bundle and the later bundles of its group', async () => {
    const writer = new BundleWriter({ targetBundleBytes: 100_000 });
    const publish = async (files: Record<string, Uint8Array>) => {
      const index: LooseIndex = {
        formatVersion: 2,
        rootPath: '/p',
        files: Object.entries(files).map(([path, bytes]) => ({
          path,
          sizeBytes: bytes.length,
          sha256: sha256(bytes),
          url: `files/${path}`,
        })),
      };
      const bundled = await writer.write(
        index,
        (entry) => files[entry.path]!,
        () => undefined,
      );
      const plans = writer.plan(index);
      return plans.map((plan, i) => ({ group: plan.group, sha256: bundled.bundles[i]!.sha256, paths: plan.files.map((f) => f.path) }));
    };
    const before = await publish(project);
    // tex05 grows: its bundle changes, and the split points after it in group folder:levels move.
    const after = await publish({ ...project, 'levels/one/tex05.bin': pseudoRandom(45_000, 999) });
    const changed = after.filter((bundle) => !before.some((old) => old.sha256 === bundle.sha256));
    expect(changed.length).toBeGreaterThan(0);
    // The bundle that held the file before is the first that may change.
    const firstChanged = before.findIndex((bundle) => bundle.paths.includes('levels/one/tex05.bin'));
    expect(firstChanged).toBeGreaterThan(0);
    for (const bundle of changed) expect(bundle.group).toBe('folder:levels');
    // Bundles before the changed one, and every other group, are untouched.
    for (const bundle of after.slice(0, firstChanged)) expect(before.map((b) => b.sha256)).toContain(bundle.sha256);
    for (const bundle of after.filter((b) => b.group !== 'folder:levels')) expect(before.map((b) => b.sha256)).toContain(bundle.sha256);
  });
});

describe('BundleWriter', () => {
  const index = (files: Record<string, Uint8Array>): LooseIndex => ({
    formatVersion: 2,
    rootPath: '/p',
    files: Object.entries(files).map(([path, bytes]) => ({ path, sizeBytes: bytes.length, sha256: sha256(bytes), url: `files/${path}` })),
  });

  test('hands over one bundle at a time, reading each file once, and streams a file larger than the target', async () => {
    const big = pseudoRandom(300_000, 7);
    const files = { 'a/small.txt': new Uint8Array([1, 2]), 'a/big.bin': big, 'a/big-copy.bin': big, 'b/x': new Uint8Array([3]) };
    const reads: string[] = [];
    const handed: { kind: string; sha256: string; bytes: Uint8Array }[] = [];
    const writer = new BundleWriter({ targetBundleBytes: 100_000, grouping: groupByFolder() });
    const bundled = await writer.write(
      index(files),
      async (entry, { stream }) => {
        reads.push(entry.path);
        const bytes = files[entry.path as keyof typeof files];
        if (!stream) return bytes;
        return (async function* () {
          for (let i = 0; i < bytes.length; i += 65536) yield bytes.subarray(i, i + 65536);
        })();
      },
      async (bundle: FinishedBundle) => {
        if (bundle.kind === 'bytes') handed.push({ kind: 'bytes', sha256: bundle.sha256, bytes: bundle.bytes });
        else {
          const parts: Uint8Array[] = [];
          for await (const chunk of bundle.chunks) parts.push(chunk);
          const { sha256: name } = await bundle.finished;
          handed.push({ kind: 'stream', sha256: name, bytes: Buffer.concat(parts) });
        }
      },
    );
    expect([...reads].sort()).toEqual(Object.keys(files).sort());
    // A duplicate after a file larger than the target still starts a new bundle: the sum is
    // already over the target (as the conformance case small-target-0.25 shows).
    expect(handed.map((h) => h.kind)).toEqual(['stream', 'stream', 'bytes', 'bytes']);
    for (const [i, h] of handed.entries()) {
      expect(sha256(h.bytes)).toBe(h.sha256);
      expect(bundled.bundles[i]).toEqual({ sha256: h.sha256, sizeBytes: h.bytes.length, url: `bundles/${h.sha256}.awkb` });
    }
    const streamed = decodeBundle(handed[0]!.bytes);
    expect(streamed.records.map((r) => r.key)).toEqual(['a/big-copy.bin']);
    expect(Buffer.from(handed[0]!.bytes.subarray(streamed.dataStart)).equals(Buffer.from(big))).toBe(true);
  });

  test('a file that differs from the loose index stops the write, naming the path', async () => {
    const files = { 'a/one': new Uint8Array([1]), 'a/two': new Uint8Array([2]) };
    const handed: unknown[] = [];
    const writer = new BundleWriter({ grouping: oneGroup() });
    await expect(
      writer.write(
        index(files),
        (entry) => (entry.path === 'a/two' ? new Uint8Array([9]) : files['a/one']),
        (b) => void handed.push(b),
      ),
    ).rejects.toThrow(/a\/two: SHA-256 .* differs from the loose index/);
    expect(handed).toEqual([]);
    await expect(
      writer.write(
        index(files),
        () => new Uint8Array([1, 1]),
        () => undefined,
      ),
    ).rejects.toThrow(PublishInputError);
  });

  test('opaque ids: no path text anywhere in the output', async () => {
    const files = { 'secret/level-boss.json': new TextEncoder().encode('{}') };
    let bundleBytes: Uint8Array = new Uint8Array();
    const writer = new BundleWriter({ pathIds: { salt: 's' } });
    const bundled = await writer.write(
      index(files),
      (e) => files[e.path as keyof typeof files],
      (b) => {
        if (b.kind === 'bytes') bundleBytes = b.bytes;
      },
    );
    const text = serializeIndex(bundled) + Buffer.from(bundleBytes).toString('latin1');
    expect(text).not.toContain('level-boss');
    expect(text).not.toContain('secret');
    expect(bundled.pathIds).toEqual({ algorithm: 'hmac-sha256', salt: 's' });
  });

  test('a custom grouping function keeps groups apart', async () => {
    const files = {
      'scenes/pier.json': new Uint8Array([1]),
      'assets/buoy.glb': new Uint8Array([2]),
      'assets/crate.glb': new Uint8Array([3]),
    };
    const pier = new Set(['scenes/pier.json', 'assets/buoy.glb']);
    const writer = new BundleWriter({ grouping: (path) => (pier.has(path) ? 'scene:pier' : `folder:${path.split('/')[0]}`) });
    expect(writer.plan(index(files)).map((p) => [p.group, p.files.map((f) => f.path)])).toEqual([
      ['folder:assets', ['assets/crate.glb']],
      ['scene:pier', ['assets/buoy.glb', 'scenes/pier.json']],
    ]);
  });
});

describe('incremental publish into a folder that holds earlier bundles', () => {
  test('writes only the new bundles, reports what was already there, and never leaves a dangling index', () => {
    const tree = temporaryDir();
    const out = temporaryDir();
    writeTree(tree, project);
    const first = runCli([tree, '--out', out, '--target-mb', '0.1', '--json']);
    expect(first.code).toBe(0);
    const firstSummary = JSON.parse(first.stdout);
    expect(firstSummary.existingBundles).toBe(0);
    expect(firstSummary.newBundles).toBe(firstSummary.bundles);

    writeFileSync(join(tree, 'sounds/s1.ogg'), pseudoRandom(5_000, 4242));
    const second = runCli([tree, '--out', out, '--target-mb', '0.1', '--json']);
    expect(second.code).toBe(0);
    const summary = JSON.parse(second.stdout);
    expect(summary.newBundles).toBe(1);
    expect(summary.existingBundles).toBe(summary.bundles - 1);
    expect(summary.newBytes).toBeGreaterThan(0);
    expect(summary.newBytes).toBeLessThan(30_000);

    const text = runCli([tree, '--out', out, '--target-mb', '0.1']);
    expect(text.stdout).toMatch(/new: +0 bundles/);
    expect(runCli(['verify', out]).code).toBe(0);
  });

  test('a failed publish leaves the previous index and every bundle it names in place', () => {
    const tree = temporaryDir();
    const out = temporaryDir();
    writeTree(tree, project);
    expect(runCli([tree, '--out', out]).code).toBe(0);
    const before = readFileSync(join(out, 'project.index.json'), 'utf8');
    const loose = JSON.parse(runCli(['index', tree, '--out', '-']).stdout);
    loose.files[3].sha256 = '0'.repeat(64);
    const looseFile = join(temporaryDir(), 'loose.json');
    writeFileSync(looseFile, JSON.stringify(loose));
    const failed = runCli([looseFile, '--root', tree, '--out', out]);
    expect(failed.code).toBe(1);
    expect(readFileSync(join(out, 'project.index.json'), 'utf8')).toBe(before);
    expect(readdirSync(out).filter((name) => name.includes('.tmp-'))).toEqual([]);
    expect(runCli(['verify', out]).code).toBe(0);
  });
});

describe('bad input: a clear message, the SPEC exit code, nothing published', () => {
  function expectRefused(args: string[], code: number, message: RegExp, out: string) {
    const result = runCli([...args, '--out', out]);
    expect(result.stderr).toMatch(message);
    expect(result.code).toBe(code);
    expect(existsSync(join(out, 'project.index.json'))).toBe(false);
  }

  test.each([
    [['--target-mb', '0'], /--target-mb/],
    [['--target-mb', '-1'], /--target-mb/],
    [['--target-mb', 'abc'], /--target-mb/],
    [['--opaque-ids'], /--opaque-ids needs --salt/],
    [['--group', 'scene'], /--group must be "folder", "one" or "auto"/],
    [['--depth', '0'], /--depth/],
    [['--bogus'], /bogus/],
    [['--url-prefix', 'https://cdn.example/b'], /--url-prefix "https:\/\/cdn.example\/b" must be a folder relative to the index/],
    [['--url-prefix', '../up'], /--url-prefix/],
    [['--salt', 'x'], /--salt is only used with --opaque-ids/],
  ])('%j exits 2', (flags, message) => {
    expectRefused([join(FIXTURES, 'trees/small'), ...flags], 2, message, temporaryDir());
  });

  test('a tiny --target-mb that floors to 0 bytes exits 2', () => {
    expectRefused([join(FIXTURES, 'trees/small'), '--target-mb', '0.0000001'], 2, /--target-mb/, temporaryDir());
  });

  test('no input exits 2', () => {
    const result = runCli([]);
    expect(result.code).toBe(2);
  });

  test('a loose index with an unsafe path', () => {
    const file = join(temporaryDir(), 'loose.json');
    writeFileSync(
      file,
      JSON.stringify({
        formatVersion: 2,
        rootPath: '/p',
        files: [{ path: '../etc/passwd', sizeBytes: 0, sha256: sha256(new Uint8Array()), url: 'x' }],
      }),
    );
    expectRefused([file], 1, /files\[0\]\.path "\.\.\/etc\/passwd" is not a safe path/, temporaryDir());
  });

  test('a loose index with a duplicate path', () => {
    const file = join(temporaryDir(), 'loose.json');
    const entry = { path: 'a', sizeBytes: 0, sha256: sha256(new Uint8Array()), url: 'a' };
    writeFileSync(file, JSON.stringify({ formatVersion: 2, rootPath: '/p', files: [entry, entry] }));
    expectRefused([file], 1, /files\[1\]\.path "a" repeats files\[0\]\.path/, temporaryDir());
  });

  test('a loose index whose file on disk differs names the path', () => {
    const tree = temporaryDir();
    cpSync(join(FIXTURES, 'trees/small'), tree, { recursive: true });
    writeFileSync(join(tree, 'ui/hud.json'), '{"changed":true}');
    expectRefused([join(FIXTURES, 'trees/small.loose.index.json'), '--root', tree], 1, /ui\/hud\.json: .*(bytes|SHA-256)/, temporaryDir());
  });

  test('a loose index naming a missing file names the path', () => {
    const tree = temporaryDir();
    cpSync(join(FIXTURES, 'trees/small'), tree, { recursive: true });
    rmSync(join(tree, 'scenes/pier.scene.json'));
    expectRefused(
      [join(FIXTURES, 'trees/small.loose.index.json'), '--root', tree],
      1,
      /scenes\/pier\.scene\.json: cannot read/,
      temporaryDir(),
    );
  });

  test('a folder holding a file whose name is not a safe project path', () => {
    const tree = temporaryDir();
    writeTree(tree, { 'ok.txt': 'x', 'art/back\\slash.png': 'y' });
    expectRefused([tree], 1, /unsafe project path "art\/back\\\\slash\.png": contains a backslash/, temporaryDir());
  });

  test('an empty folder', () => {
    expectRefused([temporaryDir()], 1, /no files to publish/, temporaryDir());
  });

  test('a missing input', () => {
    expectRefused([join(temporaryDir(), 'nope')], 1, /nope: no such file or folder/, temporaryDir());
  });

  test('a symbolic link loop', () => {
    const tree = temporaryDir();
    writeTree(tree, { 'a/file.txt': 'x' });
    symlinkSync(join(tree, 'a'), join(tree, 'a', 'again'));
    expectRefused([tree], 1, /a\/again: symbolic link loop/, temporaryDir());
  });

  test('a symbolic link that leaves the folder', () => {
    const tree = temporaryDir();
    const outside = temporaryDir();
    writeTree(outside, { 'secret.txt': 'x' });
    writeTree(tree, { 'a.txt': 'y' });
    symlinkSync(join(outside, 'secret.txt'), join(tree, 'link.txt'));
    expectRefused([tree], 1, /link\.txt: symbolic link leaves the folder/, temporaryDir());
  });

  test('links inside the folder are followed; .DS_Store, Thumbs.db and the out folder are left out', async () => {
    const tree = temporaryDir();
    writeTree(tree, { 'a/file.txt': 'x', '.DS_Store': 'junk', 'a/Thumbs.db': 'junk' });
    symlinkSync(join(tree, 'a', 'file.txt'), join(tree, 'alias.txt'));
    const out = join(tree, 'build', 'published');
    expect(runCli([tree, '--out', out]).code).toBe(0);
    expect(runCli([tree, '--out', out]).code).toBe(0); // the second run must not index the first's output
    const { index } = await looseIndexFromFolder(tree, { exclude: [out] });
    expect(index.files.map((f) => f.path)).toEqual(['a/file.txt', 'alias.txt']);
    const published = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'));
    expect(published.files.map((f: { path: string }) => f.path)).toEqual(['a/file.txt', 'alias.txt']);
  });
});

describe('--url-prefix', () => {
  test('bundles go below the out folder at the prefix, and the index names them there', () => {
    const out = temporaryDir();
    expect(runCli([join(FIXTURES, 'trees/small'), '--out', out, '--url-prefix', 'cdn/v1/']).code).toBe(0);
    const index = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'));
    for (const bundle of index.bundles) {
      expect(bundle.url).toBe(`cdn/v1/${bundle.sha256}.awkb`);
      expect(existsSync(join(out, 'cdn/v1', `${bundle.sha256}.awkb`))).toBe(true);
    }
    expect(runCli(['verify', out]).code).toBe(0);
  });
});

describe('CLI commands', () => {
  test('every command has --help', () => {
    for (const command of [[], ['index'], ['inspect'], ['verify']]) {
      const result = runCli([...command, '--help']);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/Usage: awake-bundle/);
    }
  });

  test('index writes the loose index the conformance files hold', () => {
    const out = join(temporaryDir(), 'loose.json');
    expect(runCli(['index', join(FIXTURES, 'trees/small'), '--out', out]).code).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(join(FIXTURES, 'trees/small.loose.index.json'), 'utf8'));
  });

  test('inspect prints the header and members, and --json is machine-readable', () => {
    const dir = join(FIXTURES, 'expected/small-default/bundles');
    const file = join(
      dir,
      readdirSync(dir).find((name) => name.startsWith('58a4'))!,
    );
    const text = runCli(['inspect', file]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/AWKB version 1, 8 members/);
    expect(text.stdout).toContain('assets/models/crate-copy.glb');
    const json = JSON.parse(runCli(['inspect', file, '--json']).stdout);
    expect(json.memberCount).toBe(8);
    expect(json.nameMatches).toBe(true);
  });

  test('verify names every problem and exits 1', () => {
    const out = temporaryDir();
    cpSync(join(FIXTURES, 'expected/small-default'), out, { recursive: true });
    const bundles = readdirSync(join(out, 'bundles'));
    rmSync(join(out, 'bundles', bundles[0]!));
    const damaged = join(
      out,
      'bundles',
      bundles.find((name) => name.startsWith('58a4'))!,
    );
    const bytes = readFileSync(damaged);
    bytes[bytes.length - 1] ^= 0xff;
    writeFileSync(damaged, bytes);
    const result = runCli(['verify', out]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/2 problems/);
    expect(result.stderr).toContain(`${bundles[0]}) : missing`.replace(') :', '):'));
    expect(result.stderr).toContain('assets/😀.txt');
  });
});
