/**
 * Every request the reader makes ends as the network ends it: DevTools, and the
 * DevTools protocol, see each index and bundle request finish (`Network.loadingFinished`), none
 * canceled (`net::ERR_ABORTED`) after its bytes arrived. Chromium cancels a fetch whose body
 * stream closes before its loader heard the network finish (see core/net/body.ts `bodyToRead`);
 * the reader reads bodies as streams on the page (bundles, a chunked index, progress) and in its
 * workers (bundles, loose files), so each of those paths is loaded here with CDP watching the page
 * and every worker. Chromium only: the bug and CDP are Chromium's.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { launchBrowser, startRepoServer, TESTED_BROWSERS, type LaunchedBrowser, type RepoServer } from './helpers/browser';
import { CLI } from './helpers/cli';
import { logNetwork, type NetworkLog } from './helpers/network-log';
import { buildPhaserSite, PHASER_PAGES, type PhaserSite } from './helpers/phaser-site';

const describeChromium = TESTED_BROWSERS.includes('chromium') ? describe : describe.skip;

describeChromium('chromium: index and bundle requests end finished, none canceled', () => {
  let site: PhaserSite;
  let server: RepoServer;
  let browser: LaunchedBrowser;

  beforeAll(async () => {
    site = buildPhaserSite();
    // A development (loose) index of the same files: each file is its own request.
    const made = spawnSync(
      process.execPath,
      [CLI, 'index', join(site.dir, 'loose'), '--out', join(site.dir, 'dev', 'project.index.json'), '--url-prefix', '../loose'],
      { encoding: 'utf8' },
    );
    if (made.status !== 0) throw new Error(made.stderr);
    server = await startRepoServer({ mounts: { '/site/': site.dir, '/page/': PHASER_PAGES } });
    browser = await launchBrowser({ kind: 'chromium' });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /** Reads every path of the index at `indexUrl` through a new source on the harness page. */
  async function loadAll(page: Page, indexUrl: string, options: { hashWorkers?: number } = {}): Promise<number> {
    return page.evaluate(
      async (url, opts) => {
        const core = await harnessImport('/dist/core/internal.js');
        const source = await core.IndexedAssetSource.open({ indexUrl: url, cache: new core.MemoryCache(), ...opts });
        const paths: string[] = source.paths();
        await Promise.all(paths.map((path) => source.read(path)));
        await source.whenStored();
        source.dispose();
        return paths.length;
      },
      indexUrl,
      options,
    );
  }

  /** The matching requests that did not finish, once none is pending. */
  /** Whether the shared pool's workers answered a digest job (it waits for their answer). */
  async function workersAnswered(page: Page): Promise<boolean | undefined> {
    return page.evaluate(async () => {
      const pool = (await harnessImport('/dist/core/internal.js')).sharedDigestPool();
      await pool.digest({ inputs: [new Uint8Array(1)] });
      return pool.usingWorkers;
    });
  }

  async function unfinished(log: NetworkLog, url: RegExp) {
    return (await log.settled(url)).filter((request) => request.outcome !== 'finished');
  }

  test('bundles streamed on the page, and the index read whole', async () => {
    const page = await browser.openHarness(server);
    const log = await logNetwork(page);
    server.resetRequests();
    // hashWorkers: 0, the page's own thread: every bundle streams through the page's transport.
    expect(await loadAll(page, '/site/published/project.index.json', { hashWorkers: 0 })).toBe(site.index.files.length);
    const bundles = log.requests(/\.awkb$/);
    expect(bundles).toHaveLength(site.index.bundles.length);
    expect(bundles.every((request) => request.by === 'page')).toBe(true);
    expect(await unfinished(log, /\.awkb$|project\.index\.json$/)).toEqual([]);
    await page.close();
  });

  test("bundles streamed in the reader's workers", async () => {
    const page = await browser.openHarness(server);
    const log = await logNetwork(page);
    // Until a worker has answered, bundles stream on the page: let the shared pool's workers answer first.
    expect(await workersAnswered(page)).toBe(true);
    await loadAll(page, '/site/published/project.index.json');
    const bundles = log.requests(/\.awkb$/);
    expect(bundles).toHaveLength(site.index.bundles.length);
    expect(bundles.every((request) => request.by === 'worker')).toBe(true);
    expect(await unfinished(log, /\.awkb$|project\.index\.json$/)).toEqual([]);
    await page.close();
  });

  test('loose files read in the workers with progress, and an index without Content-Length read as a stream', async () => {
    const chunked = await startRepoServer({ mounts: { '/site/': site.dir }, chunked: (path) => path.endsWith('project.index.json') });
    try {
      const page = await browser.openHarness(chunked);
      const log = await logNetwork(page);
      // Until a worker has answered, loose files too are fetched on the page (their requests wait
      // for no worker): let the shared pool's workers answer first, as above.
      expect(await workersAnswered(page)).toBe(true);
      await loadAll(page, '/site/dev/project.index.json');
      await loadAll(page, '/site/published/project.index.json');
      expect(log.requests(/\/site\/loose\//).length).toBe(
        chunked.requests.filter((request) => request.path.startsWith('/site/loose/')).length,
      );
      expect(log.requests(/\/site\/loose\//).every((request) => request.by === 'worker')).toBe(true);
      expect(chunked.requests.filter((request) => request.path.endsWith('project.index.json'))).toHaveLength(2);
      expect(await unfinished(log, /\/site\//)).toEqual([]);
      await page.close();
    } finally {
      await chunked.close();
    }
  });

  test('a Phaser game loading every file type from bundles', async () => {
    const page = await browser.browser.newPage();
    const log = await logNetwork(page);
    await page.goto(`${server.origin}/page/phaser4.html`, { waitUntil: 'load' });
    await page.waitForFunction(() => typeof (globalThis as { runScene?: unknown }).runScene === 'function');
    const result = JSON.parse(
      await page.evaluate(async () =>
        JSON.stringify(
          await (globalThis as any).runScene({
            baseURL: '/site/published/',
            index: { url: 'project.index.json', options: { cache: 'memory' } },
          }),
        ),
      ),
    );
    expect(result.events.loaderror).toEqual([]);
    expect(log.requests(/\.awkb$/).length).toBeGreaterThan(0);
    expect(await unfinished(log, /\.awkb$|project\.index\.json$/)).toEqual([]);
    await page.close();
  });
});
