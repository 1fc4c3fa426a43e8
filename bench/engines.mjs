// The example games with the default publish, loose against bundled, on a first, a return and an
// update visit (`npm run bench:engines`; issue 27 item 7): how long each game (examples/phaser,
// examples/babylon, examples/phaser-levels), built for production, takes from navigation start to
// its first frame after loading, from plain files (`?loose`) and from its bundles, over the
// throttled server (bench/throttled-server.mjs) at several round trips and bandwidths, over
// HTTP/1.1 (the repository's `serve`) and HTTP/2 (nginx with TLS).
//
//   npm run bench:engines                      # build, every cell, print, results in .bench/engines/last.json
//   node bench/engines.mjs [--games phaser,babylon,phaser-levels] [--protocols http/1.1,h2] [--runs 5]
//                          [--latency 0,40,150] [--bandwidth 0,20] [--label text] [--no-build]
//                          [--out part.json] [--report]
//   node bench/engines.mjs --report part1.json part2.json …   # those results as BENCHMARKS.md's section
//
// Without --latency and --bandwidth the cells are 0, 40 and 150 ms RTT without a cap and 20 Mbit/s
// at 40 ms; with either, every latency at every bandwidth; each at each protocol.
//
// The default publish: what a new user gets. Each game is built by its own webpack config with
// the awake-bundle plugin given only its folders (`loads: false`: the examples have a recorded
// awkb-loads.json committed, which the plugin would otherwise read; without it the plugin groups
// with `--group auto`, as the CLI's `awake-bundle <assets> --group auto`). phaser-levels has no
// loads file: its config is used as it is.
//
// The sites (.bench/engines/<game>/ and <game>-v2/):
//   v1   the build: index.html, main.js (and the lazy chunks), published/ (the index and bundles),
//        loose.html (the page without the plugin's preload link) and every file of the index
//        copied as a plain file under published/, which `?loose` loads;
//   v2   a new publish with 3 files the first scene uses changed (GAMES[…].changes: a JSON with a
//        property added, a PNG with a tEXt chunk, a JPEG with a comment): the same page and
//        scripts, v2's index and bundles, the loose files; every file that did not change is a
//        copy of v1's with its timestamps, so it keeps its ETag and Last-Modified, as a host that
//        syncs a folder keeps them.
// Both are served on one origin (startThrottledServer's `roots`); `serve` and nginx send ETag and
// Last-Modified with every file, answer 304 to a conditional request, and send bundles
// `Cache-Control: public, max-age=31536000, immutable` and everything else `no-cache`, which a
// browser revalidates on every use (as Netlify's and Vercel's `max-age=0, must-revalidate` are).
//
// A round of a cell: three chains, each in a profile of its own (a player), in an order that
// rotates from round to round; each visit is a Chromium launched on that profile (HTTP cache on,
// WebGL by SwiftShader), closed after the visit as a user closes it (its storage written out):
//   loose    first visit (v1, an empty profile), return visit (v1 again), update visit (v2);
//   bundled  the same three visits of the page as shipped: the index, the bundles (or the parts of
//            them a load needs), every member verified, the adapters' default browser cache;
//            after each visit the bench waits for `window.exampleStored` (the source's
//            `whenStored()`), so that the next visit finds what this one stored;
//   limit    the game's limit: a loose visit to fill the HTTP cache, from a server that sends
//            every file below published/ immutable, then the measured visit, which asks for no
//            asset at all (every byte of them in the browser: its HTTP cache, read from memory
//            or the OS page cache) and revalidates the page and its scripts as every return
//            visit does. It is the engine's time with every asset byte in memory, plus the
//            page's own round trips at this cell; at 0 ms it is the engine's time alone.
// A sample's time is performance.now() at the game's first frame after loading (bench/example-page.mjs):
// Phaser, the first postrender after the first scene's create; Babylon, the end of the first
// animation frame after scene.whenReadyAsync() and runRenderLoop. Requests and bytes are the
// server's access log for the visit (until 0.5 s passed without a new request after the first
// frame): the page and scripts, the index, the bundles (206: a Range answer), the loose files.
// Each visit is checked: the game's ready report; loose asks for no index or bundle, bundled for
// no plain file under published/, the limit visit for no asset; every answer 200, 206 or 304.
//
// What is set against the aims, per cell:
//   first visit    bundled / loose ≤ 1.0, and ≤ 0.8 at 150 ms; the first scene's bundle bytes
//                  fetched / the bytes it uses ≤ 1.1 (used = the bytes of the loose files the
//                  same scene asked for, the index not counted);
//   return visit   bundled ≤ 1.1 × (limit + 1 RTT for the index), and ≤ 0.8 × loose at 150 ms;
//   update visit   bundled ≤ 1.1 × (limit + 1 RTT + the changed files' bytes at the line's rate).
// Beside them, each game's own limit: the limit visit at the cell, the same at 0 ms (the engine's
// time with every byte in memory), and the bytes the first scene uses at the line's rate.
// Medians of --runs rounds (5), or 3 where a visit of the first round took over 20 s.
//
// runCell (bench/start.mjs's cells) is the first visit alone, loose and bundled (and, for
// bench/start.mjs --tail, bundled on the page without the preload links: `no-links`), each in a
// fresh profile with the HTTP cache off, over HTTP/1.1.
// phaser-video is the Phaser example with `?video`: a 2.3 MB WebM (made once by Chromium's
// MediaRecorder, .bench/engines/intro.webm) in its preload, in a folder (so a bundle) of its own.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { crc32 } from 'node:zlib';
import { createProfile, launchChromium, launchFreshChromium, removeProfile } from './chromium.mjs';
import {
  checkBabylon,
  checkPhaser,
  checkPhaserLevels,
  FIRST_FRAME,
  runWebpack,
  sampleChromiumArgs,
  sampleExamplePage,
  visitExamplePage,
  withoutPreload,
} from './example-page.mjs';
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

const SECTION_TITLE = '## Engines: first, return and update visits, default publish (npm run bench:engines)';
export const BENCH_DIR = join(ROOT, '.bench', 'engines');
const require = createRequire(import.meta.url);
const PROTOCOLS = ['http/1.1', 'h2'];
const DEFAULT_GAMES = ['phaser', 'babylon', 'phaser-levels'];
/** The modes of a first-visit cell (runCell, bench/start.mjs) unless told others. */
const FIRST_VISIT_MODES = ['loose', 'bundled'];
/**
 * Every mode a first-visit cell may sample: `bundled` opens the built page (the build plugin's
 * preload links for the index and the first load's bundles); `no-links` is bundled too, on the
 * page without them (loose.html without `?loose`), as a game whose page has no such links.
 */
export const ALL_MODES = [...FIRST_VISIT_MODES, 'no-links'];
/** The video phaser-video preloads: about the size of the one that added 2.3 MB to a game's start. */
const VIDEO_BYTES = 2_300_000;
const VIDEO_FILE = join(BENCH_DIR, 'intro.webm');
const EXAMPLE_ASSETS = join(ROOT, 'examples', 'assets');

/** The aims (issue 27 item 7; see the header). */
const AIMS = { firstRatio: 1.0, firstRatioAt150: 0.8, fetchedPerUsed: 1.1, slack: 1.1, returnRatioAt150: 0.8 };

/** The 3 files each game's update changes (all used by its first scene), and how (see changedBytes). */
const PHASER_CHANGES = [
  { path: 'tilemap/tilemaps/simple-map.json', how: 'json' },
  { path: 'images/superpowers/background-1.png', how: 'png' },
  { path: 'atlas/emoji/emoji.json', how: 'json' },
];

/** Each game: its example folder and assets, the query its page gets, its ready check and its update. */
export const GAMES = {
  phaser: {
    label: 'Phaser (examples/phaser)',
    example: 'phaser',
    assets: EXAMPLE_ASSETS,
    firstFrame: FIRST_FRAME.phaser,
    check: (ready, mode, index) => checkPhaser(ready, mode === 'bundled' ? index.files.length : 0),
    changes: PHASER_CHANGES,
  },
  'phaser-video': {
    label: 'Phaser with a 2.3 MB video in preload (examples/phaser ?video)',
    example: 'phaser',
    assets: EXAMPLE_ASSETS,
    query: 'video',
    withVideo: true,
    firstFrame: FIRST_FRAME.phaser,
    check: (ready, mode, index) => checkPhaser(ready, mode === 'bundled' ? index.files.length : 0, { videos: 1 }),
    changes: PHASER_CHANGES,
  },
  babylon: {
    label: 'Babylon (examples/babylon)',
    example: 'babylon',
    assets: EXAMPLE_ASSETS,
    firstFrame: FIRST_FRAME.babylon,
    check: checkBabylon,
    changes: [
      { path: 'gltf/CesiumMilkTruck/CesiumMilkTruck.gltf', how: 'json' },
      { path: 'gltf/CesiumMilkTruck/CesiumMilkTruck.jpg', how: 'jpeg' },
      { path: 'images/kenney/coin.png', how: 'png' },
    ],
  },
  'phaser-levels': {
    label: 'Phaser, two levels (examples/phaser-levels)',
    example: 'phaser-levels',
    assets: join(ROOT, 'examples', 'phaser-levels', 'assets'),
    firstFrame: FIRST_FRAME.phaser,
    check: (ready, mode, index) => checkPhaserLevels(ready, mode === 'bundled' ? index.files.length : 0),
    changes: [
      { path: 'maps/level-1.json', how: 'json' },
      { path: 'tiles/kenney-tileset-64px-extruded.png', how: 'png' },
      { path: 'images/background.png', how: 'png' },
    ],
  },
};

// ---------------------------------------------------------------------------------------------
// The update's changes: the same file, still one the engine takes, with a few bytes more

const NOTE = 'awake-bundle bench: update 2';

/** `bytes` changed as `how` says: JSON, a root property `extras` (glTF's own); PNG, a tEXt chunk after IHDR; JPEG, a COM segment after APP0. */
export function changedBytes(bytes, how) {
  if (how === 'json') {
    const at = bytes.indexOf('{');
    if (at < 0) throw new Error('not a JSON object');
    return Buffer.concat([bytes.subarray(0, at + 1), Buffer.from(`"extras":{"note":"${NOTE}"},`), bytes.subarray(at + 1)]);
  }
  if (how === 'png') {
    const afterHeader = 8 + 12 + bytes.readUInt32BE(8);
    const body = Buffer.from(`tEXtComment\0${NOTE}`, 'latin1');
    const chunk = Buffer.alloc(body.length + 8);
    chunk.writeUInt32BE(body.length - 4, 0);
    body.copy(chunk, 4);
    chunk.writeUInt32BE(crc32(body), 4 + body.length);
    return Buffer.concat([bytes.subarray(0, afterHeader), chunk, bytes.subarray(afterHeader)]);
  }
  if (how === 'jpeg') {
    if (bytes[0] !== 0xff || bytes[1] !== 0xd8 || bytes[2] !== 0xff || bytes[3] !== 0xe0) throw new Error('not a JFIF JPEG');
    const afterApp0 = 4 + bytes.readUInt16BE(4);
    const text = Buffer.from(NOTE, 'latin1');
    const segment = Buffer.alloc(4 + text.length);
    segment.set([0xff, 0xfe], 0);
    segment.writeUInt16BE(2 + text.length, 2);
    text.copy(segment, 4);
    return Buffer.concat([bytes.subarray(0, afterApp0), segment, bytes.subarray(afterApp0)]);
  }
  throw new Error(`no change of kind ${how}`);
}

// ---------------------------------------------------------------------------------------------
// The sites (see the header)

const siteDir = (name, version = 'v1', benchDir = BENCH_DIR) => join(benchDir, version === 'v1' ? name : `${name}-${version}`);
const readIndex = (dir) => JSON.parse(readFileSync(join(dir, 'published', 'project.index.json'), 'utf8'));

/**
 * Builds the game's example for production into `out` from `assets`, and the loose files beside
 * its published folder. `publish`: 'default' (the plugin given only its folders, `loads: false`)
 * or 'loads' (the example's config as it is: its recorded awkb-loads.json when there is one).
 */
async function buildVersion(game, { out, assets, publish }) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const webpack = require('webpack');
  const config = await require(join(ROOT, 'examples', game.example, 'webpack.config.cjs'))({ production: true, out, assets });
  if (publish === 'default') {
    const at = config.plugins.findIndex((plugin) => plugin?.constructor?.name === 'AwakeBundlePlugin');
    if (at < 0) throw new Error(`examples/${game.example}/webpack.config.cjs has no AwakeBundlePlugin`);
    const AwakeBundlePlugin = config.plugins[at].constructor;
    config.plugins[at] = new AwakeBundlePlugin({ assets, output: 'published', loads: false });
  }
  await runWebpack(webpack, config, `examples/${game.example}`);
  // The built page has the plugin's preload links: loose samples open the same page without them
  // (loose.html), which loads no index and no bundle; bench/start.mjs's no-links samples open it
  // without `?loose`.
  const page = readFileSync(join(out, 'index.html'), 'utf8');
  writeFileSync(join(out, 'loose.html'), withoutPreload(page));
  for (const file of readIndex(out).files) cpSync(join(assets, ...file.path.split('/')), join(out, 'published', ...file.path.split('/')));
}

/** The game's assets: its folder, or for phaser-video a copy with the video in a folder of its own. */
async function assetsOf(name) {
  const game = GAMES[name];
  if (!game.withVideo) return game.assets;
  await makeVideo(VIDEO_FILE, VIDEO_BYTES);
  const copy = join(BENCH_DIR, `${name}-assets`);
  rmSync(copy, { recursive: true, force: true });
  cpSync(game.assets, copy, { recursive: true });
  cpSync(VIDEO_FILE, join(copy, 'video', 'intro.webm'));
  return copy;
}

/**
 * Every file below `dir` dated to a whole second: `serve`'s ETag has the mtime in ms, and a copy
 * dated from a fractional time may land a float's error below it (a new ETag for the same file).
 */
export function wholeSecondTimes(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) wholeSecondTimes(path);
    else {
      const seconds = Math.floor(statSync(path).mtimeMs / 1000);
      utimesSync(path, seconds, seconds);
    }
  }
}

/** A copy of the file `from` (dated to a whole second) with its date: the same ETag and Last-Modified from either. */
function copyKeepingDate(from, to) {
  mkdirSync(dirname(to), { recursive: true });
  cpSync(from, to);
  const seconds = statSync(from).mtimeMs / 1000;
  utimesSync(to, seconds, seconds);
}

/** v1 of the game's site (see the header); `publish` as buildVersion's. */
export async function buildSite(name, { publish = 'default' } = {}) {
  const started = Date.now();
  await buildVersion(GAMES[name], { out: siteDir(name), assets: await assetsOf(name), publish });
  wholeSecondTimes(siteDir(name));
  console.error(`${name}: built in ${((Date.now() - started) / 1000).toFixed(0)} s into ${siteDir(name)}`);
}

/**
 * v2 of the game's site, beside v1 (see the header): its assets with GAMES[name].changes made,
 * published as v1 was; every file of v2 that v1 has with the same bytes is v1's copy, timestamps
 * kept. Throws if the page or scripts differ from v1's (an update of assets only).
 */
export async function buildUpdate(name) {
  const game = GAMES[name];
  const started = Date.now();
  const v1 = siteDir(name);
  const v2 = siteDir(name, 'v2');
  const assets = join(BENCH_DIR, `${name}-v2-assets`);
  rmSync(assets, { recursive: true, force: true });
  cpSync(await assetsOf(name), assets, { recursive: true });
  for (const { path, how } of game.changes) writeFileSync(join(assets, path), changedBytes(readFileSync(join(assets, path)), how));
  const built = join(BENCH_DIR, `${name}-v2-build`);
  await buildVersion(game, { out: built, assets, publish: 'default' });
  const same = (a, b) => existsSync(a) && existsSync(b) && readFileSync(a).equals(readFileSync(b));
  rmSync(v2, { recursive: true, force: true });
  mkdirSync(join(v2, 'published', 'bundles'), { recursive: true });
  for (const entry of readdirSync(built)) {
    if (entry === 'published') continue;
    if (!same(join(built, entry), join(v1, entry)))
      throw new Error(`${name} v2: ${entry} differs from v1's (the update should change assets only)`);
    copyKeepingDate(join(v1, entry), join(v2, entry));
  }
  cpSync(join(built, 'published', 'project.index.json'), join(v2, 'published', 'project.index.json'));
  const index = readIndex(built);
  const kept = (relative) =>
    same(join(built, 'published', relative), join(v1, 'published', relative)) ? join(v1, 'published', relative) : undefined;
  for (const relative of [...index.bundles.map((bundle) => bundle.url), ...index.files.map((file) => file.path)]) {
    copyKeepingDate(kept(relative) ?? join(built, 'published', relative), join(v2, 'published', ...relative.split('/')));
  }
  rmSync(built, { recursive: true, force: true });
  rmSync(assets, { recursive: true, force: true });
  console.error(`${name} v2: built in ${((Date.now() - started) / 1000).toFixed(0)} s into ${v2}`);
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

const sumOf = (list, pick) => list.reduce((sum, item) => sum + pick(item), 0);

/**
 * What the game's site holds (v1, and v2 when built): files, bundles, main.js, the update's
 * changes. `benchDir`: where buildSite put it, BENCH_DIR unless another checkout's (bench/start.mjs --against).
 */
export function describeSite(name, benchDir = BENCH_DIR) {
  const dir = siteDir(name, 'v1', benchDir);
  if (!existsSync(join(dir, 'index.html')) || !existsSync(join(dir, 'published', 'project.index.json')))
    throw new Error(`${dir} holds no built site: run without --no-build`);
  const index = readIndex(dir);
  const site = {
    name,
    dir,
    index,
    mainJsBytes: statSync(join(dir, 'main.js')).size,
    files: index.files.length,
    fileBytes: sumOf(index.files, (file) => file.sizeBytes),
    bundles: index.bundles.length,
    bundleBytes: sumOf(index.bundles, (bundle) => bundle.sizeBytes),
    indexBytes: statSync(join(dir, 'published', 'project.index.json')).size,
  };
  const v2 = siteDir(name, 'v2', benchDir);
  if (existsSync(join(v2, 'published', 'project.index.json'))) {
    const next = readIndex(v2);
    const before = new Map(index.files.map((file) => [file.path, file.sha256]));
    const changed = next.files.filter((file) => before.get(file.path) !== file.sha256);
    const oldBundles = new Set(index.bundles.map((bundle) => bundle.sha256));
    const newBundles = next.bundles.filter((bundle) => !oldBundles.has(bundle.sha256));
    Object.assign(site, {
      v2dir: v2,
      v2index: next,
      changed: changed.map((file) => ({ path: file.path, sizeBytes: file.sizeBytes })),
      changedBytes: sumOf(changed, (file) => file.sizeBytes),
      newBundles: newBundles.length,
      newBundleBytes: sumOf(newBundles, (bundle) => bundle.sizeBytes),
      v2IndexBytes: statSync(join(v2, 'published', 'project.index.json')).size,
    });
  }
  return site;
}

/** describeSite without the indexes and folders: what the results keep. */
const siteSummary = ({ index, v2index, dir, v2dir, ...rest }) => rest;

// ---------------------------------------------------------------------------------------------
// One visit's requests

const INDEX_TARGET = '/published/project.index.json';
const isBundle = (target) => /^\/published\/bundles\/[0-9a-f]{64}\.awkb$/.test(target);

/** A visit's requests by kind: the page and scripts, the index, the bundles, the plain files under published/. */
function requestKinds(requests) {
  const below = requests.filter((entry) => entry.target.startsWith('/published/'));
  const kinds = {
    page: requests.filter((entry) => !entry.target.startsWith('/published/')),
    index: below.filter((entry) => entry.target === INDEX_TARGET),
    bundles: below.filter((entry) => isBundle(entry.target)),
    loose: below.filter((entry) => entry.target !== INDEX_TARGET && !isBundle(entry.target)),
  };
  return kinds;
}

/** Loose asks for no index or bundle, bundled for no plain file under published/, the limit visit for no asset; all answered. */
export function checkVisit(what, mode, visit, requests) {
  const kinds = requestKinds(requests);
  const odd =
    mode === 'bundled'
      ? kinds.loose
      : visit === 'limit'
        ? [...kinds.index, ...kinds.bundles, ...kinds.loose]
        : [...kinds.index, ...kinds.bundles];
  if (odd.length)
    throw new Error(
      `${what}: requested ${odd
        .slice(0, 3)
        .map((entry) => `${entry.target} ${entry.status}`)
        .join(', ')}${odd.length > 3 ? ` and ${odd.length - 3} more` : ''}`,
    );
  const failed = requests.filter((entry) => !/^(200|206|304)$/.test(entry.status));
  if (failed.length)
    throw new Error(
      `${what}: ${failed
        .map((entry) => `${entry.target} ${entry.status}`)
        .slice(0, 3)
        .join(', ')}`,
    );
}

/** Counts and bytes of a visit's requests, by kind. */
export function countRequests(requests) {
  const kinds = requestKinds(requests);
  const count = (list) => ({
    requests: list.length,
    bytes: sumOf(list, (entry) => entry.bytes),
    notModified: list.filter((entry) => entry.status === '304').length,
    partial: list.filter((entry) => entry.status === '206').length,
  });
  return {
    all: count(requests),
    page: count(kinds.page),
    index: count(kinds.index),
    bundles: count(kinds.bundles),
    loose: count(kinds.loose),
  };
}

// ---------------------------------------------------------------------------------------------
// A cell's chains (see the header)

/** Each chain's visits: which site the server offers (its `roots`), and whether the visit is timed. */
const CHAINS = {
  loose: [
    { visit: 'first', root: 'v1' },
    { visit: 'return', root: 'v1' },
    { visit: 'update', root: 'v2' },
  ],
  bundled: [
    { visit: 'first', root: 'v1' },
    { visit: 'return', root: 'v1' },
    { visit: 'update', root: 'v2' },
  ],
  limit: [
    { visit: 'fill', root: 'limit' },
    { visit: 'limit', root: 'limit' },
  ],
};

/**
 * What runGridCell runs, here and in bench/shapes.mjs (its own): `chains` (mode → visits),
 * `roots(site)` the server's sites by name, `home` the one it returns to after a chain,
 * `storedTimeoutMs` how long a bundled visit waits for whenStored() (unbounded without it),
 * `keep(site, measured, requests, what)` what a sample keeps beyond its time, protocol, start
 * times and counts, `summarize(samples)` a visit's summary, `note(sample)` more for the progress
 * line, and `extra(samples)` more for the cell (samples: mode → the rounds' chains).
 */
const GRID = {
  chains: CHAINS,
  roots: (site) => ({ v1: site.dir, v2: site.v2dir, limit: { root: site.dir, immutableBelow: '/published/' } }),
  home: 'v1',
  summarize: summarizeVisit,
};

/** One chain: a new profile, a Chromium launched on it for each visit. Resolves to { [visit]: sample }. */
async function runChain(game, site, server, mode, grid) {
  const profile = createProfile();
  const samples = {};
  try {
    for (const { visit, root } of grid.chains[mode]) {
      server.use(root);
      const chromium = await launchChromium({ profile, args: sampleChromiumArgs(server) });
      try {
        const query = [mode === 'bundled' ? undefined : 'loose', game.query].filter(Boolean).join('&');
        const what = `${site.name} ${server.protocol} ${mode} ${visit}`;
        const index = root === 'v2' ? site.v2index : site.index;
        const { requests, ...measured } = await visitExamplePage({
          browser: chromium.browser,
          server,
          path: `/${mode === 'bundled' ? '' : 'loose.html'}${query ? `?${query}` : ''}`,
          firstFrame: game.firstFrame,
          what,
          check: (ready) => game.check(ready, mode, index),
          waitStored: mode === 'bundled',
          storedTimeoutMs: grid.storedTimeoutMs,
        });
        checkVisit(what, mode, visit, requests);
        samples[visit] = {
          ms: measured.ms,
          protocol: measured.protocol,
          start: measured.start,
          counts: countRequests(requests),
          ...grid.keep?.(site, measured, requests, what),
        };
      } finally {
        await chromium.close();
      }
    }
  } finally {
    server.use(grid.home);
    removeProfile(profile);
  }
  return samples;
}

/** Medians of a visit's samples: time (median, min, max), and each count. */
export function summarizeVisit(list) {
  const countsMedian = {};
  for (const kind of Object.keys(list[0].counts)) {
    countsMedian[kind] = {};
    for (const key of Object.keys(list[0].counts[kind])) countsMedian[kind][key] = median(list.map((s) => s.counts[kind][key]));
  }
  return {
    ...spread(list.map((s) => s.ms)),
    samplesMs: list.map((s) => Math.round(s.ms)),
    protocols: [...new Set(list.map((s) => s.protocol))],
    counts: countsMedian,
    callMs: median(list.map((s) => s.start.callMs ?? Number.NaN)),
    indexMs: median(list.map((s) => s.start.indexMs ?? Number.NaN)),
    firstBundleMs: median(list.map((s) => s.start.firstBundleMs ?? Number.NaN)),
  };
}

/**
 * One game under one condition and protocol: every chain of `grid` (GRID: this bench's; see
 * there), --runs rounds (3 if a visit of the first took over 20 s).
 */
export async function runGridCell(game, site, condition, protocol, runs, grid = GRID) {
  const server = await startThrottledServer({ roots: grid.roots(site), protocol, ...condition });
  const modes = Object.keys(grid.chains);
  const samples = Object.fromEntries(modes.map((mode) => [mode, []]));
  const started = Date.now();
  const loadAtStart = loadNow();
  try {
    const { rounds, reduced } = await runRounds(runs, async (round, total) => {
      const order = modes.map((_, i) => modes[(i + round) % modes.length]);
      const times = [];
      for (const mode of order) {
        const chain = await runChain(game, site, server, mode, grid);
        samples[mode].push(chain);
        times.push(...Object.values(chain).map((s) => s.ms));
        process.stderr.write(
          `  ${site.name} ${protocol} ${where(condition).replace(' | ', ' ')} round ${round + 1}/${total} ${mode}: ${Object.entries(chain)
            .map(
              ([visit, s]) =>
                `${visit} ${seconds(s.ms)} s (${s.counts.all.requests} req, ${(s.counts.all.bytes / 1e3).toFixed(0)} kB${grid.note?.(s) ?? ''})`,
            )
            .join(', ')}\n`,
        );
      }
      return times;
    });
    const visits = Object.fromEntries(
      modes.map((mode) => [
        mode,
        Object.fromEntries(grid.chains[mode].map(({ visit }) => [visit, grid.summarize(samples[mode].map((chain) => chain[visit]))])),
      ]),
    );
    return {
      game: site.name,
      protocol,
      ...condition,
      rounds,
      reduced,
      seconds: (Date.now() - started) / 1000,
      load: [loadAtStart, loadNow()],
      ...visits,
      ...grid.extra?.(samples),
    };
  } finally {
    await server.close();
  }
}

// ---------------------------------------------------------------------------------------------
// bench/start.mjs's cells: first visits alone, fresh profile, HTTP cache off, HTTP/1.1

async function sample(game, site, server, mode) {
  // loose and no-links open the page without the preload links; loose also says `?loose`.
  const query = [mode === 'loose' ? 'loose' : undefined, game.query].filter(Boolean).join('&');
  const kind = mode === 'loose' ? 'loose' : 'bundled';
  const { requests, ...measured } = await sampleExamplePage({
    server,
    path: `/${mode === 'bundled' ? '' : 'loose.html'}${query ? `?${query}` : ''}`,
    firstFrame: game.firstFrame,
    what: `${site.name} ${mode}`,
    check: (ready) => game.check(ready, kind, site.index),
  });
  checkVisit(`${site.name} ${mode}`, kind, 'first', requests);
  const assets = requests.filter((entry) => entry.target.startsWith('/published/'));
  return {
    ...measured,
    requests: requests.length,
    bodyBytes: sumOf(requests, (entry) => entry.bytes),
    assetRequests: assets.length,
    assetBytes: sumOf(assets, (entry) => entry.bytes),
  };
}

/** A first-visit cell: each of `modes` in turn goes first (bench/start.mjs). */
export async function runCell(game, site, condition, runs, modes = FIRST_VISIT_MODES) {
  const server = await startThrottledServer({ root: site.dir, ...condition });
  const samples = Object.fromEntries(modes.map((mode) => [mode, []]));
  const started = Date.now();
  const loadAtStart = loadNow();
  try {
    const { rounds, reduced } = await runRounds(runs, async (round, total) => {
      const turn = round % modes.length;
      const order = [...modes.slice(turn), ...modes.slice(0, turn)];
      const times = [];
      for (const mode of order) {
        const result = await sample(game, site, server, mode);
        samples[mode].push(result);
        times.push(result.ms);
        const { start } = result;
        const began =
          mode === 'loose'
            ? `first asset ${ms(start.firstAssetMs)}`
            : `index ${ms(start.indexMs)} (call + ${ms(start.indexAfterCallMs)}), first bundle ${ms(start.firstBundleMs)} (${start.firstBundleBy ?? '–'}, index end + ${ms(start.firstBundleAfterIndexMs)})`;
        process.stderr.write(
          `  ${site.name} ${where(condition).replace(' | ', ' ')} round ${round + 1}/${total} ${mode}: ${seconds(result.ms)} s, ${result.requests} requests, ${(result.bodyBytes / MB).toFixed(2)} MB; ${began} ms; last byte → first frame ${ms(start.tailMs)} ms\n`,
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

/** Where a mode's summary is in a first-visit cell: `loose`, `bundled`, `noLinks`. */
export const modeKey = (mode) => (mode === 'no-links' ? 'noLinks' : mode);

/** A mode's samples as a first-visit cell keeps them: the spread of their times, median counts and start times. */
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

export const ms = (value) => (value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(1));
export const byWhom = (counts) =>
  Object.entries(counts ?? {})
    .map(([by, n]) => `${by} ${n}`)
    .join(', ') || '–';

// ---------------------------------------------------------------------------------------------
// The limits and aims of a cell

/** Bytes at the cell's line rate, in ms (0 without a cap). */
const atLineRate = (bytes, cell) => (cell.mbit ? (bytes * 8) / (cell.mbit * 1000) : 0);

/** The engine's time with every byte in memory: the limit visit of the same game and protocol at 0 ms, no cap. */
function engineMs(part, cell) {
  const zero = part.cells.find(
    (other) => other.game === cell.game && other.protocol === cell.protocol && other.latencyMs === 0 && !other.mbit,
  );
  return zero?.limit.limit.median;
}

/** The figures of a cell's limit, first and return visits, and the aims' verdicts on them (bench/shapes.mjs's cells have these visits too). */
export function judgeVisits(part, cell) {
  const limit = cell.limit.limit.median;
  const used = cell.loose.first.counts.loose.bytes;
  const fetched = cell.bundled.first.counts.bundles.bytes;
  const firstRatio = cell.bundled.first.median / cell.loose.first.median;
  const firstAim = cell.latencyMs === 150 && !cell.mbit ? AIMS.firstRatioAt150 : AIMS.firstRatio;
  const returnAimMs = AIMS.slack * (limit + cell.latencyMs);
  return {
    limitMs: limit,
    engineMs: engineMs(part, cell),
    usedBytes: used,
    usedAtRateMs: atLineRate(used, cell),
    fetchedBytes: fetched,
    fetchedPerUsed: fetched / used,
    fetchedMet: fetched / used <= AIMS.fetchedPerUsed,
    firstRatio,
    firstAim,
    firstMet: firstRatio <= firstAim,
    returnAimMs,
    returnMet: cell.bundled.return.median <= returnAimMs,
    returnRatio: cell.bundled.return.median / cell.loose.return.median,
  };
}

/** Each figure the aims need, and the verdicts (see the header). */
export function judgeCell(part, cell) {
  const judged = judgeVisits(part, cell);
  const changedAtRateMs = atLineRate(part.sites[cell.game].changedBytes ?? 0, cell);
  const updateAimMs = AIMS.slack * (judged.limitMs + cell.latencyMs + changedAtRateMs);
  return {
    ...judged,
    returnRatioMet: cell.latencyMs === 150 && !cell.mbit ? judged.returnRatio <= AIMS.returnRatioAt150 : undefined,
    changedAtRateMs,
    updateAimMs,
    updateMet: cell.bundled.update.median <= updateAimMs,
    updateRatio: cell.bundled.update.median / cell.loose.update.median,
  };
}

// ---------------------------------------------------------------------------------------------
// Printing and BENCHMARKS.md

// The cells' figures as table text (bench/shapes.mjs's tables too)
export const s2 = (value) => (value === undefined || !Number.isFinite(value) ? '–' : seconds(value));
export const kB = (bytes) => (bytes === undefined || !Number.isFinite(bytes) ? '–' : (bytes / 1000).toFixed(1));
export const range = (visit) => `${seconds(visit.median)} (${seconds(visit.min)}–${seconds(visit.max)})`;
export const network = (cell) => [
  cell.protocol === 'h2' ? 'HTTP/2' : 'HTTP/1.1',
  `${cell.latencyMs} ms`,
  cell.mbit ? `${cell.mbit} Mbit/s` : '∞',
];
export const met = (ok, text) => (ok === undefined ? '–' : `${ok ? 'met' : 'missed'}${text ? ` (${text})` : ''}`);
export const runsText = (cell) => `${cell.rounds}${cell.reduced ? ' (3: a visit over 20 s)' : ''}`;
export const requestsText = (counts) =>
  `${counts.all.requests} (${counts.all.notModified} × 304${counts.all.partial ? `, ${counts.all.partial} × 206` : ''})`;

/** The columns that name a cell: its game and network. */
export const CELL_HEAD = ['game', 'protocol', 'RTT', 'bandwidth'];
export const cellName = (cell) => [cell.game, ...network(cell)];
/** A visit's times loose and bundled, and bundled / loose: the columns of visitTimes. */
export const VISIT_HEAD = ['loose s (min–max)', 'bundled s (min–max)', 'b/l'];
export const visitTimes = (cell, visit) => [
  range(cell.loose[visit]),
  range(cell.bundled[visit]),
  ratio(cell.bundled[visit].median, cell.loose[visit].median),
];
/** A row per cell of `part`: the cell (CELL_HEAD), then `columns(cell, judge(part, cell))`. */
export const cellRows = (part, judge, columns) => part.cells.map((cell) => [...cellName(cell), ...columns(cell, judge(part, cell))]);

const FIRST_HEAD = [
  ...CELL_HEAD,
  ...VISIT_HEAD,
  'aim b/l',
  'kB used',
  'kB fetched',
  'fetched / used (≤ 1.1)',
  'requests l → b',
  'runs',
  'load',
];
const firstRows = (part) =>
  cellRows(part, judgeCell, (cell, judged) => [
    ...visitTimes(cell, 'first'),
    met(judged.firstMet, `≤ ${judged.firstAim.toFixed(1)}`),
    kB(judged.usedBytes),
    kB(judged.fetchedBytes),
    met(judged.fetchedMet, judged.fetchedPerUsed.toFixed(2)),
    `${cell.loose.first.counts.all.requests} → ${cell.bundled.first.counts.all.requests}`,
    runsText(cell),
    cell.load.join('–'),
  ]);

/** The columns of a cell's limit (LIMIT_HEAD's, with the cell's first ones), here and in bench/shapes.mjs. */
export const limitColumns = (cell, judged) => [
  range(cell.limit.limit),
  s2(judged.engineMs),
  s2(judged.usedAtRateMs),
  s2(judged.limitMs + cell.latencyMs),
];
export const LIMIT_HEAD = [
  ...CELL_HEAD,
  'limit s: every asset in memory (min–max)',
  'engine s (limit at 0 ms)',
  'used at line rate s',
  'limit + RTT s',
];
const LIMIT_UPDATE_HEAD = [...LIMIT_HEAD, 'changed kB', 'changed at line rate s'];
const limitRows = (part) =>
  cellRows(part, judgeCell, (cell, judged) => [
    ...limitColumns(cell, judged),
    kB(part.sites[cell.game].changedBytes),
    s2(judged.changedAtRateMs),
  ]);

/** The first columns of a cell's return visit, after VISIT_HEAD's (RETURN_HEAD's), here and in bench/shapes.mjs. */
export const RETURN_AIM_HEAD = ['aim: 1.1 × (limit + RTT) s', 'bundled ≤ aim?'];
export const returnAimColumns = (cell, judged) => [
  s2(judged.returnAimMs),
  met(judged.returnMet, `${(cell.bundled.return.median / judged.returnAimMs).toFixed(2)}×`),
];
/** The return visit's requests and bundled bytes (RETURN_BYTES_HEAD's). */
export const RETURN_BYTES_HEAD = ['requests loose', 'requests bundled', 'bundled kB (index + bundles)'];
export const returnBytesColumns = (cell) => [
  requestsText(cell.loose.return.counts),
  requestsText(cell.bundled.return.counts),
  `${kB(cell.bundled.return.counts.index.bytes)} + ${kB(cell.bundled.return.counts.bundles.bytes)}`,
];
const RETURN_HEAD = [...CELL_HEAD, ...VISIT_HEAD, ...RETURN_AIM_HEAD, 'b/l ≤ 0.8 at 150 ms?', ...RETURN_BYTES_HEAD];
const returnRows = (part) =>
  cellRows(part, judgeCell, (cell, judged) => [
    ...visitTimes(cell, 'return'),
    ...returnAimColumns(cell, judged),
    met(judged.returnRatioMet),
    ...returnBytesColumns(cell),
  ]);

const UPDATE_HEAD = [
  ...CELL_HEAD,
  ...VISIT_HEAD,
  'aim: 1.1 × (limit + RTT + changed at rate) s',
  'bundled ≤ aim?',
  'loose kB (files)',
  'bundled kB (index + bundles)',
  'bundle requests (206)',
];
const updateRows = (part) =>
  cellRows(part, judgeCell, (cell, judged) => {
    const bundled = cell.bundled.update.counts;
    return [
      ...visitTimes(cell, 'update'),
      s2(judged.updateAimMs),
      met(judged.updateMet, `${(cell.bundled.update.median / judged.updateAimMs).toFixed(2)}×`),
      kB(cell.loose.update.counts.loose.bytes),
      `${kB(bundled.index.bytes)} + ${kB(bundled.bundles.bytes)}`,
      `${bundled.bundles.requests} (${bundled.bundles.partial})`,
    ];
  });

export function printTable(head, rows) {
  const widths = head.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i].length)));
  for (const row of [head, ...rows]) console.log(row.map((text, i) => text.padEnd(widths[i])).join('  '));
}

export const markdownTable = (head, rows) => [
  `| ${head.join(' | ')} |`,
  `|${head.map((_, i) => (i < 2 ? ':--' : '--:')).join('|')}|`,
  ...rows.map((row) => `| ${row.join(' | ')} |`),
];

const TABLES = [
  ['First visit (an empty profile)', FIRST_HEAD, firstRows],
  ["Each game's limit", LIMIT_UPDATE_HEAD, limitRows],
  ['Return visit (v1 again, the same profile)', RETURN_HEAD, returnRows],
  ['Update visit (v2: 3 files changed, the same profile)', UPDATE_HEAD, updateRows],
];

/** `tables` ([title, head, rows(part)], medians every figure) of `part`, printed. */
export function printTables(part, tables) {
  for (const [title, head, rows] of tables) {
    console.log(`\n${title} (medians)\n`);
    printTable(head, rows(part));
  }
}

/** How many of the cells met each aim: "met in 5 of 24 cells". */
/** How many cells of `part` meet each aim, as lines of a list. */
export function aimCounts(part) {
  const judged = part.cells.map((cell) => judgeCell(part, cell));
  const count = (key) => {
    const known = judged.filter((j) => j[key] !== undefined);
    return `${known.filter((j) => j[key]).length} of ${known.length}`;
  };
  return [
    `- first visit, bundled / loose ≤ 1.0 (≤ 0.8 at 150 ms): met in ${count('firstMet')} cells;`,
    `- first scene, bundle bytes fetched / used ≤ 1.1: met in ${count('fetchedMet')};`,
    `- return visit, bundled ≤ 1.1 × (limit + RTT): met in ${count('returnMet')}; bundled / loose ≤ 0.8 at 150 ms: met in ${count('returnRatioMet')};`,
    `- update visit, bundled ≤ 1.1 × (limit + RTT + changed bytes at the line's rate): met in ${count('updateMet')}.`,
  ];
}

/**
 * A part's lines in BENCHMARKS.md (here and in bench/shapes.mjs): its code, machine and time, the
 * `sites` line, the command, the `aims` lines and `tables` ([title, head, rows(part)]) of medians.
 */
export function partLines(part, { sites, aims, tables }) {
  return [
    `### ${part.label ? `${part.label}: ` : ''}code ${codeLine(part.code)}`,
    '',
    `${machineLine(part.machine)} Measured ${part.startedAt.slice(0, 16).replace('T', ' ')} UTC. ${loadLine(part.cells)}`.trimEnd(),
    '',
    sites,
    '',
    '```sh',
    part.command,
    '```',
    '',
    ...aims,
    '',
    ...tables.flatMap(([title, head, rows]) => [`${title}, medians:`, '', ...markdownTable(head, rows(part)), '']),
  ];
}

const renderPart = (part) =>
  partLines(part, {
    sites: `Sites (v1): ${Object.values(part.sites)
      .map(
        (s) =>
          `**${s.name}** main.js ${(s.mainJsBytes / MB).toFixed(2)} MB, ${s.files} files (${(s.fileBytes / MB).toFixed(2)} MB) in ${s.bundles} bundles, index ${kB(s.indexBytes)} kB; v2 changes ${s.changed?.map((file) => `\`${file.path}\``).join(', ')} (${kB(s.changedBytes)} kB): ${s.newBundles} new bundles (${kB(s.newBundleBytes)} kB)`,
      )
      .join('; ')}.`,
    aims: aimCounts(part),
    tables: TABLES,
  });

/** The bundled medians of two parts side by side (a change of the reader between them). */
function renderComparison(before, after) {
  const name = (part) => part.label ?? part.code.commit;
  const head = [
    ...CELL_HEAD,
    'visit',
    `bundled s, ${name(before)}`,
    `bundled s, ${name(after)}`,
    `b/l, ${name(before)}`,
    `b/l, ${name(after)}`,
    `kB fetched, ${name(before)}`,
    `kB fetched, ${name(after)}`,
  ];
  const rows = [];
  for (const cell of after.cells) {
    const old = before.cells.find(
      (other) =>
        other.game === cell.game && other.protocol === cell.protocol && other.latencyMs === cell.latencyMs && other.mbit === cell.mbit,
    );
    if (!old) continue;
    for (const visit of ['first', 'return', 'update']) {
      const fetched = (c) => kB(c.bundled[visit].counts.index.bytes + c.bundled[visit].counts.bundles.bytes);
      rows.push([
        ...cellName(cell),
        visit,
        seconds(old.bundled[visit].median),
        seconds(cell.bundled[visit].median),
        ratio(old.bundled[visit].median, old.loose[visit].median),
        ratio(cell.bundled[visit].median, cell.loose[visit].median),
        fetched(old),
        fetched(cell),
      ]);
    }
  }
  return [
    `### ${name(before)} against ${name(after)}`,
    '',
    'Each from its own run; b/l = bundled / loose of the same run; kB fetched = the index and the bundles (bodies).',
    '',
    ...markdownTable(head, rows),
    '',
  ];
}

/**
 * The parts of one run, merged: results of the same label that were run in pieces
 * (`--protocols h2 --no-build --out b.json` after `--protocols http/1.1 --out a.json`) are one
 * part. Their sites must be the same (the digests of their indexes); their commits may differ
 * (a commit of BENCHMARKS.md between them), and the part names each. Cells in the grid's order:
 * protocol, then the condition as a run takes them, then the game in `games`' order (bench/shapes.mjs's too).
 */
export function mergeParts(parts, games = [...DEFAULT_GAMES, ...Object.keys(GAMES)]) {
  const merged = [];
  for (const part of parts) {
    const same = merged.find((other) => (other.label ?? '') === (part.label ?? ''));
    if (!same) {
      merged.push({ ...part, code: { ...part.code }, commands: [part.command], cells: [...part.cells], sites: { ...part.sites } });
      continue;
    }
    for (const [name, site] of Object.entries(part.sites))
      if (same.sites[name] && same.sites[name].digest !== site.digest)
        throw new Error(`${part.label ?? 'unlabelled'}: ${name} was measured on two different sites; give the runs their own labels`);
    same.commands.push(part.command);
    same.cells.push(...part.cells);
    Object.assign(same.sites, part.sites);
    if (part.startedAt < same.startedAt) same.startedAt = part.startedAt;
    if (!same.code.commit.split(', ').includes(part.code.commit)) same.code.commit += `, ${part.code.commit}`;
    same.code.dirty ||= part.code.dirty;
  }
  const condition = (cell) => (cell.mbit ? 1e6 : 0) + cell.latencyMs;
  const game = (cell) => games.indexOf(cell.game);
  for (const part of merged) {
    part.command = part.commands.join('\n');
    part.cells.sort(
      (a, b) => PROTOCOLS.indexOf(a.protocol) - PROTOCOLS.indexOf(b.protocol) || condition(a) - condition(b) || game(a) - game(b),
    );
  }
  return merged;
}

function renderSection(given) {
  const parts = mergeParts(given);
  return [
    SECTION_TITLE,
    '',
    "`npm run bench:engines` (= `npm run build && node bench/engines.mjs`; the header of bench/engines.mjs says it all) builds each example game for production with the **default publish**: the awake-bundle webpack plugin given only its folders (`loads: false`, so `--group auto`; the examples' committed awkb-loads.json is not read), and a v2 of it with 3 files its first scene uses changed (a JSON with a property added, a PNG with a tEXt chunk, a JPEG with a comment). Games: **phaser** (examples/phaser) and **babylon** (examples/babylon), which share examples/assets, and **phaser-levels** (examples/phaser-levels: its own assets folder, by kind, with a second level, spare formats and @2x images its first scene never loads).",
    '',
    "- **Network:** `bench/throttled-server.mjs`, throttled on the server's side: each direction delayed RTT/2, a new connection's first bytes one RTT more (its TCP handshake), one token bucket for the downstream of every connection at once. **HTTP/1.1**: the repository's `serve`, plain HTTP (Chromium's 6 connections per host). **HTTP/2**: Debian's nginx 1.22, TLS 1.3 (a self-signed certificate Chromium trusts by `--ignore-certificate-errors-spki-list`, with which it caches as for any valid one), one connection; its TLS handshake is one more round trip through the relay. Both send ETag and Last-Modified, answer 304 to conditional requests, bundles `immutable`, everything else `no-cache` (revalidated on every use).",
    "- **Visits:** each chain is a player: a profile of its own, a Chromium launched on it for each visit (HTTP cache on) and closed after it. **Loose** (`?loose`: the same build, each file under published/ as a plain file): first visit (empty profile), **return** (v1 again: the HTTP cache revalidates each file, 304), **update** (v2: the 3 changed files come whole, the rest 304). **Bundled** (the page as shipped: index, bundles or the ranges a load needs, verified, the adapters' default browser cache): the same three; the bench waits for the source's `whenStored()` before closing. **Limit**: a loose visit from a server that sends every asset immutable, then the measured one, which asks for no asset (every asset byte already in the browser) and revalidates only the page and its scripts as any return visit does: the engine's time with every asset in memory plus the page's own round trips at that cell; at 0 ms, the engine's time alone (**engine**).",
    "- **Aims**: first visit bundled / loose ≤ 1.0 in every cell, ≤ 0.8 at 150 ms; the first scene's bundle bytes fetched / used ≤ 1.1 (**used** = the bytes of the plain files loose asked for: what the scene loads; the index not counted, shown in the return and update tables); return visit ≤ 1.1 × (limit + 1 RTT for the index), and ≤ 0.8 × loose at 150 ms; update visit ≤ 1.1 × (limit + 1 RTT + the changed files' bytes at the line's rate). **used at line rate** = those bytes at the cap (0 without one): with the limit, a first visit's floor.",
    '- Times: navigation start → the first frame after loading (Phaser: first `postrender` after the first scene\'s `create`; Babylon: the end of the first animation frame after `whenReadyAsync` and `runRenderLoop`), medians of 5 rounds, or 3 where a visit of the first round took over 20 s ("runs"); the chains of a cell take turns in an order that rotates each round. Requests and kB: the servers\' access logs (bodies), medians. Load: the 1-minute `uptime` load average at the start and end of each cell (2 cores: above 2, something else wanted the CPU too).',
    '',
    ...parts.flatMap(renderPart),
    ...(parts.length >= 2 ? renderComparison(parts.at(-2), parts.at(-1)) : []),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Main

/** The site's v1 and v2 contents, hashed: a run records which sites it measured. */
function siteDigest(site) {
  return createHash('sha256')
    .update(JSON.stringify([site.index, site.v2index ?? null]))
    .digest('hex')
    .slice(0, 16);
}

/**
 * A grid's `--games` (of `known`, `defaults` without it) and `--protocols`, each a comma-separated
 * list, and its conditions, 0 ms first: the engine's time (the limit at 0 ms) is then known when
 * later cells print (bench/shapes.mjs's grid too).
 */
export function gridOptions(options, known, defaults) {
  const list = (key, names, fallback) => {
    const chosen = (options.values[key] ?? fallback.join(',')).split(',').map((name) => name.trim());
    for (const name of chosen) if (!names.includes(name)) options.usage(`unknown ${key.slice(0, -1)} ${name} (${names.join(', ')})`);
    return chosen;
  };
  return {
    games: list('games', known, defaults),
    protocols: list('protocols', PROTOCOLS, PROTOCOLS),
    conditions: [...options.conditions].sort((a, b) => Number(b.latencyMs === 0 && !b.mbit) - Number(a.latencyMs === 0 && !a.mbit)),
  };
}

export async function main(args = process.argv.slice(2)) {
  const options = parseBenchArgs('bench/engines.mjs', ['games', 'protocols'], ['no-build'], args);
  if (options.reportFiles.length > 0) {
    writeBenchmarksSection(SECTION_TITLE, renderSection(options.reportFiles.map((file) => JSON.parse(readFileSync(file, 'utf8')))));
    return;
  }
  const { games, protocols, conditions } = gridOptions(options, Object.keys(GAMES), DEFAULT_GAMES);
  if (!existsSync(join(ROOT, 'dist', 'core', 'node', 'index.js')))
    throw new Error('dist/ is missing: run `npm run build` first (npm run bench:engines does)');
  if (!options.values['no-build'])
    for (const name of games) {
      await buildSite(name);
      await buildUpdate(name);
    }
  const sites = Object.fromEntries(games.map((name) => [name, describeSite(name)]));
  for (const site of Object.values(sites)) if (!site.v2dir) throw new Error(`${site.name}: no v2 site: run without --no-build`);
  const part = {
    command: commandLine('bench/engines.mjs', options.args),
    label: options.label,
    code: codeMeasured(),
    startedAt: new Date().toISOString(),
    machine: await machineWithChromium(),
    sites: Object.fromEntries(Object.entries(sites).map(([name, site]) => [name, { ...siteSummary(site), digest: siteDigest(site) }])),
    cells: [],
  };
  const out = options.out ?? join(BENCH_DIR, 'last.json');
  for (const condition of conditions)
    for (const protocol of protocols)
      for (const name of games) {
        const cell = await runGridCell(GAMES[name], sites[name], condition, protocol, options.runs);
        part.cells.push(cell);
        saveResults(out, part);
        const judged = judgeCell(part, cell);
        console.error(
          `${name} ${protocol} ${where(condition).replace(' | ', ' ')}: first ${seconds(cell.loose.first.median)} → ${seconds(cell.bundled.first.median)} s (${judged.firstRatio.toFixed(2)}), fetched/used ${judged.fetchedPerUsed.toFixed(2)}; return ${seconds(cell.loose.return.median)} → ${seconds(cell.bundled.return.median)} s (aim ${s2(judged.returnAimMs)}); update ${seconds(cell.loose.update.median)} → ${seconds(cell.bundled.update.median)} s (aim ${s2(judged.updateAimMs)}); limit ${seconds(judged.limitMs)} s; load ${cell.load.join('–')}`,
        );
      }
  printTables(part, TABLES);
  console.log(['', ...aimCounts(part)].join('\n'));
  console.error(`results in ${out}${options.report ? '' : `; write BENCHMARKS.md's section with: node bench/engines.mjs --report ${out}`}`);
  if (options.report) writeBenchmarksSection(SECTION_TITLE, renderSection([part]));
  return part;
}

// Run as a script; imported (bench/start.mjs, a runner), it only exports.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
