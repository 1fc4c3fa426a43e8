/**
 * The reader's workers can die (core/read/workers/digest-pool.ts): stopped, or made to throw, in
 * the middle of a job or between jobs. The pool notices (an `error` event, or a worker with jobs
 * that stays silent past `livenessMs` though pinged), answers every job that worker held without
 * it, and later jobs go to a worker left or to the page: a read never waits on a dead worker, and
 * a source goes on, slower, with no workers at all. Real Chromium and Firefox ESR, a real server.
 */
import { createHash } from 'node:crypto';
import type { Page } from 'puppeteer-core';
import { runCli, temporaryDir } from './helpers/cli';
import { launchBrowser, startRepoServer, TESTED_BROWSERS, type LaunchedBrowser, type RepoServer } from './helpers/browser';
import { seededBytes, writeTree } from './helpers/trees';

const FILES: Record<string, Uint8Array> = {
  'first/a.bin': seededBytes(300_000, 1),
  'first/b.bin': seededBytes(200_000, 2),
  'second/c.bin': seededBytes(300_000, 3),
  'second/d.bin': seededBytes(100_000, 4),
  'third/e.bin': seededBytes(250_000, 5),
  'fourth/f.bin': seededBytes(150_000, 6),
};
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const EXPECTED = Object.fromEntries(Object.entries(FILES).map(([path, bytes]) => [path, sha256(bytes)]));

/** What a test's page script does to the pool's workers, and when. */
type Death = 'terminate' | 'throw';

describe.each(TESTED_BROWSERS)('%s: a dead worker never hangs a read', (kind) => {
  let server: RepoServer;
  let browser: LaunchedBrowser;
  let index: { bundles: { sha256: string; url: string }[]; files: { path: string; bundle: string }[] };
  const bundlePathOf = (path: string) =>
    `/published/site/${index.bundles.find((bundle) => bundle.sha256 === index.files.find((file) => file.path === path)!.bundle)!.url}`;

  beforeAll(async () => {
    const tree = temporaryDir('awkb-workers-tree-');
    writeTree(tree, FILES);
    const site = temporaryDir('awkb-workers-site-');
    const published = runCli([tree, '--out', `${site}/site`, '--group', 'folder']);
    if (published.code !== 0) throw new Error(published.stderr);
    const { readFileSync } = await import('node:fs');
    index = JSON.parse(readFileSync(`${site}/site/project.index.json`, 'utf8'));
    server = await startRepoServer({ mounts: { '/published/': site } });
    browser = await launchBrowser({ kind });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /**
   * Opens a page whose Worker class keeps every worker made (`globalThis.madeWorkers`) and, for
   * `throw`, wraps the pool's script so the worker throws at its first cache read or check.
   */
  async function pageWithWorkers(death: Death): Promise<Page> {
    const page = await browser.openHarness(server);
    await page.evaluate((death) => {
      const made: Worker[] = [];
      (globalThis as unknown as { madeWorkers: Worker[] }).madeWorkers = made;
      const PageWorker = globalThis.Worker;
      globalThis.Worker = class extends PageWorker {
        constructor(url: string | URL, options?: WorkerOptions) {
          const script =
            death === 'throw'
              ? URL.createObjectURL(
                  new Blob(
                    [
                      `importScripts(${JSON.stringify(String(url))});`,
                      'const inner = self.onmessage;',
                      'self.onmessage = (event) => { if (self.armed && (event.data.read || event.data.has)) throw new Error("worker made to throw"); if (event.data.arm) return void (self.armed = true); inner(event); };',
                    ],
                    { type: 'text/javascript' },
                  ),
                )
              : url;
          super(script, options);
          made.push(this);
        }
      };
    }, death);
    return page;
  }

  test.each<Death>(['terminate', 'throw'])(
    'workers %s after the cache was filled: cached and uncached reads through openBrowserCache all succeed, on the page',
    async (death) => {
      const page = await pageWithWorkers(death);
      try {
        const result = await page.evaluate(
          async ({ death, name }) => {
            const core = await harnessImport('/dist/core/internal.js');
            const made = (globalThis as unknown as { madeWorkers: Worker[] }).madeWorkers;
            const pool = new core.WorkerDigestPool({ size: 2, livenessMs: 400 });
            const source = await core.IndexedAssetSource.open({
              indexUrl: '/published/site/project.index.json',
              cache: await core.openBrowserCache({ name }),
              hashWorkers: pool,
            });
            const hex = async (bytes: Uint8Array) =>
              core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource)));
            const out: Record<string, string> = {};
            for (const path of ['first/a.bin', 'first/b.bin', 'second/c.bin']) out[path] = await hex(await source.read(path));
            await source.whenStored();
            const workersBefore = pool.usingWorkers;
            source.dispose();
            // The workers die: stopped (no event at all), or throwing at their next cache job.
            if (death === 'terminate') for (const worker of made) worker.terminate();
            else for (const worker of made) worker.postMessage({ arm: true });
            const again = await core.IndexedAssetSource.open({
              indexUrl: '/published/site/project.index.json',
              cache: await core.openBrowserCache({ name }),
              hashWorkers: pool,
            });
            const reads: Record<string, string> = {};
            for (const path of ['first/a.bin', 'second/c.bin', 'third/e.bin', 'second/d.bin', 'fourth/f.bin'])
              reads[path] = await hex(await again.read(path)).catch((error: Error) => `${error.name}: ${error.message}`);
            await again.whenStored();
            again.dispose();
            return { out, reads, workersBefore, workersAfter: pool.usingWorkers };
          },
          { death, name: `dead-${death}` },
        );
        expect(result.workersBefore).toBe(true);
        expect(result.out).toEqual({
          'first/a.bin': EXPECTED['first/a.bin'],
          'first/b.bin': EXPECTED['first/b.bin'],
          'second/c.bin': EXPECTED['second/c.bin'],
        });
        expect(result.reads).toEqual({
          'first/a.bin': EXPECTED['first/a.bin'],
          'second/c.bin': EXPECTED['second/c.bin'],
          'third/e.bin': EXPECTED['third/e.bin'],
          'second/d.bin': EXPECTED['second/d.bin'],
          'fourth/f.bin': EXPECTED['fourth/f.bin'],
        });
        // Every worker is out of the pool: the page does the work now.
        expect(result.workersAfter).toBe(false);
      } finally {
        await page.close();
      }
    },
  );

  test('workers stopped while one fetches a bundle for a read: that read and the next ones succeed', async () => {
    const page = await pageWithWorkers('terminate');
    try {
      const held = bundlePathOf('third/e.bin');
      const hold = server.hold(held);
      const reading = page.evaluate(async () => {
        const core = await harnessImport('/dist/core/internal.js');
        const made = (globalThis as unknown as { madeWorkers: Worker[] }).madeWorkers;
        const pool = new core.WorkerDigestPool({ size: 2, livenessMs: 400 });
        const source = await core.IndexedAssetSource.open({ indexUrl: '/published/site/project.index.json', hashWorkers: pool });
        const hex = async (bytes: Uint8Array) => core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource)));
        const out: Record<string, string> = {};
        out['first/a.bin'] = await hex(await source.read('first/a.bin'));
        // Workers up first (a cold page's first bundle streams on the page): a job that waits for one.
        await pool.digest({ inputs: [new Uint8Array(1)] });
        const usingWorkers = pool.usingWorkers;
        const pending = source.read('third/e.bin');
        (globalThis as unknown as { stop: () => void }).stop = () => made.forEach((worker) => worker.terminate());
        (globalThis as unknown as { pending: Promise<Uint8Array> }).pending = pending;
        return { out, usingWorkers, source: true };
      });
      const started = await reading;
      expect(started.usingWorkers).toBe(true);
      await hold.arrived;
      await page.evaluate(() => (globalThis as unknown as { stop: () => void }).stop());
      hold.release();
      const result = await page.evaluate(async () => {
        const core = await harnessImport('/dist/core/internal.js');
        const hex = async (bytes: Uint8Array) => core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource)));
        const pending = (globalThis as unknown as { pending: Promise<Uint8Array> }).pending;
        return pending.then(hex, (error: Error) => `${error.name}: ${error.message}`);
      });
      expect(result).toBe(EXPECTED['third/e.bin']);
    } finally {
      await page.close();
    }
  });
});
