/**
 * The reader's workers can die (core/read/workers/digest-pool.ts): stopped, or made to throw, in
 * the middle of a job or between jobs. The pool notices (an `error` event, or a worker with jobs
 * that stays silent past `livenessMs` though pinged), answers every job that worker held without
 * it, and later jobs go to a worker left or to the page: a read never waits on a dead worker, and
 * a source goes on, slower, with no workers at all. Real Chromium and Firefox ESR, a real server.
 *
 * In Firefox ESR a worker can also run out of memory for real: in a Firefox whose JS heaps are
 * capped (`javascript.options.mem.max`), a job's answer makes the worker fill its heap, there,
 * inside the job, until SpiderMonkey gives up. Firefox then logs `uncaught exception: out of
 * memory`; since the pool's jobs run in promise continuations, that kills the job alone: no
 * `error` event, no answer, no `catch` or `finally`, while the worker goes on answering pings.
 * The pool finds that job late (its bytes at the slowest rate past `livenessMs`) and loses the worker.
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
type Death = 'terminate' | 'throw' | 'oom';

/** The worker's script, wrapped by the page's Worker class for `death` (`terminate` needs no wrapper). */
function wrapperLines(death: Death): string[] {
  if (death === 'throw')
    return [
      'const inner = self.onmessage;',
      'self.onmessage = (event) => { if (self.armed && (event.data.read || event.data.has)) throw new Error("worker made to throw"); if (event.data.arm) return void (self.armed = true); inner(event); };',
    ];
  // Once armed, the first answer the worker posts for a job (worker-main.ts `post`, which looks
  // `self.postMessage` up at each call) fills its heap with small arrays first: the worker runs out
  // of memory inside that job's continuation. The loop has no end: only an uncatchable exception
  // leaves it. What it held is free again once the exception has unwound the job.
  return [
    'const inner = self.onmessage;',
    'const send = self.postMessage.bind(self);',
    'self.postMessage = (message, transfer) => {',
    '  if (self.armed && !self.filling && message && message.id !== undefined) {',
    '    self.filling = true;',
    '    send({ filling: Object.keys(message) });',
    '    const held = [];',
    '    for (let n = 0; ; n++) held.push([n, n, n, n, n, n, n, n, n, n, n, n, n, n, n, n]);',
    '  }',
    '  return send(message, transfer);',
    '};',
    'self.onmessage = (event) => { if (event.data.arm) return void (self.armed = true); inner(event); };',
  ];
}

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
   * Opens a page (in `on`, by default the suite's browser) whose Worker class keeps every worker
   * made (`globalThis.madeWorkers`), the `error` events they fire (`globalThis.workerErrors`) and
   * what they say of a fill (`globalThis.fills`) and, for `throw`, wraps the pool's script so the
   * worker throws at its first cache read or check once armed; for `oom`, so that it runs out of
   * memory in its first job once armed (`wrapperLines`).
   */
  async function pageWithWorkers(death: Death, on: LaunchedBrowser = browser): Promise<Page> {
    const page = await on.openHarness(server);
    await page.evaluate(
      (death, lines) => {
        const made: Worker[] = [];
        const errors: string[] = [];
        const fills: { worker: number; job: string[] }[] = [];
        Object.assign(globalThis, { madeWorkers: made, workerErrors: errors, fills });
        const PageWorker = globalThis.Worker;
        globalThis.Worker = class extends PageWorker {
          constructor(url: string | URL, options?: WorkerOptions) {
            const script =
              death === 'terminate'
                ? url
                : URL.createObjectURL(new Blob([`importScripts(${JSON.stringify(String(url))});`, ...lines], { type: 'text/javascript' }));
            super(script, options);
            const worker = made.push(this) - 1;
            this.addEventListener('error', (event) => errors.push(`worker ${worker}: ${event.message}`));
            this.addEventListener('message', ({ data }) => data?.filling && fills.push({ worker, job: data.filling }));
          }
        };
      },
      death,
      wrapperLines(death),
    );
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

  // A real out-of-memory, in Firefox ESR: a second Firefox whose JS heaps (the page's and each
  // worker's) are capped at 32 MB, so that a worker's heap fills in about 3 s. The pool keeps its
  // default liveness (10 s): a smaller one would have the watchdog stop the worker while it is
  // still filling, a terminate again rather than an out-of-memory.
  // Before the pool timed its jobs by their bytes it did not recover: the worker answers the
  // watchdog's pings, which count as life, so the job it lost was never answered and the reads
  // waited on it for good (this test failed at its timeout). Now the job is late after
  // `livenessMs` + its bytes at the slowest rate (digest-pool.ts `SLOWEST_BYTES_PER_MS`): its
  // worker is lost, the job answered without it.
  if (kind === 'firefox')
    describe('a worker out of memory (a Firefox whose JS heaps are capped at 32 MB)', () => {
      let capped: LaunchedBrowser;
      beforeAll(async () => {
        capped = await launchBrowser({ kind, firefoxPrefs: { 'javascript.options.mem.max': 32 } });
      });
      afterAll(async () => {
        await capped?.close();
      });

      test('a worker runs out of memory in its first job after the cache was filled: that read and the next cached and uncached ones succeed', async () => {
        const page = await pageWithWorkers('oom', capped);
        // Firefox reports a worker's uncaught exceptions to the page's log, which puppeteer hands on as page errors.
        const outOfMemory = new Promise<string>((resolve) =>
          page.on('pageerror', (error) => /out of memory/.test(String(error)) && resolve(String(error))),
        );
        try {
          const filled = await page.evaluate(async (name) => {
            const core = await harnessImport('/dist/core/internal.js');
            const made = (globalThis as unknown as { madeWorkers: Worker[] }).madeWorkers;
            const pool = new core.WorkerDigestPool({ size: 2 });
            const open = async () =>
              core.IndexedAssetSource.open({
                indexUrl: '/published/site/project.index.json',
                cache: await core.openBrowserCache({ name }),
                hashWorkers: pool,
              });
            const hex = async (bytes: Uint8Array) =>
              core.toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource)));
            const source = await open();
            const out: Record<string, string> = {};
            for (const path of ['first/a.bin', 'first/b.bin', 'second/c.bin']) out[path] = await hex(await source.read(path));
            await source.whenStored();
            const workersBefore = pool.usingWorkers;
            source.dispose();
            for (const worker of made) worker.postMessage({ arm: true });
            const again = await open();
            // Read one after another as the other tests do, awaited by the next evaluate: the first
            // of them (a cached member) gives a worker the job it runs out of memory in.
            (globalThis as unknown as { oomReads: Promise<Record<string, string>> }).oomReads = (async () => {
              const reads: Record<string, string> = {};
              for (const path of ['first/a.bin', 'second/c.bin', 'third/e.bin', 'second/d.bin', 'fourth/f.bin'])
                reads[path] = await again.read(path).then(hex, (error: Error) => `${error.name}: ${error.message}`);
              await again.whenStored();
              again.dispose();
              return reads;
            })();
            return { out, workersBefore };
          }, 'dead-oom');
          expect(filled.workersBefore).toBe(true);
          expect(filled.out).toEqual({
            'first/a.bin': EXPECTED['first/a.bin'],
            'first/b.bin': EXPECTED['first/b.bin'],
            'second/c.bin': EXPECTED['second/c.bin'],
          });

          // The worker really ran out of memory, inside a job, and said nothing of it to the page.
          expect(await outOfMemory).toMatch(/uncaught exception: out of memory/);
          const seen = await page.evaluate(() => {
            const state = globalThis as unknown as { fills: { worker: number; job: string[] }[]; workerErrors: string[] };
            return { fills: state.fills, errors: state.workerErrors };
          });
          expect(seen.fills.length).toBeGreaterThan(0);
          for (const fill of seen.fills) expect(fill.job).toContain('id');
          expect(seen.errors).toEqual([]);

          // Every read still ends, with the right bytes.
          const reads = await page.evaluate(() => (globalThis as unknown as { oomReads: Promise<Record<string, string>> }).oomReads);
          expect(reads).toEqual({
            'first/a.bin': EXPECTED['first/a.bin'],
            'second/c.bin': EXPECTED['second/c.bin'],
            'third/e.bin': EXPECTED['third/e.bin'],
            'second/d.bin': EXPECTED['second/d.bin'],
            'fourth/f.bin': EXPECTED['fourth/f.bin'],
          });
        } finally {
          await page.close();
        }
      }, 30_000);
    });
});
