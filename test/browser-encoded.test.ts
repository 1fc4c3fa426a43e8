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
import { launchBrowser, reloadHarness, startRepoServer, TESTED_BROWSERS, type LaunchedBrowser, type RepoServer } from './helpers/browser';
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

  beforeAll(async () => {
    const site = temporaryDir('awkb-browser-encoded-');
    cpSync(join(FIXTURES, 'encoded/text'), join(site, 'text'), { recursive: true });
    for (const path of TEXT_PATHS) expected.text![path] = sha256(readFileSync(join(FIXTURES, 'trees/text', path)));
    const tree = temporaryDir('awkb-browser-encoded-tree-');
    writeTree(tree, OWN);
    const published = runCli([tree, '--out', join(site, 'own'), '--compress']);
    if (published.code !== 0) throw new Error(published.stderr);
    for (const [path, bytes] of Object.entries(OWN)) expected.own![path] = sha256(bytes);
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
});
