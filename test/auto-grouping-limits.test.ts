/**
 * `--group auto` on hostile and very large referrers (issue 26; FORMAT.md "`--group auto`"):
 * reading references takes work linear in a file's size, counted in steps through
 * `referencesOf`'s `work` (never timed), up to the 64 MiB read limit; a tileset of 200,000
 * tiles, a map of 200,000 layers and a referrer naming 200,000 files publish as any other; and
 * a publish busy reading a large referrer still stops on SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectReferences, groupByReferences, referencesOf, REFERRER_READ_LIMIT_BYTES, type ReferenceWork } from '../core/internal.js';
import { publishFolder } from '../core/node/index.js';
import { CLI, temporaryDir } from './helpers/cli.js';

const MiB = 1024 * 1024;
const encode = (value: string) => new TextEncoder().encode(value);
/** `unit` repeated to exactly `size` characters. */
const repeatTo = (unit: string, size: number) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);

/** Steps `referencesOf` counts for `text` as the file `path`, and what it found. */
function measure(path: string, text: string, listed: ReadonlySet<string> = new Set()) {
  const work: ReferenceWork = { steps: 0 };
  const found = referencesOf(path, encode(text), listed, work);
  return { steps: work.steps, found };
}

/** Files a regular expression over the whole text took quadratic time on, by the size of the file. */
const HOSTILE: [kind: string, path: string, make: (size: number) => string][] = [
  ['unclosed <!--', 'maps/a.xml', (size) => repeatTo('<!--', size)],
  ['<tileset without >', 'maps/a.tmx', (size) => repeatTo('<tileset a ', size)],
  ['<image source without =, no >', 'maps/a.tsx', (size) => repeatTo('<image source ', size)],
  ['<page file=" never closed', 'fonts/a.fnt', (size) => repeatTo('<page file="', size)],
  ['one huge attribute', 'fonts/a.xml', (size) => `<page file="${'a'.repeat(size - 16)}"/>`],
  ['a huge attribute of entities never closed', 'fonts/e.xml', (size) => `<page file="${repeatTo('&#x1F&#12&amp', size - 16)}"/>`],
  ['<TextureAtlas with spaces around =', 'ui/a.xml', (size) => repeatTo('<TextureAtlas imagePath    =    x ', size)],
  ['AngelCode text: page lines without file=', 'fonts/b.fnt', (size) => repeatTo('page file file\r', size)],
  ['AngelCode text: file=" never closed', 'fonts/c.fnt', (size) => repeatTo('page file="a\n', size)],
  ['AngelCode text: one long line', 'fonts/d.fnt', (size) => `page ${repeatTo(' file', size - 5)}`],
];

/** At most this many steps per character of a referrer (measured: 5 to 6 on the files above). */
const STEPS_PER_CHARACTER = 16;

describe('reading references: work linear in the size of the file', () => {
  test.each(HOSTILE)('%s: twice the size takes at most 2.2 times the steps, and at most 16 steps a character', (_kind, path, make) => {
    const small = measure(path, make(MiB));
    const large = measure(path, make(2 * MiB));
    expect(small.steps).toBeGreaterThan(0);
    expect(large.steps / small.steps).toBeLessThanOrEqual(2.2);
    expect(large.steps).toBeLessThanOrEqual(STEPS_PER_CHARACTER * 2 * MiB);
  });

  test('files of 64 MiB (the read limit) of each hostile kind are read, in at most 16 steps a character', () => {
    expect(REFERRER_READ_LIMIT_BYTES).toBe(64 * MiB);
    for (const [kind, path, make] of HOSTILE) {
      const { steps, found } = measure(path, make(64 * MiB), new Set(['fonts/a.png']));
      expect({ kind, found, withinBound: steps <= STEPS_PER_CHARACTER * 64 * MiB }).toEqual({ kind, found: [], withinBound: true });
    }
  }, 240_000);

  test('a file full of references: still linear, and each found in order, once', () => {
    const tags = (size: number) => repeatTo('<image source="x.png"/><!-- c --><tileset source="t.tsx"/>', size);
    const listed = new Set(['maps/x.png', 'maps/t.tsx']);
    const small = measure('maps/a.tmx', tags(MiB), listed);
    const large = measure('maps/a.tmx', tags(2 * MiB), listed);
    expect(large.found).toEqual(['maps/t.tsx', 'maps/x.png']); // <tileset source> before <image source>
    expect(large.steps / small.steps).toBeLessThanOrEqual(2.2);
    expect(large.steps).toBeLessThanOrEqual(STEPS_PER_CHARACTER * 2 * MiB);
  });

  test('a pack of 200,000 distinct references: each once, in order, in work linear in their number', () => {
    const pack = (count: number) => {
      const files = Array.from({ length: count }, (_, i) => ({ type: 'image', key: `k${i}`, url: `img/${i}.png` }));
      const listed = new Set(files.map((file) => file.url));
      files.push({ type: 'image', key: 'again', url: 'img/0.png' }); // named twice: found once, in its first place
      return { text: JSON.stringify({ section: { files } }), listed };
    };
    const small = pack(100_000);
    const large = pack(200_000);
    const few = measure('pack.json', small.text, small.listed);
    const many = measure('pack.json', large.text, large.listed);
    expect(many.found).toEqual(Array.from({ length: 200_000 }, (_, i) => `img/${i}.png`));
    // Found through a list searched for each reference, the steps would grow fourfold.
    expect(many.steps / few.steps).toBeLessThanOrEqual(2.2);
  });
});

/** A Tiled JSON tileset (an image collection) of `count` tiles, the first naming `first`. */
const tileset = (count: number, first: string) =>
  JSON.stringify({
    type: 'tileset',
    tilewidth: 16,
    tileheight: 16,
    tiles: Array.from({ length: count }, (_, id) => ({ id, image: id === 0 ? first : `gone/${id}.png` })),
  });

/** A Tiled JSON map with a group layer of `count` image layers, the first naming `first`. */
const layeredMap = (count: number, first: string) =>
  JSON.stringify({
    type: 'map',
    tilesets: [],
    layers: [
      {
        type: 'group',
        layers: Array.from({ length: count }, (_, id) => ({ type: 'imagelayer', id, image: id === 0 ? first : `gone/${id}.png` })),
      },
    ],
  });

/** A tree holding `files` (path → contents). */
function tree(files: Record<string, string>): string {
  const root = temporaryDir();
  for (const [path, contents] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), contents);
  }
  return root;
}

/** The 200,000 empty files of a pack that names them all, 1,000 to a folder. */
const MANY = 200_000;
const manyPaths = () => Array.from({ length: MANY }, (_, i) => `many/${Math.floor(i / 1000)}/${i % 1000}.txt`);

function manyTree(): string {
  const root = temporaryDir();
  const paths = manyPaths();
  for (let folder = 0; folder < MANY / 1000; folder++) mkdirSync(join(root, 'many', String(folder)), { recursive: true });
  for (const path of paths) writeFileSync(join(root, path), '');
  const files = paths.map((url) => ({ type: 'text', key: url, url }));
  writeFileSync(join(root, 'pack.json'), JSON.stringify({ section: { files } }));
  writeFileSync(join(root, 'other.txt'), 'by folder');
  mkdirSync(join(root, 'tiles'));
  writeFileSync(join(root, 'tiles/tiles.tsj'), tileset(MANY, 'tile0.png'));
  writeFileSync(join(root, 'tiles/tile0.png'), 'tile');
  mkdirSync(join(root, 'maps'));
  writeFileSync(join(root, 'maps/map.tmj'), layeredMap(MANY, 'sky.png'));
  writeFileSync(join(root, 'maps/sky.png'), 'sky');
  return root;
}

interface IndexFile {
  path: string;
  bundle: string;
}
const bundleOf = (out: string) =>
  new Map(
    (JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8')) as { files: IndexFile[] }).files.map((f) => [f.path, f.bundle]),
  );

/** Runs the built CLI without blocking the test's event loop; resolves with how it exited. */
function runCliAsync(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('--group auto with 200,000 of a thing (no RangeError)', () => {
  test('a tileset of 200,000 tiles goes with the image its tiles name', async () => {
    const folder = tree({ 'tiles/tiles.tsj': tileset(MANY, 'tile0.png'), 'tiles/tile0.png': 'tile', 'other/x.txt': 'x' });
    const out = join(temporaryDir(), 'published');
    await publishFolder({ folder, outDir: out, groupByReferences: true });
    const bundle = bundleOf(out);
    expect(bundle.get('tiles/tile0.png')).toBe(bundle.get('tiles/tiles.tsj'));
    expect(bundle.get('other/x.txt')).not.toBe(bundle.get('tiles/tiles.tsj'));
  });

  test('a map with a group of 200,000 image layers goes with the image a layer names', async () => {
    const folder = tree({ 'maps/map.tmj': layeredMap(MANY, 'sky.png'), 'maps/sky.png': 'sky', 'other/x.txt': 'x' });
    const out = join(temporaryDir(), 'published');
    await publishFolder({ folder, outDir: out, groupByReferences: true });
    const bundle = bundleOf(out);
    expect(bundle.get('maps/sky.png')).toBe(bundle.get('maps/map.tmj'));
    expect(bundle.get('other/x.txt')).not.toBe(bundle.get('maps/map.tmj'));
  });

  test('groupByReferences: a file that names 200,000 files takes them all', () => {
    const paths = manyPaths();
    const grouping = groupByReferences(new Map([['pack.json', paths]]));
    expect(paths.every((path) => grouping.groupOf(path) === 'ref:pack.json')).toBe(true);
    expect(grouping.groupOf('other.txt')).toBe('folder:');
  });

  test('groupByReferences: a pack of 200,000 sections, each naming its own file and one they share, takes a group per section', async () => {
    const paths = manyPaths();
    const pack = Object.fromEntries(
      paths.map((url, i) => [
        `s${i}`,
        {
          files: [
            { type: 'text', key: url, url },
            { type: 'text', key: 'shared', url: 'shared.txt' },
          ],
        },
      ]),
    );
    const files = new Map([['pack.json', encode(JSON.stringify(pack))]]);
    const references = await collectReferences(['pack.json', 'shared.txt', ...paths], async (path) => files.get(path));
    expect(references.sections.get('pack.json')).toHaveLength(MANY);
    const grouping = groupByReferences(references);
    expect(paths.every((path, i) => grouping.groupOf(path) === `ref:pack.json#s${i}`)).toBe(true);
    expect([grouping.groupOf('pack.json'), grouping.groupOf('shared.txt')]).toEqual(['ref:pack.json#s0', 'ref:pack.json#s0']);
  });

  describe('a pack naming 200,000 files, a tileset of 200,000 tiles and a map of 200,000 layers in one folder', () => {
    let folder: string;
    const outs: string[] = [];
    beforeAll(() => {
      folder = manyTree();
    }, 120_000);
    // 200,000 files, and as many in each publish's index: not left in the temporary folder.
    afterAll(() => {
      for (const dir of [folder, ...outs]) rmSync(dir, { recursive: true, force: true });
    }, 120_000);

    const expectGrouped = (out: string) => {
      const bundle = bundleOf(out);
      expect(bundle.size).toBe(MANY + 6);
      const pack = bundle.get('pack.json');
      expect(manyPaths().filter((path) => bundle.get(path) !== pack)).toEqual([]);
      expect(bundle.get('tiles/tile0.png')).toBe(bundle.get('tiles/tiles.tsj'));
      expect(bundle.get('maps/sky.png')).toBe(bundle.get('maps/map.tmj'));
      expect(new Set([pack, bundle.get('tiles/tiles.tsj'), bundle.get('maps/map.tmj'), bundle.get('other.txt')]).size).toBe(4);
    };

    test('publishFolder({ groupByReferences: true })', async () => {
      const out = temporaryDir();
      outs.push(out);
      await publishFolder({ folder, outDir: out, groupByReferences: true });
      expectGrouped(out);
    }, 180_000);

    test('awake-bundle --group auto: published, no internal error', async () => {
      const out = temporaryDir();
      outs.push(out);
      const result = await runCliAsync([folder, '--out', out, '--group', 'auto', '--json']);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout).files).toBe(MANY + 6);
      expectGrouped(out);
    }, 180_000);
  });
});

describe('a publish reading a large referrer stops on SIGTERM', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  test('SIGTERM while it scans a 64 MiB hostile .tmx: exit 143, no index, no temporary files', async () => {
    const folder = tree({ 'maps/sky.png': 'sky' });
    writeFileSync(join(folder, 'maps/huge.tmx'), repeatTo('<tileset <!-- <image source="sky.png" ', 64 * MiB));
    const out = join(temporaryDir(), 'published');
    // The child says on stderr when it has read the .tmx's bytes for its references: what runs
    // next, before the event loop can take the signal, is the scan of those bytes.
    const hook = join(temporaryDir(), 'announce-read.cjs');
    writeFileSync(
      hook,
      `const fs = require('node:fs/promises');
const readFile = fs.readFile;
fs.readFile = function (path, ...rest) {
  const read = readFile.call(this, path, ...rest);
  if (!String(path).endsWith('.tmx')) return read;
  return read.then((bytes) => {
    process.stderr.write('test: read the .tmx\\n');
    return bytes;
  });
};
require('node:module').syncBuiltinESMExports();
`,
    );
    const child = spawn(process.execPath, ['--require', hook, CLI, folder, '--out', out, '--group', 'auto', '--json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    await new Promise<void>((resolve) => {
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
        if (stderr.includes('test: read the .tmx')) resolve();
      });
      void exited.then(() => resolve());
    });
    expect(stderr).toContain('test: read the .tmx');
    child.kill('SIGTERM');
    const { code } = await exited;
    expect(code).toBe(143);
    expect(stderr).toContain('stopped by SIGTERM');
    expect(existsSync(join(out, 'project.index.json'))).toBe(false);
    const left = existsSync(out) ? readdirSync(out, { recursive: true, encoding: 'utf8' }).filter((name) => name.includes('.tmp-')) : [];
    expect(left).toEqual([]);
    rmSync(folder, { recursive: true, force: true }); // 64 MiB
  });
});
