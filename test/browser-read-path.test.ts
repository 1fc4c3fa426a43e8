/**
 * The read path in real headless Chromium and Firefox ESR: a returning
 * player whose IndexedDB holds version 1 reads version 2 (3 of 20 members of one bundle changed)
 * on the page thread (`hashWorkers: 0`), a changed file twice in a row. Before the read path was
 * a bounded machine, the second read spun in microtasks while the cache write waited for a
 * macrotask: the page hung (its evaluation never returned).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { launchBrowser, reloadHarness, startRepoServer, TESTED_BROWSERS, type LaunchedBrowser, type RepoServer } from './helpers/browser';
import { runCli, temporaryDir } from './helpers/cli';
import { seededBytes, sha256Hex, writeTree } from './helpers/trees';

const LEVELS = Array.from({ length: 20 }, (_, i) => `levels/chunk-${String(i).padStart(2, '0')}.bin`);
const CHANGED = [3, 9, 15];
const SPLIT_A = ['a/one.bin', 'a/two.bin', 'a/three.bin', 'a/four.bin'];
const bytesOf = (version: string, i: number) => seededBytes(16 * 1024, version === 'v2' && CHANGED.includes(i) ? 700 + i : i);

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  let server: RepoServer;
  let browser: LaunchedBrowser;
  let page: Page;
  let site: string;

  beforeAll(async () => {
    site = temporaryDir('awkb-browser-read-path-');
    for (const version of ['v1', 'v2']) {
      const tree = temporaryDir(`awkb-browser-read-path-${version}-`);
      writeTree(tree, Object.fromEntries(LEVELS.map((path, i) => [path, bytesOf(version, i)])));
      const published = runCli([tree, '--out', join(site, version)]);
      if (published.code !== 0) throw new Error(published.stderr);
    }
    // Two bundles by folder, for the pending-write test: a/ (4 files), b/ (1 file).
    const tree = temporaryDir('awkb-browser-read-path-split-');
    writeTree(tree, {
      ...Object.fromEntries(SPLIT_A.map((path, i) => [path, seededBytes(16 * 1024, 900 + i)])),
      'b/other.bin': seededBytes(8000, 950),
    });
    const published = runCli([tree, '--out', join(site, 'split')]);
    if (published.code !== 0) throw new Error(published.stderr);
    server = await startRepoServer({ mounts: { '/published/': site } });
    browser = await launchBrowser({ kind });
    page = await browser.openHarness(server);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  test.each([
    ['a changed file twice in a row', [[LEVELS[3]!], [LEVELS[3]!]]],
    ['the changed files, then every file', [CHANGED.map((i) => LEVELS[i]!), LEVELS]],
  ])('with v1 in openBrowserCache(), on the page thread: %s, every read resolves with v2', async (_, rounds) => {
    const open = (version: string, cacheName: string) =>
      page.evaluate(
        async (version: string, cacheName: string, rounds: string[][]) => {
          const core = await harnessImport('awake-bundle');
          const cache = await core.openBrowserCache({ name: cacheName });
          const source = await core.IndexedAssetSource.open({
            indexUrl: `/published/${version}/project.index.json`,
            cache,
            hashWorkers: 0,
          });
          const hashes: [string, string][] = [];
          for (const round of version === 'v1' ? [source.paths()] : rounds) {
            const read = await Promise.all(round.map((path: string) => source.read(path)));
            for (const [i, bytes] of read.entries())
              hashes.push([round[i]!, core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)))]);
          }
          await source.whenStored();
          source.dispose();
          return hashes;
        },
        version,
        cacheName,
        rounds,
      );
    const cacheName = `read-path-${rounds.length}-${rounds[1]!.length}`;
    expect(await open('v1', cacheName)).toHaveLength(20);
    await reloadHarness(page);
    server.resetRequests();
    const read = await open('v2', cacheName);
    expect(read).toEqual(rounds.flat().map((path) => [path, sha256Hex(bytesOf('v2', LEVELS.indexOf(path)))]));
    // What changed came as ranges of the one bundle; what did not, from IndexedDB.
    const bundleRequests = server.requests.filter((request) => request.path.endsWith('.awkb'));
    expect(bundleRequests.length).toBeGreaterThan(0);
    for (const request of bundleRequests) expect(request.range).toMatch(/^bytes=/);
  });

  test('a return visit: members let go under the memory budget while another load is in flight are read again without a second request for their bundle', async () => {
    const index = JSON.parse(readFileSync(join(site, 'split/project.index.json'), 'utf8'));
    const bundleOf = (path: string) =>
      `/published/split/${index.bundles.find((b: { sha256: string }) => b.sha256 === index.files.find((f: { path: string }) => f.path === path).bundle).url}`;
    // A returning player: the database was opened (and written) on an earlier visit, so the workers write it themselves.
    await page.evaluate(async () => {
      const core = await harnessImport('awake-bundle');
      const cache = await core.openBrowserCache({ name: 'no-byte-twice' });
      const bytes = new TextEncoder().encode('an earlier visit');
      await cache.put(core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))), bytes);
    });
    await reloadHarness(page);
    server.resetRequests();
    // Another load in flight (b/, held by the server) keeps the workers from writing a/'s members until it ends.
    const held = server.hold(bundleOf('b/other.bin'));
    await page.evaluate(async () => {
      const core = await harnessImport('awake-bundle');
      const source = await core.IndexedAssetSource.open({
        indexUrl: '/published/split/project.index.json',
        cache: await core.openBrowserCache({ name: 'no-byte-twice' }),
        pendingBytes: 1, // nothing held beyond what a read waits for
      });
      (window as unknown as { other: Promise<Uint8Array>; source: unknown }).source = source;
      (window as unknown as { other: Promise<Uint8Array> }).other = source.read('b/other.bin');
    });
    await held.arrived;
    const readAll = (paths: string[]) =>
      page.evaluate(async (paths: string[]) => {
        const core = await harnessImport('awake-bundle');
        const source = (window as unknown as { source: InstanceType<typeof core.IndexedAssetSource> }).source;
        const hashes: string[] = [];
        for (const path of paths) hashes.push(core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', await source.read(path)))));
        return hashes;
      }, paths);
    // a/'s members read together: one load, the whole a/ bundle (every member wanted); each taken
    // by its read and let go (pendingBytes 1).
    const first = await page.evaluate(async (paths: string[]) => {
      const core = await harnessImport('awake-bundle');
      const source = (window as unknown as { source: InstanceType<typeof core.IndexedAssetSource> }).source;
      const read = async (path: string) => core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', await source.read(path))));
      return Promise.all(paths.map(read));
    }, SPLIT_A);
    expect(first).toEqual(SPLIT_A.map((_, i) => sha256Hex(seededBytes(16 * 1024, 900 + i))));
    // a/'s load is over (only b/'s is in flight), its members' writes wait for the loads to end.
    await server.answered(bundleOf('a/one.bin'), 1);
    await page.waitForFunction(
      () => (window as unknown as { source: { stats(): { loadsInFlight: number } } }).source.stats().loadsInFlight === 1,
    );
    // Read again, one by one: gone from memory, read from their pending writes.
    const hashes = await readAll(SPLIT_A);
    held.release();
    await page.evaluate(async () => {
      await (window as unknown as { other: Promise<Uint8Array> }).other;
    });
    expect(hashes).toEqual(SPLIT_A.map((_, i) => sha256Hex(seededBytes(16 * 1024, 900 + i))));
    expect(server.requests.filter((request) => request.path === bundleOf('a/one.bin'))).toHaveLength(1);
  });
});
