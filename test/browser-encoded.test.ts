/**
 * Issue 28, the reader in real headless Chromium and Firefox ESR (SPEC §5a): the built core in the
 * harness page reads encoded publishes (the reference-made conformance/encoded/text, and a
 * publish of ours with `--compress`) byte for byte on each read path: whole bundles streamed in
 * the reader's workers (decoded there, off the page's thread), on the page (no workers), needed
 * bytes by ranges, and range reads; the browser cache holds decoded bytes (a reload reads them with
 * no bundle request). Members whose stored bytes do not decode to their listed bytes are refused
 * naming the member and its encoding, in the workers and on the page.
 */
import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import {
  countPageDecoding,
  holdWorkerPongs,
  launchBrowser,
  reloadHarness,
  startRepoServer,
  TESTED_BROWSERS,
  type LaunchedBrowser,
  type RepoServer,
} from './helpers/browser';
import { FIXTURES, runCli, temporaryDir } from './helpers/cli';
import { BAD_STORED_CASES, badMembers, craftedSite, pseudoRandom, sha256, text } from './helpers/encoded-sites';
import { writeTree } from './helpers/trees';

/** The files of conformance/trees/text, which conformance/encoded/text publishes. */
const TEXT_PATHS = ['atlas/ui.json', 'maps/level1-copy.json', 'maps/level1.json', 'models/grid.bin', 'noise/r.bin', 'noise/small.json'];

/** Our own tree: text that compresses, noise that does not, in one folder (one bundle). */
const OWN: Record<string, Uint8Array> = {
  'maps/level1.json': text(300_000, 3),
  'maps/level2.json': text(90_000, 5),
  'maps/level3.json': text(2_000_000, 9),
  'maps/noise.bin': pseudoRandom(300_000, 4),
  'maps/tiny.json': text(900, 7),
};

/**
 * A default publish of three folders, so three bundles: one whose encoded member decodes to 3 MB
 * (more than the 2 MiB a cold page may decode on its own thread; more than the 256 KiB a preloaded
 * bundle may once a worker is up), one of 1 MB (under the first) and a small one.
 */
const COLD: Record<string, Uint8Array> = {
  'big/level.json': text(3_000_000, 11),
  'mid/map.json': text(1_000_000, 17),
  'small/hud.json': text(20_000, 13),
};

/** How the page reads: its source's options, and whether reads go through `load` first (needed bytes plan loads). */
const MODES = [
  ['whole bundles streamed in the workers', { neededBytes: false }, false],
  ['whole bundles on the page (no workers)', { neededBytes: false, hashWorkers: 0 }, false],
  ['needed-bytes ranges', { neededBytes: { roundTripBytes: 1 } }, true],
  ['needed-bytes ranges on the page (no workers)', { neededBytes: { roundTripBytes: 1 }, hashWorkers: 0 }, true],
  ['range reads', { rangeReads: true, neededBytes: false }, false],
] as const;

describe.each(TESTED_BROWSERS)('%s: encoded members', (kind) => {
  let server: RepoServer;
  let browser: LaunchedBrowser;
  let page: Page;
  const expected: Record<string, Record<string, string>> = { text: {}, own: {} };
  let coldIndex: { files: { path: string; bundle: string }[]; bundles: { sha256: string; url: string }[] };
  /** The path the server saw for the bundle of `path` in the cold site. */
  const coldBundle = (path: string) =>
    `/published/cold/${coldIndex.bundles.find((bundle) => bundle.sha256 === coldIndex.files.find((file) => file.path === path)!.bundle)!.url}`;

  beforeAll(async () => {
    const site = temporaryDir('awkb-browser-encoded-');
    cpSync(join(FIXTURES, 'encoded/text'), join(site, 'text'), { recursive: true });
    for (const path of TEXT_PATHS) expected.text![path] = sha256(readFileSync(join(FIXTURES, 'trees/text', path)));
    const tree = temporaryDir('awkb-browser-encoded-tree-');
    writeTree(tree, OWN);
    const published = runCli([tree, '--out', join(site, 'own'), '--compress']);
    if (published.code !== 0) throw new Error(published.stderr);
    for (const [path, bytes] of Object.entries(OWN)) expected.own![path] = sha256(bytes);
    const coldTree = temporaryDir('awkb-browser-encoded-cold-');
    writeTree(coldTree, COLD);
    const cold = runCli([coldTree, '--out', join(site, 'cold')]);
    if (cold.code !== 0) throw new Error(cold.stderr);
    coldIndex = JSON.parse(readFileSync(join(site, 'cold/project.index.json'), 'utf8'));
    for (const [i, [, , stored]] of BAD_STORED_CASES.entries()) {
      mkdirSync(join(site, `bad-${i}`));
      craftedSite(badMembers(stored), join(site, `bad-${i}`));
    }
    server = await startRepoServer({ mounts: { '/published/': site } });
    browser = await launchBrowser({ kind });
    page = await browser.openHarness(server);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /** Reads `paths` of a site in the page; their SHA-256s, or each one's error as plain data. */
  function readInPage(site: string, paths: string[], options: object, viaLoad: boolean, cacheName?: string) {
    return page.evaluate(
      async ({ site, paths, options, viaLoad, cacheName }) => {
        const core = await harnessImport('awake-bundle');
        const cache = cacheName ? await core.openBrowserCache({ name: cacheName }) : undefined;
        const source = await core.IndexedAssetSource.open({ indexUrl: `/published/${site}/project.index.json`, cache, ...options });
        const out: Record<string, string | object> = {};
        for (const path of paths) {
          try {
            if (viaLoad) await source.load([path]);
            const bytes = await source.read(path);
            out[path] = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)));
          } catch (error) {
            type Thrown = {
              name: string;
              code: string;
              message: string;
              damaged?: string[];
              key?: string;
              encoding?: string;
              problem?: string;
            };
            const plain = ({ name, code, message, damaged, key, encoding, problem }: Thrown) => ({
              name,
              code,
              message,
              damaged,
              key,
              encoding,
              problem,
            });
            const e = error as Thrown & { cause?: Thrown };
            out[path] = { ...plain(e), ...(e.cause ? { cause: plain(e.cause) } : {}) };
          }
        }
        await source.whenStored();
        source.dispose();
        return out;
      },
      { site, paths, options, viaLoad, cacheName },
    );
  }

  describe.each(MODES)('%s', (_label, options, viaLoad) => {
    test('the reference-made encoded publish and ours read byte for byte', async () => {
      expect(await readInPage('text', TEXT_PATHS, options, viaLoad)).toEqual(expected.text);
      expect(await readInPage('own', Object.keys(OWN), options, viaLoad)).toEqual(expected.own);
    });

    test.each(BAD_STORED_CASES.map(([label, problem, , says], i) => [label, problem, says, i] as const))(
      '%s: refused, naming the member and its encoding',
      async (_case, problem, says, i) => {
        const out = await readInPage(`bad-${i}`, ['maps/bad.json', 'maps/ok.txt'], options, viaLoad);
        const refused = out['maps/bad.json'] as { code: string; message: string; damaged?: string[]; cause?: { problem: string } };
        expect(typeof refused).toBe('object');
        const decodeError = refused.code === 'E_MEMBER_DECODE' ? refused : refused.cause;
        expect(decodeError).toMatchObject({ code: 'E_MEMBER_DECODE', key: 'maps/bad.json', encoding: 'deflate-raw', problem });
        expect(refused.message).toMatch(says);
        expect(refused.message).toContain('maps/bad.json');
        expect(refused.message).toContain('deflate-raw');
      },
    );
  });

  test('the browser cache holds decoded bytes: after a reload every file reads with no bundle request', async () => {
    const name = `encoded-${Date.now()}`;
    expect(await readInPage('own', Object.keys(OWN), {}, false, name)).toEqual(expected.own);
    await reloadHarness(page);
    server.resetRequests();
    expect(await readInPage('own', Object.keys(OWN), {}, false, name)).toEqual(expected.own);
    expect(server.requests.map((request) => request.path).filter((path) => path.startsWith('/published/own/'))).toEqual([
      '/published/own/project.index.json',
    ]);
  });

  // SPEC §5a: decoding stays off the page's thread. Until a worker has answered its ping (a cold
  // page), bundles stream on the page, except one whose encoded members decode to more than
  // 2 MiB: that one is decoded in a worker. Its request waits for no worker: the page sends it,
  // gives the job to a worker still starting, and feeds it the body as it arrives, without
  // waiting for its answer (which a page busy with its engine hears late): the big bundle is
  // read while every pong is still held.
  // The page's `fetch` and `DecompressionStream` are watched (a worker's are its own).
  test('on a cold page a bundle that decodes to more than 2 MiB is requested at once and decoded in a worker, before the page hears it started; a small one streams on the page', async () => {
    const coldPage = await browser.openHarness(server);
    try {
      await holdWorkerPongs(coldPage);
      await countPageDecoding(coldPage);
      server.resetRequests();
      const result = await coldPage.evaluate(async () => {
        const core = await harnessImport('awake-bundle');
        const source = await core.IndexedAssetSource.open({
          indexUrl: '/published/cold/project.index.json',
          cache: new core.MemoryCache(),
          hashWorkers: 2,
          neededBytes: false,
        });
        const pool = (source as unknown as { pool: { usingWorkers: boolean | undefined } }).pool;
        // The bundles this page's own fetch was asked for, and the heads it received.
        const fetchedOnPage: string[] = [];
        const answeredOnPage: string[] = [];
        let answered: () => void = () => undefined;
        const bigAnswered = new Promise<void>((resolve) => (answered = resolve));
        const pageFetch = globalThis.fetch;
        globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
          const path = new URL(input instanceof Request ? input.url : String(input), location.href).pathname;
          if (!path.endsWith('.awkb')) return pageFetch(input, init);
          fetchedOnPage.push(path);
          return pageFetch(input, init).then((response) => {
            answeredOnPage.push(path);
            if (answeredOnPage.length === 3) answered();
            return response;
          });
        };
        // Decoding on the page: the members each DecompressionStream made here, by their sizes (countPageDecoding).
        const { decodedOnPage } = globalThis as unknown as { decodedOnPage: number[] };
        const hex = async (bytes: Uint8Array) => core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource)));
        // The reads start together; the big one first. All three are read while every worker's
        // answer to its ping is held from the page.
        const [bigHash, small, mid] = await Promise.all(
          ['big/level.json', 'small/hud.json', 'mid/map.json'].map((path) => source.read(path).then(hex)),
        );
        await bigAnswered;
        const whileCold = {
          heard: pool.usingWorkers,
          fetchedOnPage: [...fetchedOnPage].sort(),
          decodedOnPage: [...decodedOnPage].sort((a, b) => a - b),
        };
        (globalThis as unknown as { releasePongs: () => void }).releasePongs();
        const after = {
          fetchedOnPage: [...fetchedOnPage].sort(),
          decodedOnPage: [...decodedOnPage].sort((a, b) => a - b),
        };
        source.dispose();
        return { hashes: { 'big/level.json': bigHash, 'mid/map.json': mid, 'small/hud.json': small }, whileCold, after };
      });
      expect(result.hashes).toEqual(Object.fromEntries(Object.entries(COLD).map(([path, bytes]) => [path, sha256(bytes)])));
      const [bigBundle, midBundle, smallBundle] = ['big/level.json', 'mid/map.json', 'small/hud.json'].map(coldBundle);
      const all = [bigBundle, midBundle, smallBundle].sort();
      const [small, mid] = [COLD['small/hud.json']!.length, COLD['mid/map.json']!.length];
      // While no worker's answer had reached the page, the three bundles were fetched on the page;
      // the small one and the 1 MB one were decoded (and read) there, the big one in a worker.
      expect(result.whileCold).toEqual({ heard: undefined, fetchedOnPage: all, decodedOnPage: [small, mid] });
      // The worker read the big one from the page's response: nothing more decoded on the page, no second request.
      expect(result.after).toEqual({ fetchedOnPage: all, decodedOnPage: [small, mid] });
      expect(
        server.requests
          .map((request) => request.path)
          .filter((path) => path.endsWith('.awkb'))
          .sort(),
      ).toEqual(all);
    } finally {
      await coldPage.close();
    }
  });

  // The job went to a worker still starting; one that never starts (its script refused, as a CSP
  // would) leaves the page to read the copy of the body it kept: the read succeeds, decoded on
  // the page, from the one request.
  test('on a cold page whose workers fail to start, the big bundle given to one is read from the copy the page kept', async () => {
    const coldPage = await browser.openHarness(server);
    try {
      await countPageDecoding(coldPage);
      server.resetRequests();
      const result = await coldPage.evaluate(async () => {
        const core = await harnessImport('awake-bundle');
        globalThis.Worker = class extends Worker {
          constructor(_url: string | URL, options?: WorkerOptions) {
            super(URL.createObjectURL(new Blob(['throw new Error("refused")'], { type: 'text/javascript' })), options);
          }
        };
        const { decodedOnPage } = globalThis as unknown as { decodedOnPage: number[] };
        const source = await core.IndexedAssetSource.open({
          indexUrl: '/published/cold/project.index.json',
          cache: new core.MemoryCache(),
          hashWorkers: 2,
          neededBytes: false,
        });
        const pool = (source as unknown as { pool: { usingWorkers: boolean | undefined } }).pool;
        const bytes = await source.read('big/level.json');
        const hash = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource)));
        source.dispose();
        return { hash, decodedOnPage, usingWorkers: pool.usingWorkers };
      });
      expect(result).toEqual({
        hash: sha256(COLD['big/level.json']!),
        decodedOnPage: [COLD['big/level.json']!.length],
        usingWorkers: false,
      });
      expect(server.requests.map((request) => request.path).filter((path) => path.endsWith('.awkb'))).toEqual([
        coldBundle('big/level.json'),
      ]);
    } finally {
      await coldPage.close();
    }
  });

  // A bundle the page preloads is fetched on the page, where the preloaded response is; one with
  // a large decode is still decoded in a worker (its body handed over), and requested once.
  test('a preloaded bundle that decodes to more than 256 KiB is decoded in a worker, from the preload', async () => {
    const preloadPage = await browser.openHarness(server);
    try {
      const bigBundle = coldBundle('big/level.json');
      server.resetRequests();
      const result = await preloadPage.evaluate(async (href: string) => {
        const link = document.createElement('link');
        link.rel = 'preload';
        link.as = 'fetch';
        link.crossOrigin = 'anonymous';
        link.href = href;
        document.head.append(link);
        const decodedOnPage: number[] = [];
        const PageDecompression = globalThis.DecompressionStream;
        globalThis.DecompressionStream = class extends PageDecompression {
          constructor(format: CompressionFormat) {
            super(format);
            decodedOnPage.push(1);
          }
        };
        const core = await harnessImport('awake-bundle');
        const source = await core.IndexedAssetSource.open({
          indexUrl: '/published/cold/project.index.json',
          cache: new core.MemoryCache(),
          hashWorkers: 2,
          neededBytes: false,
        });
        const bytes = await source.read('big/level.json');
        const hash = core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource)));
        source.dispose();
        return { hash, decodedOnPage: decodedOnPage.length };
      }, bigBundle);
      expect(result).toEqual({ hash: sha256(COLD['big/level.json']!), decodedOnPage: 0 });
      expect(server.requests.map((request) => request.path).filter((path) => path === bigBundle)).toHaveLength(1);
    } finally {
      await preloadPage.close();
    }
  });
  // The workers' cache writes wait until the page is idle once its loads are over: the engine then
  // decodes and builds what came (a first scene), and IndexedDB's work would compete with it for
  // the cores. The page's idle callbacks are held here, and the workers' messages watched.
  test('once the loads are over, the cache writes are asked for when the page is idle; whenStored asks at once', async () => {
    const idlePage = await browser.openHarness(server);
    try {
      const result = await idlePage.evaluate(async () => {
        const flushes: number[] = [];
        const post = Worker.prototype.postMessage;
        Worker.prototype.postMessage = function (this: Worker, message: unknown, ...rest: unknown[]) {
          if ((message as { flush?: boolean } | null)?.flush) flushes.push(1);
          return (post as (...args: unknown[]) => void).call(this, message, ...rest);
        };
        const idle: (() => void)[] = [];
        (window as unknown as { requestIdleCallback: (callback: () => void) => number }).requestIdleCallback = (callback) =>
          idle.push(callback);
        const core = await harnessImport('awake-bundle');
        const cache = await core.openBrowserCache({ name: 'idle-writes' });
        const source = await core.IndexedAssetSource.open({ indexUrl: '/published/cold/project.index.json', cache, hashWorkers: 1 });
        await source.read('small/hud.json');
        await source.read('mid/map.json');
        // The loads are over once the source has none in flight (bounded: 10 s of frames).
        for (let frame = 0; frame < 600 && (source.stats().loadsInFlight > 0 || idle.length === 0); frame++)
          await new Promise(requestAnimationFrame);
        const beforeIdle = { asked: idle.length > 0, flushes: flushes.length };
        for (const callback of idle.splice(0)) callback();
        // The flush goes to each worker once it is up (a promise's turn): bounded, 1 s of frames.
        for (let frame = 0; frame < 60 && flushes.length === 0; frame++) await new Promise(requestAnimationFrame);
        const onIdle = flushes.length;
        await source.whenStored();
        source.dispose();
        // Written: another source with the same cache reads with no request.
        const pageFetch = globalThis.fetch;
        const requested: string[] = [];
        globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
          const url = String(input instanceof Request ? input.url : input);
          if (url.endsWith('.awkb')) requested.push(url);
          return pageFetch(input, init);
        };
        const again = await core.IndexedAssetSource.open({ indexUrl: '/published/cold/project.index.json', cache, hashWorkers: 0 });
        await again.read('small/hud.json');
        await again.read('mid/map.json');
        globalThis.fetch = pageFetch;
        return { beforeIdle, onIdle: onIdle > 0, requested };
      });
      expect(result).toEqual({ beforeIdle: { asked: true, flushes: 0 }, onIdle: true, requested: [] });
    } finally {
      await idlePage.close();
    }
  });
  // A worker writes what it was given once it is asked to: a load's end asks. A range of its own
  // with no load in flight (range reads; the read-ahead's, once the glTF's load has ended) has no
  // load to ask for it: without an ask its member stayed unwritten, and a page that waited for
  // its writes (whenStored) waited for good (the 9-model gallery bench, 3 visits in 6).
  test('what a range brings with no load in flight is written to the cache without being asked (no whenStored)', async () => {
    const rangePage = await browser.openHarness(server);
    try {
      const result = await rangePage.evaluate(async () => {
        const core = await harnessImport('awake-bundle');
        const cache = await core.openBrowserCache({ name: 'range-writes' });
        const source = await core.IndexedAssetSource.open({
          indexUrl: '/published/cold/project.index.json',
          cache,
          hashWorkers: 1,
          rangeReads: true,
          neededBytes: false,
        });
        const sha256 = source.entry('mid/map.json').sha256;
        // Once the workers are up: a cold page's first reads are written here, not by a worker.
        await source.read('small/hud.json');
        const pool = (source as unknown as { pool: { usingWorkers: boolean | undefined } }).pool;
        for (let frame = 0; frame < 600 && pool.usingWorkers !== true; frame++) await new Promise(requestAnimationFrame);
        await source.read('mid/map.json');
        // Bounded: 10 s of frames.
        let written = false;
        for (let frame = 0; frame < 600 && !written; frame++) {
          written = (await cache.hasMany([sha256]))[0] === true;
          if (!written) await new Promise(requestAnimationFrame);
        }
        const stats = source.stats();
        const workers = pool.usingWorkers;
        source.dispose();
        return { workers, written, loadsInFlight: stats.loadsInFlight };
      });
      expect(result).toEqual({ workers: true, written: true, loadsInFlight: 0 });
    } finally {
      await rangePage.close();
    }
  });
});
