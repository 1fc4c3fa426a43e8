/**
 * Loads (SPEC §6 "Loads", §8 `--loads`): a loads file decides which files share bundles — a
 * load's files together, a file two loads list with the first, the rest by the folder
 * grouping; a load group's files go in first-use order, its bundles filled and its data laid out
 * in that order (SPEC §5 "Data order", §6 "Order"); the output is deterministic; a path no file
 * has is ignored with a warning; a bad loads file is refused naming it, with nothing written.
 * Through the CLI and through the library (`publishFolder({ loads })`).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BundleWriter,
  byLoads,
  compareKeys,
  decodeBundle,
  groupByFolder,
  oneGroup,
  opaqueId,
  orderGroupFiles,
  parseLoadsFile,
  PublishInputError,
  type LoadsFile,
} from '../core/internal.js';
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

  test('the split rule (a load larger than the target takes several bundles), filled in first-use order; the fallback is --group', () => {
    const game = writeGame();
    const loads = writeLoads();
    const small = join(temporaryDir(), 'small');
    expect(runCli([game, '--out', small, '--loads', loads, '--target-mb', '0.05']).code).toBe(0);
    // 0.05 MiB = 52,428 bytes, filled in first-use order (SPEC §6): forest (19 + 40,000, then
    // 25,000) closes its first bundle before wind.ogg; title (20,000, then 50,000) before theme.ogg.
    expect(bundleMembers(small)).toEqual([
      ['awake.project.json'],
      ['shared/font.png'],
      ['levels/desert/map.json', 'levels/desert/sand.png'],
      ['levels/forest/map.json', 'levels/forest/trees.png'],
      ['audio/wind.ogg'],
      ['shared/ui.png'],
      ['audio/theme.ogg'],
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

describe('first-use order (SPEC §5 "Data order", §6 "Order")', () => {
  /** Each load's files in first-use order, as the loads file first lists them (ghost.png is no file). */
  const FIRST_USE = {
    title: ['shared/ui.png', 'audio/theme.ogg'],
    forest: ['levels/forest/map.json', 'levels/forest/trees.png', 'audio/wind.ogg'],
    desert: ['levels/desert/map.json', 'levels/desert/sand.png'],
  };

  /** The bundle that holds `path`: its table's keys, and its members' keys in data order (by offset). */
  function bundleOf(out: string, key: string) {
    const index: { bundles: { sha256: string; url: string }[]; files: { path?: string; id?: string; bundle: string; offset: number }[] } =
      JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'));
    const keyOf = (file: { path?: string; id?: string }) => (file.path ?? file.id)!;
    const sha256 = index.files.find((file) => keyOf(file) === key)!.bundle;
    const bytes = new Uint8Array(readFileSync(join(out, index.bundles.find((bundle) => bundle.sha256 === sha256)!.url)));
    const { records } = decodeBundle(bytes);
    const members = index.files.filter((file) => file.bundle === sha256);
    // The reader takes offsets from the index or the table: they agree.
    expect(Object.fromEntries(members.map((file) => [keyOf(file), file.offset]))).toEqual(
      Object.fromEntries(records.map((record) => [record.key, record.offset])),
    );
    const dataOrder = [...records].sort((a, b) => a.offset - b.offset || a.sizeBytes - b.sizeBytes).map((record) => record.key);
    return { table: records.map((record) => record.key), dataOrder };
  }

  const byKeyOrder = (keys: string[]) => [...keys].sort((a, b) => compareKeys(a, b));

  test("a load group's bundle holds its members' data in first-use order, its table in key order", () => {
    const out = join(temporaryDir(), 'published');
    expect(runCli([writeGame(), '--out', out, '--loads', writeLoads(), '--group', 'one']).code).toBe(0);
    for (const paths of Object.values(FIRST_USE)) {
      const bundle = bundleOf(out, paths[0]!);
      expect(bundle.dataOrder).toEqual(paths);
      expect(bundle.table).toEqual(byKeyOrder(paths));
    }
    // Not a load group: data in table order.
    expect(bundleOf(out, 'shared/font.png')).toEqual({
      table: ['awake.project.json', 'shared/font.png'],
      dataOrder: ['awake.project.json', 'shared/font.png'],
    });
    expect(runCli(['verify', out]).code).toBe(0);
  });

  test('with opaque ids: the table in key order of the ids, the data still in first-use order of the paths', () => {
    const out = join(temporaryDir(), 'published');
    expect(runCli([writeGame(), '--out', out, '--loads', writeLoads(), '--opaque-ids', '--salt', 'order']).code).toBe(0);
    for (const paths of Object.values(FIRST_USE)) {
      const ids = paths.map((path) => opaqueId('order', path));
      const bundle = bundleOf(out, ids[0]!);
      expect(bundle.dataOrder).toEqual(ids);
      expect(bundle.table).toEqual(byKeyOrder(ids));
    }
    expect(runCli(['verify', out]).code).toBe(0);
  });

  test('the writer plans a load group in first-use order and fills its bundles in that order; other groups in key order', () => {
    const files = Object.entries(GAME)
      .map(([path, content]) => {
        const bytes = typeof content === 'string' ? Buffer.from(content) : content;
        return { path, sizeBytes: bytes.length, sha256: sha256Hex(bytes), url: `files/${path}` };
      })
      .sort((a, b) => compareKeys(a.path, b.path));
    const writer = new BundleWriter({ grouping: byLoads(LOADS.loads, oneGroup()), targetBundleBytes: 52_428 });
    const plans = writer.plan({ formatVersion: 2, rootPath: '/game', files });
    expect(plans.map((plan) => ({ group: plan.group, order: plan.order, files: plan.files.map((file) => file.path) }))).toEqual([
      { group: 'load:desert', order: 'first-use', files: FIRST_USE.desert },
      { group: 'load:forest', order: 'first-use', files: FIRST_USE.forest.slice(0, 2) },
      { group: 'load:forest', order: 'first-use', files: FIRST_USE.forest.slice(2) },
      { group: 'load:title', order: 'first-use', files: ['shared/ui.png'] },
      { group: 'load:title', order: 'first-use', files: ['audio/theme.ogg'] },
      { group: 'one', order: 'key', files: ['awake.project.json', 'shared/font.png'] },
    ]);
  });

  test("a file first listed by an earlier load is not part of a later load's order; a repeated path counts at its first listing", () => {
    const grouping = byLoads([
      { name: 'b', paths: ['x/2', 'x/1', 'x/2'] },
      { name: 'a', paths: ['x/1', 'x/3', 'x/0'] },
    ]);
    const files = ['x/0', 'x/1', 'x/2', 'x/3', 'y/0'].map((path) => ({ path }));
    expect(files.map((file) => [grouping.groupOf(file.path), grouping.firstUse!(file.path)])).toEqual([
      ['load:a', 3],
      ['load:b', 1],
      ['load:b', 0],
      ['load:a', 2],
      ['folder:y', undefined],
    ]);
    const groupA = files.filter((file) => grouping.groupOf(file.path) === 'load:a');
    expect(orderGroupFiles(groupA, grouping)).toBe('first-use');
    expect(groupA.map((file) => file.path)).toEqual(['x/3', 'x/0']);
    const unlisted = [{ path: 'y/b' }, { path: 'y/a' }];
    expect(orderGroupFiles(unlisted, grouping)).toBe('key');
    expect(unlisted.map((file) => file.path)).toEqual(['y/a', 'y/b']);
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
