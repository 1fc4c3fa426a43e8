/**
 * Loads (SPEC §6 "Loads", §8 `--loads`): a loads file decides which files share bundles — a
 * load's files together, a file two loads list with the first, the rest by the folder
 * grouping — with SPEC's order and split rules unchanged; the output is deterministic; a path
 * no file has is ignored with a warning; a bad loads file is refused naming it, with nothing
 * written. Through the CLI and through the library (`publishFolder({ loads })`).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { byLoads, groupByFolder, oneGroup, parseLoadsFile, PublishInputError, type LoadsFile } from '../core/index.js';
import { looseIndexFromFolder, publishFolder, publishToDirectory, readLoadsFile } from '../core/node/index.js';
import { runCli, temporaryDir } from './helpers/cli.js';
import { seededBytes, sha256Hex, writeTree } from './helpers/trees.js';

/** A game: two levels, a title screen, shared art and sounds, a root file. */
const GAME: Record<string, Uint8Array | string> = {
  'awake.project.json': '{"name":"a game"}\n',
  'levels/forest/map.json': '{"level":"forest"}\n',
  'levels/forest/trees.png': seededBytes(40_000, 1),
  'levels/desert/map.json': '{"level":"desert"}\n',
  'levels/desert/sand.png': seededBytes(30_000, 2),
  'shared/ui.png': seededBytes(20_000, 3),
  'shared/font.png': seededBytes(10_000, 4),
  'audio/theme.ogg': seededBytes(50_000, 5),
  'audio/wind.ogg': seededBytes(25_000, 6),
};

/** What the scenes load: shared/ui.png by all three, first by the title. */
const LOADS: LoadsFile = {
  formatVersion: 1,
  loads: [
    { name: 'title', paths: ['shared/ui.png', 'audio/theme.ogg'] },
    {
      name: 'forest',
      paths: ['levels/forest/map.json', 'levels/forest/trees.png', 'shared/ui.png', 'audio/wind.ogg', 'levels/forest/trees.png'],
    },
    {
      name: 'desert',
      paths: ['levels/desert/map.json', 'levels/desert/sand.png', 'shared/ui.png', 'audio/wind.ogg', 'levels/desert/ghost.png'],
    },
  ],
};

function writeGame(order: string[] = Object.keys(GAME)): string {
  const dir = temporaryDir('awkb-loads-game-');
  for (const path of order) writeTree(dir, { [path]: GAME[path]! });
  return dir;
}

function writeLoads(loads: unknown = LOADS): string {
  const file = join(temporaryDir('awkb-loads-file-'), 'awkb-loads.json');
  writeFileSync(file, typeof loads === 'string' || loads instanceof Uint8Array ? loads : JSON.stringify(loads, null, 2));
  return file;
}

interface IndexJson {
  bundles: { sha256: string; url: string }[];
  files: { path: string; bundle: string }[];
}

const readIndex = (out: string): IndexJson => JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'));

/** Each bundle's member paths, in the order the index lists the bundles. */
function bundleMembers(out: string): string[][] {
  const index = readIndex(out);
  return index.bundles.map((bundle) => index.files.filter((file) => file.bundle === bundle.sha256).map((file) => file.path));
}

/** Every file below `dir` with its SHA-256. */
function snapshot(dir: string): Record<string, string> {
  if (!existsSync(dir)) return {};
  const files: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()) {
    const path = join(dir, name);
    try {
      files[name] = sha256Hex(readFileSync(path));
    } catch {
      files[name] = 'folder';
    }
  }
  return files;
}

describe('byLoads (SPEC §6)', () => {
  test("a file goes with the first load that lists it; a file no load lists keeps the fallback's group", () => {
    const grouping = byLoads(LOADS.loads);
    expect(grouping.groupOf('shared/ui.png')).toBe('load:title');
    expect(grouping.groupOf('audio/wind.ogg')).toBe('load:forest');
    expect(grouping.groupOf('levels/desert/sand.png')).toBe('load:desert');
    expect(grouping.groupOf('shared/font.png')).toBe('folder:shared');
    expect(grouping.groupOf('awake.project.json')).toBe('folder:');
    expect(byLoads(LOADS.loads, groupByFolder(2)).groupOf('levels/forest/x.png')).toBe('folder:levels/forest');
    expect(byLoads(LOADS.loads, oneGroup()).groupOf('shared/font.png')).toBe('one');
  });
});

describe('awake-bundle --loads', () => {
  test("a load's files share its bundles, a shared file goes with the first load, the rest by folder; groups in key order", () => {
    const game = writeGame();
    const out = join(temporaryDir(), 'published');
    const result = runCli([game, '--out', out, '--loads', writeLoads()]);
    expect(result.code).toBe(0);
    // Groups in key order: folder:, folder:shared, load:desert, load:forest, load:title.
    expect(bundleMembers(out)).toEqual([
      ['awake.project.json'],
      ['shared/font.png'],
      ['levels/desert/map.json', 'levels/desert/sand.png'],
      ['audio/wind.ogg', 'levels/forest/map.json', 'levels/forest/trees.png'],
      ['audio/theme.ogg', 'shared/ui.png'],
    ]);
    expect(runCli(['verify', out]).code).toBe(0);
  });

  test('the split rule is unchanged (a load larger than the target takes several bundles); the fallback is --group', () => {
    const game = writeGame();
    const loads = writeLoads();
    const small = join(temporaryDir(), 'small');
    expect(runCli([game, '--out', small, '--loads', loads, '--target-mb', '0.05']).code).toBe(0);
    // 0.05 MiB = 52,428 bytes: forest (25,000 + 19 + 40,000) closes its first bundle before trees.png.
    expect(bundleMembers(small)).toEqual([
      ['awake.project.json'],
      ['shared/font.png'],
      ['levels/desert/map.json', 'levels/desert/sand.png'],
      ['audio/wind.ogg', 'levels/forest/map.json'],
      ['levels/forest/trees.png'],
      ['audio/theme.ogg'],
      ['shared/ui.png'],
    ]);
    const one = join(temporaryDir(), 'one');
    expect(runCli([game, '--out', one, '--loads', loads, '--group', 'one']).code).toBe(0);
    // load:desert, load:forest, load:title, then one: every file no load lists.
    expect(bundleMembers(one)).toEqual([
      ['levels/desert/map.json', 'levels/desert/sand.png'],
      ['audio/wind.ogg', 'levels/forest/map.json', 'levels/forest/trees.png'],
      ['audio/theme.ogg', 'shared/ui.png'],
      ['awake.project.json', 'shared/font.png'],
    ]);
  });

  test('deterministic: trees written in another order, a folder or its loose index as input, give identical bundles and index', () => {
    const loads = writeLoads();
    const outs = [join(temporaryDir(), 'a'), join(temporaryDir(), 'b'), join(temporaryDir(), 'c')];
    const first = writeGame();
    const second = writeGame(Object.keys(GAME).reverse());
    expect(runCli([first, '--out', outs[0]!, '--loads', loads]).code).toBe(0);
    expect(runCli([second, '--out', outs[1]!, '--loads', loads]).code).toBe(0);
    const looseIndex = join(temporaryDir(), 'project.index.json');
    expect(runCli(['index', first, '--out', looseIndex]).code).toBe(0);
    expect(runCli([looseIndex, '--root', first, '--out', outs[2]!, '--loads', loads]).code).toBe(0);
    expect(snapshot(outs[1]!)).toEqual(snapshot(outs[0]!));
    expect(snapshot(outs[2]!)).toEqual(snapshot(outs[0]!));
  });

  test('a path that is no file is ignored with a warning naming it and its load, on stderr and in --json', () => {
    const out = join(temporaryDir(), 'published');
    const result = runCli([writeGame(), '--out', out, '--loads', writeLoads(), '--json']);
    expect(result.code).toBe(0);
    const warning = 'load "desert" lists "levels/desert/ghost.png", which is not a file of this publish: ignored';
    expect(result.stderr).toBe(`awake-bundle: warning: ${warning}\n`);
    expect(JSON.parse(result.stdout).warnings).toEqual([warning]);
    expect(readIndex(out).files.map((file) => file.path)).not.toContain('levels/desert/ghost.png');
  });

  test('without warnings, --json says so', () => {
    const result = runCli([writeGame(), '--out', join(temporaryDir(), 'published'), '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).warnings).toEqual([]);
  });

  describe('a bad loads file is refused naming it, exit 1, the out folder unchanged', () => {
    test.each([
      ['another formatVersion', { formatVersion: 2, loads: [] }, /formatVersion is 2; this writer reads formatVersion 1/],
      ['text that is not JSON', '{"formatVersion": 1, "loads": [', /not valid JSON/],
      ['a JSON array', '[]', /not a JSON object/],
      ['no loads array', { formatVersion: 1 }, /"loads" must be an array/],
      [
        'a missing name',
        { formatVersion: 1, loads: [{ paths: ['shared/ui.png'] }] },
        /loads\[0\]\.name must be a non-empty string \(it is missing\)/,
      ],
      ['an empty name', { formatVersion: 1, loads: [{ name: '', paths: [] }] }, /loads\[0\]\.name must be a non-empty string/],
      [
        'a duplicate name',
        {
          formatVersion: 1,
          loads: [
            { name: 'a', paths: [] },
            { name: 'a', paths: [] },
          ],
        },
        /loads\[1\]\.name "a" is used by an earlier load/,
      ],
      ['a path that is not a string', { formatVersion: 1, loads: [{ name: 'a', paths: [3] }] }, /loads\[0\]\.paths\[0\] must be a string/],
      ['text that is not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), /not UTF-8 text/],
    ])('%s', (_, loads, message) => {
      const game = writeGame();
      const file = writeLoads(loads);
      // An out folder that holds an earlier publish, and one that does not exist yet.
      const earlier = join(temporaryDir(), 'published');
      expect(runCli([game, '--out', earlier]).code).toBe(0);
      const before = snapshot(earlier);
      const fresh = join(temporaryDir(), 'fresh');
      for (const out of [earlier, fresh]) {
        const result = runCli([game, '--out', out, '--loads', file]);
        expect(result.stderr).toMatch(message);
        expect(result.stderr).toContain(`awake-bundle: loads file ${file}: `);
        expect(result.code).toBe(1);
      }
      expect(snapshot(earlier)).toEqual(before);
      expect(existsSync(fresh)).toBe(false);
    });

    test('a loads file that does not exist', () => {
      const missing = join(temporaryDir(), 'awkb-loads.json');
      const out = join(temporaryDir(), 'fresh');
      const result = runCli([writeGame(), '--out', out, '--loads', missing]);
      expect(result.stderr).toBe(`awake-bundle: loads file ${missing}: no such file\n`);
      expect(result.code).toBe(1);
      expect(existsSync(out)).toBe(false);
    });

    test('--loads with no file name is a wrong command line (exit 2)', () => {
      const result = runCli([writeGame(), '--out', join(temporaryDir(), 'fresh'), '--loads', '']);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('--loads must name a loads file');
    });
  });
});

describe('the library: publishFolder and publishToDirectory take loads', () => {
  test("the CLI's bytes, the warning through onWarning, and readLoadsFile refusing what the CLI refuses", async () => {
    const game = writeGame();
    const loadsFile = writeLoads();
    const cliOut = join(temporaryDir(), 'cli');
    expect(runCli([game, '--out', cliOut, '--loads', loadsFile]).code).toBe(0);

    const { loads } = await readLoadsFile(loadsFile);
    const warnings: string[] = [];
    const folderOut = join(temporaryDir(), 'folder');
    await publishFolder({ folder: game, outDir: folderOut, loads, onWarning: (message) => warnings.push(message) });
    expect(snapshot(folderOut)).toEqual(snapshot(cliOut));
    expect(warnings).toEqual(['load "desert" lists "levels/desert/ghost.png", which is not a file of this publish: ignored']);

    const { index: looseIndex, files } = await looseIndexFromFolder(game);
    const onDisk = new Map(files.map((file) => [file.path, file.absolutePath]));
    const indexOut = join(temporaryDir(), 'index');
    await publishToDirectory({ looseIndex, locate: (entry) => onDisk.get(entry.path)!, outDir: indexOut, loads });
    expect(snapshot(indexOut)).toEqual(snapshot(cliOut));

    await expect(readLoadsFile(join(game, 'nothing.json'))).rejects.toThrow(PublishInputError);
    expect(() => parseLoadsFile('{"formatVersion":1,"loads":[{"name":"a","paths":[]},{"name":"a","paths":[]}]}', 'my-loads.json')).toThrow(
      /^loads file my-loads\.json: loads\[1\]\.name "a"/,
    );
  });
});
