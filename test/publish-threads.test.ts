/**
 * Several `worker_threads` of one process publishing into one out folder, and putting into one
 * `NodeFolderCache`. Temporary names must not collide across threads, and no thread
 * may take another live thread's temporary file for a killed publish's leftover: before the fix,
 * one thread deleted another's `.incoming.awkb.tmp-<pid>-<n>`, made the same name again, and the
 * other's rename moved the wrong bytes under its SHA-256 name.
 *
 * The workers run the built code (dist/), as a user's threads would. The test's own thread only
 * waits for their messages. Below them: the rules that make it hold, one at a time.
 */
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { publishBundles, publishFolder } from '../core/node/index.js';
import { REPO, runCli, temporaryDir } from './helpers/cli.js';
import { indexViolations, seededBytes, sha256Hex, temporaryFilesIn, writeTree } from './helpers/trees.js';

const WORKERS = 4;
const ROUNDS = 12;
const CACHE_ENTRIES = 24;

/** The pid of a process that has exited (so `kill(pid, 0)` fails with ESRCH). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

/** Each worker, per round: publish its own project into the round's out folder, then put the shared cache entries. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
(async () => {
  const { publishFolder, NodeFolderCache } = await import(workerData.node);
  const entries = Array.from({ length: workerData.cacheEntries }, (_, i) => Buffer.from('cache entry ' + i + ' '.repeat(i * 97)));
  parentPort.on('message', async ({ out, cacheDir }) => {
    const failures = [];
    try {
      await publishFolder({ folder: workerData.project, outDir: out, targetBundleBytes: 8 * 1024 });
    } catch (error) {
      failures.push('publish: ' + error.message);
    }
    const cache = new NodeFolderCache(cacheDir);
    await Promise.all(entries.map((bytes) => cache.put(createHash('sha256').update(bytes).digest('hex'), bytes).catch((error) => failures.push('put: ' + error.message))));
    parentPort.postMessage(failures);
  });
  parentPort.postMessage('ready');
})().catch((error) => parentPort.postMessage(['start: ' + error.message]));
`;

/** A project of the same shape for every worker (so their temporary-name counters run in step), with its own bytes. */
function projectFor(worker: number): string {
  const dir = temporaryDir('awkb-threads-project-');
  const files: Record<string, Uint8Array> = {};
  // Larger than the 8 KiB target: each is streamed into `.incoming.awkb.tmp-…` before it has its name.
  for (let i = 0; i < 6; i++) files[`big/b${i}.bin`] = seededBytes(40_000 + i * 1000, 1000 * worker + i);
  for (let i = 0; i < 10; i++) files[`small/s${i}.bin`] = seededBytes(3_000, 1000 * worker + 100 + i);
  writeTree(dir, files);
  return dir;
}

/** Every `<sha256>.awkb` below `out/bundles` whose bytes do not hash to its name. */
function misnamedBundles(out: string): string[] {
  return readdirSync(join(out, 'bundles'))
    .filter((name) => /^[0-9a-f]{64}\.awkb$/.test(name))
    .filter((name) => sha256Hex(readFileSync(join(out, 'bundles', name))) !== name.slice(0, 64));
}

/** Every cache entry whose bytes do not hash to its name, and the count of entries. */
function checkCache(dir: string): { entries: number; wrong: string[]; temporary: string[] } {
  const names = readdirSync(dir, { recursive: true, encoding: 'utf8' });
  const entries = names.filter((name) => /[0-9a-f]{64}$/.test(name));
  return {
    entries: entries.length,
    wrong: entries.filter((name) => sha256Hex(readFileSync(join(dir, name))) !== name.slice(-64)),
    temporary: names.filter((name) => name.includes('.tmp-')),
  };
}

test(`${WORKERS} worker threads publishing into one out folder and putting into one cache, ${ROUNDS} rounds: every name tells the truth`, async () => {
  runCli(['--help']); // fails early with a clear message when dist/ is not built
  const node = pathToFileURL(join(REPO, 'dist', 'core', 'node', 'index.js')).href;
  const workers = Array.from(
    { length: WORKERS },
    (_, i) => new Worker(WORKER_SOURCE, { eval: true, workerData: { node, project: projectFor(i), cacheEntries: CACHE_ENTRIES } }),
  );
  // The next message of a worker; its 'error' rejects instead.
  const next = async (worker: Worker) => (await once(worker, 'message'))[0] as unknown;
  try {
    expect(await Promise.all(workers.map(next))).toEqual(workers.map(() => 'ready'));
    const problems: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const out = temporaryDir('awkb-threads-out-');
      const cacheDir = join(temporaryDir('awkb-threads-cache-'), 'cache');
      const answers = workers.map(next);
      for (const worker of workers) worker.postMessage({ out, cacheDir });
      const failures = (await Promise.all(answers)) as string[][];
      problems.push(...failures.flat().map((failure) => `round ${round}: ${failure}`));
      problems.push(...misnamedBundles(out).map((name) => `round ${round}: bundles/${name} does not hash to its name`));
      problems.push(...indexViolations(out).map((problem) => `round ${round}: index: ${problem}`));
      problems.push(...temporaryFilesIn(out).map((name) => `round ${round}: left behind: ${name}`));
      const cache = checkCache(cacheDir);
      if (cache.entries !== CACHE_ENTRIES) problems.push(`round ${round}: the cache holds ${cache.entries} of ${CACHE_ENTRIES} entries`);
      problems.push(...cache.wrong.map((name) => `round ${round}: cache entry ${name} does not hash to its name`));
      problems.push(...cache.temporary.map((name) => `round ${round}: cache left behind: ${name}`));
    }
    expect(problems).toEqual([]);
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}, 120_000);

describe('temporary files of this process', () => {
  test("a publish keeps temporary files with its own pid that it did not make (another thread's), and removes a dead process's", async () => {
    const project = projectFor(9);
    const out = temporaryDir('awkb-threads-out-');
    mkdirSync(join(out, 'bundles'));
    const dead = deadPid();
    const otherThreads = [`${'c'.repeat(64)}.awkb.tmp-${process.pid}-1`, `.incoming.awkb.tmp-${process.pid}-3-0123456789ab`];
    const stale = [`${'d'.repeat(64)}.awkb.tmp-${dead}-2`, `.incoming.awkb.tmp-${dead}-0-ba9876543210`];
    for (const name of [...otherThreads, ...stale]) writeFileSync(join(out, 'bundles', name), 'partial');
    const summary = await publishFolder({ folder: project, outDir: out, targetBundleBytes: 8 * 1024 });
    expect(summary.staleTemporaryFilesRemoved).toBe(stale.length);
    expect(otherThreads.filter((name) => existsSync(join(out, 'bundles', name)))).toEqual(otherThreads);
    expect(indexViolations(out)).toEqual([]);
  });

  test("a temporary file replaced by another writer before its rename never lands under the bundle's name", async () => {
    const out = temporaryDir('awkb-threads-out-');
    const written = seededBytes(5000, 1);
    const sha256 = sha256Hex(written);
    const bundles = join(out, 'bundles');
    async function* chunks() {
      yield written;
      // Another writer removes the temporary file while this one still writes through its handle, and makes the name again.
      const [name] = readdirSync(bundles).filter((file) => file.startsWith('.incoming.awkb.tmp-'));
      rmSync(join(bundles, name!));
      writeFileSync(join(bundles, name!), seededBytes(5000, 2));
    }
    const publish = publishBundles({ outDir: out }, async ({ store }) => {
      await store({
        kind: 'stream',
        group: '',
        members: 1,
        sizeBytes: written.length,
        chunks: chunks(),
        finished: Promise.resolve({ sha256, url: `bundles/${sha256}.awkb` }),
      });
      throw new Error('not reached: the store refuses the bundle');
    });
    await expect(publish).rejects.toThrow(/another writer replaced it/);
    expect(existsSync(join(bundles, `${sha256}.awkb`))).toBe(false);
    expect(existsSync(join(out, 'project.index.json'))).toBe(false);
    // The other writer's file is not this publish's to remove.
    expect(readdirSync(bundles).filter((file) => file.startsWith('.incoming.awkb.tmp-'))).toHaveLength(1);
  });
});
