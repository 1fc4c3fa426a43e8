/**
 * Recorded loads (SPEC §6 "Loads"): a source records, per load name, the paths it was asked to
 * read, load or prefetch, first use first, and `recordedLoads()` gives them as the loads file's
 * JSON. A development index (the build plugins' `recordLoads`) asks for them with its
 * `X-Awake-Bundle-Loads` header, and `postRecordedLoads()` sends them there, where they are
 * merged into `awkb-loads.json`. Run in Node against the CLI's published fixture and a real
 * `LooseDevIndex` on node:http.
 */
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AssetNotFoundError,
  DEFAULT_LOAD_NAME,
  IndexedAssetSource,
  InvalidOptionError,
  LOADS_ENDPOINT_HEADER,
  parseLoadsFile,
} from '../core/internal.js';
import { LoadRecorder } from '../core/read/load/load-recorder.js';
import { startStaticServer, type StaticServer } from '../core/node/index.js';
import { resolveBuildOptions } from '../integrations/build/options.js';
import { FIXTURES, temporaryDir } from './helpers/cli.js';
import { startDevIndexServer, type DevIndexServer } from './helpers/dev-index-server.js';

const TREE = join(FIXTURES, 'trees/small');

let published: StaticServer;
let root: string;

beforeAll(async () => {
  root = temporaryDir('awkb-recorded-');
  cpSync(join(FIXTURES, 'expected/small-default'), join(root, 'bundled'), { recursive: true });
  cpSync(join(FIXTURES, 'expected/small-ids'), join(root, 'ids'), { recursive: true });
  published = await startStaticServer({ root });
});
afterAll(() => published.close());

const open = (folder = 'bundled', options: Record<string, unknown> = {}) =>
  IndexedAssetSource.open({ indexUrl: `${published.url}${folder}/project.index.json`, cache: null, hashWorkers: 0, ...options });

describe('recordedLoads()', () => {
  test('each load name with the paths read, loaded or prefetched under it, loads and paths in order of first use', async () => {
    const source = await open();
    await source.read('scenes/main.scene.json');
    await source.load(['assets/models'], { loadName: 'pier' }); // a folder: its paths, in index order
    await source.read('scenes/pier.scene.json', { loadName: 'pier' });
    await source.prefetch(['ui/hud.json', 'scenes/main.scene.json'], { loadName: 'menu' });
    await source.readText('ui/hud.json'); // no name: the default load
    await source.read('assets/models/crate.glb', { loadName: 'pier' }); // already listed: no change
    await source.readJson('scenes/main.scene.json', { loadName: 'menu' });

    const recorded = source.recordedLoads();
    expect(recorded).toEqual({
      formatVersion: 1,
      loads: [
        { name: 'main', paths: ['scenes/main.scene.json', 'ui/hud.json'] },
        {
          name: 'pier',
          paths: ['assets/models/buoy.glb', 'assets/models/crate-copy.glb', 'assets/models/crate.glb', 'scenes/pier.scene.json'],
        },
        { name: 'menu', paths: ['ui/hud.json', 'scenes/main.scene.json'] },
      ],
    });
    expect(DEFAULT_LOAD_NAME).toBe('main');
    // It is the loads file, as the publish step reads it.
    expect(parseLoadsFile(JSON.stringify(recorded), 'recorded')).toEqual(recorded);
    source.dispose();
  });

  test('paths, not ids, with an index of opaque ids; a path the index lacks is not recorded', async () => {
    const source = await open('ids');
    await source.read('assets/sounds/bell.ogg', { loadName: 'harbor' });
    await expect(source.read('assets/missing.png', { loadName: 'harbor' })).rejects.toBeInstanceOf(AssetNotFoundError);
    await expect(source.prefetch(['ui/hud.json', 'nope.json'], { loadName: 'harbor' })).rejects.toBeInstanceOf(AssetNotFoundError);
    expect(source.recordedLoads()).toEqual({ formatVersion: 1, loads: [{ name: 'harbor', paths: ['assets/sounds/bell.ogg'] }] });
    source.dispose();
  });

  test('recordLoads: false records nothing; an empty load name is refused', async () => {
    const source = await open('bundled', { recordLoads: false });
    await source.read('ui/hud.json', { loadName: 'menu' });
    expect(source.recordedLoads()).toEqual({ formatVersion: 1, loads: [] });
    await expect(source.read('ui/hud.json', { loadName: '' })).rejects.toBeInstanceOf(InvalidOptionError);
    source.dispose();
  });

  test('a published index asks for nothing: no endpoint, and posting sends no request', async () => {
    let requests = 0;
    const source = await open('bundled', {
      fetch: (input: RequestInfo | URL, init?: RequestInit) => {
        requests++;
        return fetch(input, init);
      },
    });
    await source.read('ui/hud.json');
    const before = requests;
    expect(source.loadsEndpoint).toBeUndefined();
    expect(await source.postRecordedLoads()).toBe(false);
    expect(requests).toBe(before);
    source.dispose();
  });
});

describe('LoadRecorder', () => {
  test('many small records (reads) and large ones (loads): first use kept, each path once, whether folded on the way or when asked', () => {
    const recorder = new LoadRecorder(true);
    const big = Array.from({ length: 5_000 }, (_, i) => `tiles/${i}.png`);
    recorder.record(undefined, big);
    // 3,000 reads: past the records kept unfolded, with repeats across the fold and names interleaved.
    for (let i = 0; i < 3_000; i++) recorder.record(i % 3 === 0 ? 'pier' : undefined, [`reads/${i % 1_500}.json`]);
    recorder.record('pier', ['tiles/4.png', 'reads/0.json']);
    const file = recorder.loadsFile();
    const main: string[] = [...big];
    const pier: string[] = [];
    for (let i = 0; i < 3_000; i++) {
      const list = i % 3 === 0 ? pier : main;
      const path = `reads/${i % 1_500}.json`;
      if (!list.includes(path)) list.push(path);
    }
    if (!pier.includes('tiles/4.png')) pier.push('tiles/4.png');
    expect(file).toEqual({
      formatVersion: 1,
      loads: [
        { name: 'main', paths: main },
        { name: 'pier', paths: pier },
      ],
    });
    // Asked again, and after more: the same order, the new ones last.
    recorder.record(undefined, ['late.json', 'tiles/0.png']);
    expect(recorder.loadsFile().loads[0]!.paths).toEqual([...main, 'late.json']);
    expect(new LoadRecorder(false).loadsFile()).toEqual({ formatVersion: 1, loads: [] });
  });
});

describe('a development index that asks for the recorded loads (recordLoads)', () => {
  let server: DevIndexServer;
  let origin: string;
  let project: string;
  const loadsFile = () => join(project, 'awkb-loads.json');
  const indexUrl = () => `${origin}/published/project.index.json`;

  beforeAll(async () => {
    project = temporaryDir('awkb-recorded-dev-');
    server = await startDevIndexServer({ assets: TREE, recordLoads: true }, project);
    origin = server.origin;
  });
  afterAll(() => server?.stop());

  test('the index names the endpoint; two sessions post, and awkb-loads.json merges them first use first', async () => {
    const answer = await fetch(indexUrl());
    expect(answer.headers.get(LOADS_ENDPOINT_HEADER)).toBe('/__awake-bundle/loads');

    const first = await IndexedAssetSource.open({ indexUrl: indexUrl(), cache: null, hashWorkers: 0 });
    expect(first.loadsEndpoint).toBe(`${origin}/__awake-bundle/loads`);
    await first.read('scenes/main.scene.json', { loadName: 'menu' });
    await first.read('ui/hud.json', { loadName: 'menu' });
    await first.load(['assets/models/crate.glb', 'scenes/pier.scene.json'], { loadName: 'pier' });
    expect(await first.postRecordedLoads()).toBe(true);
    expect(await first.postRecordedLoads()).toBe(false); // nothing new since
    expect(JSON.parse(readFileSync(loadsFile(), 'utf8'))).toEqual(first.recordedLoads());

    // A second play-through: another order, a new load, a new path in a known load.
    const second = await IndexedAssetSource.open({ indexUrl: indexUrl(), cache: null, hashWorkers: 0 });
    await second.read('assets/sounds/bell.ogg', { loadName: 'harbor' });
    await second.read('assets/models/buoy.glb', { loadName: 'pier' });
    await second.read('scenes/pier.scene.json', { loadName: 'pier' });
    await second.read('ui/hud.json', { loadName: 'menu' });
    expect(await second.postRecordedLoads()).toBe(true);
    const text = readFileSync(loadsFile(), 'utf8');
    expect(JSON.parse(text)).toEqual({
      formatVersion: 1,
      loads: [
        { name: 'menu', paths: ['scenes/main.scene.json', 'ui/hud.json'] },
        { name: 'pier', paths: ['assets/models/crate.glb', 'scenes/pier.scene.json', 'assets/models/buoy.glb'] },
        { name: 'harbor', paths: ['assets/sounds/bell.ogg'] },
      ],
    });
    // One path a line, for a readable diff when it is committed.
    expect(text).toBe(`${JSON.stringify(JSON.parse(text), null, 2)}\n`);
    first.dispose();
    second.dispose();
  });

  test("the endpoint takes only a loads file posted as JSON from the server's own pages, and never overwrites a broken file", async () => {
    const post = (body: string, headers: Record<string, string> = { 'Content-Type': 'application/json' }) =>
      fetch(`${origin}/__awake-bundle/loads`, { method: 'POST', headers, body });
    const before = existsSync(loadsFile()) ? readFileSync(loadsFile(), 'utf8') : undefined;
    const valid = JSON.stringify({ formatVersion: 1, loads: [{ name: 'x', paths: ['ui/hud.json'] }] });
    expect((await post(valid, { 'Content-Type': 'text/plain' })).status).toBe(415);
    expect((await post(valid, { 'Content-Type': 'application/json', Origin: 'http://evil.example' })).status).toBe(403);
    const invalid = await post('{"formatVersion": 2, "loads": []}');
    expect(invalid.status).toBe(400);
    expect(await invalid.text()).toMatch(/formatVersion is 2/);
    expect(existsSync(loadsFile()) ? readFileSync(loadsFile(), 'utf8') : undefined).toBe(before);
    expect((await fetch(`${origin}/__awake-bundle/loads`)).status).toBe(404); // POST only

    writeFileSync(loadsFile(), '{"formatVersion": 1, "loads": [{"name": ""}]}');
    const conflict = await post(valid);
    expect(conflict.status).toBe(409);
    expect(await conflict.text()).toContain(loadsFile());
    expect(readFileSync(loadsFile(), 'utf8')).toBe('{"formatVersion": 1, "loads": [{"name": ""}]}');
  });

  test('a post that fails is one console warning, and the next post sends it again', async () => {
    writeFileSync(loadsFile(), '{"formatVersion": 1, "loads": [{"name": ""}]}'); // refused with 409
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const source = await IndexedAssetSource.open({ indexUrl: indexUrl(), cache: null, hashWorkers: 0 });
      await source.read('ui/hud.json', { loadName: 'menu' });
      expect(await source.postRecordedLoads()).toBe(false);
      await source.read('ui/hud.json', { loadName: 'settings' });
      expect(await source.postRecordedLoads()).toBe(false);
      expect(warn.mock.calls).toEqual([
        [
          expect.stringMatching(
            /^awake-bundle: the recorded loads could not be posted to http:\/\/127\.0\.0\.1:\d+\/__awake-bundle\/loads: 409/,
          ),
        ],
      ]);
      rmSync(loadsFile());
      expect(await source.postRecordedLoads()).toBe(true);
      expect(JSON.parse(readFileSync(loadsFile(), 'utf8'))).toEqual({
        formatVersion: 1,
        loads: [
          { name: 'menu', paths: ['ui/hud.json'] },
          { name: 'settings', paths: ['ui/hud.json'] },
        ],
      });
      source.dispose();
    } finally {
      warn.mockRestore();
    }
  });

  /** A post as a browser on another site could send it, with the headers given (Node's fetch sends no Origin of its own). */
  const postLoads = (body: BodyInit, headers: Record<string, string> = {}) =>
    fetch(`${origin}/__awake-bundle/loads`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });
  const loadsText = () => (existsSync(loadsFile()) ? readFileSync(loadsFile(), 'utf8') : undefined);
  const oneLoad = (name: string, paths: string[]) => JSON.stringify({ formatVersion: 1, loads: [{ name, paths }] });

  test('a page on another site is refused even where the dev server answers every preflight: Origin null, and Sec-Fetch-Site other than same-origin', async () => {
    rmSync(loadsFile(), { force: true });
    const planted = oneLoad('planted', ['ui/hud.json']);
    // A sandboxed iframe (or a file: page) sends Origin: null, which is no origin at all.
    const opaque = await postLoads(planted, { Origin: 'null' });
    expect(opaque.status).toBe(403);
    expect(await opaque.text()).toMatch(/Origin: null/);
    // Where the browser says where the post comes from, only the server's own origin counts.
    const host = new URL(origin).host;
    for (const site of ['cross-site', 'same-site', 'none']) {
      for (const headers of [{ 'Sec-Fetch-Site': site }, { 'Sec-Fetch-Site': site, Origin: origin }] as Record<string, string>[]) {
        const refused = await postLoads(planted, headers);
        expect([site, refused.status]).toEqual([site, 403]);
        expect(await refused.text()).toContain(`Sec-Fetch-Site: ${site}`);
      }
    }
    expect(loadsText()).toBeUndefined(); // nothing written
    // A browser's own page: same-origin, with its Origin; a page's post without either (Node, curl) as before.
    expect((await postLoads(oneLoad('menu', ['ui/hud.json']), { 'Sec-Fetch-Site': 'same-origin', Origin: `http://${host}` })).status).toBe(
      204,
    );
    expect((await postLoads(oneLoad('menu', ['scenes/main.scene.json']))).status).toBe(204);
    expect(JSON.parse(loadsText()!)).toEqual({
      formatVersion: 1,
      loads: [{ name: 'menu', paths: ['ui/hud.json', 'scenes/main.scene.json'] }],
    });
  });

  test('a posted path that SPEC §1 refuses refuses the whole post (400, naming the first, escaped), and nothing is written', async () => {
    rmSync(loadsFile(), { force: true });
    const long = `a/${'x'.repeat(70_000)}`;
    const cases: [string, RegExp][] = [
      ['../../outside.png', /loads\[1\]\.paths\[1\] "\.\.\/\.\.\/outside\.png" has a "\.\." segment/],
      ['/etc/passwd', /"\/etc\/passwd" starts with \//],
      ['C:/Windows/win.ini', /"C:\/Windows\/win\.ini" starts with a drive prefix/],
      ['ui\\hud.json', /contains a backslash/],
      ['ui//hud.json', /has an empty segment/],
      ['ui/\u0000\u202e.json', /"ui\/\\x00\\u\{202e\}\.json" contains a NUL character/],
      ['ui/\ud800.json', /is not well-formed Unicode/],
      [long, /"a\/x{98}…" \(70002 characters\) is longer than 65,535 UTF-8 bytes/],
    ];
    for (const [bad, message] of cases) {
      const body = JSON.stringify({
        formatVersion: 1,
        loads: [
          { name: 'menu', paths: ['ui/hud.json'] },
          { name: 'pier', paths: ['scenes/pier.scene.json', bad, '../second-bad.png'] },
        ],
      });
      const refused = await postLoads(body);
      expect([bad.slice(0, 40), refused.status]).toEqual([bad.slice(0, 40), 400]);
      const text = await refused.text();
      expect(text).toMatch(message);
      expect(text).not.toContain('second-bad'); // the first bad path only
      expect(text).not.toMatch(/[\u0000\u202e]/);
      expect(text.length).toBeLessThan(1000);
    }
    expect(loadsText()).toBeUndefined();
    // A path SPEC §1 allows is taken, control characters and all; the file holds them JSON-escaped.
    expect((await postLoads(oneLoad('menu', ['ui/\u001b[31mred.png']))).status).toBe(204);
    expect(loadsText()).toContain('"ui/\\u001b[31mred.png"');
    expect(JSON.parse(loadsText()!).loads[0].paths).toEqual(['ui/\u001b[31mred.png']);
  });

  test('a body that is not UTF-8 is refused (400), and a loads file on disk that is not UTF-8 is left as it is (409)', async () => {
    rmSync(loadsFile(), { force: true });
    const bytes = Buffer.concat([
      Buffer.from('{"formatVersion": 1, "loads": [{"name": "menu", "paths": ["ui/h'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('ud.json"]}]}'),
    ]);
    const refused = await postLoads(bytes);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/not UTF-8/);
    expect(loadsText()).toBeUndefined();

    const onDisk = Buffer.concat([
      Buffer.from('{"formatVersion": 1, "loads": [{"name": "menu", "paths": ["ui/'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('.json"]}]}\n'),
    ]);
    writeFileSync(loadsFile(), onDisk);
    const conflict = await postLoads(oneLoad('menu', ['ui/hud.json']));
    expect(conflict.status).toBe(409);
    expect(await conflict.text()).toMatch(/not UTF-8/);
    expect(readFileSync(loadsFile())).toEqual(onDisk);
  });

  test('the loads file is bounded: a post that would make it larger than 16 MiB is refused (413, naming the limit), and the file is left as it is', async () => {
    // A file just under the bound, as a hand-made (or very long-recorded) one could be.
    const paths = Array.from({ length: 400_000 }, (_, i) => `level-${i % 100}/props/prop-${String(i).padStart(6, '0')}.glb`);
    const text = `${JSON.stringify({ formatVersion: 1, loads: [{ name: 'big', paths }] }, null, 2)}\n`;
    const limit = 16 * 1024 * 1024;
    const room = limit - Buffer.byteLength(text);
    expect(room).toBeGreaterThan(0);
    expect(room).toBeLessThan(2 * 1024 * 1024);
    writeFileSync(loadsFile(), text);
    // What the file lists already changes nothing, so nothing is written: taken.
    expect((await postLoads(oneLoad('big', paths.slice(0, 10)))).status).toBe(204);
    // One more path fits; a post whose paths would not is refused whole.
    expect((await postLoads(oneLoad('big', ['ui/hud.json']))).status).toBe(204);
    const before = readFileSync(loadsFile(), 'utf8');
    // 70 000 paths of 34 bytes or more a line in the file: more than the room left.
    const more = Array.from({ length: 70_000 }, (_, i) => `extra/file-${String(i).padStart(8, '0')}.png`);
    const refused = await postLoads(oneLoad('more', more));
    expect(refused.status).toBe(413);
    expect(await refused.text()).toMatch(/16 MiB \(16777216 bytes\)/);
    expect(readFileSync(loadsFile(), 'utf8')).toBe(before);
    rmSync(loadsFile());
  });

  test('without recordLoads the index asks for nothing and there is no endpoint', async () => {
    const plain = await startDevIndexServer({ assets: TREE }, project);
    const plainOrigin = plain.origin;
    try {
      const source = await IndexedAssetSource.open({
        indexUrl: `${plainOrigin}/published/project.index.json`,
        cache: null,
        hashWorkers: 0,
      });
      expect(source.loadsEndpoint).toBeUndefined();
      const posted = await fetch(`${plainOrigin}/__awake-bundle/loads`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(source.recordedLoads()),
      });
      expect(posted.status).toBe(404);
      source.dispose();
    } finally {
      await plain.stop();
    }
  });

  test('an option that is neither true, false nor a path is refused, naming it', () => {
    expect(() => resolveBuildOptions({ assets: TREE, recordLoads: 3 as unknown as string }, project)).toThrow(/recordLoads/);
    expect(resolveBuildOptions({ assets: TREE, recordLoads: 'game/loads.json' }, project).recordLoads).toEqual({
      file: join(project, 'game/loads.json'),
    });
  });
});
