// The example games, loose against bundled (`npm run bench:engines`): how long the Phaser game
// (examples/phaser) and the Babylon scene (examples/babylon), built for production as `npm run
// demo -- --production` builds them, take from navigation start to their first frame after
// loading, from plain files (`?loose`: no awkbIndex / registerAwkb) and from their bundles, over
// the throttled server (bench/throttled-server.mjs) at several round trips and bandwidths.
//
//   npm run bench:engines                        # build, every cell, print, results in .bench/engines/last.json
//   node bench/engines.mjs [--games phaser,phaser-video,babylon] [--runs 5] [--latency 0,40,150] [--bandwidth 0,20]
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
// Start: when the first requests went out, in ms from navigation start, from the page's Resource
// Timing (`startTime`; `requestStart` kept in the results): loose, the first asset request;
// bundled, the index request, and how long after the adapter's first call (its User Timing mark,
// `awake-bundle:awkbIndex` or `awake-bundle:registerAwkb`), and the first bundle request. A bundle
// a reader worker fetched is not in the page's timeline: its time is CDP's (the worker's
// Network.requestWillBeSent wallTime, less the page's timeOrigin).
// phaser-video is the Phaser example with `?video`: a 2.3 MB WebM (made once by Chromium's
// MediaRecorder, .bench/engines/intro.webm) in its preload, in a folder (so a bundle) of its own.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { launchFreshChromium } from './chromium.mjs';
import { checkBabylon, checkPhaser, FIRST_FRAME, runWebpack, sampleExamplePage, withoutPreload } from './example-page.mjs';
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
  seconds,
  spread,
  where,
  writeBenchmarksSection,
} from './harness.mjs';
import { startThrottledServer } from './throttled-server.mjs';

const SECTION_TITLE = '## Engines: the example games, loose against bundled (npm run bench:engines)';
export const BENCH_DIR = join(ROOT, '.bench', 'engines');
const require = createRequire(import.meta.url);
const MODES = ['loose', 'bundled'];
/**
 * Every mode a cell may sample: `bundled` opens the built page (the build plugin's preload links
 * for the index and the first load's bundles); `no-links` is bundled too, on the page without
 * them (loose.html without `?loose`), as a game whose page has no such links.
 */
export const ALL_MODES = [...MODES, 'no-links'];
/** The video phaser-video preloads: about the size of the one that added 2.3 MB to a game's start (issue 22). */
const VIDEO_BYTES = 2_300_000;
const VIDEO_FILE = join(BENCH_DIR, 'intro.webm');

/** Each game: its example folder, the query its page gets, and its ready check. */
export const GAMES = {
  phaser: {
    label: 'Phaser (examples/phaser)',
    example: 'phaser',
    firstFrame: FIRST_FRAME.phaser,
    check: (ready, mode, index) => checkPhaser(ready, mode === 'loose' ? 0 : index.files.length),
  },
  'phaser-video': {
    label: 'Phaser with a 2.3 MB video in preload (examples/phaser ?video)',
    example: 'phaser',
    query: 'video',
    withVideo: true,
    firstFrame: FIRST_FRAME.phaser,
    check: (ready, mode, index) => checkPhaser(ready, mode === 'loose' ? 0 : index.files.length, { videos: 1 }),
  },
  babylon: {
    label: 'Babylon (examples/babylon)',
    example: 'babylon',
    firstFrame: FIRST_FRAME.babylon,
    check: checkBabylon,
  },
};

// ---------------------------------------------------------------------------------------------
// The sites: each example built for production, its index and bundles under published/ (from
// the webpack plugin), and the same files as plain files beside them for `?loose`

export async function buildSite(name) {
  const game = GAMES[name];
  const dir = join(BENCH_DIR, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  // phaser-video: a copy of the example assets with the video in a folder of its own.
  let assets = join(ROOT, 'examples', 'assets');
  if (game.withVideo) {
    await makeVideo(VIDEO_FILE, VIDEO_BYTES);
    const copy = join(BENCH_DIR, `${name}-assets`);
    rmSync(copy, { recursive: true, force: true });
    cpSync(assets, copy, { recursive: true });
    cpSync(VIDEO_FILE, join(copy, 'video', 'intro.webm'));
    assets = copy;
  }
  const webpack = require('webpack');
  const config = await require(join(ROOT, 'examples', game.example, 'webpack.config.cjs'))({ production: true, out: dir, assets });
  await runWebpack(webpack, config, `examples/${game.example}`);
  // The built page has the plugin's preload links (the index, the first load's bundles): loose
  // samples open the same page without them (loose.html), which loads no index and no bundle.
  const page = readFileSync(join(dir, 'index.html'), 'utf8');
  writeFileSync(join(dir, 'loose.html'), withoutPreload(page));
  const index = readIndex(dir);
  for (const file of index.files) {
    const from = join(assets, ...file.path.split('/'));
    cpSync(from, join(dir, 'published', ...file.path.split('/')));
  }
  console.error(`${name}: built in ${((Date.now() - started) / 1000).toFixed(0)} s into ${dir}`);
}

/**
 * A WebM of at least `bytes` (VP8 noise from a canvas, recorded by Chromium's MediaRecorder at
 * 8 Mbit/s), made once and kept: the video phaser-video preloads.
 */
async function makeVideo(path, bytes) {
  if (existsSync(path) && statSync(path).size >= bytes) return;
  const chromium = await launchFreshChromium();
  try {
    const page = await chromium.browser.newPage();
    const base64 = await page.evaluate(async (target) => {
      const canvas = Object.assign(document.createElement('canvas'), { width: 640, height: 360 });
      const context = canvas.getContext('2d');
      const recorder = new MediaRecorder(canvas.captureStream(30), { mimeType: 'video/webm;codecs=vp8', videoBitsPerSecond: 8_000_000 });
      const chunks = [];
      let size = 0;
      recorder.ondataavailable = (event) => {
        chunks.push(event.data);
        size += event.data.size;
      };
      const frame = context.createImageData(640, 360);
      const pixels = new Uint32Array(frame.data.buffer);
      recorder.start(250);
      await new Promise((done) => {
        const draw = () => {
          for (let i = 0; i < pixels.length; i++) pixels[i] = (Math.random() * 0x1000000) | 0xff000000;
          context.putImageData(frame, 0, 0);
          if (size >= target) done();
          else requestAnimationFrame(draw);
        };
        draw();
      });
      const stopped = new Promise((done) => (recorder.onstop = done));
      recorder.stop();
      await stopped;
      const bytes = new Uint8Array(await new Blob(chunks).arrayBuffer());
      let binary = '';
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      return btoa(binary);
    }, bytes);
    mkdirSync(BENCH_DIR, { recursive: true });
    writeFileSync(path, Buffer.from(base64, 'base64'));
    console.error(`made ${path} (${(statSync(path).size / MB).toFixed(2)} MB)`);
  } finally {
    await chromium.close();
  }
}

const readIndex = (dir) => JSON.parse(readFileSync(join(dir, 'published', 'project.index.json'), 'utf8'));

/** A built site (`benchDir`: where buildSite put it, BENCH_DIR unless another checkout's). */
export function describeSite(name, benchDir = BENCH_DIR) {
  const dir = join(benchDir, name);
  if (!existsSync(join(dir, 'index.html')) || !existsSync(join(dir, 'published', 'project.index.json')))
    throw new Error(`${dir} holds no built site: run without --no-build`);
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

async function sample(game, site, server, mode) {
  const query = [mode === 'loose' ? 'loose' : undefined, game.query].filter(Boolean).join('&');
  const bundled = mode === 'loose' ? 'loose' : 'bundled';
  const { requests, ...measured } = await sampleExamplePage({
    server,
    path: `/${mode === 'bundled' ? '' : 'loose.html'}${query ? `?${query}` : ''}`,
    firstFrame: game.firstFrame,
    what: `${site.name} ${mode}`,
    check: (ready) => game.check(ready, bundled, site.index),
  });
  checkRequests(site, bundled, requests);
  // The assets alone (below published/): loose, the files the game asked for, which is what it
  // uses; bundled, the index and the bundles holding them, unused members included.
  const assets = requests.filter((entry) => entry.target.startsWith('/published/'));
  return {
    ...measured,
    requests: requests.length,
    bodyBytes: requests.reduce((sum, entry) => sum + entry.bytes, 0),
    assetRequests: assets.length,
    assetBytes: assets.reduce((sum, entry) => sum + entry.bytes, 0),
  };
}

/** Loose asks for no index and no bundle; bundled asks for nothing under published/ but them. */
function checkRequests(site, mode, requests) {
  const published = requests.map((entry) => entry.target).filter((target) => target.startsWith('/published/'));
  const bundled = (target) => target === '/published/project.index.json' || /^\/published\/bundles\/[0-9a-f]{64}\.awkb$/.test(target);
  const odd = published.filter((target) => (mode === 'loose' ? bundled(target) : !bundled(target)));
  if (odd.length)
    throw new Error(
      `${site.name} ${mode}: requested ${odd.slice(0, 3).join(', ')}${odd.length > 3 ? ` and ${odd.length - 3} more` : ''} (does the example read ?loose?)`,
    );
  const failed = requests.filter((entry) => !/^(200|206|304)$/.test(entry.status));
  if (failed.length)
    throw new Error(
      `${site.name} ${mode}: ${failed
        .map((entry) => `${entry.target} ${entry.status}`)
        .slice(0, 3)
        .join(', ')}`,
    );
}

// ---------------------------------------------------------------------------------------------
// A cell: one game under one condition, loose and bundled alternating which goes first

export async function runCell(game, site, condition, runs, modes = MODES) {
  const server = await startThrottledServer({ root: site.dir, ...condition });
  const samples = Object.fromEntries(modes.map((mode) => [mode, []]));
  const started = Date.now();
  const loadAtStart = loadNow();
  try {
    const { rounds, reduced } = await runRounds(runs, async (round, total) => {
      // Each mode goes first in turn (two modes: they alternate).
      const turn = round % modes.length;
      const order = [...modes.slice(turn), ...modes.slice(0, turn)];
      const times = [];
      for (const mode of order) {
        const result = await sample(game, site, server, mode);
        samples[mode].push(result);
        times.push(result.ms);
        const { start } = result;
        const started =
          mode === 'loose'
            ? `first asset ${ms(start.firstAssetMs)}`
            : `index ${ms(start.indexMs)} (call + ${ms(start.indexAfterCallMs)}), first bundle ${ms(start.firstBundleMs)} (${start.firstBundleBy ?? '–'}, index end + ${ms(start.firstBundleAfterIndexMs)})`;
        process.stderr.write(
          `  ${site.name} ${condition.latencyMs} ms ${condition.mbit || '∞'} Mbit/s round ${round + 1}/${total} ${mode}: ${seconds(result.ms)} s, ${result.requests} requests, ${(result.bodyBytes / MB).toFixed(2)} MB; ${started} ms; last byte → first frame ${ms(start.tailMs)} ms\n`,
        );
      }
      return times;
    });
    return {
      game: site.name,
      ...condition,
      rounds,
      reduced,
      seconds: (Date.now() - started) / 1000,
      load: [loadAtStart, loadNow()],
      ...Object.fromEntries(modes.map((mode) => [modeKey(mode), summarizeSamples(samples[mode])])),
      // Each sample's time and start times, for a caller that merges cells (bench/start.mjs --against).
      samples: Object.fromEntries(modes.map((mode) => [modeKey(mode), samples[mode].map(({ ms, start }) => ({ ms, start }))])),
    };
  } finally {
    await server.close();
  }
}

/** Where a mode's summary is in a cell: `loose`, `bundled`, `noLinks`. */
export const modeKey = (mode) => (mode === 'no-links' ? 'noLinks' : mode);

/** A mode's samples as a cell keeps them: the spread of their times, median counts and start times. */
export function summarizeSamples(list) {
  const medianOf = (key) => (list.every((s) => s[key] !== undefined) ? median(list.map((s) => s[key])) : undefined);
  return {
    ...spread(list.map((s) => s.ms)),
    requests: medianOf('requests'),
    bodyBytes: medianOf('bodyBytes'),
    assetRequests: medianOf('assetRequests'),
    assetBytes: medianOf('assetBytes'),
    samplesMs: list.map((s) => Math.round(s.ms)),
    start: startSummary(list.map((s) => s.start)),
  };
}

/** Medians of the start times (those a sample has), and which thread sent the first bundle request, counted. */
function startSummary(starts) {
  const medianOf = (key) => {
    const values = starts.map((start) => start[key]).filter((value) => value !== undefined);
    return values.length ? median(values) : undefined;
  };
  const keys = [
    'firstAssetMs',
    'callMs',
    'indexMs',
    'indexRequestStartMs',
    'indexAfterCallMs',
    'indexEndMs',
    'firstBundleMs',
    'firstBundleAfterIndexMs',
    'lastByteMs',
    'tailMs',
  ];
  const firstBundleBy = {};
  for (const start of starts) if (start.firstBundleBy) firstBundleBy[start.firstBundleBy] = (firstBundleBy[start.firstBundleBy] ?? 0) + 1;
  return {
    ...Object.fromEntries(keys.map((key) => [key, medianOf(key)])),
    maxIndexAfterCallMs: Math.max(...starts.map((start) => start.indexAfterCallMs ?? -Infinity)),
    firstBundleBy,
  };
}

// ---------------------------------------------------------------------------------------------
// Printing and BENCHMARKS.md

export const ms = (value) => (value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(1));
export const byWhom = (counts) =>
  Object.entries(counts ?? {})
    .map(([by, n]) => `${by} ${n}`)
    .join(', ') || '–';

function printCell(cell) {
  const { loose, bundled } = cell;
  const range = (s) => `${seconds(s.median)} (${seconds(s.min)}–${seconds(s.max)})`;
  console.log(
    `${cell.game.padEnd(13)} ${`${cell.latencyMs} ms`.padStart(6)} ${(cell.mbit ? `${cell.mbit} Mbit/s` : '∞').padStart(10)}` +
      ` ${range(loose).padStart(20)} ${range(bundled).padStart(20)} ${ratio(bundled.median, loose.median).padStart(8)}` +
      ` ${`${loose.requests} → ${bundled.requests}`.padStart(12)} ${ratio(bundled.requests, loose.requests).padStart(6)}` +
      ` ${`${(loose.bodyBytes / MB).toFixed(2)} → ${(bundled.bodyBytes / MB).toFixed(2)}`.padStart(14)} ${ratio(bundled.bodyBytes, loose.bodyBytes).padStart(6)}` +
      ` ${`${assetMB(loose)} → ${assetMB(bundled)}`.padStart(14)} ${String(cell.rounds).padStart(4)}${cell.reduced ? ' (3: a sample over 20 s)' : ''}`,
  );
}

/** The start of loading (see the header), ms from navigation start, medians. */
function printStart(cell) {
  const { loose, bundled } = cell;
  console.log(
    `${cell.game.padEnd(13)} ${`${cell.latencyMs} ms`.padStart(6)} ${(cell.mbit ? `${cell.mbit} Mbit/s` : '∞').padStart(10)}` +
      ` ${ms(loose.start?.firstAssetMs).padStart(12)} ${ms(bundled.start?.callMs).padStart(8)} ${ms(bundled.start?.indexMs).padStart(8)}` +
      ` ${`${ms(bundled.start?.indexAfterCallMs)} (${ms(bundled.start?.maxIndexAfterCallMs)})`.padStart(16)} ${ms(bundled.start?.firstBundleMs).padStart(12)} ${byWhom(bundled.start?.firstBundleBy).padStart(18)}`,
  );
}

const START_HEAD = `${'game'.padEnd(13)} ${'RTT'.padStart(6)} ${'bandwidth'.padStart(10)} ${'loose asset'.padStart(12)} ${'call'.padStart(8)} ${'index'.padStart(8)} ${'index−call (max)'.padStart(16)} ${'first bundle'.padStart(12)} ${'first bundle by'.padStart(18)}`;

const TABLE_HEAD = `${'game'.padEnd(13)} ${'RTT'.padStart(6)} ${'bandwidth'.padStart(10)} ${'loose s (min–max)'.padStart(20)} ${'bundled s (min–max)'.padStart(20)} ${'b/l time'.padStart(8)} ${'requests l → b'.padStart(12)} ${'b/l'.padStart(6)} ${'MB l → b'.padStart(14)} ${'b/l'.padStart(6)} ${'assets MB l → b'.padStart(14)} runs`;

function renderSection(parts) {
  const out = [
    SECTION_TITLE,
    '',
    "`npm run bench:engines` (= `npm run build && node bench/engines.mjs`) opens each example game, built for production (webpack, as `npm run demo -- --production` builds it), in headless Chromium (puppeteer-core; a fresh browser and profile per sample, HTTP cache off, WebGL by SwiftShader) and takes the time from navigation start to the **first frame after loading**: Phaser, the first `postrender` after the harbour scene's `create` (its preload scene has loaded every file); Babylon, the end of the first animation frame after `scene.whenReadyAsync()` and `runRenderLoop` (that frame's render has fired `onAfterRenderObservable`). Both are taken by a hook the bench adds before the page's scripts (`evaluateOnNewDocument`), on the `window.exampleReady` the examples set.",
    '',
    "- **Loose** = the same build opened with `?loose`: the example then skips `this.load.awkbIndex` (Phaser) or `registerAwkb` (Babylon), and Phaser's loader or Babylon's fetches each file as a plain file (the index's files copied beside the bundles under `published/`). **Bundled** = the example as shipped: the index, then one request per bundle it needs, every member verified, and the adapters' default browser cache on fresh storage (Babylon: `openBrowserCache()` as the example passes it).",
    "- **Network:** `bench/throttled-server.mjs`: the repository's `serve` (HTTP/1.1; Range, Content-Type and CORS as `awake-bundle serve`) behind a relay that delays each direction by RTT/2 (a request on an open connection: 1 RTT to its first byte; a new connection's first request: 2 RTT, the TCP handshake; no TLS) and caps the downstream of all connections together with one token bucket, round-robin in 16 KiB chunks. Throttling on the server's side, which charges a new connection its handshake and treats every requester alike (a service worker's fetches escape Chromium's page emulation; a dedicated worker's, where the reader fetches, do not: `node bench/worker-emulation.mjs`). Loose and bundled go through the same server.",
    '- **Requests, MB:** what the server answered for the sample (its access log: page, scripts, assets, worker fetches), until 0.5 s passed without a new request after the first frame; body bytes. Both modes load the same scripts (main.js, and for Babylon the lazy chunks it imports): the difference is the assets.',
    "- **phaser-video** = the Phaser example opened with `?video`: its preload also queues a 2.3 MB WebM (made once by Chromium's MediaRecorder), in a folder and so a bundle of its own, and the harbour plays it.",
    "- **Start:** when the first requests went out, in ms from navigation start, from the page's Resource Timing (`startTime`): loose, the first asset request; bundled, the index request, how long after the adapter's first call (its User Timing mark, `awake-bundle:awkbIndex` or `awake-bundle:registerAwkb`), and the first bundle request. A bundle that a reader worker fetched is not in the page's timeline: its time is the worker's `Network.requestWillBeSent` wall time (CDP) less the page's `timeOrigin`.",
    '- Medians of 5 runs, or 3 where a sample of the first round took over 20 s (said in the "runs" column); loose and bundled alternate which goes first each round. b/l = bundled / loose.',
    '',
  ];
  for (const part of parts) {
    out.push(`### ${part.label ? `${part.label}: ` : ''}code ${codeLine(part.code)}`, '');
    out.push(`${machineLine(part.machine)} Measured ${part.startedAt.slice(0, 10)}. ${loadLine(part.cells)}`.trimEnd(), '');
    out.push(
      'Sites: ' +
        Object.values(part.sites)
          .map(
            (s) =>
              `**${s.name}** main.js ${(s.mainJsBytes / MB).toFixed(2)} MB, ${s.files} files in the index (${(s.fileBytes / MB).toFixed(2)} MB) in ${s.bundles} bundles (${(s.bundleBytes / MB).toFixed(2)} MB)`,
          )
          .join('; ') +
        '.',
      '',
    );
    out.push('```sh', part.command, '```', '');
    out.push(
      '| game | RTT | bandwidth | loose s (min–max) | bundled s (min–max) | b/l time | requests loose → bundled | b/l | MB loose → bundled | b/l | asset MB loose → bundled | runs |',
      '|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    );
    for (const cell of part.cells) {
      const { loose, bundled } = cell;
      out.push(
        `| ${cell.game} | ${where(cell)} | ${seconds(loose.median)} (${seconds(loose.min)}–${seconds(loose.max)}) | ${seconds(bundled.median)} (${seconds(bundled.min)}–${seconds(bundled.max)}) | ${ratio(bundled.median, loose.median)} | ${loose.requests} → ${bundled.requests} | ${ratio(bundled.requests, loose.requests)} | ${(loose.bodyBytes / MB).toFixed(2)} → ${(bundled.bodyBytes / MB).toFixed(2)} | ${ratio(bundled.bodyBytes, loose.bodyBytes)} | ${assetMB(loose)} → ${assetMB(bundled)} | ${cell.rounds}${cell.reduced ? ' (a sample over 20 s)' : ''} |`,
      );
    }
    out.push('');
    if (part.cells.some((cell) => cell.bundled.start)) {
      out.push(
        "Start, ms from navigation start (medians): loose, the first asset request; bundled, the adapter's first call (its User Timing mark), the index request, the index request less the call (and the largest), the first bundle request and which thread sent it (samples).",
        '',
      );
      out.push(
        '| game | RTT | bandwidth | loose: first asset | bundled: call | index | index − call (max) | first bundle | first bundle by |',
        '|:--|--:|--:|--:|--:|--:|--:|--:|:--|',
      );
      for (const cell of part.cells) {
        const { loose, bundled } = cell;
        out.push(
          `| ${cell.game} | ${where(cell)} | ${ms(loose.start?.firstAssetMs)} | ${ms(bundled.start?.callMs)} | ${ms(bundled.start?.indexMs)} | ${ms(bundled.start?.indexAfterCallMs)} (${ms(bundled.start?.maxIndexAfterCallMs)}) | ${ms(bundled.start?.firstBundleMs)} | ${byWhom(bundled.start?.firstBundleBy)} |`,
        );
      }
      out.push('');
    }
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
    const verdict =
      aim === undefined
        ? '–'
        : now <= aim
          ? 'met'
          : `missed by ${(now / aim).toFixed(2)}× (${seconds(cell.bundled.median - aim * cell.loose.median)} s over)`;
    out.push(
      `| ${cell.game} | ${where(cell)} | ${seconds(old?.bundled.median)} | ${seconds(cell.bundled.median)} | ${old ? ratio(old.bundled.median, old.loose.median) : '–'} | ${now.toFixed(2)} | ${aim ?? '–'} | ${verdict} |`,
    );
  }
  out.push('');
  return out;
}

// ---------------------------------------------------------------------------------------------
// Main

export async function main(args = process.argv.slice(2)) {
  const options = parseBenchArgs('bench/engines.mjs', ['games'], ['no-build'], args);
  if (options.reportFiles.length > 0) {
    writeBenchmarksSection(SECTION_TITLE, renderSection(options.reportFiles.map((file) => JSON.parse(readFileSync(file, 'utf8')))));
    return;
  }
  const games = (options.values.games ?? 'phaser,phaser-video,babylon').split(',').map((name) => name.trim());
  for (const name of games) if (!GAMES[name]) options.usage(`unknown game ${name} (${Object.keys(GAMES).join(', ')})`);
  if (!existsSync(join(ROOT, 'dist', 'core', 'node', 'index.js')))
    throw new Error('dist/ is missing: run `npm run build` first (npm run bench:engines does)');
  if (!options.values['no-build']) for (const name of games) await buildSite(name);
  const part = {
    command: commandLine('bench/engines.mjs', options.args),
    label: options.label,
    code: codeMeasured(),
    startedAt: new Date().toISOString(),
    machine: await machineWithChromium(),
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
  console.log(`\n${START_HEAD}`);
  for (const cell of part.cells) printStart(cell);
  console.error(`results in ${out}${options.report ? '' : `; write BENCHMARKS.md's section with: node bench/engines.mjs --report ${out}`}`);
  if (options.report) writeBenchmarksSection(SECTION_TITLE, renderSection([part]));
}

// Run as a script; imported (bench/start.mjs, a runner), it only exports.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
