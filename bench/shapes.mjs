// Games shaped like third-party ones, loose against bundled with the default publish, on a first
// and a return visit, as bench/engines.mjs measures the example games (its header says how; this
// script runs its cells: runGridCell's visits, checks and counts, and its tables' columns): four
// games under bench/shapes/<game>/ (their own src/main.ts and webpack.config.cjs; the page and the
// scene or game around their loads shared by engine: babylon.html and babylon-scene.ts,
// phaser.html and phaser-game.ts), each built for production with the awake-bundle webpack plugin
// at its defaults (`loads: false`: `--group auto`, what a new user gets), its assets staged at
// build time from examples/assets (bench/shapes/stage.mjs, licences kept):
//
//   babylon-folder   a Babylon scene whose models/ folder holds eleven models (16 MB): it loads
//                    the milk truck (.gltf, .bin, 2048² JPEG: 0.45 MB) with ImportMeshAsync and
//                    never the ten 1.5 MB rocks (BoxTextured's glTF, a seeded 1.5 MB buffer each);
//   phaser-pack      a Phaser game whose first scene loads assets/pack.json, 19 entries in two
//                    sections (images, spritesheets, an atlas, a bitmap font, JSON, sounds; 0.4 MB);
//   phaser-audio     a Phaser game whose first scene's preload loads 38 sounds (Ogg, MP3, WAV;
//                    8 MB) and 4 images, create() running once Phaser's loader decoded them all;
//   babylon-gallery  nine glTF and GLB models (6.5 MB: six milk trucks with distinct buffers and
//                    textures, Cesium Man, the truck GLB, the box) loaded at once.
// Each Babylon scene's one added call is `registerAwkb({ indexUrl })`, each Phaser game's
// `this.load.awkbIndex(…)`; `?loose` leaves it out (the page without the plugin's preload links,
// loose.html, loading the same files as plain files copied under published/).
//
//   node bench/shapes.mjs [--games babylon-folder,phaser-pack,phaser-audio,babylon-gallery]
//                         [--protocols http/1.1,h2] [--runs 5] [--latency 0,40,150] [--bandwidth 0,20]
//                         [--label text] [--no-build] [--out part.json] [--report] [--write]
//   node bench/shapes.mjs --report part1.json part2.json …   # those results as a markdown section
//
// Cells as bench/engines.mjs's (without --latency and --bandwidth: 0, 40 and 150 ms RTT without a
// cap and 20 Mbit/s at 40 ms), each at each protocol; 0 ms cells first. --report prints the
// markdown section (after a run, or of the given results, runs of one label merged); --write also
// puts it in BENCHMARKS.md.
//
// The host: nginx (bench/nginx-backend.mjs) with gzip on, as static hosts serve files: gzip 6 for
// JSON, glTF, JavaScript, XML, text, CSS, HTML (the page, main.js, the index and the loose .json
// and .gltf files come compressed), everything else raw; Range (single and multiple); ETag,
// Last-Modified and 304; bundles immutable, everything else `no-cache`. Over HTTP/1.1 plain HTTP,
// over h2 TLS 1.3; both through bench/throttled-server.mjs's relay. Loose and bundled visits meet
// the same server (the site's one folder); the limit chain the same folder served with every file
// below published/ immutable too. (bench/engines.mjs serves HTTP/1.1 by the repository's `serve`,
// which compresses nothing.)
//
// A round of a cell: three chains, each a player (a profile of its own, a Chromium launched on it
// per visit, HTTP cache on), in an order that rotates from round to round:
//   loose    first visit (empty profile), return visit (the same profile: every file revalidated, 304);
//   bundled  first and return visit of the page as shipped; after each, the bench waits for the
//            source's whenStored() (window.exampleStored) so that the return visit finds it, at
//            most 20 s (then the browser closes all the same, as a player leaves: "stored" counts
//            the visits whose writes settled, and the results keep the source's stats() of the others);
//   limit    a loose visit from the all-immutable server, then the measured one, which asks for
//            no asset: the engine's time with every asset byte in the browser, plus the page's own
//            round trips at that cell (at 0 ms, the engine's time alone: "engine").
// Time: navigation start → the first frame after loading (Phaser: the first postrender after the
// first scene's create(); Babylon: the end of the first animation frame after whenReadyAsync and
// runRenderLoop), bench/example-page.mjs. Each visit is checked: the game's ready report (every
// file it loads in the engine's cache, the index's file count when bundled), loose asks for no
// index or bundle, bundled for no plain file under published/, the limit visit for no asset, every
// answer 200, 206 or 304 (bench/engines.mjs checkVisit).
//
// Per cell:
//   b/l             bundled ÷ loose, first and return visits (medians);
//   used            the bytes of the first visit's loose answers (bodies as sent: gzip'd where the
//                   host compresses), what the first scene loads; beside it those files' raw bytes
//                   and their members' stored bytes in the bundles (deflate-raw where that saved);
//   fetched         the bundled first visit's bundle bodies (206 ranges or 200 whole); fetched ÷
//                   used (the aim of bench/engines.mjs: ≤ 1.1), and fetched ÷ stored (the reader's
//                   own overhead over the members the scene needs);
//   bytes twice     bundle bytes a visit asked for more than once (from the access log's Range
//                   headers, answers with a body only: test/helpers/visit-server.ts bytesAskedTwice,
//                   counted in bytes): the median and the most of any visit, first and return;
//   limit, engine   the game's limit at the cell and at 0 ms; return aim: ≤ 1.1 × (limit + 1 RTT);
//   hand-off        the Phaser games, per file (bench/shapes/phaser-handoff.ts records it in the
//                   page: a timestamp per event, read after the first frame): bytes in (loose: its
//                   response's end; bundled: the latest end of its bundle's responses by the
//                   hand-off), handed to Phaser (File#onLoad), done (`filecomplete`: a sound
//                   decoded); per visit the median and last of each, and the lags' medians and
//                   90th percentiles; first visits, done bundled − loose of the five largest sounds
//                   and of each format (fileHandoffs).
// Medians of --runs rounds (5), or 3 where a visit of the first round took over 20 s.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  CELL_HEAD,
  cellName,
  cellRows,
  describeSite,
  gridOptions,
  judgeVisits,
  kB,
  LIMIT_HEAD,
  limitColumns,
  markdownTable,
  mergeParts,
  met,
  partLines,
  printTable,
  printTables,
  RETURN_AIM_HEAD,
  RETURN_BYTES_HEAD,
  returnAimColumns,
  returnBytesColumns,
  runGridCell,
  runsText,
  s2,
  summarizeVisit,
  VISIT_HEAD,
  visitTimes,
  wholeSecondTimes,
} from './engines.mjs';
import { FIRST_FRAME, runWebpack, withoutPreload } from './example-page.mjs';
import {
  codeMeasured,
  commandLine,
  machineWithChromium,
  MB,
  median,
  parseBenchArgs,
  ROOT,
  saveResults,
  seconds,
  where,
  writeBenchmarksSection,
} from './harness.mjs';
import { audioList, GALLERY_MODELS, packEntries, STAGES } from './shapes/stage.mjs';
import { requestedRanges } from '../dist/core/format/range-header.js';

const SECTION_TITLE = '## Real-game shapes: every read exact, loose from a gzipping host (node bench/shapes.mjs)';
export const SHAPES_DIR = join(ROOT, '.bench', 'shapes');
const HERE = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
/** How long a bundled visit waits for the source's whenStored() before the browser closes (it is then a player who left before the cache writes ended). */
const STORED_TIMEOUT_MS = 20_000;

// ---------------------------------------------------------------------------------------------
// The games

/** What is wrong with the game's ready report: `ok` (its own counts), and `indexFiles` (the index's file count bundled, 0 loose). */
function problem(ready, ok, mode, index) {
  if (!ok) return `exampleReady ${JSON.stringify(ready)}`;
  const expected = mode === 'bundled' ? index.files.length : 0;
  return ready.indexFiles === expected ? undefined : `exampleReady ${JSON.stringify(ready)}: indexFiles, expected ${expected}`;
}

export const SHAPES = {
  'babylon-folder': {
    label: 'Babylon: one model of a folder of eleven',
    firstFrame: FIRST_FRAME.babylon,
    check: (ready, mode, index) => problem(ready, ready?.models === 1 && ready?.meshes > 0 && ready?.textures > 0, mode, index),
  },
  'phaser-pack': {
    label: 'Phaser: a pack file of 19 small files',
    firstFrame: FIRST_FRAME.phaser,
    check: (ready, mode, index) => {
      const entries = packEntries().length;
      return problem(ready, ready?.packEntries === entries && ready?.loaded === entries, mode, index);
    },
  },
  'phaser-audio': {
    label: 'Phaser: 38 sounds decoded in preload',
    firstFrame: FIRST_FRAME.phaser,
    check: (ready, mode, index) => {
      const { audio, images } = audioList();
      return problem(ready, ready?.sounds === audio.length && ready?.textures === images.length, mode, index);
    },
  },
  'babylon-gallery': {
    label: 'Babylon: a gallery of nine models loaded at once',
    firstFrame: FIRST_FRAME.babylon,
    check: (ready, mode, index) =>
      problem(ready, ready?.models === GALLERY_MODELS.length && ready?.meshes >= GALLERY_MODELS.length, mode, index),
  },
};
const GAME_NAMES = Object.keys(SHAPES);

// ---------------------------------------------------------------------------------------------
// The sites: .bench/shapes/<game>/ (index.html, main.js, loose.html, published/: the index, the
// bundles and every file of the index as a plain file), from the assets staged in <game>-assets/

const siteDir = (name) => join(SHAPES_DIR, name);
const assetsDir = (name) => join(SHAPES_DIR, `${name}-assets`);

/** Stages the game's assets and builds its site (see above). */
export async function buildShape(name) {
  const started = Date.now();
  const assets = assetsDir(name);
  const out = siteDir(name);
  STAGES[name](assets);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const config = await require(join(HERE, 'shapes', name, 'webpack.config.cjs'))({ production: true, out, assets });
  await runWebpack(require('webpack'), config, `bench/shapes/${name}`);
  writeFileSync(join(out, 'loose.html'), withoutPreload(readFileSync(join(out, 'index.html'), 'utf8')));
  const index = JSON.parse(readFileSync(join(out, 'published', 'project.index.json'), 'utf8'));
  for (const file of index.files) cpSync(join(assets, ...file.path.split('/')), join(out, 'published', ...file.path.split('/')));
  wholeSecondTimes(out);
  console.error(`${name}: built in ${((Date.now() - started) / 1000).toFixed(0)} s into ${out}`);
}

/** What the results keep of a site: bench/engines.mjs describeSite's figures, and what the files are as a gzipping host sends them. */
function siteSummary(site) {
  const { index, dir, ...rest } = site;
  return {
    ...rest,
    storedBytes: index.files.reduce((sum, file) => sum + (file.storedBytes ?? file.sizeBytes), 0),
    digest: createHash('sha256').update(JSON.stringify(index)).digest('hex').slice(0, 16),
    bundleSizes: index.bundles.map((bundle) => bundle.sizeBytes),
  };
}

// ---------------------------------------------------------------------------------------------
// One visit's bundle bytes

/**
 * Bundle bytes `requests` asked for more than once (answers with a body only: 200 whole, 206 its
 * Range header's ranges), as test/helpers/visit-server.ts bytesAskedTwice reads a visit, but
 * counted: the bytes covered twice or more, and the first such overlap.
 */
export function bytesTwice(requests, sizeOf) {
  const spans = new Map();
  for (const request of requests) {
    const size = sizeOf.get(request.target);
    if (size === undefined || !/^(200|206)$/.test(request.status)) continue;
    const asked = request.status === '206' && request.range ? requestedRanges(request.range, size) : undefined;
    if (asked === 'unsatisfiable') continue;
    const list = spans.get(request.target) ?? [];
    for (const { start, end } of asked ?? [{ start: 0, end: size - 1 }])
      list.push({ start, end: end + 1, header: request.range ?? 'whole' });
    spans.set(request.target, list);
  }
  let bytes = 0;
  let first;
  for (const [target, list] of spans) {
    // Sweep: +1 at each start, −1 at each end; bytes where two or more spans are open.
    const edges = list.flatMap((span) => [
      [span.start, 1],
      [span.end, -1],
    ]);
    edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let open = 0;
    let at = 0;
    for (const [position, step] of edges) {
      if (open >= 2) bytes += position - at;
      open += step;
      at = position;
    }
    if (!first) {
      list.sort((a, b) => a.start - b.start);
      for (let i = 1; i < list.length && !first; i++) {
        const before = list.slice(0, i).find((span) => span.end > list[i].start);
        if (before) first = `${target.slice(-21)} byte ${list[i].start}: ${before.header} then ${list[i].header}`;
      }
    }
  }
  return { bytes, first };
}

/** The visit's bundle bytes asked twice, and what its loose answers were: their files' raw bytes and their members' stored bytes. */
function visitBytes(site, requests) {
  const sizeOf = new Map(site.index.bundles.map((bundle) => [`/published/${bundle.url}`, bundle.sizeBytes]));
  const files = new Map(site.index.files.map((file) => [`/published/${file.path}`, file]));
  const looseFiles = requests.map((entry) => files.get(entry.target.split('?')[0])).filter(Boolean);
  return {
    twice: bytesTwice(requests, sizeOf),
    looseRawBytes: looseFiles.reduce((sum, file) => sum + file.sizeBytes, 0),
    looseStoredBytes: looseFiles.reduce((sum, file) => sum + (file.storedBytes ?? file.sizeBytes), 0),
  };
}

// ---------------------------------------------------------------------------------------------
// Per-file hand-off (the Phaser games: bench/shapes/phaser-handoff.ts records it in the page)

const round1 = (ms) => (Number.isFinite(ms) ? Math.round(ms * 10) / 10 : undefined);
/** The q-quantile of `values` (linear between ranks); undefined when there are none. */
function quantile(values, q) {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (!sorted.length) return undefined;
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  return sorted[low] + (sorted[Math.min(low + 1, sorted.length - 1)] - sorted[low]) * (at - low);
}

/** The median of `values` (undefined when there are none). */
const middle = (values) => quantile(values, 0.5);

/**
 * One visit's files, each { id: 'type:key', path, bytes (raw), bundle, bytesIn, handed, done } in
 * ms from navigation start: `handed` when Phaser's File#onLoad ran (the XHR's load loose, the
 * adapter's finished XHR bundled), `done` its `filecomplete` (a sound: decoded), `bytesIn` the
 * last byte of what brought it: loose, the file's own response (its Resource Timing responseEnd);
 * bundled, the latest end among its bundle's responses (page or worker, a range each when ranges
 * are used) that ended by the hand-off (which response held the member is not known: the lag it
 * gives is the smallest it can be); none when no response of its bundle had ended by then
 * (`whileStreaming`: handed while its bundle was still arriving, or from the cache on a return
 * visit). Files not in the index (the adapter's own index file) are left out. Also the bundles'
 * responses (the first 12 hex digits of each bundle's name, start, end, page or worker).
 */
function fileHandoffs(site, record) {
  const files = new Map(site.index.files.map((file) => [file.path, file]));
  const bundleUrl = new Map(site.index.bundles.map((bundle) => [bundle.sha256, bundle.url]));
  const doneAt = new Map();
  for (const { type, key, ms } of record.done) if (!doneAt.has(`${type}:${key}`)) doneAt.set(`${type}:${key}`, ms);
  const handed = new Map();
  for (const entry of record.handed) handed.set(`${entry.type}:${entry.key}`, entry);
  const list = [];
  for (const [id, { path, ms }] of handed) {
    const file = files.get(path);
    if (!file) continue;
    const own = record.responses.filter((response) => response.path === path && Number.isFinite(response.end));
    const bundle = record.responses.filter((response) => response.path === bundleUrl.get(file.bundle) && Number.isFinite(response.end));
    const from = own.length ? own : bundle;
    const ended = from.filter((response) => response.start <= ms && response.end <= ms).map((response) => response.end);
    list.push({
      id,
      path,
      bytes: file.sizeBytes,
      ...(own.length ? {} : { bundle: file.bundle.slice(0, 12) }),
      bytesIn: round1(ended.length ? Math.max(...ended) : undefined),
      ...(!own.length && !ended.length && from.length ? { whileStreaming: true } : {}),
      handed: round1(ms),
      done: round1(doneAt.get(id)),
    });
  }
  const bundles = record.responses
    .filter((response) => /^bundles\/[0-9a-f]{64}\.awkb$/.test(response.path))
    .map((response) => ({ bundle: response.path.slice(8, 20), start: round1(response.start), end: round1(response.end), by: response.by }));
  return { files: list, bundles };
}

/** A visit's hand-off figures: medians and the last of bytes in, handed and done over its files, the lags' medians and 90th percentiles. */
function handoffStats(files) {
  const of = (pick) => files.map(pick).filter(Number.isFinite);
  const last = (values) => (values.length ? Math.max(...values) : undefined);
  const lagIn = of((file) => (file.bytesIn === undefined ? undefined : file.handed - file.bytesIn));
  const lagDone = of((file) => (file.done === undefined ? undefined : file.done - file.handed));
  return {
    files: files.length,
    bytesInMedian: middle(of((file) => file.bytesIn)),
    bytesInMax: last(of((file) => file.bytesIn)),
    handedMedian: middle(of((file) => file.handed)),
    handedMax: last(of((file) => file.handed)),
    doneMedian: middle(of((file) => file.done)),
    doneMax: last(of((file) => file.done)),
    inToHandedMedian: middle(lagIn),
    inToHandedP90: quantile(lagIn, 0.9),
    handedToDoneMedian: middle(lagDone),
    handedToDoneP90: quantile(lagDone, 0.9),
    whileStreaming: files.filter((file) => file.whileStreaming).length,
  };
}

/** The hand-off of a visit's samples: handoffStats' figures (medians of the samples') and each file's median times (`perFile`). */
function summarizeHandoff(list) {
  const samples = list.map((sample) => sample.handoff).filter(Boolean);
  if (!samples.length) return undefined;
  const stats = samples.map((sample) => handoffStats(sample.files));
  const figures = Object.fromEntries(Object.keys(stats[0]).map((key) => [key, middle(stats.map((stat) => stat[key]))]));
  const ids = [...new Set(samples.flatMap((sample) => sample.files.map((file) => file.id)))];
  const perFile = ids.map((id) => {
    const all = samples.map((sample) => sample.files.find((file) => file.id === id)).filter(Boolean);
    const mid = (key) => round1(middle(all.map((file) => file[key])));
    return { id, path: all[0].path, bytes: all[0].bytes, bytesIn: mid('bytesIn'), handed: mid('handed'), done: mid('done') };
  });
  return { ...figures, samples: samples.length, perFile };
}

/**
 * First visits, bundled against loose, file by file: `done` bundled − loose (the median of the
 * rounds', each round's bundled visit against its loose one) of the five largest sounds, and the
 * median of that over each format's sounds.
 */
function handoffAgainstLoose(loose, bundled) {
  const pairs = loose.map((chain, i) => [chain.first.handoff, bundled[i]?.first.handoff]).filter(([l, b]) => l && b);
  if (!pairs.length) return undefined;
  const diff = (id) =>
    middle(pairs.map(([l, b]) => b.files.find((file) => file.id === id)?.done - l.files.find((file) => file.id === id)?.done));
  const doneOf = (handoff, id) => middle(pairs.map((pair) => pair[handoff].files.find((file) => file.id === id)?.done));
  const sounds = pairs[0][0].files.filter((file) => file.id.startsWith('audio:'));
  const largest = [...sounds]
    .sort((a, b) => b.bytes - a.bytes || a.handed - b.handed)
    .slice(0, 5)
    .map((file) => ({
      id: file.id,
      path: file.path,
      bytes: file.bytes,
      looseDone: round1(doneOf(0, file.id)),
      bundledDone: round1(doneOf(1, file.id)),
      bundledMinusLoose: round1(diff(file.id)),
    }));
  const formats = [...new Set(sounds.map((file) => file.path.split('.').pop()))].map((format) => {
    const ids = sounds.filter((file) => file.path.endsWith(`.${format}`)).map((file) => file.id);
    return { format, files: ids.length, bundledMinusLoose: round1(middle(ids.map(diff))) };
  });
  return { rounds: pairs.length, largest, formats };
}

// ---------------------------------------------------------------------------------------------
// A cell

/**
 * What a sample keeps beyond bench/engines.mjs's (time, protocol, start times, counts): the bytes
 * asked twice, its loose files' raw and stored bytes, page errors, how whenStored() went (said
 * when it did not settle) and the hand-off (the Phaser games).
 */
function keepSample(site, measured, requests, what) {
  if (measured.stored && measured.stored.outcome !== 'stored')
    process.stderr.write(
      `  ${what}: whenStored() ${measured.stored.outcome} after ${(measured.stored.ms / 1000).toFixed(0)} s${measured.stored.stats ? `, source stats ${JSON.stringify(measured.stored.stats)}` : ''}\n`,
    );
  return {
    ...visitBytes(site, requests),
    pageErrors: measured.pageErrors.length,
    ...(measured.stored ? { stored: measured.stored } : {}),
    ...(measured.handoff ? { handoff: fileHandoffs(site, measured.handoff) } : {}),
  };
}

/** bench/engines.mjs's summary of a visit's samples, with the bytes asked twice and the loose files' raw and stored bytes. */
function summarize(list) {
  const firsts = list.map((s) => s.twice.first).filter(Boolean);
  const handoff = summarizeHandoff(list);
  return {
    ...summarizeVisit(list),
    twiceBytes: median(list.map((s) => s.twice.bytes)),
    twiceMaxBytes: Math.max(...list.map((s) => s.twice.bytes)),
    twiceVisits: list.filter((s) => s.twice.bytes > 0).length,
    ...(firsts.length ? { twiceFirst: firsts[0] } : {}),
    looseRawBytes: median(list.map((s) => s.looseRawBytes)),
    looseStoredBytes: median(list.map((s) => s.looseStoredBytes)),
    pageErrors: Math.max(...list.map((s) => s.pageErrors)),
    // Bundled visits: how many saw whenStored() settle within STORED_TIMEOUT_MS, and the slowest that did.
    ...(list.some((s) => s.stored)
      ? {
          storedVisits: list.filter((s) => s.stored?.outcome === 'stored').length,
          storedMaxMs: Math.max(0, ...list.filter((s) => s.stored?.outcome === 'stored').map((s) => s.stored.ms)),
          notStored: list
            .filter((s) => s.stored && s.stored.outcome !== 'stored')
            .map((s) => ({ outcome: s.stored.outcome, stats: s.stored.stats })),
        }
      : {}),
    // The Phaser games: per-file hand-off (see fileHandoffs), the samples' own in `handoffSamples`.
    ...(handoff ? { handoff, handoffSamples: list.map((s) => s.handoff) } : {}),
  };
}

/**
 * A cell's chains, as bench/engines.mjs runGridCell runs them (see there): loose, bundled (each a
 * first and a return visit of the site) and limit (a fill and the limit visit, from the server
 * that sends every file below published/ immutable), every site served gzip'd.
 */
const GRID = {
  chains: {
    loose: [
      { visit: 'first', root: 'site' },
      { visit: 'return', root: 'site' },
    ],
    bundled: [
      { visit: 'first', root: 'site' },
      { visit: 'return', root: 'site' },
    ],
    limit: [
      { visit: 'fill', root: 'limit' },
      { visit: 'limit', root: 'limit' },
    ],
  },
  roots: (site) => ({
    site: { root: site.dir, gzip: true },
    limit: { root: site.dir, immutableBelow: '/published/', gzip: true },
  }),
  home: 'site',
  storedTimeoutMs: STORED_TIMEOUT_MS,
  keep: keepSample,
  summarize,
  note: (s) =>
    s.counts.bundles.requests
      ? `, bundles ${(s.counts.bundles.bytes / 1e3).toFixed(0)} kB in ${s.counts.bundles.requests}, twice ${s.twice.bytes} B`
      : '',
  extra: (samples) => {
    const handoff = handoffAgainstLoose(samples.loose, samples.bundled);
    return handoff ? { handoff } : {};
  },
};

/** One game under one condition and protocol: every chain, --runs rounds (3 if a visit of the first took over 20 s). */
export const runShapeCell = (name, site, condition, protocol, runs) => runGridCell(SHAPES[name], site, condition, protocol, runs, GRID);

// ---------------------------------------------------------------------------------------------
// Figures and aims

/** The figures of a cell (see the header): bench/engines.mjs judgeVisits' (its aims), and the used files' raw and stored bytes. */
export function judgeShape(part, cell) {
  const judged = judgeVisits(part, cell);
  return {
    ...judged,
    usedRawBytes: cell.loose.first.looseRawBytes,
    usedStoredBytes: cell.loose.first.looseStoredBytes,
    fetchedPerStored: judged.fetchedBytes / cell.loose.first.looseStoredBytes,
  };
}

// ---------------------------------------------------------------------------------------------
// Tables (bench/engines.mjs's columns, and these)

/** Bytes asked twice: the median visit's, and the most of any (of how many visits had any). */
const twiceText = (visit) =>
  visit.twiceMaxBytes === 0
    ? '0'
    : `${visit.twiceBytes} (max ${visit.twiceMaxBytes}; ${visit.twiceVisits} of ${visit.samplesMs.length} visits)`;
/** Bundled visits whose whenStored() settled within STORED_TIMEOUT_MS, of all. */
const storedText = (visit) => (visit.storedVisits === undefined ? '–' : `${visit.storedVisits} of ${visit.samplesMs.length}`);

const FIRST_HEAD = [
  ...CELL_HEAD,
  ...VISIT_HEAD,
  'aim b/l',
  'kB used (sent, raw, stored)',
  'kB fetched',
  'fetched / used (≤ 1.1)',
  'fetched / stored',
  'bytes twice',
  'stored (≤ 20 s)',
  'requests l → b',
  'runs',
  'load',
];
const firstRows = (part) =>
  cellRows(part, judgeShape, (cell, judged) => [
    ...visitTimes(cell, 'first'),
    met(judged.firstMet, `≤ ${judged.firstAim.toFixed(1)}`),
    `${kB(judged.usedBytes)}, ${kB(judged.usedRawBytes)}, ${kB(judged.usedStoredBytes)}`,
    kB(judged.fetchedBytes),
    met(judged.fetchedMet, judged.fetchedPerUsed.toFixed(2)),
    judged.fetchedPerStored.toFixed(2),
    twiceText(cell.bundled.first),
    storedText(cell.bundled.first),
    `${cell.loose.first.counts.all.requests} → ${cell.bundled.first.counts.all.requests}`,
    runsText(cell),
    cell.load.join('–'),
  ]);

const limitRows = (part) => cellRows(part, judgeShape, limitColumns);

const RETURN_HEAD = [...CELL_HEAD, ...VISIT_HEAD, ...RETURN_AIM_HEAD, ...RETURN_BYTES_HEAD, 'bytes twice', 'stored (≤ 20 s)'];
const returnRows = (part) =>
  cellRows(part, judgeShape, (cell, judged) => [
    ...visitTimes(cell, 'return'),
    ...returnAimColumns(cell, judged),
    ...returnBytesColumns(cell),
    twiceText(cell.bundled.return),
    storedText(cell.bundled.return),
  ]);

const TABLES = [
  ['First visit (an empty profile)', FIRST_HEAD, firstRows],
  ["Each game's limit", LIMIT_HEAD, limitRows],
  ['Return visit (the same profile)', RETURN_HEAD, returnRows],
];

// Per-file hand-off (the Phaser games): first visits and the limit visit (every byte in the HTTP cache)
const HANDOFF_VISITS = [
  ['loose first', (cell) => cell.loose.first],
  ['bundled first', (cell) => cell.bundled.first],
  ['limit', (cell) => cell.limit.limit],
];
const ms0 = (value) => (value === undefined || value === null || !Number.isFinite(value) ? '–' : value.toFixed(0));
const lagText = (median, p90) => `${ms0(median)} (${ms0(p90)})`;
const HANDOFF_HEAD = [
  ...CELL_HEAD,
  'visit',
  'files',
  'bytes in s: median, last',
  'handed s: median, last',
  'done s: median, last',
  'in → handed ms: median (p90)',
  'handed → done ms: median (p90)',
  'handed mid-bundle',
];
function handoffRows(part, brief = false) {
  return part.cells
    .filter((cell) => cell.loose.first.handoff && (!brief || cell.game === 'phaser-audio'))
    .flatMap((cell) =>
      HANDOFF_VISITS.slice(0, brief ? 2 : undefined).map(([visit, of]) => {
        const h = of(cell).handoff;
        const figures = h
          ? [
              String(h.files),
              `${s2(h.bytesInMedian)}, ${s2(h.bytesInMax)}`,
              `${s2(h.handedMedian)}, ${s2(h.handedMax)}`,
              `${s2(h.doneMedian)}, ${s2(h.doneMax)}`,
              lagText(h.inToHandedMedian, h.inToHandedP90),
              lagText(h.handedToDoneMedian, h.handedToDoneP90),
              String(h.whileStreaming ?? 0),
            ]
          : Array(7).fill('–');
        return [...cellName(cell), visit, ...figures];
      }),
    );
}
const HANDOFF_FILE_HEAD = [...CELL_HEAD, 'sound (kB)', 'done loose s', 'done bundled s', 'bundled − loose ms'];
function handoffFileRows(part) {
  return part.cells
    .filter((cell) => cell.handoff)
    .flatMap((cell) => [
      ...cell.handoff.largest.map((file) => [
        ...cellName(cell),
        `${file.id.slice('audio:'.length)} (${kB(file.bytes)})`,
        s2(file.looseDone),
        s2(file.bundledDone),
        ms0(file.bundledMinusLoose),
      ]),
      ...cell.handoff.formats.map((format) => [
        ...cellName(cell),
        `every .${format.format} (${format.files}), median`,
        '',
        '',
        ms0(format.bundledMinusLoose),
      ]),
    ]);
}
const HANDOFF_FORMAT_HEAD = [...CELL_HEAD, '.ogg ms', '.mp3 ms', '.wav ms'];
/** Per cell of phaser-audio, each format's median done bundled − loose. */
function handoffFormatRows(part) {
  return part.cells
    .filter((cell) => cell.handoff && cell.game === 'phaser-audio')
    .map((cell) => [
      ...cellName(cell),
      ...['ogg', 'mp3', 'wav'].map((name) => ms0(cell.handoff.formats.find((format) => format.format === name)?.bundledMinusLoose)),
    ]);
}
const HANDOFF_NOTE =
  "Per file (Phaser's file key), ms from navigation start, medians of the rounds: **bytes in** = the last byte of what brought the file (loose: its own response's Resource Timing responseEnd; bundled: the latest end among its bundle's responses, a range each, that ended by the hand-off: the smallest lag it can be; *handed mid-bundle* counts the files handed before any response of their bundle had ended), **handed** = when Phaser's File#onLoad ran (loose: the XHR's load; bundled: the adapter's finished XHR), **done** = its `filecomplete` (a sound: decoded by decodeAudioData). Recorded in the page by bench/shapes/phaser-handoff.ts (a timestamp per event), read after the first frame. *limit* = the limit visit (every file from the HTTP cache).";

/**
 * The hand-off tables ([title, head, rows]), where the part has any (the Phaser games). `brief`
 * (BENCHMARKS.md, a current page): phaser-audio's first visits, loose and bundled, and each
 * format's median done bundled − loose; the console has every visit and file.
 */
function handoffTables(part, brief = false) {
  const rows = handoffRows(part, brief);
  if (!rows.length) return [];
  if (brief)
    return [
      ['Per-file hand-off (phaser-audio): first visits, medians', HANDOFF_HEAD, rows],
      [
        'Per-file hand-off: each format, first visits, done bundled − loose (median of its sounds)',
        HANDOFF_FORMAT_HEAD,
        handoffFormatRows(part),
      ],
    ];
  return [
    ['Per-file hand-off (phaser-audio, phaser-pack): first visits and the limit visit, medians', HANDOFF_HEAD, rows],
    [
      'Per-file hand-off: the five largest sounds and each format, first visits, done bundled − loose',
      HANDOFF_FILE_HEAD,
      handoffFileRows(part),
    ],
  ];
}

function aimCounts(part) {
  const judged = part.cells.map((cell) => judgeShape(part, cell));
  const count = (key) => `${judged.filter((j) => j[key]).length} of ${judged.length}`;
  const twice = part.cells.filter((cell) => cell.bundled.first.twiceMaxBytes > 0 || cell.bundled.return.twiceMaxBytes > 0).length;
  const bundledVisits = part.cells.flatMap((cell) => [cell.bundled.first, cell.bundled.return]);
  const stored = bundledVisits.reduce((sum, visit) => sum + (visit.storedVisits ?? 0), 0);
  const visits = bundledVisits.reduce((sum, visit) => sum + visit.samplesMs.length, 0);
  return [
    `- first visit, bundled / loose ≤ 1.0 (≤ 0.8 at 150 ms): met in ${count('firstMet')} cells;`,
    `- first scene, bundle bytes fetched / used (as the gzipping host sent the loose files) ≤ 1.1: met in ${count('fetchedMet')};`,
    `- return visit, bundled ≤ 1.1 × (limit + RTT): met in ${count('returnMet')};`,
    `- bundle bytes asked for twice in a visit: in ${twice} of ${part.cells.length} cells;`,
    `- bundled visits whose cache writes (whenStored) settled within 20 s: ${stored} of ${visits}.`,
  ];
}

/**
 * The first visits on the page, one row per game and protocol with a column per network (bundled
 * ÷ loose, and the two medians); the return visits there as the aim's count. Every cell, with its
 * bytes, requests and the limit table, is on the console and in --report's JSON: BENCHMARKS.md is
 * one page of current figures.
 */
function compactFirstTable() {
  return [
    'First visit (an empty profile): bundled ÷ loose (loose s → bundled s), medians; ✗ an aim missed',
    null,
    (part) => {
      const networks = [...new Set(part.cells.map((cell) => networkName(cell)))];
      const rows = new Map();
      for (const cell of part.cells) {
        const [game, protocol] = cellName(cell);
        const key = `${game} ${protocol}`;
        const judged = judgeShape(part, cell);
        const row = rows.get(key) ?? { game, protocol, byNetwork: new Map(), fetched: [], twice: 0 };
        const [loose, bundled, ratio] = visitTimes(cell, 'first').map((text) => String(text).split(' ')[0]);
        row.byNetwork.set(networkName(cell), `${ratio}${judged.firstMet === false ? ' ✗' : ''} (${loose} → ${bundled})`);
        row.fetched.push(judged.fetchedPerUsed);
        row.twice = Math.max(row.twice, cell.bundled.first.twiceMaxBytes ?? 0);
        rows.set(key, row);
      }
      const head = ['game', 'protocol', ...networks, 'fetched ÷ used', 'bytes twice (most)'];
      const body = [...rows.values()].map((row) => [
        row.game,
        row.protocol,
        ...networks.map((name) => row.byNetwork.get(name) ?? '–'),
        `${Math.min(...row.fetched).toFixed(2)}–${Math.max(...row.fetched).toFixed(2)}`,
        String(row.twice),
      ]);
      return { head, body };
    },
  ];
}
const networkName = (cell) => `${cell.latencyMs} ms${cell.mbit ? `, ${cell.mbit} Mbit/s` : ''}`;
const PAGE_TABLES = [];

function compactLines(part) {
  const [title, , make] = compactFirstTable();
  const { head, body } = make(part);
  return [`${title}:`, '', ...markdownTable(head, body), ''];
}

function renderPart(part) {
  const handoff = handoffTables(part, true);
  return [
    ...partLines(part, {
      sites: `Sites: ${Object.values(part.sites)
        .map(
          (s) =>
            `**${s.name}** main.js ${(s.mainJsBytes / MB).toFixed(2)} MB, ${s.files} files (${(s.fileBytes / MB).toFixed(2)} MB; stored ${(s.storedBytes / MB).toFixed(2)} MB) in ${s.bundles} bundles (${(s.bundleBytes / MB).toFixed(2)} MB), index ${kB(s.indexBytes)} kB`,
        )
        .join('; ')}.`,
      aims: aimCounts(part),
      tables: PAGE_TABLES,
    }),
    ...compactLines(part),
    ...(handoff.length ? ['#### Per-file hand-off (phaser-audio)', '', HANDOFF_NOTE, ''] : []),
    ...handoff.flatMap(([title, head, rows]) => [`${title}:`, '', ...markdownTable(head, rows), '']),
  ];
}

function renderSection(parts) {
  return [
    SECTION_TITLE,
    '',
    "`node bench/shapes.mjs` (its header says it all) builds four games shaped like third-party ones (bench/shapes/) with the **default publish** (the awake-bundle webpack plugin at its defaults, `loads: false`: `--group auto`): **babylon-folder** (one milk truck, 0.45 MB, of a `models/` folder of eleven models, 16 MB), **phaser-pack** (a pack file of 19 small files, 0.4 MB), **phaser-audio** (38 sounds, 8 MB, decoded in preload), **babylon-gallery** (nine glTF/GLB models, 6.5 MB, at once). Host: nginx with gzip on (JSON, glTF, JS, XML, text, HTML) and Range, over HTTP/1.1 and HTTP/2 through bench/throttled-server.mjs; visits, limit and times as bench/engines.mjs's section says. **used** = the first visit's loose answers as sent (gzip'd where the host compresses), then those files raw, then their members as stored in the bundles; **fetched** = the bundled first visit's bundle bodies; **bytes twice** = bundle bytes a visit asked for more than once (median visit, and the most of any).",
    '',
    ...mergeParts(parts, GAME_NAMES).flatMap(renderPart),
  ].join('\n');
}

function printPart(part) {
  printTables(part, TABLES);
  for (const [title, head, rows] of handoffTables(part)) {
    console.log(`\n${title}\n`);
    printTable(head, rows);
  }
  console.log(['', ...aimCounts(part)].join('\n'));
}

// ---------------------------------------------------------------------------------------------
// Main

export async function main(args = process.argv.slice(2)) {
  const options = parseBenchArgs('bench/shapes.mjs', ['games', 'protocols'], ['no-build', 'write'], args);
  const section = (parts) => {
    const text = renderSection(parts);
    console.log(`\n${text}`);
    if (options.values.write) writeBenchmarksSection(SECTION_TITLE, text);
  };
  if (options.reportFiles.length > 0) return section(options.reportFiles.map((file) => JSON.parse(readFileSync(file, 'utf8'))));
  const { games, protocols, conditions } = gridOptions(options, GAME_NAMES, GAME_NAMES);
  if (!existsSync(join(ROOT, 'dist', 'core', 'node', 'index.js'))) throw new Error('dist/ is missing: run `npm run build` first');
  if (!options.values['no-build']) for (const name of games) await buildShape(name);
  const sites = Object.fromEntries(games.map((name) => [name, describeSite(name, SHAPES_DIR)]));
  const part = {
    command: commandLine('bench/shapes.mjs', options.args),
    label: options.label,
    code: codeMeasured(),
    startedAt: new Date().toISOString(),
    machine: await machineWithChromium(),
    sites: Object.fromEntries(Object.entries(sites).map(([name, site]) => [name, siteSummary(site)])),
    cells: [],
  };
  const out = options.out ?? join(SHAPES_DIR, 'last.json');
  for (const condition of conditions)
    for (const protocol of protocols)
      for (const name of games) {
        const cell = await runShapeCell(name, sites[name], condition, protocol, options.runs);
        part.cells.push(cell);
        saveResults(out, part);
        const judged = judgeShape(part, cell);
        console.error(
          `${name} ${protocol} ${where(condition).replace(' | ', ' ')}: first ${seconds(cell.loose.first.median)} → ${seconds(cell.bundled.first.median)} s (${judged.firstRatio.toFixed(2)}), fetched/used ${judged.fetchedPerUsed.toFixed(2)} (stored ${judged.fetchedPerStored.toFixed(2)}), bytes twice ${cell.bundled.first.twiceMaxBytes}/${cell.bundled.return.twiceMaxBytes}; return ${seconds(cell.loose.return.median)} → ${seconds(cell.bundled.return.median)} s (aim ${s2(judged.returnAimMs)}); limit ${seconds(judged.limitMs)} s; ${cell.seconds.toFixed(0)} s; load ${cell.load.join('–')}`,
        );
      }
  printPart(part);
  console.error(`results in ${out}${options.report ? '' : `; print the markdown section with: node bench/shapes.mjs --report ${out}`}`);
  if (options.report) section([part]);
  return part;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
