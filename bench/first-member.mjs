// Time to the first member (`npm run bench:first-member`): how long `read(path)` of a bundle's
// first member takes, when the member is small and the rest of its 16 MiB bundle is large.
// A reader that hands each member over as soon as its own bytes arrive (streamed members) reads
// it in about a round trip and its share of the transfer; one that waits for the whole bundle
// pays the whole bundle's transfer and verification.
//
//   npm run bench:first-member                     # build, every cell, print, results in .bench/first-member/last.json
//   node bench/first-member.mjs [--runs 5] [--latency 0,40,150] [--bandwidth 0,20]
//                               [--label "before streaming"] [--out part.json] [--report]
//   node bench/first-member.mjs --report part1.json …   # those results as BENCHMARKS.md's section
//
// Without --latency and --bandwidth the cells are 0, 40 and 150 ms RTT without a cap and 20 Mbit/s
// at 40 ms; with either, every latency at every bandwidth.
//
// The project: 0000-first.bin (4 KiB) and 15 members of 1,118,208 bytes (16 MiB in all; random,
// incompressible), published by the CLI with --group one into one bundle, where the first
// member in key order is the first in the bundle (checked). A sample: a fresh Chromium (fresh
// profile, HTTP cache off) loads a page with awake-bundle's core from the throttled server
// (bench/throttled-server.mjs: a new connection pays its handshake, as on a network), untimed:
// `IndexedAssetSource.open({ indexUrl, cache: null })`; timed, in the
// page: `read('0000-first.bin')`, from the call until it resolves.
// Bound: 2 RTT + the member's share of the transfer ((offset + size) bytes at the bandwidth;
// none without a cap) + 30 ms.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { launchFreshChromium } from './chromium.mjs';
import {
  codeLine,
  codeMeasured,
  commandLine,
  loadLine,
  loadNow,
  machineLine,
  machineWithChromium,
  MB,
  median,
  parseBenchArgs,
  ratio,
  ROOT,
  runRounds,
  saveResults,
  spread,
  where,
  writeBenchmarksSection,
} from './harness.mjs';
import { random } from './projects.mjs';
import { startThrottledServer } from './throttled-server.mjs';

const SECTION_TITLE = '## Time to first member (npm run bench:first-member)';
const BENCH_DIR = join(ROOT, '.bench', 'first-member');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const KiB = 1024;
const MiB = 1024 * KiB;
const FIRST = { path: '0000-first.bin', size: 4 * KiB };
const LARGE_COUNT = 15;
const LARGE_SIZE = (16 * MiB - FIRST.size) / LARGE_COUNT;
/** The bound's allowance for everything but the network: the worker hop, hashing 4 KiB, the promise. */
const SLACK_MS = 30;
const SAMPLE_TIMEOUT_MS = 180_000;
/** After the read, its requests are counted once none came for this long… */
const QUIET_MS = 500;
/** …or this long passed (the whole bundle at 20 Mbit/s takes under 7 s). */
const ANSWER_WAIT_MS = 60_000;

const PAGE_HTML = `<!doctype html><meta charset="utf-8"><title>first member</title><link rel="icon" href="data:,">
<script type="importmap">${JSON.stringify({ imports: { 'awake-bundle': '/dist/core/internal.js', '@noble/hashes/': '/node_modules/@noble/hashes/' } })}</script>
<script type="module">globalThis.benchReady = import('awake-bundle').then((core) => (globalThis.awakeBundle = core));</script>
`;

/** The site: the published bundle and index, the page, and copies of dist/ and @noble/hashes (the server follows no link out of its folder). */
function buildSite() {
  const files = join(BENCH_DIR, 'files');
  const site = join(BENCH_DIR, 'site');
  for (const dir of [files, site]) rmSync(dir, { recursive: true, force: true });
  mkdirSync(files, { recursive: true });
  const rng = random(0xf1857);
  writeFileSync(join(files, FIRST.path), rng.fill(new Uint8Array(FIRST.size)));
  for (let i = 1; i <= LARGE_COUNT; i++)
    writeFileSync(join(files, `large-${String(i).padStart(2, '0')}.bin`), rng.fill(new Uint8Array(LARGE_SIZE)));
  execFileSync(process.execPath, [CLI, files, '--out', join(site, 'published'), '--group', 'one', '--target-mb', '32'], {
    stdio: 'ignore',
  });
  cpSync(join(ROOT, 'dist'), join(site, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'node_modules', '@noble', 'hashes'), join(site, 'node_modules', '@noble', 'hashes'), { recursive: true });
  writeFileSync(join(site, 'page.html'), PAGE_HTML);
  const index = JSON.parse(readFileSync(join(site, 'published', 'project.index.json'), 'utf8'));
  if (index.bundles.length !== 1) throw new Error(`expected one bundle, the CLI wrote ${index.bundles.length}`);
  const first = index.files.find((file) => file.path === FIRST.path);
  if (index.files.some((file) => file.offset < first.offset))
    throw new Error(`${FIRST.path} is not the bundle's first member (offset ${first.offset})`);
  return {
    dir: site,
    bundleBytes: index.bundles[0].sizeBytes,
    members: index.files.length,
    first: { path: first.path, offset: first.offset, sizeBytes: first.sizeBytes },
  };
}

/** 2 RTT + (offset + size) bytes at the bandwidth + SLACK_MS. */
function boundMs(site, { latencyMs, mbit }) {
  const transferMs = mbit > 0 ? (((site.first.offset + site.first.sizeBytes) * 8) / (mbit * 1e6)) * 1000 : 0;
  return 2 * latencyMs + transferMs + SLACK_MS;
}

async function sample(site, server) {
  const chromium = await launchFreshChromium();
  try {
    const page = await chromium.browser.newPage();
    await page.setCacheEnabled(false);
    await page.goto(`${server.origin}/page.html`, { waitUntil: 'load', timeout: SAMPLE_TIMEOUT_MS });
    const openMs = await page.evaluate(async () => {
      await globalThis.benchReady;
      const started = performance.now();
      globalThis.source = await globalThis.awakeBundle.IndexedAssetSource.open({ indexUrl: '/published/project.index.json', cache: null });
      return performance.now() - started;
    });
    const mark = server.requests.length;
    const read = await page.evaluate(async (path) => {
      const started = performance.now();
      const bytes = await globalThis.source.read(path);
      return { ms: performance.now() - started, bytes: bytes.length };
    }, site.first.path);
    if (read.bytes !== site.first.sizeBytes)
      throw new Error(`read ${read.bytes} bytes of ${site.first.path}, expected ${site.first.sizeBytes}`);
    const requests = await answeredSince(server, mark);
    return { ms: read.ms, openMs, requests: requests.length, bodyBytes: requests.reduce((sum, entry) => sum + entry.bytes, 0) };
  } finally {
    await chromium.close();
  }
}

/**
 * The requests the read started, once the server has answered them: its access log has a line
 * per finished request, and a streamed read resolves long before its bundle's last byte is sent.
 * Waits until a request is logged and QUIET_MS pass without another (at most ANSWER_WAIT_MS).
 */
async function answeredSince(server, mark) {
  const deadline = Date.now() + ANSWER_WAIT_MS;
  let seen = -1;
  while ((server.requests.length === mark || server.requests.length !== seen) && Date.now() < deadline) {
    seen = server.requests.length;
    await new Promise((wake) => setTimeout(wake, QUIET_MS));
  }
  return server.requests.slice(mark);
}

async function runCell(site, condition, runs) {
  const server = await startThrottledServer({ root: site.dir, ...condition });
  const samples = [];
  const loadAtStart = loadNow();
  try {
    const { rounds, reduced } = await runRounds(runs, async (round, total) => {
      const result = await sample(site, server);
      samples.push(result);
      process.stderr.write(
        `  ${condition.latencyMs} ms ${condition.mbit || '∞'} Mbit/s round ${round + 1}/${total}: read ${result.ms.toFixed(0)} ms (open ${result.openMs.toFixed(0)} ms), ${result.requests} requests, ${(result.bodyBytes / MB).toFixed(2)} MB\n`,
      );
      return [result.openMs + result.ms];
    });
    return {
      ...condition,
      rounds,
      reduced,
      load: [loadAtStart, loadNow()],
      read: spread(samples.map((s) => s.ms)),
      openMs: median(samples.map((s) => s.openMs)),
      boundMs: boundMs(site, condition),
      requests: median(samples.map((s) => s.requests)),
      bodyBytes: median(samples.map((s) => s.bodyBytes)),
      samplesMs: samples.map((s) => Math.round(s.ms)),
    };
  } finally {
    await server.close();
  }
}

const ms = (value) => value.toFixed(0);
/** The whole bundle at the cell's bandwidth, for comparison: what a reader that waits for it pays. */
const wholeBundleMs = (site, { mbit }) => (mbit > 0 ? ((site.bundleBytes * 8) / (mbit * 1e6)) * 1000 : undefined);

const TABLE_HEAD = `${'RTT'.padStart(6)} ${'bandwidth'.padStart(10)} ${'read ms (min–max)'.padStart(22)} ${'bound ms'.padStart(9)} ${'×bound'.padStart(7)} ${'open ms'.padStart(8)} ${'requests'.padStart(9)} ${'MB'.padStart(7)} ${'bundle at bw, ms'.padStart(17)} runs`;

function printCell(site, cell) {
  const whole = wholeBundleMs(site, cell);
  console.log(
    `${`${cell.latencyMs} ms`.padStart(6)} ${(cell.mbit ? `${cell.mbit} Mbit/s` : '∞').padStart(10)} ${`${ms(cell.read.median)} (${ms(cell.read.min)}–${ms(cell.read.max)})`.padStart(22)}` +
      ` ${ms(cell.boundMs).padStart(9)} ${ratio(cell.read.median, cell.boundMs).padStart(7)} ${ms(cell.openMs).padStart(8)} ${String(cell.requests).padStart(9)} ${(cell.bodyBytes / MB).toFixed(2).padStart(7)}` +
      ` ${(whole === undefined ? '–' : ms(whole)).padStart(17)} ${cell.rounds}${cell.reduced ? ' (3: a sample over 20 s)' : ''}`,
  );
}

function renderSection(parts) {
  const out = [
    SECTION_TITLE,
    '',
    '`npm run bench:first-member` (= `npm run build && node bench/first-member.mjs`) times `read(path)` of the first member of a 16 MiB bundle: `0000-first.bin` (4 KiB, first in key order and first in the bundle) and 15 members of 1,118,208 bytes (random bytes), published with `--group one` into one bundle. In headless Chromium (puppeteer-core; a fresh browser and profile per sample, HTTP cache off), a page loads awake-bundle\'s core, then, untimed, `IndexedAssetSource.open({ indexUrl, cache: null })` ("open"); the time is from the `read` call until it resolves, in the page (`performance.now()`).',
    '',
    '- **Network:** `bench/throttled-server.mjs`, as in "Engines" above: `serve` behind a relay that delays each direction by RTT/2 (1 RTT per request on an open connection, 2 on a new one) and caps all downstream together (token bucket, 16 KiB chunks round-robin).',
    `- **Bound:** 2 RTT + the member's share of the transfer (its offset + size bytes at the bandwidth; nothing without a cap) + ${SLACK_MS} ms. "bundle at bw" is the whole bundle's transfer at the bandwidth, what a reader that waits for the whole bundle cannot beat. Requests and MB: what the server answered for the read (access log, body bytes), counted once it finished them: a streamed read resolves before its bundle's last byte is sent, and the rest of the bundle comes all the same (4 KiB used, the whole bundle fetched).`,
    '- Medians of 5 runs, or 3 where a sample of the first round took over 20 s.',
    '',
  ];
  for (const part of parts) {
    out.push(`### ${part.label ? `${part.label}: ` : ''}code ${codeLine(part.code)}`, '');
    out.push(`${machineLine(part.machine)} Measured ${part.startedAt.slice(0, 10)}. ${loadLine(part.cells)}`.trimEnd(), '');
    out.push(
      `Bundle: ${part.site.members} members, ${part.site.bundleBytes.toLocaleString('en')} bytes; \`${part.site.first.path}\` at offset ${part.site.first.offset}, ${part.site.first.sizeBytes} bytes.`,
      '',
    );
    out.push('```sh', part.command, '```', '');
    out.push(
      '| RTT | bandwidth | read ms (min–max) | bound ms | ×bound | open ms | requests | MB | bundle at bw, ms | runs |',
      '|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    );
    for (const cell of part.cells) {
      const whole = wholeBundleMs(part.site, cell);
      out.push(
        `| ${where(cell)} | ${ms(cell.read.median)} (${ms(cell.read.min)}–${ms(cell.read.max)}) | ${ms(cell.boundMs)} | ${ratio(cell.read.median, cell.boundMs)} | ${ms(cell.openMs)} | ${cell.requests} | ${(cell.bodyBytes / MB).toFixed(2)} | ${whole === undefined ? '–' : ms(whole)} | ${cell.rounds}${cell.reduced ? ' (a sample over 20 s)' : ''} |`,
      );
    }
    out.push('');
  }
  if (parts.length >= 2) out.push(...renderComparison(parts[0], parts.at(-1)));
  return out.join('\n');
}

/** The first part against the last, cell by cell; the aim is the bound itself. */
function renderComparison(before, after) {
  const name = (part) => part.label ?? part.code.commit;
  const out = [
    `### ${name(before)} against ${name(after)}`,
    '',
    `Aim (the issue): the first member within its bound (2 RTT + its share of the transfer + ${SLACK_MS} ms).`,
    '',
    `| RTT | bandwidth | read ms, ${name(before)} | read ms, ${name(after)} | bound ms | ×bound, ${name(before)} | ×bound, ${name(after)} | met? |`,
    '|--:|--:|--:|--:|--:|--:|--:|:--|',
  ];
  for (const cell of after.cells) {
    const old = before.cells.find((other) => other.latencyMs === cell.latencyMs && other.mbit === cell.mbit);
    const over = cell.read.median - cell.boundMs;
    out.push(
      `| ${where(cell)} | ${old ? ms(old.read.median) : '–'} | ${ms(cell.read.median)} | ${ms(cell.boundMs)} | ${old ? ratio(old.read.median, old.boundMs) : '–'} | ${ratio(cell.read.median, cell.boundMs)} | ${over <= 0 ? 'met' : `missed by ${ms(over)} ms`} |`,
    );
  }
  out.push('');
  return out;
}

async function main() {
  const options = parseBenchArgs('bench/first-member.mjs');
  if (options.reportFiles.length > 0) {
    writeBenchmarksSection(SECTION_TITLE, renderSection(options.reportFiles.map((file) => JSON.parse(readFileSync(file, 'utf8')))));
    return;
  }
  if (!existsSync(CLI)) throw new Error('dist/ is missing: run `npm run build` first (npm run bench:first-member does)');
  const site = buildSite();
  const part = {
    command: commandLine('bench/first-member.mjs', options.args),
    label: options.label,
    code: codeMeasured(),
    startedAt: new Date().toISOString(),
    machine: await machineWithChromium(),
    site: { bundleBytes: site.bundleBytes, members: site.members, first: site.first },
    cells: [],
  };
  const out = options.out ?? join(BENCH_DIR, 'last.json');
  console.log(TABLE_HEAD);
  for (const condition of options.conditions) {
    const cell = await runCell(site, condition, options.runs);
    part.cells.push(cell);
    printCell(site, cell);
    saveResults(out, part);
  }
  console.error(
    `results in ${out}${options.report ? '' : `; write BENCHMARKS.md's section with: node bench/first-member.mjs --report ${out}`}`,
  );
  if (options.report) writeBenchmarksSection(SECTION_TITLE, renderSection([part]));
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
