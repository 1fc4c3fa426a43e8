// The example games grouped by folder, by `auto` and by their recorded loads (issue 19, "Measure";
// `npm run bench:grouping`): for the first scene, the bundle bytes fetched against the bytes it
// uses, its requests, and the time from navigation start to its first frame; and, at 150 ms, the
// built page with its preload links against the same page without them.
//
//   npm run bench:grouping                    # build, every cell, print, results in .bench/grouping/last.json
//   node bench/grouping.mjs [--games phaser,babylon] [--runs 5] [--latency 40,150] [--bandwidth 0,20]
//                           [--preload-latency 150] [--label text] [--no-build] [--out part.json] [--report]
//   node bench/grouping.mjs --report [earlier.json …] part.json   # those results as BENCHMARKS.md's section
//   import { runGroupingBench } from './bench/grouping.mjs'  # a runner: runGroupingBench({ build: false, … })
//
// Cells: 20 Mbit/s at 40 ms RTT, 150 ms RTT without a cap, and 20 Mbit/s at 150 ms (the issue's
// "20 Mbit/s and 150 ms"); with --latency or --bandwidth, every latency at every bandwidth.
//
// Sites: each example (examples/phaser, examples/babylon) built for production by its own webpack
// config, three times, with the awake-bundle plugin set to one grouping each (SPEC §6, §8):
//   folder  `grouping: 'folder', loads: false`  (`--group folder`: a bundle per top folder)
//   auto    `loads: false`                      (`--group auto`, the plugins' default without a loads file)
//   loads   `loads: 'awkb-loads.json'`          (`--loads awkb-loads.json --group folder`: the file
//           `npm run record-loads` recorded, committed beside the config; the plugins' default when it is there)
// and the example's own html-webpack-plugin making the page from its index.html, so the plugin adds its
// preload links (integrations/build/preload.ts): the index, and with loads the first load's
// bundles. The plugin has no option to leave them out, so the page without them (`no-preload.html`,
// in the preload cells) is the same built page with its `<link rel="preload">` tags removed.
//
// A sample (bench/example-page.mjs): a fresh Chromium opens the page over bench/throttled-server.mjs
// and takes navigation start → the first frame after loading. Bytes fetched = the body bytes of
// the bundle requests in the server's access log for the sample; both games have one load (Phaser:
// the `preload` scene, which loads every file before the harbour's first frame; Babylon: `main`),
// so every bundle the sample fetched is the first scene's, and each sample is checked for that:
// its bundles must be the ones `awake-bundle report <published> --loads <file> --json` says the
// first load fetches (`loads[0].alone`), each once. Bytes used = that report's `usedBytes`: the
// sizes of the files the recorded first load lists (SPEC §6 "Loads"). The aims:
// fetched / used ≤ 1.05 with recorded loads, ≤ 1.25 with auto and no loads file.
// Preload: at --preload-latency (default 150 ms, no cap), auto (the index preloaded) and loads
// (the index and the first load's bundles) are also opened without their preload links; "saved"
// is the median first frame without less with, in ms and in round trips (the aim: the preloaded
// index saves at least one round trip of the first load).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkBabylon, checkPhaser, FIRST_FRAME, PRELOAD_LINK, runWebpack, sampleExamplePage, withoutPreload } from './example-page.mjs';
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
  ROOT,
  runRounds,
  saveResults,
  seconds,
  spread,
  where,
  writeBenchmarksSection,
} from './harness.mjs';
import { startThrottledServer } from './throttled-server.mjs';

const SECTION_TITLE = '## Grouping: the example games by folder, auto and recorded loads (npm run bench:grouping)';
const BENCH_DIR = join(ROOT, '.bench', 'grouping');
const require = createRequire(import.meta.url);
const CONDITIONS = [
  { latencyMs: 40, mbit: 20 },
  { latencyMs: 150, mbit: 0 },
  { latencyMs: 150, mbit: 20 },
];
const PRELOAD_LATENCY_MS = 150;

/** The plugin options of each grouping (see the header), and the aim for fetched / used. */
const GROUPINGS = {
  folder: { label: 'by folder', plugin: { grouping: 'folder', loads: false } },
  auto: { label: 'auto, no loads file', plugin: { loads: false }, aim: 1.25 },
  loads: { label: 'recorded loads', plugin: { loads: 'awkb-loads.json' }, aim: 1.05 },
};
/** The groupings opened without their preload links too, in the preload cells. */
const WITHOUT_PRELOAD = ['auto', 'loads'];

const GAMES = {
  phaser: { firstFrame: FIRST_FRAME.phaser, check: (ready, index) => checkPhaser(ready, index.files.length) },
  babylon: { firstFrame: FIRST_FRAME.babylon, check: (ready) => checkBabylon(ready) },
};

/** A preload link as html-webpack-plugin writes it (minified in production: attributes unquoted). */

const loadsFileOf = (game) => join(ROOT, 'examples', game, 'awkb-loads.json');

// ---------------------------------------------------------------------------------------------
// The sites: .bench/grouping/<game>/<grouping>/ (index.html with the plugin's preload links,
// no-preload.html without them, main.js, published/), one server per game and cell

async function buildSite(game, grouping) {
  const dir = join(BENCH_DIR, game, grouping);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  const webpack = require('webpack');
  const config = await require(join(ROOT, 'examples', game, 'webpack.config.cjs'))({ production: true, out: dir });
  const at = config.plugins.findIndex((plugin) => plugin?.constructor?.name === 'AwakeBundlePlugin');
  if (at < 0) throw new Error(`examples/${game}/webpack.config.cjs has no AwakeBundlePlugin`);
  const AwakeBundlePlugin = config.plugins[at].constructor;
  config.plugins[at] = new AwakeBundlePlugin({ assets: '../assets', output: 'published', ...GROUPINGS[grouping].plugin });
  await runWebpack(webpack, config, `examples/${game} (${grouping})`);
  const html = readFileSync(join(dir, 'index.html'), 'utf8');
  const links = html.match(PRELOAD_LINK) ?? [];
  if (links.length === 0) throw new Error(`${dir}/index.html: the plugin added no preload link`);
  writeFileSync(join(dir, 'no-preload.html'), withoutPreload(html));
  console.error(`${game} ${grouping}: built in ${((Date.now() - started) / 1000).toFixed(0)} s, ${links.length} preload links`);
}

/** What `awake-bundle report --json` says of the site against the recorded loads: the first load's bytes used, and what it fetches alone. */
function reportFirstLoad(game, grouping) {
  const dir = join(BENCH_DIR, game, grouping);
  const json = execFileSync(
    process.execPath,
    [join(ROOT, 'dist', 'cli', 'main.js'), 'report', join(dir, 'published'), '--loads', loadsFileOf(game), '--json'],
    { encoding: 'utf8' },
  );
  const report = JSON.parse(json);
  const first = report.loads[0];
  const bundleUrl = new Map(report.bundles.map((bundle) => [bundle.sha256, bundle.url]));
  return {
    name: first.name,
    files: first.files,
    usedBytes: first.usedBytes,
    fetchedBytes: first.alone.fetchedBytes,
    requests: first.alone.requests,
    bundles: first.alone.bundles.map((sha256) => bundleUrl.get(sha256)),
    notInIndex: first.notInIndex,
  };
}

function describeSite(game, grouping) {
  const dir = join(BENCH_DIR, game, grouping);
  if (!existsSync(join(dir, 'index.html')) || !existsSync(join(dir, 'published', 'project.index.json')))
    throw new Error(`${dir} holds no built site: run without --no-build`);
  const index = JSON.parse(readFileSync(join(dir, 'published', 'project.index.json'), 'utf8'));
  const html = readFileSync(join(dir, 'index.html'), 'utf8');
  return {
    game,
    grouping,
    index,
    mainJsBytes: statSync(join(dir, 'main.js')).size,
    files: index.files.length,
    bundles: index.bundles.length,
    bundleBytes: index.bundles.reduce((sum, bundle) => sum + bundle.sizeBytes, 0),
    preloads: (html.match(PRELOAD_LINK) ?? []).map((link) => /href="?([^" >]*)/.exec(link)[1]),
    firstLoad: reportFirstLoad(game, grouping),
  };
}

// ---------------------------------------------------------------------------------------------
// One sample of one variant (a site, with or without its preload links)

async function sample(site, server, preload) {
  const game = GAMES[site.game];
  const published = `/${site.grouping}/published/`;
  const { requests, ...measured } = await sampleExamplePage({
    server,
    path: `/${site.grouping}/${preload ? '' : 'no-preload.html'}`,
    firstFrame: game.firstFrame,
    what: `${site.game} ${site.grouping}${preload ? '' : ' without preload'}`,
    check: (ready) => game.check(ready, site.index),
    published,
  });
  const isBundle = (target) => target.startsWith(`${published}bundles/`) && /\/[0-9a-f]{64}\.awkb$/.test(target);
  const bundles = requests.filter((entry) => isBundle(entry.target));
  checkRequests(site, requests, bundles, published);
  return {
    ...measured,
    requests: requests.length,
    indexRequests: requests.filter((entry) => entry.target === `${published}project.index.json`).length,
    bundleRequests: bundles.length,
    bundleBytes: bundles.reduce((sum, entry) => sum + entry.bytes, 0),
  };
}

/** Nothing below published/ but the index and bundles, all answered; the bundles exactly those the report says the first load fetches, each once. */
function checkRequests(site, requests, bundles, published) {
  const what = `${site.game} ${site.grouping}`;
  const failed = requests.filter((entry) => !/^(200|206|304)$/.test(entry.status));
  if (failed.length)
    throw new Error(
      `${what}: ${failed
        .map((entry) => `${entry.target} ${entry.status}`)
        .slice(0, 3)
        .join(', ')}`,
    );
  const odd = requests.filter(
    (entry) => entry.target.startsWith(published) && entry.target !== `${published}project.index.json` && !bundles.includes(entry),
  );
  if (odd.length)
    throw new Error(
      `${what}: requested ${odd
        .slice(0, 3)
        .map((entry) => entry.target)
        .join(', ')} (not the index or a bundle)`,
    );
  const fetched = bundles.map((entry) => entry.target.slice(published.length)).sort();
  const expected = [...site.firstLoad.bundles].sort();
  if (fetched.join() !== expected.join())
    throw new Error(`${what}: fetched the bundles ${fetched.join(', ')}; the report says the first load fetches ${expected.join(', ')}`);
}

// ---------------------------------------------------------------------------------------------
// A cell: one game under one condition; its variants take turns, in a rotated order each round

async function runCell(game, sites, condition, runs, withoutPreload) {
  const variants = [
    ...Object.keys(GROUPINGS).map((grouping) => ({ grouping, preload: true })),
    ...(withoutPreload ? WITHOUT_PRELOAD.map((grouping) => ({ grouping, preload: false })) : []),
  ];
  const key = (variant) => `${variant.grouping}${variant.preload ? '' : ' no-preload'}`;
  const server = await startThrottledServer({ root: join(BENCH_DIR, game), ...condition });
  const samples = Object.fromEntries(variants.map((variant) => [key(variant), []]));
  const started = Date.now();
  const loadAtStart = loadNow();
  try {
    const { rounds, reduced } = await runRounds(runs, async (round, total) => {
      const order = variants.map((_, i) => variants[(i + round) % variants.length]);
      const times = [];
      for (const variant of order) {
        const result = await sample(sites[variant.grouping], server, variant.preload);
        samples[key(variant)].push(result);
        times.push(result.ms);
        process.stderr.write(
          `  ${game} ${where(condition)} round ${round + 1}/${total} ${key(variant)}: ${seconds(result.ms)} s, ${result.bundleRequests} bundles ${(result.bundleBytes / MB).toFixed(3)} MB; call ${ms(result.start.callMs)}, index ${ms(result.start.indexMs)}, first bundle ${ms(result.start.firstBundleMs)} ms (${result.start.firstBundleBy ?? '–'})\n`,
        );
      }
      return times;
    });
    const summary = (variant) => {
      const list = samples[key(variant)];
      const site = sites[variant.grouping];
      const medianOf = (pick) => {
        const values = list.map(pick).filter((value) => value !== undefined);
        return values.length ? median(values) : undefined;
      };
      return {
        ...variant,
        ...spread(list.map((s) => s.ms)),
        samplesMs: list.map((s) => Math.round(s.ms)),
        requests: medianOf((s) => s.requests),
        indexRequests: Math.max(...list.map((s) => s.indexRequests)),
        bundleRequests: medianOf((s) => s.bundleRequests),
        bundleBytes: medianOf((s) => s.bundleBytes),
        usedBytes: site.firstLoad.usedBytes,
        reportFetchedBytes: site.firstLoad.fetchedBytes,
        callMs: medianOf((s) => s.start.callMs),
        indexMs: medianOf((s) => s.start.indexMs),
        firstBundleMs: medianOf((s) => s.start.firstBundleMs),
        // Per sample, so that a slow boot (the CPU) does not count: what the index's round trip, or its preload, changes.
        callToFirstBundleMs: medianOf((s) =>
          s.start.callMs === undefined || s.start.firstBundleMs === undefined ? undefined : s.start.firstBundleMs - s.start.callMs,
        ),
        firstBundleBy: list.map((s) => s.start.firstBundleBy ?? '–'),
        starts: list.map((s) => s.start),
      };
    };
    return {
      game,
      ...condition,
      rounds,
      reduced,
      seconds: (Date.now() - started) / 1000,
      load: [loadAtStart, loadNow()],
      variants: variants.map(summary),
    };
  } finally {
    await server.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Printing and BENCHMARKS.md

const ms = (value) => (value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(0));
const kB = (bytes) => (bytes === undefined ? '–' : (bytes / 1000).toFixed(1));
const factor = (a, b) => (a === undefined || !b ? '–' : (a / b).toFixed(3));

/** Fetched / used against the grouping's aim: "met", "missed (1.31 > 1.25)", or "–" without an aim. */
function verdict(variant) {
  const aim = GROUPINGS[variant.grouping].aim;
  if (aim === undefined) return '–';
  const ratio = variant.bundleBytes / variant.usedBytes;
  return ratio <= aim ? `met (≤ ${aim})` : `missed (${ratio.toFixed(2)} > ${aim})`;
}

/** The condition as two cells: RTT, and the bandwidth cap (∞: none). */
const network = (cell) => [`${cell.latencyMs} ms`, cell.mbit ? `${cell.mbit} Mbit/s` : '∞'];

const runsText = (cell) => `${cell.rounds}${cell.reduced ? ' (3: a sample over 20 s)' : ''}`;

function groupingRows(part) {
  return part.cells.flatMap((cell) =>
    cell.variants
      .filter((variant) => variant.preload)
      .map((variant) => [
        cell.game,
        variant.grouping,
        ...network(cell),
        `${seconds(variant.median)} (${seconds(variant.min)}–${seconds(variant.max)})`,
        String(variant.requests),
        String(variant.bundleRequests),
        kB(variant.bundleBytes),
        kB(variant.usedBytes),
        factor(variant.bundleBytes, variant.usedBytes),
        factor(variant.reportFetchedBytes, variant.usedBytes),
        verdict(variant),
        runsText(cell),
        cell.load.join('–'),
      ]),
  );
}

const GROUPING_HEAD = [
  'game',
  'grouping',
  'RTT',
  'bandwidth',
  'first frame s (min–max)',
  'requests',
  'bundle requests',
  'kB fetched',
  'kB used',
  'fetched / used',
  'report',
  'aim',
  'runs',
  'load avg',
];

/** The preload cells: each grouping with and without its preload links, and what they saved. */
function preloadRows(part) {
  return part.cells
    .filter((cell) => cell.variants.some((variant) => !variant.preload))
    .flatMap((cell) =>
      WITHOUT_PRELOAD.map((grouping) => {
        const withLinks = cell.variants.find((variant) => variant.grouping === grouping && variant.preload);
        const without = cell.variants.find((variant) => variant.grouping === grouping && !variant.preload);
        const rtt = cell.latencyMs;
        const saved = (less) => `${ms(less)}${rtt ? ` (${(less / rtt).toFixed(2)})` : ''}`;
        return [
          cell.game,
          grouping,
          ...network(cell),
          `${part.sites[cell.game][grouping].preloads.length}`,
          `${ms(without.indexMs)} → ${ms(withLinks.indexMs)}`,
          `${ms(without.callMs)} → ${ms(withLinks.callMs)}`,
          `${ms(without.firstBundleMs)} → ${ms(withLinks.firstBundleMs)}`,
          `${ms(without.callToFirstBundleMs)} → ${ms(withLinks.callToFirstBundleMs)}`,
          saved(without.callToFirstBundleMs - withLinks.callToFirstBundleMs),
          `${seconds(without.median)} → ${seconds(withLinks.median)}`,
          saved(without.median - withLinks.median),
        ];
      }),
    );
}

const PRELOAD_HEAD = [
  'game',
  'grouping',
  'RTT',
  'bandwidth',
  'links',
  'index request ms (without → with)',
  'adapter call ms',
  'first bundle request ms',
  'call → first bundle ms',
  'saved ms (RTTs)',
  'first frame s',
  'saved ms (RTTs)',
];

function printTable(head, rows) {
  const widths = head.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i].length)));
  for (const row of [head, ...rows]) console.log(row.map((text, i) => text.padEnd(widths[i])).join('  '));
}

const markdownTable = (head, rows) => [
  `| ${head.join(' | ')} |`,
  `|${head.map((_, i) => (i < 2 ? ':--' : '--:')).join('|')}|`,
  ...rows.map((row) => `| ${row.join(' | ')} |`),
];

/**
 * The section: the last of `parts` in full; each earlier one (`--report earlier.json last.json`)
 * as its code and preload table, for comparison (the bytes are the same in every run).
 */
function renderSection(parts) {
  const part = parts.at(-1);
  const sites = Object.values(part.sites).flatMap((bySite) => Object.values(bySite));
  return [
    SECTION_TITLE,
    '',
    "`npm run bench:grouping` (= `npm run build && node bench/grouping.mjs`; the header of bench/grouping.mjs says it all) builds each example game for production three times, the awake-bundle webpack plugin grouping its assets **by folder** (`grouping: 'folder'`), **auto** with no loads file (`--group auto`, the plugins' default without one), and by its **recorded loads** (`examples/<game>/awkb-loads.json`, recorded by `npm run record-loads`: Phaser, one load `preload`, 12 files; Babylon, one load `main`, 8 files), html-webpack-plugin making the page so the plugin adds its preload links. Each sample: a fresh headless Chromium opens the page over `bench/throttled-server.mjs` (the RTT and cap on the server's side, as bench:engines) and takes navigation start → the first frame after loading (as bench:engines).",
    '',
    "- **kB fetched** = the body bytes of the bundle requests in the server's access log for the sample (median; each sample checked to fetch exactly the bundles that `awake-bundle report <published> --loads <file> --json` says the first load fetches, each once). Both games have one load, which the first frame waits for. **kB used** = the report's `usedBytes` for that load: the files the recorded load lists (SPEC §6 \"Loads\"). **report** = the report's own fetched / used (`loads[0].alone`), the same number computed from the index. The index (not counted) is one more request.",
    '- **Aims**: fetched / used ≤ 1.05 with recorded loads; ≤ 1.25 with `auto` and no loads file; by folder has none (the baseline).',
    `- Medians of ${part.runs} runs, or 3 where a sample of the first round took over 20 s ("runs"); the variants of a cell take turns, in a rotated order each round. Load average: the 1-minute \`uptime\` at the start and end of the cell (2 cores).`,
    '',
    `Code ${codeLine(part.code)}. ${machineLine(part.machine)} Measured ${part.startedAt.slice(0, 10)}. ${loadLine(part.cells)}`.trimEnd(),
    '',
    'Sites: ' +
      sites
        .map(
          (s) =>
            `${s.game} ${s.grouping}: ${s.bundles} bundles (${(s.bundleBytes / MB).toFixed(2)} MB), the first load in ${s.firstLoad.requests}`,
        )
        .join('; ') +
      '.',
    '',
    '```sh',
    part.command,
    '```',
    '',
    ...markdownTable(GROUPING_HEAD, groupingRows(part)),
    '',
    `Preload (the built page with the plugin's \`<link rel="preload" as="fetch" crossorigin>\` against the same page without them): auto preloads the index; recorded loads the index and the first load's bundles. Times in ms from navigation start (medians): the index request, the adapter's first call (\`awkbIndex\` / \`registerAwkb\`, its User Timing mark), the first bundle request (Resource Timing; a worker's from CDP), the first frame. Call → first bundle is the median of each sample's own difference: the part of the first load that the index's round trip (or its preload) changes, without the time the page takes to boot. Saved = without − with, in ms and in round trips.`,
    '',
    ...markdownTable(PRELOAD_HEAD, preloadRows(part)),
    '',
    ...parts
      .slice(0, -1)
      .flatMap((earlier) => [
        `Preload, an earlier run${earlier.label ? ` (${earlier.label})` : ''}: code ${codeLine(earlier.code)}, measured ${earlier.startedAt.slice(0, 16).replace('T', ' ')} UTC. ${loadLine(earlier.cells)}`.trimEnd(),
        '',
        ...markdownTable(PRELOAD_HEAD, preloadRows(earlier)),
        '',
      ]),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Main

/**
 * Builds the sites (unless `build` is false: those of an earlier run in .bench/grouping/), runs
 * every cell, prints the tables, saves the results to `out` and resolves to them. `report`
 * also writes BENCHMARKS.md's section.
 */
export async function runGroupingBench({
  games = Object.keys(GAMES),
  runs = 5,
  conditions = CONDITIONS,
  preloadLatencyMs = PRELOAD_LATENCY_MS,
  build = true,
  label,
  out = join(BENCH_DIR, 'last.json'),
  report = false,
  command = 'node bench/grouping.mjs',
} = {}) {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))
    throw new Error('dist/ is missing: run `npm run build` first (npm run bench:grouping does)');
  for (const game of games)
    if (!existsSync(loadsFileOf(game))) throw new Error(`${loadsFileOf(game)} is missing: record it with npm run record-loads`);
  if (build) {
    for (const game of games) {
      mkdirSync(join(BENCH_DIR, game), { recursive: true });
      for (const grouping of Object.keys(GROUPINGS)) await buildSite(game, grouping);
    }
  }
  const sites = Object.fromEntries(
    games.map((game) => [game, Object.fromEntries(Object.keys(GROUPINGS).map((grouping) => [grouping, describeSite(game, grouping)]))]),
  );
  const part = {
    command,
    label,
    runs,
    code: codeMeasured(),
    startedAt: new Date().toISOString(),
    machine: await machineWithChromium(),
    sites: Object.fromEntries(
      Object.entries(sites).map(([game, bySite]) => [
        game,
        Object.fromEntries(Object.entries(bySite).map(([grouping, { index, ...rest }]) => [grouping, rest])),
      ]),
    ),
    cells: [],
  };
  const withPreloadCell = conditions.some((condition) => condition.latencyMs === preloadLatencyMs && condition.mbit === 0)
    ? conditions
    : [...conditions, { latencyMs: preloadLatencyMs, mbit: 0 }];
  for (const condition of withPreloadCell) {
    for (const game of games) {
      const cell = await runCell(game, sites[game], condition, runs, condition.latencyMs === preloadLatencyMs && condition.mbit === 0);
      part.cells.push(cell);
      saveResults(out, part);
    }
  }
  printResults(part);
  console.error(`results in ${out}${report ? '' : `; write BENCHMARKS.md's section with: node bench/grouping.mjs --report ${out}`}`);
  if (report) writeBenchmarksSection(SECTION_TITLE, renderSection([part]));
  return part;
}

function printResults(part) {
  console.log('\nThe first scene: bundle bytes fetched against the bytes it uses, and its first frame (medians)\n');
  printTable(GROUPING_HEAD, groupingRows(part));
  console.log('\nPreload: the built page without → with its preload links (medians)\n');
  printTable(PRELOAD_HEAD, preloadRows(part));
}

async function main() {
  const options = parseBenchArgs('bench/grouping.mjs', ['games', 'preload-latency'], ['no-build']);
  if (options.reportFiles.length > 0) {
    writeBenchmarksSection(SECTION_TITLE, renderSection(options.reportFiles.map((file) => JSON.parse(readFileSync(file, 'utf8')))));
    return;
  }
  const games = (options.values.games ?? Object.keys(GAMES).join(',')).split(',').map((name) => name.trim());
  for (const name of games) if (!GAMES[name]) options.usage(`unknown game ${name} (${Object.keys(GAMES).join(', ')})`);
  const preloadLatencyMs = Number(options.values['preload-latency'] ?? PRELOAD_LATENCY_MS);
  if (!(preloadLatencyMs >= 0)) options.usage('--preload-latency takes a round trip in ms');
  const ownGrid = options.values.latency !== undefined || options.values.bandwidth !== undefined;
  await runGroupingBench({
    games,
    runs: options.runs,
    conditions: ownGrid ? options.conditions : CONDITIONS,
    preloadLatencyMs,
    build: !options.values['no-build'],
    label: options.label,
    out: options.out,
    report: options.report,
    command: commandLine('bench/grouping.mjs', options.args),
  });
}

if (resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
