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
} from '../core/index.js';
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
