/**
 * `awake-bundle report`: per load, the bytes fetched against the bytes used;
 * per bundle, the loads that touch it; the files no load uses; `--json`; the `--html` page,
 * looked at in Chromium; and the errors.
 *
 * The figures are worked out by hand from SPEC §5: a bundle is 16 header bytes, a record of
 * 2 + k + 8 + 8 + 32 = 50 + k bytes per member (k: the key's UTF-8 length), then each distinct
 * content once.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { opaqueId } from '../core/internal.js';
import { startStaticServer } from '../core/node/index.js';
import { launchBrowser, TESTED_BROWSERS, testIf } from './helpers/browser.js';
import { CLI, runCli, temporaryDir } from './helpers/cli.js';
import { seededBytes, writeTree } from './helpers/trees.js';

const TREE = {
  'title/logo.png': seededBytes(3000, 1),
  'title/music.ogg': seededBytes(1000, 2),
  'level1/map.json': seededBytes(5000, 3),
  'level1/unused.bin': seededBytes(2000, 4),
  'shared/font.png': seededBytes(4000, 5),
  'readme.txt': 'read me!!\n',
};

const LOADS = {
  formatVersion: 1,
  loads: [
    { name: 'title', paths: ['title/logo.png', 'title/music.ogg', 'shared/font.png'] },
    // A repeated path counts once; a path the index lacks is said, and ignored.
    { name: 'level1', paths: ['level1/map.json', 'shared/font.png', 'missing.png', 'level1/map.json'] },
    { name: 'menu', paths: ['title/logo.png'] },
  ],
};

/** Bundle sizes by hand (keys as paths): header + records + contents. */
const record = (key: string) => 50 + Buffer.byteLength(key);
const SIZE = {
  root: 16 + record('readme.txt') + 10, // 86
  level1: 16 + record('level1/map.json') + record('level1/unused.bin') + 5000 + 2000, // 7148
  shared: 16 + record('shared/font.png') + 4000, // 4081
  title: 16 + record('title/logo.png') + record('title/music.ogg') + 3000 + 1000, // 4145
};

interface Published {
  dir: string;
  out: string;
  index: { bundles: { sha256: string; sizeBytes: number; url: string }[]; files: { path?: string; id?: string; bundle: string }[] };
  /** The sha256 of the bundle holding `key`. */
  bundleOf(key: string): string;
}

/** Publishes TREE with the CLI (`in` → `published`) and writes the loads file beside it. */
function publish(extra: string[] = []): Published {
  const dir = temporaryDir('awkb-report-');
  writeTree(join(dir, 'in'), TREE);
  const result = runCli(['in', '--out', 'published', ...extra], { cwd: dir });
  if (result.code !== 0) throw new Error(`publish failed: ${result.stderr}`);
  writeFileSync(join(dir, 'awkb-loads.json'), JSON.stringify(LOADS));
  const out = join(dir, 'published');
  const index = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8')) as Published['index'];
  const bundleOf = (key: string) => index.files.find((file) => (file.path ?? file.id) === key)!.bundle;
  return { dir, out, index, bundleOf };
}

describe('awake-bundle report, by hand', () => {
  let published: Published;
  let json: any;
  beforeAll(() => {
    published = publish();
    const result = runCli(['report', 'published', '--json'], { cwd: published.dir });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    json = JSON.parse(result.stdout);
  });

  test('the bundles are the sizes SPEC §5 gives', () => {
    const { index, bundleOf } = published;
    const sizeOf = (sha256: string) => index.bundles.find((bundle) => bundle.sha256 === sha256)!.sizeBytes;
    expect(sizeOf(bundleOf('readme.txt'))).toBe(SIZE.root);
    expect(sizeOf(bundleOf('level1/map.json'))).toBe(SIZE.level1);
    expect(sizeOf(bundleOf('shared/font.png'))).toBe(SIZE.shared);
    expect(sizeOf(bundleOf('title/logo.png'))).toBe(SIZE.title);
    expect(index.bundles).toHaveLength(4);
  });

  test('per load, alone: every bundle holding a file it reads, whole, once', () => {
    const { bundleOf } = published;
    const [title, level1, menu] = json.loads;
    // title reads 3000 + 1000 + 4000 and fetches the title and shared bundles.
    expect(title).toMatchObject({ name: 'title', files: 3, usedBytes: 8000, notInIndex: [] });
    expect(title.alone).toEqual({
      fetchedBytes: 4145 + 4081,
      ratio: 8226 / 8000,
      requests: 2,
      bundles: [bundleOf('shared/font.png'), bundleOf('title/logo.png')],
      looseFiles: 0,
    });
    // level1 reads map.json once (listed twice) and font.png: the level1 bundle (with unused.bin) and shared.
    expect(level1).toMatchObject({ name: 'level1', files: 2, usedBytes: 9000, notInIndex: ['missing.png'] });
    expect(level1.alone).toEqual({
      fetchedBytes: 7148 + 4081,
      ratio: 11229 / 9000,
      requests: 2,
      bundles: [bundleOf('level1/map.json'), bundleOf('shared/font.png')],
      looseFiles: 0,
    });
    // menu reads logo.png alone and still fetches the whole title bundle.
    expect(menu).toMatchObject({ name: 'menu', files: 1, usedBytes: 3000 });
    expect(menu.alone).toEqual({
      fetchedBytes: 4145,
      ratio: 4145 / 3000,
      requests: 1,
      bundles: [bundleOf('title/logo.png')],
      looseFiles: 0,
    });
  });

  test('per load, in order with a cache: what an earlier load fetched costs nothing', () => {
    const { bundleOf } = published;
    const [title, level1, menu] = json.loads;
    expect(title.inOrder).toEqual(title.alone);
    expect(level1.inOrder).toEqual({
      fetchedBytes: 7148,
      ratio: 7148 / 9000,
      requests: 1,
      bundles: [bundleOf('level1/map.json')],
      looseFiles: 0,
    });
    expect(menu.inOrder).toEqual({ fetchedBytes: 0, ratio: 0, requests: 0, bundles: [], looseFiles: 0 });
    expect(json.totals).toEqual({
      usedBytes: 20000,
      alone: { fetchedBytes: 8226 + 11229 + 4145, requests: 5 },
      inOrder: { fetchedBytes: 8226 + 7148, requests: 3 },
    });
  });

  test('per bundle: size, files, and the loads that touch it', () => {
    const { bundleOf, index } = published;
    const bundle = (key: string) => json.bundles.find((entry: { sha256: string }) => entry.sha256 === bundleOf(key));
    expect(json.bundles.map((entry: { sha256: string }) => entry.sha256)).toEqual(index.bundles.map((entry) => entry.sha256));
    expect(bundle('readme.txt')).toEqual({
      sha256: bundleOf('readme.txt'),
      url: `bundles/${bundleOf('readme.txt')}.awkb`,
      sizeBytes: 86,
      files: 1,
      fileBytes: 10,
      unusedFiles: 1,
      loads: [],
    });
    expect(bundle('level1/map.json')).toMatchObject({ sizeBytes: 7148, files: 2, fileBytes: 7000, unusedFiles: 1, loads: ['level1'] });
    expect(bundle('shared/font.png')).toMatchObject({
      sizeBytes: 4081,
      files: 1,
      fileBytes: 4000,
      unusedFiles: 0,
      loads: ['title', 'level1'],
    });
    expect(bundle('title/logo.png')).toMatchObject({
      sizeBytes: 4145,
      files: 2,
      fileBytes: 4000,
      unusedFiles: 0,
      loads: ['title', 'menu'],
    });
  });

  test('files no load uses: count, bytes and list', () => {
    const { bundleOf } = published;
    expect(json.unusedFiles.count).toBe(2);
    expect(json.unusedFiles.bytes).toBe(2010);
    expect(json.unusedFiles.files.map((file: { key: string; bundle: string }) => [file.key, file.bundle])).toEqual([
      ['level1/unused.bin', bundleOf('level1/unused.bin')],
      ['readme.txt', bundleOf('readme.txt')],
    ]);
  });

  test('--json: the whole shape', () => {
    const { bundleOf } = published;
    expect(Object.keys(json)).toEqual([
      'source',
      'index',
      'loadsFile',
      'html',
      'keys',
      'notes',
      'loads',
      'totals',
      'bundles',
      'looseFiles',
      'files',
      'unusedFiles',
    ]);
    expect(json).toMatchObject({
      source: 'published',
      index: { formatVersion: 3, files: 6, bundles: 4, bundleBytes: 86 + 7148 + 4081 + 4145, opaqueIds: false },
      loadsFile: 'awkb-loads.json',
      html: null,
      keys: 'path',
      notes: [],
      looseFiles: { count: 0, bytes: 0 },
    });
    expect(Object.keys(json.loads[0])).toEqual(['name', 'files', 'usedBytes', 'alone', 'inOrder', 'notInIndex']);
    expect(json.files.find((file: { key: string }) => file.key === 'shared/font.png')).toEqual({
      key: 'shared/font.png',
      path: 'shared/font.png',
      sizeBytes: 4000,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      bundle: bundleOf('shared/font.png'),
      firstLoad: 'title',
    });
  });

  test('text: the same figures, in tables', () => {
    const { dir, bundleOf } = published;
    const result = runCli(['report', 'published'], { cwd: dir });
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe('index: published (formatVersion 3, 6 files, 4 bundles of 15.1 KiB)');
    expect(lines[1]).toBe('loads: awkb-loads.json (3 loads; found in the current folder)');
    expect(result.stdout).toContain('model: A load fetches every bundle holding a file it reads, whole (the reader with deltaReads off)');
    const tables = [
      '  load       files      used   fetched  ratio  requests  in order  ratio  requests',
      '  title          3  7.81 KiB  8.03 KiB  1.03×         2  8.03 KiB  1.03×         2',
      '  level1         2  8.79 KiB  11.0 KiB  1.25×         2  6.98 KiB  0.79×         1',
      '  menu           1  2.93 KiB  4.05 KiB  1.38×         1       0 B  0.00×         0',
      '  all loads         19.5 KiB  23.0 KiB  1.18×         5  15.0 KiB  0.77×         3',
    ];
    for (const line of tables) expect(lines).toContain(line);
    expect(lines).toContain(
      `  level1: ${bundleOf('level1/map.json').slice(0, 12)}, ${bundleOf('shared/font.png').slice(0, 12)}; in order: ${bundleOf('level1/map.json').slice(0, 12)}`,
    );
    expect(lines).toContain('  note: level1 lists 1 path the index does not: missing.png');
    expect(lines).toContain(`  ${bundleOf('shared/font.png').slice(0, 12)}  3.99 KiB      1       0  title, level1`);
    expect(lines).toContain(`  ${bundleOf('readme.txt').slice(0, 12)}      86 B      1       1  none`);
    expect(lines).toContain('Files no load uses: 2, 1.96 KiB');
    expect(lines).toContain(`  level1/unused.bin  1.95 KiB  bundle ${bundleOf('level1/unused.bin').slice(0, 12)}`);
  });
});

describe('which loads file', () => {
  let published: Published;
  beforeAll(() => {
    published = publish();
  });

  test('beside the published folder, when the current folder has none', () => {
    const result = runCli(['report', published.out], { cwd: temporaryDir() });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`loads: ${join(published.dir, 'awkb-loads.json')} (3 loads; found beside the published folder)`);
  });

  test('beside an index file', () => {
    const dir = temporaryDir();
    writeFileSync(join(dir, 'v1.json'), readFileSync(join(published.out, 'project.index.json')));
    writeFileSync(join(dir, 'awkb-loads.json'), JSON.stringify({ formatVersion: 1, loads: [{ name: 'only', paths: ['readme.txt'] }] }));
    const json = JSON.parse(runCli(['report', join(dir, 'v1.json'), '--json'], { cwd: temporaryDir() }).stdout);
    expect(json.loadsFile).toBe(join(dir, 'awkb-loads.json'));
    expect(json.loads.map((load: { name: string }) => load.name)).toEqual(['only']);
  });

  test('--loads wins over the current folder', () => {
    const other = join(temporaryDir(), 'other.json');
    writeFileSync(other, JSON.stringify({ formatVersion: 1, loads: [{ name: 'boot', paths: ['readme.txt'] }] }));
    const result = runCli(['report', 'published', '--loads', other], { cwd: published.dir });
    expect(result.stdout).toContain(`loads: ${other} (1 load)\n`);
    expect(result.stdout).toContain('Files no load uses: 5, ');
  });

  test('none: the per-bundle part, and a word on what the per-load part needs', () => {
    const cwd = temporaryDir();
    const copy = join(cwd, 'site');
    mkdirSync(copy);
    writeFileSync(join(copy, 'project.index.json'), readFileSync(join(published.out, 'project.index.json')));
    const text = runCli(['report', 'site'], { cwd });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      'loads: none: no --loads, and no awkb-loads.json in the current folder or beside the index; the per-load part needs a loads file (SPEC §6)',
    );
    expect(text.stdout).not.toContain('Per load');
    expect(text.stdout).not.toContain('Files no load uses');
    expect(text.stdout).toContain('Bundles: 4, 15.1 KiB\n  bundle            size  files\n');
    const json = JSON.parse(runCli(['report', 'site', '--json'], { cwd }).stdout);
    expect(json).toMatchObject({ loadsFile: null, loads: null, totals: null, unusedFiles: null });
    expect(json.bundles[0]).toMatchObject({ unusedFiles: null, loads: null });
  });

  test('an index given by URL is fetched; the loads come from --loads or the current folder', async () => {
    const server = await startStaticServer({ root: published.out });
    try {
      // Not runCli: its spawnSync would block this process, and with it the server.
      const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'report', `${server.url}project.index.json`, '--json'], {
        cwd: published.dir,
      });
      const json = JSON.parse(stdout);
      expect(json.loadsFile).toBe('awkb-loads.json');
      expect(json.totals.alone.fetchedBytes).toBe(8226 + 11229 + 4145);
      const missing = await promisify(execFile)(process.execPath, [CLI, 'report', `${server.url}nothing.json`]).catch((error) => error);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain(`${server.url}nothing.json: cannot fetch: HTTP 404`);
    } finally {
      await server.close();
    }
  });
});

describe('other indexes', () => {
  test("opaque ids: the loads' paths are matched with the salt the index publishes", () => {
    const { dir, bundleOf } = publish(['--opaque-ids', '--salt', 'pepper']);
    const id = (path: string) => opaqueId('pepper', path);
    const result = runCli(['report', 'published', '--json'], { cwd: dir });
    expect(result.code).toBe(0);
    const json = JSON.parse(result.stdout);
    expect(json.keys).toBe('id');
    expect(json.notes).toEqual([expect.stringContaining('the index lists opaque ids, not paths (SPEC §4)')]);
    // Keys of 64 hex digits: records of 50 + 64 bytes.
    expect(json.loads[0].alone).toMatchObject({
      fetchedBytes: 16 + 114 * 2 + 4000 + 16 + 114 + 4000,
      requests: 2,
      bundles: [bundleOf(id('shared/font.png')), bundleOf(id('title/logo.png'))],
    });
    expect(json.unusedFiles.files.map((file: { key: string }) => file.key).sort()).toEqual(
      [id('level1/unused.bin'), id('readme.txt')].sort(),
    );
    expect(json.unusedFiles.files[0].path).toBeUndefined();
    expect(json.files.find((file: { key: string }) => file.key === id('title/music.ogg'))).toMatchObject({
      path: 'title/music.ogg',
      firstLoad: 'title',
    });
  });

  test('a loose (formatVersion 2) index: a request per file, fetched = used', () => {
    const dir = temporaryDir();
    writeTree(join(dir, 'in'), TREE);
    expect(runCli(['index', 'in', '--out', 'loose.json'], { cwd: dir }).code).toBe(0);
    writeFileSync(join(dir, 'awkb-loads.json'), JSON.stringify(LOADS));
    const json = JSON.parse(runCli(['report', 'loose.json', '--json'], { cwd: dir }).stdout);
    expect(json.bundles).toEqual([]);
    expect(json.looseFiles).toEqual({ count: 6, bytes: 15010 });
    expect(json.loads[0].alone).toEqual({ fetchedBytes: 8000, ratio: 1, requests: 3, bundles: [], looseFiles: 3 });
    expect(json.loads[2].inOrder).toMatchObject({ fetchedBytes: 0, requests: 0 });
  });
});

describe('report --html', () => {
  testIf(TESTED_BROWSERS.includes('chromium'))(
    'one self-contained page: a treemap coloured by load, a legend, the over-fetch table (Chromium)',
    async () => {
      const { dir } = publish();
      const page = join(dir, 'report.html');
      const result = runCli(['report', 'published', '--html', 'report.html'], { cwd: dir });
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('\nHTML: report.html\n');
      const html = readFileSync(page, 'utf8');
      expect(html).not.toMatch(/<script|<link|@import|url\(|src=/i);

      const browser = await launchBrowser();
      try {
        const tab = await browser.browser.newPage();
        await tab.setViewport({ width: 1280, height: 1000 });
        const requested: string[] = [];
        tab.on('request', (request) => void requested.push(request.url()));
        await tab.goto(`file://${page}`, { waitUntil: 'networkidle0' });
        expect(requested).toEqual([`file://${page}`]); // nothing but the page itself

        // The DOM: file rectangles per colour, the legend's colours in the load order.
        const dom = await tab.evaluate(() => {
          const colourOf = (element: Element) => getComputedStyle(element).fill;
          const perColour: Record<string, number> = {};
          for (const rect of document.querySelectorAll('rect.file')) perColour[colourOf(rect)] = (perColour[colourOf(rect)] ?? 0) + 1;
          const legend = [...document.querySelectorAll('.legend li')].map((item) => [
            item.textContent,
            getComputedStyle(item.querySelector('.swatch')!).backgroundColor,
          ]);
          const rows = [...document.querySelectorAll('table')[0]!.querySelectorAll('tbody tr')].map((row) =>
            [...row.querySelectorAll('td')].map((cell) => cell.textContent),
          );
          return { perColour, legend, rows, frames: document.querySelectorAll('rect.frame').length };
        });
        expect(dom.legend.map(([name]) => name)).toEqual(['title', 'level1', 'menu', 'no load reads it']);
        const [titleColour, level1Colour, , unusedColour] = dom.legend.map(([, colour]) => colour!);
        // title is the first load of logo, music and font; level1 of map; no load reads unused.bin or readme.txt.
        expect(dom.perColour).toEqual({ [titleColour!]: 3, [level1Colour!]: 1, [unusedColour!]: 2 });
        expect(dom.frames).toBe(4);
        expect(dom.rows[1]).toEqual(['level1', '2', '8.79 KiB', '11.0 KiB', '1.25×', '2', '6.98 KiB', '0.79×', '1', expect.any(String)]);
        expect(dom.rows.at(-1)!.slice(0, 5)).toEqual(['all loads', '', '19.5 KiB', '23.0 KiB', '1.18×']);

        // The pixels: decode the screenshot in a blank page and count each legend colour.
        const png = await tab.screenshot({ fullPage: true, encoding: 'base64' });
        const blank = await browser.browser.newPage();
        const colours = dom.legend.map(([, colour]) => colour!.match(/\d+/g)!.map(Number));
        const counts = await blank.evaluate(
          async (data: string, wanted: number[][]) => {
            const image = new Image();
            image.src = `data:image/png;base64,${data}`;
            await image.decode();
            const canvas = document.createElement('canvas');
            canvas.width = image.width;
            canvas.height = image.height;
            const context = canvas.getContext('2d')!;
            context.drawImage(image, 0, 0);
            const pixels = context.getImageData(0, 0, image.width, image.height).data;
            const distinct = new Set<number>();
            const hits = wanted.map(() => 0);
            for (let i = 0; i < pixels.length; i += 4) {
              const [r, g, b] = [pixels[i]!, pixels[i + 1]!, pixels[i + 2]!];
              distinct.add((r << 16) | (g << 8) | b);
              wanted.forEach(([wr, wg, wb], k) => {
                if (Math.abs(r - wr!) <= 2 && Math.abs(g - wg!) <= 2 && Math.abs(b - wb!) <= 2) hits[k]!++;
              });
            }
            return { hits, distinct: distinct.size, total: pixels.length / 4 };
          },
          png as string,
          colours,
        );
        expect(counts.distinct).toBeGreaterThan(20);
        const [titlePixels, level1Pixels, menuPixels, unusedPixels] = counts.hits;
        // The treemap is 1200 × 680; title's files take 8000 / 15460 of it, level1's 5000, unused 2010.
        expect(titlePixels).toBeGreaterThan(100_000);
        expect(level1Pixels).toBeGreaterThan(50_000);
        expect(unusedPixels).toBeGreaterThan(20_000);
        expect(menuPixels).toBeGreaterThan(50); // its legend swatch only: menu is the first load of no file
        expect(menuPixels).toBeLessThan(1000);
      } finally {
        await browser.close();
      }
    },
  );

  test('file and load names that could spoof the page (controls, bidi overrides and isolates) are escaped as the text report escapes them', () => {
    const dir = temporaryDir('awkb-report-spoof-');
    // What a name holds, and how the text report (and now the page) shows it.
    const names: [string, string][] = [
      ['spoof/\x1b[31mred.png', 'spoof/\\x1b[31mred.png'],
      ['spoof/invoice\u202egnp.exe', 'spoof/invoice\\u{202e}gnp.exe'],
      ['spoof/\u2066a\u2069\u2067b\u2068c.txt', 'spoof/\\u{2066}a\\u{2069}\\u{2067}b\\u{2068}c.txt'],
      ['spoof/bell\x07tab\tdel\x7f.bin', 'spoof/bell\\x07tab\\x09del\\x7f.bin'],
      ['spoof/c1\u0085\u009b31m.bin', 'spoof/c1\\x85\\x9b31m.bin'],
      ['spoof/line\nbreak.bin', 'spoof/line\\x0abreak.bin'],
      ['spoof/zero\u200bwidth\u200e.bin', 'spoof/zero\\u{200b}width\\u{200e}.bin'],
    ];
    const marked = 'spoof/<i>\u202e&.png'; // both escapes: the text report's, then HTML's
    writeTree(join(dir, 'in'), {
      ...Object.fromEntries(names.map(([name], i) => [name, seededBytes(500 + 100 * i, 50 + i)])),
      [marked]: seededBytes(300, 49),
    });
    expect(runCli(['in', '--out', 'published', '--group', 'one'], { cwd: dir }).code).toBe(0);
    const loads = { formatVersion: 1, loads: [{ name: 'title\u202e\x1b[2J', paths: [names[0]![0], names[1]![0]] }] };
    writeFileSync(join(dir, 'awkb-loads.json'), JSON.stringify(loads));

    const result = runCli(['report', 'published', '--html', 'report.html'], { cwd: dir });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const html = readFileSync(join(dir, 'report.html'), 'utf8');
    // The page's own line breaks aside, not one control, format or separator character.
    expect(html.replace(/\n/g, '').match(/[\p{Cc}\p{Cf}\p{Co}\p{Zl}\p{Zp}]|\p{Cs}/gu)).toBeNull();
    // Each name as the text report writes it (none of these holds & < > " ', which HTML escapes on top).
    for (const [, shown] of names) expect([shown, html.includes(shown)]).toEqual([shown, true]);
    // The text report lists the files no load uses: all but the first two.
    for (const [, shown] of names.slice(2)) expect([shown, result.stdout.includes(shown)]).toEqual([shown, true]);
    expect(html).toContain('title\\u{202e}\\x1b[2J');
    expect(html).toContain('spoof/&#60;i&#62;\\u{202e}&#38;.png');
    expect(html).not.toContain('<i>');
    expect(result.stdout).toContain('title\\u{202e}\\x1b[2J');
    // The tooltip's lines are the page's; a name's \n is not one of them.
    expect(html).toContain('<title>spoof/line\\x0abreak.bin\n');
  });

  test('an unwritable page path exits 1 naming it', () => {
    const { dir } = publish();
    const target = join(dir, 'no', 'such', 'folder', 'r.html');
    const result = runCli(['report', 'published', '--html', target], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`awake-bundle: ${target}: cannot write the page:`);
  });
});

describe('report errors', () => {
  let published: Published;
  beforeAll(() => {
    published = publish();
  });

  test('a missing or invalid index exits 1 naming the path', () => {
    const cwd = temporaryDir();
    const missing = runCli(['report', 'nope'], { cwd });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('awake-bundle: nope: cannot read:');
    expect(runCli(['report', '.'], { cwd }).stderr).toContain('project.index.json: cannot read:');
    writeFileSync(
      join(cwd, 'bad.json'),
      JSON.stringify({ formatVersion: 3, rootPath: '/p', bundles: [], files: [{ path: 'a', sizeBytes: 1, sha256: 'x', url: 'a' }] }),
    );
    const bad = runCli(['report', 'bad.json'], { cwd });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('bad.json: invalid project index');
    expect(bad.stderr).toContain('files[0].sha256');
  });

  test('a missing or invalid loads file exits 1 naming it', () => {
    const { dir } = published;
    const missing = runCli(['report', 'published', '--loads', 'none.json'], { cwd: dir });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('awake-bundle: loads file none.json: cannot read:');
    writeFileSync(join(dir, 'v2-loads.json'), JSON.stringify({ formatVersion: 2, loads: [] }));
    const future = runCli(['report', 'published', '--loads', 'v2-loads.json'], { cwd: dir });
    expect(future.code).toBe(1);
    expect(future.stderr).toContain('loads file v2-loads.json: formatVersion is 2');
    writeFileSync(
      join(dir, 'dup.json'),
      JSON.stringify({
        formatVersion: 1,
        loads: [
          { name: 'a', paths: [] },
          { name: 'a', paths: [] },
        ],
      }),
    );
    expect(runCli(['report', 'published', '--loads', 'dup.json'], { cwd: dir }).stderr).toContain(
      'loads file dup.json: loads[1].name "a" is used by an earlier load',
    );
  });

  test('a wrong command line exits 2 naming the flag', () => {
    const { dir } = published;
    const cases: [string[], string][] = [
      [['report'], 'report takes one index (a published folder, an index file or an http(s) URL), found 0'],
      [['report', 'published', 'published'], 'found 2'],
      [['report', 'published', '--colour'], 'unknown option --colour'],
      [['report', 'published', '--loads'], '--loads needs a file name: --loads <file>'],
      [['report', 'published', '--html'], '--html needs a file name: --html <file>'],
      [['report', 'published', '--html='], '--html needs a file name'],
    ];
    for (const [args, says] of cases) {
      const result = runCli(args, { cwd: dir });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(says);
      expect(result.stderr).toContain('Run awake-bundle report --help for usage.');
    }
  });

  test('--help prints the usage, the model and the --json shape; the main help lists report', () => {
    const result = runCli(['report', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: awake-bundle report <published> [--loads <file>] [--html <file>] [--json]');
    expect(result.stdout).toContain('"alone":   { "fetchedBytes", "ratio", "requests", "bundles": [<sha256>], "looseFiles" }');
    expect(result.stdout).toContain('A load fetches every bundle holding a file it reads, whole');
    expect(runCli(['--help']).stdout).toMatch(/^ {2}report {4}per load, the bytes fetched against the bytes used/m);
  });
});
