// The example games, loose against bundled (`npm run bench:engines`): how long the Phaser game
// (examples/phaser) and the Babylon scene (examples/babylon), built for production as `npm run
// demo -- --production` builds them, take from navigation start to their first frame after
// loading, from plain files (`?loose`: no awkbIndex / registerAwkb) and from their bundles, over
// the throttled server (bench/throttled-server.mjs) at several round trips and bandwidths.
//
//   npm run bench:engines                        # build, every cell, print, results in .bench/engines/last.json
//   node bench/engines.mjs [--games phaser,babylon] [--runs 5] [--latency 0,40,150] [--bandwidth 0,20]
//                          [--label "before streaming"] [--no-build] [--out part.json] [--report]
//   node bench/engines.mjs --report part1.json part2.json …   # those results as BENCHMARKS.md's section
//
// Without --latency and --bandwidth the cells are 0, 40 and 150 ms RTT without a cap and 20 Mbit/s
// at 40 ms; with either, every latency at every bandwidth. --report after a run writes its
// results to BENCHMARKS.md; --no-build reuses the sites in .bench/engines/ from an earlier run.
//
// A sample: a fresh Chromium (fresh profile, HTTP cache off, WebGL by SwiftShader) opens the game's
// page. The time is performance.now() (ms since navigation start) at the first frame after
// loading, taken by a hook the bench adds before the page's scripts run: it watches the global
// the examples set when ready (`window.exampleReady`).
//   Phaser: set in the first `postrender` after the harbour scene's `create` (its preload scene
//     loaded every file): that moment is the time.
//   Babylon: set after `scene.whenReadyAsync()` and `engine.runRenderLoop(…)`, which queues the
//     first frame's animation callback; the time is the end of the next animation frame, whose
//     first callback is that render (its `onAfterRenderObservable` has fired).
// Requests and bytes are what the server answered for the sample (its access log: the page, the
// scripts, the assets, requests from workers included), until 0.5 s passed without a new one.
// Each sample is checked: the game's ready report (textures, sounds, meshes), and loose loads no
// index or bundle, bundled no asset file.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { launchFreshChromium } from './chromium.mjs';
import {
  codeLine, codeMeasured, commandLine, loadLine, loadNow, machine, machineLine, MB, median, parseBenchArgs, ratio, ROOT, runRounds, saveResults, seconds, spread, where, writeBenchmarksSection,
} from './harness.mjs';
import { startThrottledServer } from './throttled-server.mjs';

const SECTION_TITLE = '## Engines: the example games, loose against bundled (npm run bench:engines)';
const BENCH_DIR = join(ROOT, '.bench', 'engines');
const require = createRequire(import.meta.url);
const SAMPLE_TIMEOUT_MS = 180_000;
/** After the first frame, the sample's requests are counted once none came for this long. */
const QUIET_MS = 500;
const MODES = ['loose', 'bundled'];

const GAMES = {
  phaser: {
    label: 'Phaser (examples/phaser)',
    firstFrame: 'at-ready',
    check(ready, mode, index) {
      const expected = { textures: 7, emojiFrames: 24, mapLayers: 3, sounds: 3, indexFiles: mode === 'loose' ? 0 : index.files.length };
      const wrong = Object.entries(expected).filter(([key, value]) => ready?.[key] !== value);
      return wrong.length ? `exampleReady ${JSON.stringify(ready)}, expected ${JSON.stringify(expected)}` : undefined;
    },
  },
  babylon: {
    label: 'Babylon (examples/babylon)',
    firstFrame: 'next-frame',
    check(ready) {
      return ready?.meshes > 0 && ready?.animations > 0 && ready?.soundMs > 0 ? undefined : `exampleReady ${JSON.stringify(ready)}`;
    },
  },
};

// ---------------------------------------------------------------------------------------------
// The sites: each example built for production, its index and bundles under published/ (from
// the webpack plugin), and the same files as plain files beside them for `?loose`

async function buildSite(name) {
  const dir = join(BENCH_DIR, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  const webpack = require('webpack');
  const config = await require(join(ROOT, 'examples', name, 'webpack.config.cjs'))({ production: true, out: dir });
  const stats = await new Promise((resolveBuild, reject) => webpack(config, (error, result) => (error ? reject(error) : resolveBuild(result))));
  if (stats.hasErrors()) throw new Error(`building examples/${name} failed:\n${stats.toString('errors-only')}`);
  cpSync(join(ROOT, 'examples', name, 'index.html'), join(dir, 'index.html'));
  const index = readIndex(dir);
  for (const file of index.files) {
    const from = join(ROOT, 'examples', 'assets', ...file.path.split('/'));
    cpSync(from, join(dir, 'published', ...file.path.split('/')));
  }
  console.error(`${name}: built in ${((Date.now() - started) / 1000).toFixed(0)} s into ${dir}`);
}

const readIndex = (dir) => JSON.parse(readFileSync(join(dir, 'published', 'project.index.json'), 'utf8'));

function describeSite(name) {
  const dir = join(BENCH_DIR, name);
  if (!existsSync(join(dir, 'index.html')) || !existsSync(join(dir, 'published', 'project.index.json'))) throw new Error(`${dir} holds no built site: run without --no-build`);
  const index = readIndex(dir);
  return {
    name,
    dir,
    index,
    mainJsBytes: statSync(join(dir, 'main.js')).size,
    files: index.files.length,
    fileBytes: index.files.reduce((sum, file) => sum + file.sizeBytes, 0),
    bundles: index.bundles.length,
    bundleBytes: index.bundles.reduce((sum, bundle) => sum + bundle.sizeBytes, 0),
  };
}

// ---------------------------------------------------------------------------------------------
// One sample

/**
 * Runs in the page before its scripts (evaluateOnNewDocument): records when the example sets
 * `window.exampleReady`, and the first frame after it (see the header) in globalThis.__engineBench.
 */
function firstFrameHook(firstFrame) {
  const state = {};
  globalThis.__engineBench = state;
  let ready;
  Object.defineProperty(globalThis, 'exampleReady', {
    configurable: true,
    get: () => ready,
    set(value) {
      ready = value;
      state.readyAt = performance.now();
      if (firstFrame === 'at-ready') state.firstFrameAt = state.readyAt;
      else requestAnimationFrame(() => (state.firstFrameAt = performance.now()));
    },
  });
}

async function sample(game, site, server, mode) {
  const chromium = await launchFreshChromium({ args: ['--enable-unsafe-swiftshader'] });
  const errors = [];
  try {
    const page = await chromium.browser.newPage();
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.setCacheEnabled(false);
    await page.evaluateOnNewDocument(firstFrameHook, game.firstFrame);
    const mark = server.requests.length;
    await page.goto(`${server.origin}/${mode === 'loose' ? '?loose' : ''}`, { waitUntil: 'domcontentloaded', timeout: SAMPLE_TIMEOUT_MS });
    await page.waitForFunction(() => globalThis.__engineBench.firstFrameAt !== undefined || globalThis.exampleFailed !== undefined, { timeout: SAMPLE_TIMEOUT_MS, polling: 50 });
    const result = await page.evaluate(() => ({ ...globalThis.__engineBench, ready: globalThis.exampleReady, failed: globalThis.exampleFailed }));
    if (result.failed !== undefined) throw new Error(`${site.name} ${mode}: the example failed: ${result.failed}`);
    const problem = game.check(result.ready, mode, site.index);
    if (problem) throw new Error(`${site.name} ${mode}: ${problem}${errors.length ? `; page errors: ${errors.join('; ')}` : ''}`);
    const requests = await quietRequests(server, mark);
    checkRequests(site, mode, requests);
    // The assets alone (below published/): loose, the files the game asked for, which is what it
    // uses; bundled, the index and the bundles holding them, unused members included.
    const assets = requests.filter((entry) => entry.target.startsWith('/published/'));
    return {
      ms: result.firstFrameAt, readyAtMs: result.readyAt, requests: requests.length, bodyBytes: requests.reduce((sum, entry) => sum + entry.bytes, 0),
      assetRequests: assets.length, assetBytes: assets.reduce((sum, entry) => sum + entry.bytes, 0), pageErrors: errors,
    };
  } finally {
    await chromium.close();
  }
}

/** The server's log entries since `mark`, once QUIET_MS passed without a new one (at most 10 s). */
async function quietRequests(server, mark) {
  const deadline = Date.now() + 10_000;
  let seen = -1;
  while (server.requests.length !== seen && Date.now() < deadline) {
    seen = server.requests.length;
    await new Promise((wake) => setTimeout(wake, QUIET_MS));
  }
  return server.requests.slice(mark);
}

/** Loose asks for no index and no bundle; bundled asks for nothing under published/ but them. */
function checkRequests(site, mode, requests) {
  const published = requests.map((entry) => entry.target).filter((target) => target.startsWith('/published/'));
  const bundled = (target) => target === '/published/project.index.json' || /^\/published\/bundles\/[0-9a-f]{64}\.awkb$/.test(target);
  const odd = published.filter((target) => (mode === 'loose' ? bundled(target) : !bundled(target)));
  if (odd.length) throw new Error(`${site.name} ${mode}: requested ${odd.slice(0, 3).join(', ')}${odd.length > 3 ? ` and ${odd.length - 3} more` : ''} (does the example read ?loose?)`);
  const failed = requests.filter((entry) => !/^(200|206|304)$/.test(entry.status));
  if (failed.length) throw new Error(`${site.name} ${mode}: ${failed.map((entry) => `${entry.target} ${entry.status}`).slice(0, 3).join(', ')}`);
}

// ---------------------------------------------------------------------------------------------
// A cell: one game under one condition, loose and bundled alternating which goes first

async function runCell(game, site, condition, runs) {
  const server = await startThrottledServer({ root: site.dir, ...condition });
  const samples = { loose: [], bundled: [] };
  const started = Date.now();
  const loadAtStart = loadNow();
  try {
    const { rounds, reduced } = await runRounds(runs, async (round, total) => {
      const order = round % 2 === 0 ? MODES : [...MODES].reverse();
      const times = [];
      for (const mode of order) {
        const result = await sample(game, site, server, mode);
        samples[mode].push(result);
        times.push(result.ms);
        process.stderr.write(`  ${site.name} ${condition.latencyMs} ms ${condition.mbit || '∞'} Mbit/s round ${round + 1}/${total} ${mode}: ${seconds(result.ms)} s, ${result.requests} requests, ${(result.bodyBytes / MB).toFixed(2)} MB\n`);
      }
      return times;
    });
    const summary = (list) => ({
      ...spread(list.map((s) => s.ms)),
      requests: median(list.map((s) => s.requests)),
      bodyBytes: median(list.map((s) => s.bodyBytes)),
      assetRequests: median(list.map((s) => s.assetRequests)),
      assetBytes: median(list.map((s) => s.assetBytes)),
      samplesMs: list.map((s) => Math.round(s.ms)),
    });
    return { game: site.name, ...condition, rounds, reduced, seconds: (Date.now() - started) / 1000, load: [loadAtStart, loadNow()], loose: summary(samples.loose), bundled: summary(samples.bundled) };
  } finally {
    await server.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Printing and BENCHMARKS.md

function printCell(cell) {
  const { loose, bundled } = cell;
  const range = (s) => `${seconds(s.median)} (${seconds(s.min)}–${seconds(s.max)})`;
  console.log(
    `${cell.game.padEnd(8)} ${`${cell.latencyMs} ms`.padStart(6)} ${(cell.mbit ? `${cell.mbit} Mbit/s` : '∞').padStart(10)}` +
      ` ${range(loose).padStart(20)} ${range(bundled).padStart(20)} ${ratio(bundled.median, loose.median).padStart(8)}` +
      ` ${`${loose.requests} → ${bundled.requests}`.padStart(12)} ${ratio(bundled.requests, loose.requests).padStart(6)}` +
      ` ${`${(loose.bodyBytes / MB).toFixed(2)} → ${(bundled.bodyBytes / MB).toFixed(2)}`.padStart(14)} ${ratio(bundled.bodyBytes, loose.bodyBytes).padStart(6)}` +
      ` ${`${assetMB(loose)} → ${assetMB(bundled)}`.padStart(14)} ${String(cell.rounds).padStart(4)}${cell.reduced ? ' (3: a sample over 20 s)' : ''}`,
  );
}

const TABLE_HEAD = `${'game'.padEnd(8)} ${'RTT'.padStart(6)} ${'bandwidth'.padStart(10)} ${'loose s (min–max)'.padStart(20)} ${'bundled s (min–max)'.padStart(20)} ${'b/l time'.padStart(8)} ${'requests l → b'.padStart(12)} ${'b/l'.padStart(6)} ${'MB l → b'.padStart(14)} ${'b/l'.padStart(6)} ${'assets MB l → b'.padStart(14)} runs`;

function renderSection(parts) {
  const out = [
    SECTION_TITLE,
    '',
    '`npm run bench:engines` (= `npm run build && node bench/engines.mjs`) opens each example game, built for production (webpack, as `npm run demo -- --production` builds it), in headless Chromium (puppeteer-core; a fresh browser and profile per sample, HTTP cache off, WebGL by SwiftShader) and takes the time from navigation start to the **first frame after loading**: Phaser, the first `postrender` after the harbour scene\'s `create` (its preload scene has loaded every file); Babylon, the end of the first animation frame after `scene.whenReadyAsync()` and `runRenderLoop` (that frame\'s render has fired `onAfterRenderObservable`). Both are taken by a hook the bench adds before the page\'s scripts (`evaluateOnNewDocument`), on the `window.exampleReady` the examples set.',
    '',
    '- **Loose** = the same build opened with `?loose`: the example then skips `this.load.awkbIndex` (Phaser) or `registerAwkb` (Babylon), and Phaser\'s loader or Babylon\'s fetches each file as a plain file (the index\'s files copied beside the bundles under `published/`). **Bundled** = the example as shipped: the index, then one request per bundle it needs, every member verified, and the adapters\' default browser cache on fresh storage (Babylon: `openBrowserCache()` as the example passes it).',
    '- **Network:** `bench/throttled-server.mjs`: the repository\'s `serve` (HTTP/1.1; Range, Content-Type and CORS as `awake-bundle serve`) behind a relay that delays each direction by RTT/2 (a request on an open connection: 1 RTT to its first byte; a new connection\'s first request: 2 RTT, the TCP handshake; no TLS) and caps the downstream of all connections together with one token bucket, round-robin in 16 KiB chunks. Throttling on the server\'s side, which charges a new connection its handshake and treats every requester alike (a service worker\'s fetches escape Chromium\'s page emulation; a dedicated worker\'s, where the reader fetches, do not: `node bench/worker-emulation.mjs`). Loose and bundled go through the same server.',
    '- **Requests, MB:** what the server answered for the sample (its access log: page, scripts, assets, worker fetches), until 0.5 s passed without a new request after the first frame; body bytes. Both modes load the same scripts (main.js, and for Babylon the lazy chunks it imports): the difference is the assets.',
    '- Medians of 5 runs, or 3 where a sample of the first round took over 20 s (said in the "runs" column); loose and bundled alternate which goes first each round. b/l = bundled / loose.',
    '',
  ];
  for (const part of parts) {
    out.push(`### ${part.label ? `${part.label}: ` : ''}code ${codeLine(part.code)}`, '');
    out.push(`${machineLine(part.machine)} Measured ${part.startedAt.slice(0, 10)}. ${loadLine(part.cells)}`.trimEnd(), '');
    out.push('Sites: ' + Object.values(part.sites).map((s) => `**${s.name}** main.js ${(s.mainJsBytes / MB).toFixed(2)} MB, ${s.files} files in the index (${(s.fileBytes / MB).toFixed(2)} MB) in ${s.bundles} bundles (${(s.bundleBytes / MB).toFixed(2)} MB)`).join('; ') + '.', '');
    out.push('```sh', part.command, '```', '');
    out.push('| game | RTT | bandwidth | loose s (min–max) | bundled s (min–max) | b/l time | requests loose → bundled | b/l | MB loose → bundled | b/l | asset MB loose → bundled | runs |', '|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
    for (const cell of part.cells) {
      const { loose, bundled } = cell;
      out.push(`| ${cell.game} | ${where(cell)} | ${seconds(loose.median)} (${seconds(loose.min)}–${seconds(loose.max)}) | ${seconds(bundled.median)} (${seconds(bundled.min)}–${seconds(bundled.max)}) | ${ratio(bundled.median, loose.median)} | ${loose.requests} → ${bundled.requests} | ${ratio(bundled.requests, loose.requests)} | ${(loose.bodyBytes / MB).toFixed(2)} → ${(bundled.bodyBytes / MB).toFixed(2)} | ${ratio(bundled.bodyBytes, loose.bodyBytes)} | ${assetMB(loose)} → ${assetMB(bundled)} | ${cell.rounds}${cell.reduced ? ' (a sample over 20 s)' : ''} |`);
    }
    out.push('');
  }
  if (parts.length >= 2) out.push(...renderComparison(parts[0], parts.at(-1)));
  return out.join('\n');
}

const assetMB = (summary) => (summary.assetBytes === undefined ? '–' : (summary.assetBytes / MB).toFixed(2));

/** The issue's aims for the example games: bundled / loose at most this, by RTT (no aim at other cells). */
const AIMS = { 0: 0.9, 150: 0.6 };
const aimFor = (cell) => (cell.mbit ? undefined : AIMS[cell.latencyMs]);

/** The first part against the last, cell by cell, with the aims. */
function renderComparison(before, after) {
  const name = (part) => part.label ?? part.code.commit;
  const out = [
    `### ${name(before)} against ${name(after)}`,
    '',
    `Bundled / loose (b/l), each from its own run; aim (the issue): b/l ≤ ${AIMS[0]} at 0 ms and ≤ ${AIMS[150]} at 150 ms, no bandwidth cap.`,
    '',
    `| game | RTT | bandwidth | bundled s, ${name(before)} | bundled s, ${name(after)} | b/l, ${name(before)} | b/l, ${name(after)} | aim | met? |`,
    '|:--|--:|--:|--:|--:|--:|--:|--:|:--|',
  ];
  for (const cell of after.cells) {
    const old = before.cells.find((other) => other.game === cell.game && other.latencyMs === cell.latencyMs && other.mbit === cell.mbit);
    const now = cell.bundled.median / cell.loose.median;
    const aim = aimFor(cell);
    const verdict = aim === undefined ? '–' : now <= aim ? 'met' : `missed by ${(now / aim).toFixed(2)}× (${seconds(cell.bundled.median - aim * cell.loose.median)} s over)`;
    out.push(`| ${cell.game} | ${where(cell)} | ${seconds(old?.bundled.median)} | ${seconds(cell.bundled.median)} | ${old ? ratio(old.bundled.median, old.loose.median) : '–'} | ${now.toFixed(2)} | ${aim ?? '–'} | ${verdict} |`);
  }
  out.push('');
  return out;
}

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  const options = parseBenchArgs('bench/engines.mjs', ['games'], ['no-build']);
  if (options.reportFiles.length > 0) {
    writeBenchmarksSection(SECTION_TITLE, renderSection(options.reportFiles.map((file) => JSON.parse(readFileSync(file, 'utf8')))));
    return;
  }
  const games = (options.values.games ?? 'phaser,babylon').split(',').map((name) => name.trim());
  for (const name of games) if (!GAMES[name]) options.usage(`unknown game ${name} (${Object.keys(GAMES).join(', ')})`);
  if (!existsSync(join(ROOT, 'dist', 'core', 'node', 'index.js'))) throw new Error('dist/ is missing: run `npm run build` first (npm run bench:engines does)');
  if (!options.values['no-build']) for (const name of games) await buildSite(name);
  const probe = await launchFreshChromium();
  const part = {
    command: commandLine('bench/engines.mjs', options.args),
    label: options.label,
    code: codeMeasured(),
    startedAt: new Date().toISOString(),
    machine: machine(await probe.browser.version().finally(() => probe.close())),
    sites: Object.fromEntries(games.map((name) => [name, describeSite(name)]).map(([name, { index, dir, ...rest }]) => [name, rest])),
    cells: [],
  };
  const out = options.out ?? join(BENCH_DIR, 'last.json');
  console.log(TABLE_HEAD);
  for (const condition of options.conditions) {
    for (const name of games) {
      const cell = await runCell(GAMES[name], describeSite(name), condition, options.runs);
      part.cells.push(cell);
      printCell(cell);
      saveResults(out, part);
    }
  }
  console.error(`results in ${out}${options.report ? '' : `; write BENCHMARKS.md's section with: node bench/engines.mjs --report ${out}`}`);
  if (options.report) writeBenchmarksSection(SECTION_TITLE, renderSection([part]));
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
