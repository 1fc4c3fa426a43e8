// Delta downloads benchmark (`npm run bench:delta`): a returning player's load.
//
// The 4,000-file project of bench/reader.mjs (small4k, same seed, same bytes) is published as
// v1; 1% of its files (every 100th, so spread over the folders) get new bytes and sizes (±20%)
// and it is published again as v2. In headless Chromium, on a fresh profile for every sample, an
// unmeasured load fills `openBrowserCache()` (IndexedDB) with v1; the page reloads and v2 is
// loaded with that warm cache (`open` + `prefetch(all)` + `read(every path)`), from the project's
// own `serve` (startStaticServer, which answers Range), under Chromium's network emulation.
// Cases: `whole` (`deltaReads: false`: each changed bundle whole), `delta` (the default: the
// ranges of the members the cache lacks, in one multipart/byteranges request per bundle), and
// `separate` / `fine` (one request per range). Requests and bytes are counted by the server.
//
//   node bench/delta.mjs [--runs 3] [--latency 40] [--bandwidth 0|100] [--out .bench/delta-results.json] [--no-write]
//   node bench/delta.mjs --report [a.json b.json …]   # BENCHMARKS.md from saved runs (default: --out's)
//
// Prints a table and (unless --no-write) writes it into BENCHMARKS.md, section "Delta downloads".
// Plain Node + puppeteer-core, no assertions: it prints numbers.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchFreshChromium } from './chromium.mjs';
import { planProject, random } from './projects.mjs';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const DIR = join(ROOT, '.bench', 'delta');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const MB = 1e6;
const PROJECT = { name: 'small4k', shape: 'scene', files: 4000, seed: 0x5eed0004 };
/** Every 100th file changes (1%): the files' folders are drawn at random, so these spread over them. */
const CHANGED_EVERY = 100;
const CASES = {
  whole: { label: 'whole changed bundles (`deltaReads: false`)', deltaReads: false },
  delta: { label: 'delta ranges, defaults (one multi-range request per bundle: ≤ 64 ranges, gap 512 B)', deltaReads: undefined },
  // What an origin without multi-range answers gets (and the defaults before them): one request per range.
  separate: {
    label: 'delta ranges, `{ multipartRanges: false }` (one request per range: ≤ 4 per bundle, gap 64 KiB)',
    deltaReads: { multipartRanges: false },
  },
  // The other end of that trade: about one request per changed file, about no byte wasted.
  fine: {
    label: 'delta ranges, `{ multipartRanges: false, maxRangesPerBundle: 16, maxGapBytes: 4096 }`',
    deltaReads: { multipartRanges: false, maxRangesPerBundle: 16, maxGapBytes: 4096 },
  },
};

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : args[at + 1];
};
const runs = Number(option('runs', '3'));
const latencyMs = Number(option('latency', '40'));
/** Chromium's emulated download rate in Mbit/s; 0: none. */
const mbit = Number(option('bandwidth', '0'));
// Outside DIR, which every run generates again.
const out = option('out', join(ROOT, '.bench', 'delta-results.json'));

/** v1 (the bytes of bench/reader.mjs's small4k) and v2 (1% changed) as folders of loose files. */
function writeVersions() {
  const files = planProject(PROJECT);
  const rng = random(PROJECT.seed ^ 0xa5a5a5a5);
  const changeRng = random(PROJECT.seed ^ 0x00de17a0);
  rmSync(DIR, { recursive: true, force: true });
  const changed = [];
  for (const [i, file] of files.entries()) {
    const bytes = rng.fill(new Uint8Array(file.size));
    write(join(DIR, 'v1', 'files', file.path), bytes);
    if (i % CHANGED_EVERY === CHANGED_EVERY / 2) {
      const size = Math.max(1, Math.round(file.size * (0.8 + 0.4 * changeRng.unit())));
      write(join(DIR, 'v2', 'files', file.path), changeRng.fill(new Uint8Array(size)));
      changed.push({ path: file.path, sizeBytes: size });
    } else {
      write(join(DIR, 'v2', 'files', file.path), bytes);
    }
  }
  return { files, changed };
}

function write(path, bytes) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, bytes);
}

function publish(version) {
  const summary = JSON.parse(
    execFileSync(process.execPath, [CLI, join(DIR, version, 'files'), '--out', join(DIR, 'site', version), '--json'], { encoding: 'utf8' }),
  );
  const indexPath = join(DIR, 'site', version, 'project.index.json');
  return { summary, index: JSON.parse(readFileSync(indexPath, 'utf8')), indexBytes: statSync(indexPath).size };
}

const PAGE = `<!doctype html><meta charset="utf-8"><title>delta bench</title><link rel="icon" href="data:,">
<script type="importmap">${JSON.stringify({ imports: { '@noble/hashes/': '/node_modules/@noble/hashes/', 'awake-bundle': '/dist/core/internal.js' } })}</script>
<script type="module">
globalThis.load = async ({ indexUrl, deltaReads }) => {
  const core = await import('awake-bundle');
  const started = performance.now();
  const source = await core.IndexedAssetSource.open({ indexUrl, cache: await core.openBrowserCache(), ...(deltaReads !== undefined ? { deltaReads } : {}) });
  const paths = source.paths();
  let progress;
  const prefetch = source.prefetch(paths, { onProgress: (p) => (progress = p) });
  const files = await Promise.all(paths.map((path) => source.read(path)));
  await prefetch;
  const ms = performance.now() - started;
  await source.whenStored();
  return { ms, files: files.length, progress };
};
globalThis.ready = true;
</script>`;

function prepareSite() {
  cpSync(join(ROOT, 'dist'), join(DIR, 'site', 'dist'), { recursive: true });
  cpSync(join(ROOT, 'node_modules', '@noble', 'hashes'), join(DIR, 'site', 'node_modules', '@noble', 'hashes'), { recursive: true });
  writeFileSync(join(DIR, 'site', 'delta.html'), PAGE);
}

async function startServe() {
  const { startStaticServer } = await import(join(ROOT, 'dist', 'core', 'node', 'index.js'));
  const lines = [];
  // serve's access log: "<time> <method> <target> <status> <bytes>B <ms>ms …"
  const log = (line) => {
    const [, method, target, status, bytes] = /^\S+ (\S+) (\S+) (\S+) (\d+)B /.exec(line) ?? [];
    lines.push({ method, target, status, bytes: Number(bytes ?? 0) });
  };
  const server = await startStaticServer({ root: join(DIR, 'site'), host: '127.0.0.1', log });
  return { origin: server.url.replace(/\/$/, ''), lines, close: () => server.close() };
}

/** One sample: a fresh profile, v1 loaded into IndexedDB (unmeasured), reload, v2 measured. */
async function sample(id, serve) {
  const { browser, close } = await launchFreshChromium();
  try {
    const page = await browser.newPage();
    page.on('pageerror', (error) => console.error(`[page] ${error}`));
    await page.setCacheEnabled(false);
    const session = await page.createCDPSession();
    await session.send('Network.enable');
    const open = async () => {
      await page.goto(`${serve.origin}/delta.html`, { waitUntil: 'load' });
      await page.waitForFunction(() => globalThis.ready === true);
    };
    await open();
    await page.evaluate((input) => globalThis.load(input), { indexUrl: '/v1/project.index.json' });
    await open();
    await session.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: latencyMs,
      downloadThroughput: mbit > 0 ? (mbit * MB) / 8 : -1,
      uploadThroughput: mbit > 0 ? (mbit * MB) / 8 : -1,
    });
    const mark = serve.lines.length;
    const result = await page.evaluate((input) => globalThis.load(input), {
      indexUrl: '/v2/project.index.json',
      deltaReads: CASES[id].deltaReads,
    });
    await new Promise((wake) => setTimeout(wake, 200)); // the access log is written when each response closes
    const lines = serve.lines.slice(mark).filter((line) => line.target.startsWith('/v2/'));
    return { ms: result.ms, progress: result.progress, lines };
  } finally {
    await close();
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function summarize(id, samples, v2) {
  const bundleOf = new Map(v2.index.bundles.map((bundle) => [`/v2/${bundle.url}`, bundle.sha256]));
  const per = samples.map(({ ms, lines }) => {
    const bundleLines = lines.filter((line) => bundleOf.has(line.target));
    const perBundle = new Map();
    for (const line of bundleLines) perBundle.set(line.target, (perBundle.get(line.target) ?? 0) + 1);
    return {
      ms,
      requests: lines.length,
      bytes: lines.reduce((sum, line) => sum + line.bytes, 0),
      bundleRequests: bundleLines.length,
      bundleBytes: bundleLines.reduce((sum, line) => sum + line.bytes, 0),
      partial: bundleLines.filter((line) => line.status === '206').length,
      bundlesTouched: perBundle.size,
      maxPerBundle: Math.max(0, ...perBundle.values()),
    };
  });
  const pick = (key) => median(per.map((p) => p[key]));
  return {
    id,
    label: CASES[id].label,
    runs: per.length,
    ms: pick('ms'),
    minMs: Math.min(...per.map((p) => p.ms)),
    maxMs: Math.max(...per.map((p) => p.ms)),
    requests: pick('requests'),
    bytes: pick('bytes'),
    bundleRequests: pick('bundleRequests'),
    bundleBytes: pick('bundleBytes'),
    partial: pick('partial'),
    bundlesTouched: pick('bundlesTouched'),
    maxPerBundle: pick('maxPerBundle'),
  };
}

function table(results) {
  const {
    changedFiles,
    changedBytes,
    changedBundles,
    changedBundleBytes,
    bundles,
    indexBytes,
    latencyMs: latency,
    mbit: rate,
    runs: n,
  } = results.setup;
  const mb = (bytes) => (bytes / MB).toFixed(3);
  const rows = results.cases.map(
    (c) =>
      `| ${c.label} | ${(c.ms / 1000).toFixed(2)} (${(c.minMs / 1000).toFixed(2)}–${(c.maxMs / 1000).toFixed(2)}) | ${c.requests} | ${c.bundleRequests} (${c.partial} × 206) | ${c.maxPerBundle} | ${mb(c.bytes)} | ${mb(c.bundleBytes)} | ${(c.bundleBytes / changedBytes).toFixed(3)} | ${(c.bytes / (changedBytes + indexBytes)).toFixed(3)} |`,
  );
  const aimBytes = 1.1 * changedBytes + indexBytes;
  return [
    `v2 changes ${changedFiles} of 4,000 files (every 100th: ${changedBundles} of ${bundles} bundles change, ${mb(changedBundleBytes)} MB together); the changed files hold ${mb(changedBytes)} MB; v2's index is ${mb(indexBytes)} MB. ${latency} ms latency and ${rate > 0 ? `${rate} Mbit/s` : 'no rate limit'} (Chromium's emulation); medians of ${n} runs, each on a fresh profile whose IndexedDB holds v1.`,
    '',
    "| case | v2 load, median s (min–max) | requests | bundle requests (ranges) | most requests for one bundle | MB downloaded | of which bundles, MB | bundles ÷ changed files' bytes | all ÷ (changed bytes + index) |",
    '|:--|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows,
    '',
    ...results.cases
      .filter((c) => c.id !== 'whole')
      .map(
        (c) =>
          `- Aim, ${c.label}: at most 1.1 × the changed files' bytes + the index (${mb(aimBytes)} MB): ${mb(c.bytes)} MB, ${c.bytes <= aimBytes ? 'met' : 'NOT met'}; at most 4 requests per changed bundle: ${c.maxPerBundle}, ${c.maxPerBundle <= 4 ? 'met' : 'NOT met'}.`,
      ),
  ].join('\n');
}

const SECTION = '## Delta downloads (npm run bench:delta)';
const TRADE = `**Bytes and requests.** With one request per range, a bundle with more than 4 changed files spread
over it has to bring the unchanged bytes in its smallest gaps (here one bundle with 15 small
changed files cost most of the excess), so the issue's aim (≤ 1.1 × changed bytes + index with
≤ 4 requests per changed bundle) was met on requests with \`maxRangesPerBundle: 4\` or on bytes
with \`{ maxRangesPerBundle: 16, maxGapBytes: 4096 }\`, never both. The defaults now ask for all of
a bundle's ranges in one request (\`Range: bytes=a-b,c-d,…\`, answered \`206 multipart/byteranges\`
by \`serve\`, nginx, Apache), so one request per changed bundle brings about the changed bytes
alone (plus ~130 bytes of part headers a range). An origin that does not answer several ranges
(S3 answers them with a 200, which the reader does not read; a 206 of one range of several) gets
the \`separate\` plan from then on, one request per range.`;

/**
 * Where the bytes go, bundle by bundle: the ranges each case plans for v2's changed bundles with
 * v1 cached (from the published indexes under .bench/delta/site, as the reader plans them).
 */
async function breakdown() {
  const { planDeltaRanges, DEFAULT_DELTA_READS } = await import(join(ROOT, 'dist', 'core', 'index.js'));
  const [v1, v2] = ['v1', 'v2'].map((version) => JSON.parse(readFileSync(join(DIR, 'site', version, 'project.index.json'), 'utf8')));
  const cached = new Set(v1.files.map((file) => file.sha256));
  const old = new Set(v1.bundles.map((bundle) => bundle.sha256));
  const kiB = (bytes) => `${Math.round(bytes / 1024)}`;
  const rows = v2.bundles
    .filter((bundle) => !old.has(bundle.sha256))
    .map((bundle) => {
      const members = v2.files.filter((file) => file.bundle === bundle.sha256);
      const missing = members.filter((file) => !cached.has(file.sha256));
      const wanted = new Set(missing.map((file) => file.sha256));
      const plan = (options) => {
        const planned = planDeltaRanges(bundle.sizeBytes, members, wanted, options);
        return planned.whole ? `whole / ${kiB(bundle.sizeBytes)}` : `${planned.ranges.length} / ${kiB(planned.bytes)}`;
      };
      const folders = [...new Set(missing.map((file) => file.path.split('/')[0]))].join(', ');
      return `| ${folders} | ${kiB(bundle.sizeBytes)} | ${missing.length} / ${kiB(missing.reduce((sum, file) => sum + file.sizeBytes, 0))} | ${plan({ maxGapBytes: DEFAULT_DELTA_READS.multipartGapBytes, maxRanges: DEFAULT_DELTA_READS.maxRangesPerRequest })} | ${plan({ maxGapBytes: DEFAULT_DELTA_READS.maxGapBytes, maxRanges: DEFAULT_DELTA_READS.maxRangesPerBundle })} | ${plan({ maxGapBytes: 4096, maxRanges: 16 })} |`;
    });
  return [
    'Per changed bundle (ranges / KiB as planned from the two indexes; `defaults` is one request, the others one request per range):',
    '',
    '| folder | bundle KiB | changed files / KiB | defaults: ranges / KiB | separate: ranges / KiB | fine: ranges / KiB |',
    '|:--|--:|--:|--:|--:|--:|',
    ...rows,
  ].join('\n');
}

/** The BENCHMARKS.md section: one table per results (each a network setting), in that order. */
async function writeBenchmarks(resultsList) {
  const path = join(ROOT, 'BENCHMARKS.md');
  const text = readFileSync(path, 'utf8');
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const commands = [
    ...resultsList.map(
      ({ setup }, k) =>
        `node bench/delta.mjs --runs ${setup.runs} --latency ${setup.latencyMs}${setup.mbit ? ` --bandwidth ${setup.mbit}` : ''} --no-write --out .bench/delta-${k + 1}.json`,
    ),
    `node bench/delta.mjs --report ${resultsList.map((_, k) => `.bench/delta-${k + 1}.json`).join(' ')}`,
  ].join('\n');
  const section = `${SECTION}\n\nA returning player's load, \`npm run bench:delta\` (= build, then \`node bench/delta.mjs\`: 3 runs, 40 ms, no rate limit). The tables below were made by\n\n\`\`\`sh\n${commands}\n\`\`\`\n\nThe small4k project (the same 4,000 files as above) is published as v1; every 100th file gets new bytes and a size within ±20% and the project is published again as v2. In headless Chromium, a fresh profile per sample, an unmeasured load fills \`openBrowserCache()\` (IndexedDB) with v1, the page reloads, and v2 is loaded (\`open\` + \`prefetch(all)\` + \`read(every path)\`, until every file is in hand) from \`serve\` (\`startStaticServer\`, Range supported). Requests and bytes as the server's access log counted them (body bytes sent). \`serve\` answers several ranges in one request as \`multipart/byteranges\` (the bytes counted include its part headers). Machine: ${cpus().length} cores of an \`${cpu}\`.\n\n${resultsList.map(table).join('\n\n')}\n\n${await breakdown()}\n\n${TRADE}\n`;
  const start = text.indexOf(SECTION);
  let next = start === -1 ? -1 : text.indexOf('\n## ', start + SECTION.length);
  const updated =
    start === -1 ? `${text.trimEnd()}\n\n${section}` : `${text.slice(0, start)}${section}${next === -1 ? '' : text.slice(next)}`;
  writeFileSync(path, updated);
}

async function main() {
  if (args.includes('--report')) {
    // Writes BENCHMARKS.md from a results file of an earlier run.
    const files = args.filter((arg) => arg.endsWith('.json'));
    const resultsList = (files.length > 0 ? files : [out]).map((file) => JSON.parse(readFileSync(file, 'utf8')));
    for (const results of resultsList) console.log(table(results));
    await writeBenchmarks(resultsList);
    return;
  }
  if (!existsSync(CLI)) throw new Error('dist/ is missing: npm run build first (npm run bench:delta does)');
  const started = Date.now();
  const { changed } = writeVersions();
  const v1 = publish('v1');
  const v2 = publish('v2');
  prepareSite();
  const before = new Set(v1.index.bundles.map((bundle) => bundle.sha256));
  const changedBundles = v2.index.bundles.filter((bundle) => !before.has(bundle.sha256));
  const setup = {
    changedFiles: changed.length,
    changedBytes: changed.reduce((sum, file) => sum + file.sizeBytes, 0),
    bundles: v2.index.bundles.length,
    changedBundles: changedBundles.length,
    changedBundleBytes: changedBundles.reduce((sum, bundle) => sum + bundle.sizeBytes, 0),
    indexBytes: v2.indexBytes,
    latencyMs,
    mbit,
    runs,
  };
  console.error(`generated and published in ${((Date.now() - started) / 1000).toFixed(1)} s: ${JSON.stringify(setup)}`);
  const serve = await startServe();
  const ids = Object.keys(CASES);
  const samples = Object.fromEntries(ids.map((id) => [id, []]));
  try {
    for (let round = 0; round < runs; round++) {
      // A different case first each round.
      for (const id of [...ids.slice(round % ids.length), ...ids.slice(0, round % ids.length)]) {
        const result = await sample(id, serve);
        samples[id].push(result);
        console.error(
          `round ${round + 1} ${id}: ${(result.ms / 1000).toFixed(2)} s, ${result.lines.length} requests, ${result.lines.reduce((sum, line) => sum + line.bytes, 0)} B`,
        );
      }
    }
  } finally {
    await serve.close();
  }
  const results = { setup, cases: Object.keys(CASES).map((id) => summarize(id, samples[id], v2)) };
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ ...results, samples }, null, 2));
  console.log(table(results));
  if (!args.includes('--no-write')) await writeBenchmarks([results]);
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
