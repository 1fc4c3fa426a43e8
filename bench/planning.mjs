// Range planning at 10k–100k spans (`npm run bench:planning`; alone `node bench/planning.mjs` after
// `npm run build`). A CPU bench: how long the range planning rule takes as a bundle's spans grow,
// and how long a load over a large index holds the event loop before its first request.
//
// (a) `planDeltaRanges` alone (core/format/delta-ranges.ts, from dist/): N members of 200–800 bytes
//     (seeded), back to back, every other one wanted (N/2 spans, gaps of 200–800 bytes), with
//     `maxMissingFraction: 1` (as needed bytes plan) and the caps the reader uses:
//       one request per range:  maxGapBytes 64 KiB, maxRanges 4
//       one multi-range request: maxGapBytes 512, maxRanges 64
//       the worst case for the cap: maxGapBytes 0, maxRanges 4 and 64 (every span a range before it)
//       some members came already: maxGapBytes 0, maxRanges 64, keepOutGapBytes 199 (every gap a cut)
// (b) end to end: an index of N tiny members (200–800 bytes, distinct contents) in 4 bundles (what
//     the default 16 MiB bundle target makes of them), published in memory (layoutBundle) to a
//     temporary folder and served by `startStaticServer` in a child process (behind a TCP relay
//     there that notes when a bundle's request arrives; each answer waits 1 s, so that no answer's
//     parsing and hashing falls among the plans); this process opens it
//     (`IndexedAssetSource.open`, no cache, hashWorkers 0) and times `load(every other path)` (N/2
//     paths, all 4 bundles), with needed bytes on and `roundTripBytes` fixed at its floor, 16 KiB
//     (each bundle planned as ranges: one multi-range request of at most 64), and with
//     `neededBytes: false` (each bundle whole: no range planning, its stream plan made instead):
//       load() call:   how long the call itself runs before it returns (expanding and grouping the
//                      paths: before any planning)
//       first request: from the load() call to the reader's first bundle fetch() call; at server:
//                      to that request's arrival at the server
//       all requests:  to the last bundle's fetch() call: every bundle planned; plan slices Σ: the
//                      blocks after the load() task until that call's task ended, summed (each
//                      bundle's plan and its request made: the planning's own time)
//       longest block: the event loop held, from the load() call until the task of that last
//                      fetch() call ended (a 1 ms setInterval's gaps): the first task (the load()
//                      call and what it starts before any planning) and the longest after it (one
//                      bundle planned and its request made)
//       load:          until load() resolved (every bundle fetched and verified; the 1 s wait
//                      included), and the longest block over all of it (monitorEventLoopDelay,
//                      1 ms resolution: the answers' parsing and hashing included)
// Medians of 5 runs (after one unmeasured run); in (b) the worst of the 5 in brackets. Prints the
// machine, the date and the load average (a shared machine's other work shows in every number).
// Plain Node, no assertions: it prints numbers.
//
//   node bench/planning.mjs [--runs 5] [--sizes 10000,20000,40000,80000,100000] [--only plan|load]
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { mulberry32 } from './seeded.mjs';

/**
 * How long the event loop was held: the gaps between ticks of a 1 ms interval (less the 1 ms),
 * each with where it began. `closeAfterNextTick` ends the watch at the next tick, so that the
 * task running now (the one that called it) is counted whole.
 */
class BlockTracker {
  #last = 0;
  #timer;
  #closing = false;
  #closed;
  gaps = [];
  start() {
    this.#last = performance.now();
    this.gaps = [];
    this.#closing = false;
    this.closed = new Promise((resolve) => (this.#closed = resolve));
    this.#timer = setInterval(() => {
      const now = performance.now();
      this.gaps.push({ at: this.#last, ms: Math.max(0, now - this.#last - 1) });
      this.#last = now;
      if (this.#closing) this.stop();
    }, 1);
  }
  closeAfterNextTick() {
    this.#closing = true;
  }
  stop() {
    clearInterval(this.#timer);
    this.#closed();
  }
}

/** A full garbage collection: the last run's garbage is not collected in the next one's time. */
const collect = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc');
})();

/** A few turns of the event loop, so that nothing of the last run is still going, then a full collection. */
async function settle() {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 5));
  collect();
}

const ANSWER_LATENCY_MS = 1000;

// The child: `serve` of a folder behind a relay that tells the parent when a bundle is first asked for.
if (process.argv[2] === '--serve') {
  const { startStaticServer } = await import('../dist/core/node/index.js');
  // Answers wait a second: every bundle is planned and asked for before the first answer's bytes
  // (parsed and hashed on this thread, hashWorkers 0) hold the loop, so the blocks seen until the
  // last request are the planning's.
  const server = await startStaticServer({ root: process.argv[3], latencyMs: ANSWER_LATENCY_MS });
  const relay = createServer((client) => {
    const upstream = createConnection(server.port, '127.0.0.1');
    client.on('data', (chunk) => {
      if (/^GET \S+\.awkb/m.test(chunk.toString('latin1'))) process.send({ bundleAskedAt: performance.timeOrigin + performance.now() });
      upstream.write(chunk);
    });
    upstream.pipe(client);
    client.on('end', () => upstream.end());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  // The parent gone (it failed): no server left behind.
  process.on('disconnect', () => process.exit(0));
  relay.listen(0, '127.0.0.1', () => process.send({ url: `http://127.0.0.1:${relay.address().port}/` }));
  process.on('message', async (message) => {
    if (message === 'close') {
      relay.close();
      await server.close();
      process.exit(0);
    }
  });
} else {
  await main();
}

async function main() {
  const { planDeltaRanges, layoutBundle } = await import('../dist/core/format-entry.js');
  const { IndexedAssetSource } = await import('../dist/core/internal.js');

  const args = process.argv.slice(2);
  const option = (name, fallback) => {
    const at = args.indexOf(`--${name}`);
    return at === -1 ? fallback : args[at + 1];
  };
  const RUNS = Number(option('runs', '5'));
  const SIZES = option('sizes', '10000,20000,40000,80000,100000').split(',').map(Number);
  const only = option('only', 'all');

  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const ms = (value) => (value < 10 ? value.toFixed(2) : value.toFixed(1));

  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const load = () =>
    loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
  console.log(
    `Range planning bench, ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} cores of ${cpu}, load average ${load()}`,
  );

  if (only !== 'load') planAlone();
  if (only !== 'plan') await endToEnd();
  console.log(`\nload average at the end: ${load()}`);

  function planAlone() {
    const CASES = [
      ['gap 64 KiB, ≤ 4 ranges', { maxGapBytes: 64 * 1024, maxRanges: 4 }],
      ['gap 512, ≤ 64 ranges', { maxGapBytes: 512, maxRanges: 64 }],
      ['gap 0, ≤ 4 ranges', { maxGapBytes: 0, maxRanges: 4 }],
      ['gap 0, ≤ 64 ranges', { maxGapBytes: 0, maxRanges: 64 }],
      ['gap 0, ≤ 64, keepOut 199', { maxGapBytes: 0, maxRanges: 64, keepOutGapBytes: 199 }],
    ];
    console.log('\n(a) planDeltaRanges alone: N members of 200–800 B, every other one wanted (N/2 spans); median ms of ' + RUNS);
    console.log('members  spans | ' + CASES.map(([label]) => label.padStart(24)).join(' | '));
    for (const n of SIZES) {
      const rng = mulberry32(0x5eed + n);
      const members = [];
      let offset = 0;
      for (let i = 0; i < n; i++) {
        const sizeBytes = 200 + Math.floor(rng() * 601);
        members.push({ offset, sizeBytes, sha256: i.toString(16).padStart(64, '0') });
        offset += sizeBytes;
      }
      const missing = new Set(members.filter((_, i) => i % 2 === 0).map((member) => member.sha256));
      const cells = CASES.map(([, options]) => {
        const settings = { ...options, maxMissingFraction: 1 };
        let plan = planDeltaRanges(offset, members, missing, settings); // warm-up
        const times = [];
        for (let run = 0; run < RUNS; run++) {
          const start = performance.now();
          plan = planDeltaRanges(offset, members, missing, settings);
          times.push(performance.now() - start);
        }
        return `${ms(median(times))} ms → ${plan.ranges.length} ranges`.padStart(24);
      });
      console.log(`${String(n).padStart(7)} ${String(missing.size).padStart(6)} | ${cells.join(' | ')}`);
    }
  }

  async function endToEnd() {
    const BUNDLES = 4;
    const CONFIGS = [
      ['needed bytes, roundTripBytes 16 KiB (each bundle as ranges, one multi-range request)', { roundTripBytes: 16 * 1024 }],
      ['whole bundles (neededBytes: false)', false],
    ];
    const tables = CONFIGS.map(() => []);
    for (const n of SIZES) {
      const dir = publish(n, BUNDLES);
      // A run that fails leaves no folder behind.
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
      const child = fork(fileURLToPath(import.meta.url), ['--serve', dir], {
        // The server's own warnings are not this bench's.
        execArgv: ['--no-warnings'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      const url = await new Promise((resolve) => child.once('message', (message) => resolve(message.url)));
      let asked;
      child.on('message', (message) => {
        if (message.bundleAskedAt !== undefined && asked && asked.at === undefined) asked.at = message.bundleAskedAt;
      });
      for (const [c, [, neededBytes]] of CONFIGS.entries()) {
        const rows = [];
        for (let run = 0; run <= RUNS; run++) {
          const tracker = new BlockTracker();
          const fetches = [];
          const watching = (input, init) => {
            const target = typeof input === 'string' ? input : input.url;
            if (target.includes('.awkb') && fetches.length < BUNDLES) {
              fetches.push(performance.now());
              if (fetches.length === BUNDLES) tracker.closeAfterNextTick();
            }
            return fetch(input, init);
          };
          const source = await IndexedAssetSource.open({
            indexUrl: `${url}project.index.json`,
            fetch: watching,
            hashWorkers: 0,
            cache: null,
            neededBytes,
          });
          const paths = source.paths().filter((_, i) => i % 2 === 0);
          await settle();
          asked = {};
          const whole = monitorEventLoopDelay({ resolution: 1 });
          whole.enable();
          tracker.start();
          const calledAt = performance.now();
          const calledAtWall = performance.timeOrigin + calledAt;
          const loading = source.load(paths);
          const callMs = performance.now() - calledAt;
          await loading;
          const loadedMs = performance.now() - calledAt;
          whole.disable();
          await tracker.closed;
          // The relay's note comes by a message from the child: waited for.
          for (let waited = 0; asked.at === undefined && waited < 2000; waited += 10) await new Promise((r) => setTimeout(r, 10));
          source.dispose();
          if (fetches.length !== BUNDLES) throw new Error(`expected ${BUNDLES} bundle requests, saw ${fetches.length}`);
          if (run === 0) continue; // unmeasured
          const [first, ...slices] = tracker.gaps;
          rows.push({
            callMs,
            firstMs: fetches[0] - calledAt,
            serverMs: asked.at - calledAtWall,
            allMs: fetches[BUNDLES - 1] - calledAt,
            loadTaskMs: first.ms,
            sliceMs: Math.max(0, ...slices.map((gap) => gap.ms)),
            slicesMs: slices.reduce((sum, gap) => sum + gap.ms, 0),
            loadedMs,
            overLoadMs: whole.max / 1e6,
          });
        }
        const cell = (key) => `${ms(median(rows.map((row) => row[key])))} (${ms(Math.max(...rows.map((row) => row[key])))})`;
        tables[c].push(
          `${String(n).padStart(7)} ${String(Math.ceil(n / 2)).padStart(6)} | ${cell('callMs').padStart(13)} | ` +
            `${`${cell('firstMs')}, ${ms(median(rows.map((row) => row.serverMs)))}`.padStart(24)} | ${cell('allMs').padStart(13)} | ` +
            `${cell('slicesMs').padStart(13)} | ${cell('loadTaskMs').padStart(13)} | ${cell('sliceMs').padStart(13)} | ` +
            `${cell('loadedMs').padStart(15)} | ${cell('overLoadMs')}`,
        );
      }
      child.send('close');
      await new Promise((resolve) => child.once('exit', resolve));
      rmSync(dir, { recursive: true, force: true });
    }
    for (const [c, [label]] of CONFIGS.entries()) {
      console.log(
        `\n(b) IndexedAssetSource.load() of every other member (N/2 paths) of N members (200–800 B) in ${BUNDLES} bundles, ${label};` +
          ` startStaticServer in a child process, answers after ${ANSWER_LATENCY_MS} ms; median (worst) of ${RUNS}, ms`,
      );
      console.log(
        'members  paths |   load() call | first request, at server |  all requests | plan slices Σ | block: load() |  a plan slice | load (total)    | block over the load',
      );
      for (const line of tables[c]) console.log(line);
    }
  }

  /** N members of 200–800 random bytes, path `m/<i>.bin`, in `bundles` bundles of consecutive paths; the folder to serve. */
  function publish(n, bundles) {
    const dir = mkdtempSync(join(tmpdir(), 'awkb-planning-bench-'));
    mkdirSync(join(dir, 'bundles'));
    const rng = mulberry32(0xb0b + n);
    const index = { formatVersion: 3, rootPath: '.', bundles: [], files: [] };
    const perBundle = Math.ceil(n / bundles);
    for (let b = 0; b < bundles; b++) {
      const members = [];
      for (let i = b * perBundle; i < Math.min(n, (b + 1) * perBundle); i++) {
        const bytes = new Uint8Array(200 + Math.floor(rng() * 601));
        for (let j = 0; j < bytes.length; j++) bytes[j] = (rng() * 256) | 0;
        const key = `m/${String(i).padStart(6, '0')}.bin`;
        members.push({ key, bytes, sha256: createHash('sha256').update(bytes).digest('hex') });
      }
      const layout = layoutBundle(members.map(({ key, bytes, sha256 }) => ({ key, sizeBytes: bytes.length, sha256 })));
      const out = new Uint8Array(layout.sizeBytes);
      out.set(layout.head, 0);
      const byKey = new Map(members.map((member) => [member.key, member]));
      for (const record of layout.records) out.set(byKey.get(record.key).bytes, record.offset);
      const sha256 = createHash('sha256').update(out).digest('hex');
      const bundleUrl = `bundles/${sha256}.awkb`;
      writeFileSync(join(dir, bundleUrl), out);
      index.bundles.push({ sha256, sizeBytes: out.length, url: bundleUrl });
      for (const record of layout.records)
        index.files.push({ path: record.key, sizeBytes: record.sizeBytes, sha256: record.sha256, bundle: sha256, offset: record.offset });
    }
    writeFileSync(join(dir, 'project.index.json'), JSON.stringify(index));
    return dir;
  }
}
