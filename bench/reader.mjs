// Reader load benchmark (`npm run bench`'s first part; alone `npm run bench:reader`): how long headless Chromium takes to have every file of
// a generated game project in hand, loose or bundled, over HTTP/1.1 (the project's own `serve`)
// and HTTP/2 (nginx with TLS), under Chromium's network emulation, each time printed as a
// multiple of that case's physical bound measured in the same run. Also: verification MB/s
// beside raw WebCrypto and @noble/hashes, the upload of an incremental publish, and the same
// loads through the engines: a Phaser 4 scene and a Babylon 9 scene, loose and through the adapters.
//
//   npm run bench:reader                # the whole grid, then BENCHMARKS.md (npm run bench: this, then bench/start.mjs and bench/grouping.mjs)
//   node bench/reader.mjs [--projects small,small4k,big,glb] [--latency 0,40,150] [--bandwidth 0,100,20]
//                         [--cases b,b2,c1,c2,cc,e,f,a,d,bl,ba,bm,sw,sww] [--runs 5] [--extras verify,publish|none]
//                         [--load sequential|together]
//                         [--trace dir]              # after each cell, one more sample of each case, traced (page.tracing) into dir; not in the medians
//                         [--out part.json]          # a part of the grid: results JSON only
//   node bench/reader.mjs --report part1.json part2.json …   # merge parts into BENCHMARKS.md
//   node bench/reader.mjs --report --title "Reader load, streamed" part.json   # a section of its own
//
// The whole grid takes hours; run it in parts in the background, one at a time (2 cores), e.g.
//   (for p in small small4k big; do node bench/reader.mjs --projects $p --extras verify \
//      --out .bench/reader/$p.json; done; node bench/reader.mjs --projects small4k --cases none \
//      --extras publish --out .bench/reader/publish.json) > .bench/reader/grid.log 2>&1 &
//   node bench/reader.mjs --report .bench/reader/{small,small4k,big,publish}.json
//
// Cases (a "load" = every file of the project in hand, as bytes):
//   b   loose files, one plain fetch each, 128 in flight, HTTP/1.1 from `serve`
//   b2  the same loose files over HTTP/2 from nginx (TLS, self-signed certificate)
//   c1  IndexedAssetSource, no cache, HTTP/1.1: open + prefetch(all paths) + read(every path)
//   c2  the same over HTTP/2
//   cc  c1 with openBrowserCache() on fresh storage (cc2: the same over HTTP/2)
//   e   one zip of the same files (stored, fflate zipSync), fetched and unzipped with fflate
//   f   warm: a second load through openBrowserCache(), storage filled by an unmeasured load
//       (f2: the same over HTTP/2)
// Service-worker cases (HTTP/1.1; the worker is `awake-bundle sw --index published/project.index.json`
// written at the site's top, so its scope holds published/):
//   sw  cold: the worker registered and controlling the page on fresh storage (untimed; its index
//       fetch at start is setup); timed: the page asks it to read the index again (awkb:refresh,
//       no-cache), then plain fetch() of every file's URL below published/, 128 in flight as in
//       b: one request per bundle from the worker, verified on its thread (no Web Workers there)
//   sww warm: after an unmeasured sw load in the same profile (its cache writes awaited) and a
//       reload, the same timed part: the index again, every member from the worker's IndexedDB
//   The worker stays running (a CDP session is attached to it): its start-up is not in the time.
//   Chromium's page emulation does not reach a service worker's own fetches: the worker's target
//   gets the same Network.emulateNetworkConditions, and its HTTP cache disabled as the page's.
// Engine cases (HTTP/1.1; each runs only on the projects it is for, see caseFits):
//   a   Phaser 4 (HEADLESS), one scene whose preload queues `this.load.binary(path, path)` for
//       every file, loose: from preload until the loader's `complete` (issue 7's case (a))
//   d   the same scene with `this.load.awkbIndex(…, { cache: null })` queued first
//       (import 'awake-bundle/phaser'); aim: d ≤ 1.2× its bound, d ≤ 1/12 of a on small at 40 ms
//   dc  d with the adapter's default cache (openBrowserCache) on fresh storage
//   bl  Babylon 9 (Engine on a canvas, WebGL by SwiftShader), `ImportMeshAsync(url, scene)` of
//       every .glb of the glb project at once, loose: until every mesh is imported
//   ba  the same after `registerAwkb({ indexUrl, root, cache: null })`; aim: ba ≤ 1.2× its bound
//   bm  the same models fetched first (untimed), then imported from memory: Babylon's own parse
//       and WebGL uploads, the part of bl and ba that no network or bundle can take away
// Bounds: a and bl as b (loose), d, dc, ba and sw as c1 (bundled: 2 round trips + one-file fetch +
// one SHA-256 pass), sww as f (reading the store directly). Projects small and small4k take a, d and dc; glb (real glTF 2.0 binaries, the
// big project's sizes; glb20 is a 20-file, 25 MB version for trying) takes only bl and ba.
//
// Every sample runs in a fresh Chromium on a fresh profile with the HTTP cache disabled.
// Plain Node + puppeteer-core, no jest; no assertions: it prints numbers.
import { execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { zipSync } from 'fflate';
import puppeteer from 'puppeteer-core';
import { planProject, random } from './projects.mjs';
import { CHROMIUM_ARGS } from './chromium.mjs';
import { accepts, freePort } from './nginx-backend.mjs';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const BENCH_DIR = join(ROOT, '.bench', 'reader');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const NGINX = '/usr/sbin/nginx';
const KiB = 1024;
const MiB = 1024 * KiB;
const MB = 1e6;
/** Bump when the generator changes, so kept projects are made again. */
const GENERATOR_VERSION = 2;
/** Loose fetches in flight at once (see looseLoad in the page). */
const LOOSE_IN_FLIGHT = 128;
/** A cell whose first round has a sample slower than this runs at most 3 rounds. */
const SLOW_SAMPLE_MS = 20_000;

// The benches' flags (bench/chromium.mjs); nginx's certificate is self-signed, made by this script.
const READER_CHROMIUM_ARGS = [...CHROMIUM_ARGS, '--enable-unsafe-swiftshader', '--ignore-certificate-errors'];

// ---------------------------------------------------------------------------------------------
// Options

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : args[at + 1];
};
const list = (name, fallback) =>
  option(name, fallback)
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

const CASES = {
  b: { label: 'loose, fetch, HTTP/1.1', kind: 'loose', protocol: 'h1' },
  b2: { label: 'loose, fetch, HTTP/2', kind: 'loose', protocol: 'h2' },
  c1: { label: 'reader, no cache, HTTP/1.1', kind: 'reader', protocol: 'h1', cache: false },
  c2: { label: 'reader, no cache, HTTP/2', kind: 'reader', protocol: 'h2', cache: false },
  cc: { label: 'reader + browser cache, cold, HTTP/1.1', kind: 'reader', protocol: 'h1', cache: true },
  cc2: { label: 'reader + browser cache, cold, HTTP/2', kind: 'reader', protocol: 'h2', cache: true },
  e: { label: 'one zip + fflate, HTTP/1.1', kind: 'zip', protocol: 'h1' },
  f: { label: 'reader + browser cache, warm, HTTP/1.1', kind: 'warm', protocol: 'h1', cache: true },
  f2: { label: 'reader + browser cache, warm, HTTP/2', kind: 'warm', protocol: 'h2', cache: true },
  // The engines' own loaders; `bound` says which reader case's bound is theirs.
  a: { label: 'Phaser, loose, its loader, HTTP/1.1', kind: 'phaser', page: 'phaser', bound: 'loose', protocol: 'h1' },
  d: {
    label: 'Phaser + adapter, no cache, HTTP/1.1',
    kind: 'phaser',
    page: 'phaser',
    bound: 'reader',
    protocol: 'h1',
    adapter: true,
    cache: false,
  },
  dc: {
    label: 'Phaser + adapter + browser cache, cold',
    kind: 'phaser',
    page: 'phaser',
    bound: 'reader',
    protocol: 'h1',
    adapter: true,
    cache: true,
  },
  bl: { label: 'Babylon, loose .glb, HTTP/1.1', kind: 'babylon', page: 'babylon', bound: 'loose', protocol: 'h1' },
  ba: {
    label: 'Babylon + registerAwkb, no cache, HTTP/1.1',
    kind: 'babylon',
    page: 'babylon',
    bound: 'reader',
    protocol: 'h1',
    adapter: true,
    cache: false,
  },
  // Babylon's own work alone: no network in the time, so no bound.
  bm: { label: 'Babylon, .glb already in memory', kind: 'babylon', page: 'babylon', bound: 'none', protocol: 'h1', fromMemory: true },
  // The service worker: the page's plain fetches of the project's URLs, answered by it.
  sw: { label: 'service worker, cold, HTTP/1.1', kind: 'sw', worker: true, bound: 'reader', protocol: 'h1', cache: true },
  sww: { label: 'service worker, warm, HTTP/1.1', kind: 'sw', worker: true, warm: true, bound: 'warm', protocol: 'h1' },
};
const BUNDLED_COLD = ['c1', 'c2', 'cc', 'cc2'];

/** "Many small files": a 2D game's scene; "big assets": 200 files of 0.2–8 MB. */
const PROJECTS = {
  small: { label: 'many small files, 1,000', shape: 'scene', files: 1000, seed: 0x5eed0001 },
  small4k: { label: 'many small files, 4,000', shape: 'scene', files: 4000, seed: 0x5eed0004 },
  big: { label: 'big assets, 200', shape: 'big', files: 200, seed: 0x5eed0b16, totalBytes: 250 * MB, minBytes: 0.2 * MB, maxBytes: 8 * MB },
  // The big project's sizes (same seed) as valid glTF 2.0 binaries, for Babylon's glTF loader.
  glb: {
    label: 'big glTF models, 200 .glb',
    shape: 'glb',
    files: 200,
    seed: 0x5eed0b16,
    totalBytes: 250 * MB,
    minBytes: 0.2 * MB,
    maxBytes: 8 * MB,
  },
  glb20: {
    label: 'big glTF models, 20 .glb (scaled down)',
    shape: 'glb',
    files: 20,
    seed: 0x5eed0b16,
    totalBytes: 25 * MB,
    minBytes: 0.2 * MB,
    maxBytes: 8 * MB,
  },
};

/**
 * The projects a case is for: Babylon's load glTF, which only the glb projects hold; Phaser's
 * are issue 7's many-small-files scenes; the reader's run on all but the glb projects, whose
 * sizes are the big project's already.
 */
function caseFits(id, project) {
  const { kind } = CASES[id];
  if (kind === 'babylon') return project.spec.shape === 'glb';
  if (kind === 'phaser') return project.spec.shape === 'scene';
  return project.spec.shape !== 'glb';
}

function parseOptions() {
  const options = {
    report: args.includes('--report'),
    projects: list('projects', 'small,small4k,big,glb'),
    latencies: list('latency', '0,40,150').map(Number),
    bandwidths: list('bandwidth', '0,100,20').map(Number),
    cases: list('cases', 'b,b2,c1,c2,cc,e,f,a,d,bl,ba,bm').filter((id) => id !== 'none'),
    runs: Number(option('runs', '5')),
    extras: list('extras', 'verify,publish').filter((extra) => extra !== 'none'),
    out: option('out', undefined),
    load: option('load', 'together'),
    title: option('title', undefined),
    trace: option('trace', undefined),
  };
  if (!['sequential', 'together'].includes(options.load))
    usage('--load is sequential (prefetch, then the reads) or together (prefetch and reads at once)');
  for (const project of options.projects) if (!PROJECTS[project]) usage(`unknown project ${project} (${Object.keys(PROJECTS).join(', ')})`);
  for (const id of options.cases) if (!CASES[id]) usage(`unknown case ${id} (${Object.keys(CASES).join(', ')})`);
  for (const extra of options.extras) if (!['verify', 'publish'].includes(extra)) usage(`unknown extra ${extra} (verify, publish, none)`);
  if (!(Number.isInteger(options.runs) && options.runs >= 1)) usage('--runs must be a positive integer');
  if ([...options.latencies, ...options.bandwidths].some((n) => !(n >= 0)))
    usage('--latency and --bandwidth take numbers ≥ 0 (bandwidth 0 = unlimited)');
  return options;
}

function usage(message) {
  console.error(`bench/reader.mjs: ${message}`);
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------
// Projects: generated once from a fixed seed into .bench/reader/<name>/, then reused

/** The JSON chunk of a generated .glb, padded with spaces to this length (glTF 2.0 §4.4.3.1). */
const GLB_JSON_BYTES = 1024;
const GLB_OVERHEAD = 12 + 8 + GLB_JSON_BYTES + 8;

/**
 * A glTF 2.0 binary of at most `size` bytes: one node, one mesh, one non-indexed triangle list
 * whose POSITION buffer (the BIN chunk) holds random floats in [-1, 1) from `rng`, with the
 * exact min/max the spec requires. Babylon's glTF loader parses it as any exported model.
 */
function glbBytes(size, rng, name) {
  const vertices = Math.floor((size - GLB_OVERHEAD) / 36) * 3;
  const binBytes = vertices * 12;
  const bytes = new Uint8Array(GLB_OVERHEAD + binBytes);
  const positions = new Float32Array(bytes.buffer, GLB_OVERHEAD, vertices * 3);
  const min = [Infinity, Infinity, Infinity];
  const max = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < positions.length; i++) {
    positions[i] = rng.next() / 2 ** 31 - 1;
    // min/max of the stored float32 values, which JSON then writes exactly.
    const stored = positions[i];
    const axis = i % 3;
    if (stored < min[axis]) min[axis] = stored;
    if (stored > max[axis]) max[axis] = stored;
  }
  const json = JSON.stringify({
    asset: { version: '2.0', generator: 'awake-bundle bench/reader.mjs' },
    scene: 0,
    scenes: [{ nodes: [0] }],
    nodes: [{ mesh: 0, name }],
    meshes: [{ name, primitives: [{ attributes: { POSITION: 0 }, mode: 4 }] }],
    buffers: [{ byteLength: binBytes }],
    bufferViews: [{ buffer: 0, byteOffset: 0, byteLength: binBytes, target: 34962 }],
    accessors: [{ bufferView: 0, componentType: 5126, count: vertices, type: 'VEC3', min, max }],
  });
  if (json.length > GLB_JSON_BYTES) throw new Error(`glb JSON of ${json.length} bytes does not fit in ${GLB_JSON_BYTES}`);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, 0x46546c67, true); // "glTF"
  view.setUint32(4, 2, true);
  view.setUint32(8, bytes.length, true);
  view.setUint32(12, GLB_JSON_BYTES, true);
  view.setUint32(16, 0x4e4f534a, true); // "JSON"
  bytes.set(new TextEncoder().encode(json.padEnd(GLB_JSON_BYTES, ' ')), 20);
  view.setUint32(20 + GLB_JSON_BYTES, binBytes, true);
  view.setUint32(24 + GLB_JSON_BYTES, 0x004e4942, true); // "BIN\0"
  return { bytes, vertices };
}

/**
 * The site folder that both servers serve: loose files under files/, the published project
 * under published/, project.zip, bound.bin (one file as large as the largest case, fetched by
 * range for the bound), the page, and copies of dist/ and the two browser dependencies.
 */
async function prepareProject(name) {
  const spec = PROJECTS[name];
  const dir = join(BENCH_DIR, name);
  const manifestPath = join(dir, 'manifest.json');
  let manifest = existsSync(manifestPath) ? JSON.parse(readFileSync(manifestPath, 'utf8')) : undefined;
  if (manifest?.generatorVersion !== GENERATOR_VERSION) {
    const started = Date.now();
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const files = planProject(spec);
    const rng = random(spec.seed ^ 0xa5a5a5a5);
    const glb = spec.shape === 'glb';
    const zipInput = {};
    for (const file of files) {
      let bytes;
      if (glb) {
        ({ bytes, vertices: file.vertices } = glbBytes(file.size, rng, file.path));
        file.size = bytes.length;
      } else {
        bytes = rng.fill(new Uint8Array(file.size));
      }
      const path = join(dir, 'files', ...file.path.split('/'));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, bytes);
      // The glb projects are for Babylon's cases only: no zip (case e) of them.
      if (!glb) zipInput[file.path] = [bytes, { level: 0 }];
    }
    let zipBytes = 0;
    if (!glb) {
      const zip = zipSync(zipInput);
      writeFileSync(join(dir, 'project.zip'), zip);
      zipBytes = zip.length;
    }
    if (glb) writeFileSync(join(dir, 'warmup.glb'), glbBytes(GLB_OVERHEAD + 36, random(1), 'warmup').bytes);
    manifest = {
      generatorVersion: GENERATOR_VERSION,
      files,
      looseBytes: files.reduce((sum, f) => sum + f.size, 0),
      zipBytes,
      vertices: glb ? files.reduce((sum, f) => sum + f.vertices, 0) : undefined,
    };
    writeFileSync(manifestPath, JSON.stringify(manifest));
    console.error(
      `${name}: generated ${files.length} files, ${(manifest.looseBytes / MB).toFixed(1)} MB in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  // Published again on every start: the bundles and index are those of the code under test.
  rmSync(join(dir, 'published'), { recursive: true, force: true });
  const summary = JSON.parse(
    execFileSync(process.execPath, [CLI, join(dir, 'files'), '--out', join(dir, 'published'), '--json'], { encoding: 'utf8' }),
  );
  const index = JSON.parse(readFileSync(join(dir, 'published', 'project.index.json'), 'utf8'));
  const indexBytes = statSync(join(dir, 'published', 'project.index.json')).size;
  const bundledBytes = indexBytes + index.bundles.reduce((sum, b) => sum + b.sizeBytes, 0);
  const boundBytes = Math.max(bundledBytes, manifest.looseBytes, manifest.zipBytes);
  const boundPath = join(dir, 'bound.bin');
  if (!existsSync(boundPath) || statSync(boundPath).size < boundBytes) writeRandomFile(boundPath, boundBytes, spec.seed ^ 0x0b0b0b0b);
  copyPageFiles(dir, spec);
  // The service worker (cases sw, sww), its index URL baked in, at the top of the site.
  execFileSync(process.execPath, [CLI, 'sw', '--out', dir, '--index', 'published/project.index.json'], { stdio: 'ignore' });
  return {
    name,
    dir,
    spec,
    files: manifest.files,
    looseBytes: manifest.looseBytes,
    zipBytes: manifest.zipBytes,
    vertices: manifest.vertices,
    bundledBytes,
    indexBytes,
    bundles: index.bundles.length,
    publishSeconds: summary.seconds,
  };
}

function writeRandomFile(path, size, seed) {
  const rng = random(seed);
  const chunk = new Uint8Array(4 * MiB);
  const fd = openSync(path, 'w');
  try {
    for (let left = size; left > 0; left -= chunk.length) writeSync(fd, rng.fill(chunk), 0, Math.min(left, chunk.length));
  } finally {
    closeSync(fd);
  }
}

function copyPageFiles(dir, spec) {
  for (const part of ['dist', 'node_modules']) rmSync(join(dir, part), { recursive: true, force: true });
  cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'node_modules', '@noble', 'hashes'), join(dir, 'node_modules', '@noble', 'hashes'), { recursive: true });
  cpSync(join(ROOT, 'node_modules', 'fflate'), join(dir, 'node_modules', 'fflate'), { recursive: true });
  writeFileSync(join(dir, 'bench.html'), PAGE_HTML);
  // The engines, for their cases' pages (the server follows no link out of the folder: copies).
  if (spec.shape === 'scene') {
    mkdirSync(join(dir, 'node_modules', 'phaser', 'dist'), { recursive: true });
    cpSync(join(ROOT, 'node_modules', 'phaser', 'dist', 'phaser.esm.js'), join(dir, 'node_modules', 'phaser', 'dist', 'phaser.esm.js'));
    writeFileSync(
      join(dir, 'phaser.html'),
      enginePage(phaserPageScript, {
        phaser: '/node_modules/phaser/dist/phaser.esm.js',
        'awake-bundle/phaser': '/dist/adapters/phaser/index.js',
      }),
    );
  }
  if (spec.shape === 'glb') {
    const scripts = (source) => statSync(source).isDirectory() || /\.js$|package\.json$/.test(source);
    for (const name of ['core', 'loaders'])
      cpSync(join(ROOT, 'node_modules', '@babylonjs', name), join(dir, 'node_modules', '@babylonjs', name), {
        recursive: true,
        filter: scripts,
      });
    writeFileSync(
      join(dir, 'babylon.html'),
      enginePage(babylonPageScript, {
        '@babylonjs/core/': '/node_modules/@babylonjs/core/',
        '@babylonjs/loaders/': '/node_modules/@babylonjs/loaders/',
        'awake-bundle/babylon': '/dist/adapters/babylon/index.js',
      }),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// The page: every measurement happens in it, timed with performance.now()

const PAGE_IMPORTS = {
  '@noble/hashes/': '/node_modules/@noble/hashes/',
  'awake-bundle': '/dist/core/internal.js',
  fflate: '/node_modules/fflate/esm/browser.js',
};
// No favicon request (a 404 in every page's console).
const PAGE_HTML = `<!doctype html><meta charset="utf-8"><title>reader bench</title><link rel="icon" href="data:,">
<script type="importmap">${JSON.stringify({ imports: PAGE_IMPORTS })}</script>
<script type="module">(${pageScript.toString()})();</script>`;

/**
 * A page for an engine's cases: the bench page's jobs and measure(), plus the engine's jobs, which
 * its script (run first: module scripts run in order) leaves in globalThis.engineJobs, with
 * globalThis.engineReady settled once the engine's modules are in and warmed up.
 */
function enginePage(script, imports) {
  return `<!doctype html><meta charset="utf-8"><title>reader bench, engines</title><link rel="icon" href="data:,">
<script type="importmap">${JSON.stringify({ imports: { ...PAGE_IMPORTS, ...imports } })}</script>
<body><canvas id="canvas" width="320" height="240"></canvas>
<script type="module">(${script.toString()})();</script>
<script type="module">(${pageScript.toString()})();</script>`;
}

/** Runs in the page (serialized into bench.html): defines globalThis.bench. */
function pageScript() {
  performance.setResourceTimingBufferSize(1_000_000);
  const longTasks = [];
  new PerformanceObserver((found) =>
    longTasks.push(...found.getEntries().map((e) => ({ start: e.startTime, duration: e.duration }))),
  ).observe({ type: 'longtask', buffered: true });
  const modules = Promise.all([import('awake-bundle'), import('fflate'), import('@noble/hashes/sha2.js')]);
  const total = (arrays) => arrays.reduce((sum, bytes) => sum + bytes.length, 0);
  const sha256 = (bytes) => crypto.subtle.digest('SHA-256', bytes);

  async function readerLoad({ indexUrl, cache, load }) {
    const [core] = await modules;
    const source = await core.IndexedAssetSource.open({ indexUrl, cache: cache ? await core.openBrowserCache() : null });
    const paths = source.paths();
    let progressCalls = 0;
    const prefetch = source.prefetch(paths, { onProgress: () => progressCalls++ });
    // together: the reads start with the prefetch and share its requests (as the engine adapters
    // do); sequential: every read after the prefetch has resolved (verified, held and stored).
    if (load === 'sequential') await prefetch;
    const files = await Promise.all(paths.map((path) => source.read(path)));
    const inHandAt = performance.now();
    // The reader writes the cache after the load; the time until every file is in hand is the
    // load, and the writes' extra time is reported beside it (storedAfterMs).
    await prefetch;
    if (cache) await source.whenStored();
    return { files: files.length, fileBytes: total(files), progressCalls, inHandAt, storedAfterMs: performance.now() - inHandAt };
  }

  /**
   * Every file by its own fetch, at most `inFlight` at a time: Chromium fails a page's requests
   * beyond ~1,400 outstanding (net::ERR_INSUFFICIENT_RESOURCES), and a cap of 128 (nginx's
   * HTTP/2 stream limit, far above HTTP/1.1's six connections) costs neither protocol anything.
   */
  async function looseLoad({ urls, inFlight }) {
    const files = new Array(urls.length);
    let next = 0;
    const lane = async () => {
      while (next < urls.length) {
        const at = next++;
        files[at] = new Uint8Array(await (await fetch(urls[at])).arrayBuffer());
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, urls.length) }, lane));
    return { files: files.length, fileBytes: total(files) };
  }

  /** Registers the service worker and waits until it controls this page (as test/service-worker.test.ts does). */
  async function swRegister({ script }) {
    await navigator.serviceWorker.register(script);
    await navigator.serviceWorker.ready;
    if (!navigator.serviceWorker.controller) {
      await new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true }));
    }
    return { files: 0, fileBytes: 0 };
  }

  /**
   * The service worker's load: the index read again, then the loose load (plain fetches, `inFlight`
   * at a time) of URLs the worker answers; every answer must be a 200. Then, untimed (storedAfterMs), until the worker's cache holds every member.
   */
  async function swLoad({ urls, inFlight, storedKeys }) {
    // The index first, as a worker that starts reads it: `awkb:refresh` fetches it (no-cache) and
    // the worker serves from it once checked.
    await new Promise((resolve, reject) => {
      const channel = new MessageChannel();
      channel.port1.onmessage = ({ data }) =>
        data.type === 'awkb:refreshed' ? resolve() : reject(new Error(`awkb:refresh: ${data.message}`));
      navigator.serviceWorker.controller.postMessage({ type: 'awkb:refresh' }, [channel.port2]);
    });
    const files = new Array(urls.length);
    let next = 0;
    const lane = async () => {
      while (next < urls.length) {
        const at = next++;
        const response = await fetch(urls[at]);
        if (response.status !== 200) throw new Error(`${urls[at]}: status ${response.status} (${await response.text()})`);
        files[at] = new Uint8Array(await response.arrayBuffer());
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, urls.length) }, lane));
    const inHandAt = performance.now();
    if (storedKeys) await storeFilled({ keys: storedKeys });
    return { files: files.length, fileBytes: total(files), inHandAt, storedAfterMs: performance.now() - inHandAt };
  }

  /**
   * Waits until the reader's IndexedDB store (database 'awake-bundle', store 'entries', key =
   * SHA-256; the service worker's default cache) holds every member in `keys`. Opens the
   * database only once it exists, so the page never creates it without its store.
   */
  async function storeFilled({ keys: wantedKeys, timeoutMs = 300_000 }) {
    const wanted = new Set(wantedKeys);
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const exists = (await indexedDB.databases()).some((database) => database.name === 'awake-bundle');
      if (exists) {
        const database = await openStore();
        const keys = database.objectStoreNames.contains('entries')
          ? await new Promise((resolve, reject) => {
              const request = database.transaction('entries', 'readonly').objectStore('entries').getAllKeys();
              request.onsuccess = () => resolve(request.result);
              request.onerror = () => reject(request.error);
            })
          : [];
        database.close();
        const held = keys.filter((key) => wanted.has(key)).length;
        if (held === wanted.size) return { files: held, fileBytes: 0 };
      }
      if (performance.now() > deadline) throw new Error(`the store did not fill within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  function openStore() {
    return new Promise((resolve, reject) => {
      const request = indexedDB.open('awake-bundle');
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  }

  async function zipLoad({ url }) {
    const [, fflate] = await modules;
    const zip = new Uint8Array(await (await fetch(url)).arrayBuffer());
    const files = Object.values(fflate.unzipSync(zip));
    return { files: files.length, fileBytes: total(files) };
  }

  /** The bound's network part: `bytes` bytes as one response (a range of one big file). */
  async function oneFile({ url, bytes }) {
    const response = await fetch(url, { headers: { Range: `bytes=0-${bytes - 1}` } });
    const body = new Uint8Array(await response.arrayBuffer());
    if (body.length !== bytes) throw new Error(`${url}: ${body.length} bytes, asked for ${bytes} (status ${response.status})`);
    globalThis.lastOneFile = body;
    return { fileBytes: body.length };
  }

  /** One SHA-256 pass over the bytes oneFile fetched, with WebCrypto. */
  async function digestOnce() {
    const bytes = globalThis.lastOneFile;
    globalThis.lastOneFile = undefined;
    await sha256(bytes);
    return { fileBytes: bytes.length };
  }

  /**
   * The warm bound: the index over the network, then every member straight from the reader's
   * IndexedDB layout (database 'awake-bundle', store 'entries', key = SHA-256), one transaction
   * per bundle, each member hashed once.
   */
  async function directFromStore({ indexUrl }) {
    const index = await (await fetch(indexUrl)).json();
    const database = await openStore();
    const byBundle = new Map();
    for (const file of index.files) {
      const keys = byBundle.get(file.bundle) ?? new Set();
      keys.add(file.sha256);
      byBundle.set(file.bundle, keys);
    }
    const read = (keys) =>
      new Promise((resolve, reject) => {
        const transaction = database.transaction('entries', 'readonly');
        const store = transaction.objectStore('entries');
        const values = [...keys].map((key) => store.get(key));
        transaction.oncomplete = () => resolve(values.map((request) => request.result));
        transaction.onabort = () => reject(transaction.error);
      });
    const members = (
      await Promise.all(
        [...byBundle.values()].map(async (keys) => {
          const values = await read(keys);
          if (values.some((value) => !(value instanceof Uint8Array))) throw new Error('the store lacks a member: was it filled?');
          await Promise.all(values.map(sha256));
          return values;
        }),
      )
    ).flat();
    database.close();
    return { files: members.length, fileBytes: total(members) };
  }

  /** Verification throughput on bundles already in memory: the reader's path, WebCrypto, noble. */
  async function verification({ indexUrl, rounds }) {
    const [core, , noble] = await modules;
    const index = await (await fetch(indexUrl)).json();
    const bundles = await Promise.all(
      index.bundles.map(async (listing) => ({
        listing,
        bytes: new Uint8Array(await (await fetch(new URL(listing.url, indexUrl))).arrayBuffer()),
        members: index.files
          .filter((f) => f.bundle === listing.sha256)
          .map((f) => ({ key: f.id ?? f.path, offset: f.offset, sizeBytes: f.sizeBytes, sha256: f.sha256 })),
      })),
    );
    const bytes = bundles.reduce((sum, b) => sum + b.bytes.length, 0);
    // The reader's path: acceptBundle in the shared worker pool where core has it (it takes the
    // bytes away, so each round gets copies made before the clock starts), else verifyBundle.
    let copies = [];
    const readerPath =
      core.acceptBundle && core.sharedDigestPool
        ? () => Promise.all(bundles.map((b, i) => core.acceptBundle(copies[i], b.listing, b.members, core.sharedDigestPool())))
        : () => Promise.all(bundles.map((b) => core.verifyBundle(b.bytes, b.listing, b.members)));
    const path = core.acceptBundle && core.sharedDigestPool ? 'acceptBundle (worker pool)' : 'verifyBundle';
    const ways = {
      reader: readerPath,
      webcrypto: () => Promise.all(bundles.map((b) => sha256(b.bytes))),
      noble: async () => bundles.forEach((b) => noble.sha256(b.bytes)),
    };
    const ms = Object.fromEntries(Object.keys(ways).map((way) => [way, []]));
    for (let round = 0; round < rounds; round++) {
      for (const [way, run] of Object.entries(ways)) {
        copies = bundles.map((b) => b.bytes.slice());
        const started = performance.now();
        await run();
        ms[way].push(performance.now() - started);
      }
    }
    return { bytes, bundles: bundles.length, path, roundsMs: ms };
  }

  const jobs = {
    readerLoad,
    looseLoad,
    swRegister,
    swLoad,
    storeFilled,
    zipLoad,
    oneFile,
    digestOnce,
    directFromStore,
    verification,
    ...globalThis.engineJobs,
  };

  /** Runs one job and says how long it took, what went over the network, and the long tasks. */
  async function measure(job, input) {
    performance.clearResourceTimings();
    const started = performance.now();
    const result = await jobs[job](input);
    const ended = performance.now();
    const inHandAt = result.inHandAt ?? ended;
    // An engine's load starts in its scene (startedAt), after the game or scene is made.
    const loadStarted = result.startedAt ?? started;
    // Long tasks are reported after they end; give the observer a turn.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const resources = performance.getEntriesByType('resource').filter((e) => e.startTime >= started && e.startTime <= ended);
    const tasks = longTasks.filter((t) => t.start + t.duration > started && t.start < ended);
    return {
      ...result,
      ms: inHandAt - loadStarted,
      requests: resources.length,
      transferBytes: resources.reduce((sum, e) => sum + e.transferSize, 0),
      bodyBytes: resources.reduce((sum, e) => sum + e.encodedBodySize, 0),
      protocols: [...new Set(resources.map((e) => e.nextHopProtocol))],
      longTasks: tasks.length,
      longestTaskMs: Math.max(0, ...tasks.map((t) => t.duration)),
    };
  }

  globalThis.bench = { ready: Promise.all([modules, globalThis.engineReady]).then(() => true), measure };
}

/**
 * Runs in the Phaser page: phaserLoad, a real Phaser 4 game (HEADLESS: no rendering, and binary
 * files are not decoded) whose one scene queues every file with `this.load.binary(path, path)`,
 * after `this.load.awkbIndex(…)` when `index` is given.
 */
function phaserPageScript() {
  const modules = Promise.all([import('phaser'), import('awake-bundle/phaser')]);

  async function phaserLoad({ baseURL, paths, index }) {
    const [Phaser] = await modules;
    return new Promise((resolve, reject) => {
      const failed = [];
      class Load extends Phaser.Scene {
        preload() {
          const startedAt = performance.now();
          this.load.on('loaderror', (file) => failed.push(file.key));
          this.load.once('complete', () => {
            const inHandAt = performance.now();
            const finish = async () => {
              const held = paths.map((path) => this.cache.binary.get(path)).filter(Boolean);
              const files = held.length;
              const fileBytes = held.reduce((sum, buffer) => sum + buffer.byteLength, 0);
              // The cache writes go on after `complete`; timed apart, as in the reader's cases.
              if (index?.cache) await this.registry.get('assets')?.whenStored();
              const storedAfterMs = performance.now() - inHandAt;
              if (failed.length) throw new Error(`Phaser failed ${failed.length} files, e.g. ${failed[0]}`);
              return { files, fileBytes, startedAt, inHandAt, ...(index?.cache ? { storedAfterMs } : {}) };
            };
            finish()
              .then(resolve, reject)
              .finally(() => setTimeout(() => game.destroy(true)));
          });
          if (index) this.load.awkbIndex('assets', index.url, { root: index.root, ...(index.cache ? {} : { cache: null }) });
          for (const path of paths) this.load.binary(path, path);
        }
      }
      const game = new Phaser.Game({
        type: Phaser.HEADLESS,
        width: 64,
        height: 64,
        banner: false,
        audio: { noAudio: true },
        loader: { baseURL },
        scene: [Load],
      });
    });
  }

  globalThis.engineJobs = { phaserLoad };
  globalThis.engineReady = modules;
}

/**
 * Runs in the Babylon page: babylonLoad, `ImportMeshAsync(url, scene)` of every url at once into
 * one scene of a real Engine (WebGL on the page's canvas; SwiftShader here), after
 * `registerAwkb(…)` when `index` is given. Vertex buffers go to WebGL as each mesh is made.
 */
function babylonPageScript() {
  const modules = Promise.all([
    import('@babylonjs/core/Engines/engine.js'),
    import('@babylonjs/core/scene.js'),
    import('@babylonjs/core/Loading/sceneLoader.js'),
    import('awake-bundle/babylon'),
    import('@babylonjs/core/Loading/loadingScreen.js'),
    import('@babylonjs/loaders/glTF/index.js'),
  ]);
  let engine;

  /** Fetches `urls` into memory for a later babylonLoad({ fromMemory: true }). */
  let inMemory = [];
  async function babylonFetch({ urls }) {
    inMemory = await Promise.all(urls.map(async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer())));
    return { files: inMemory.length, fileBytes: total(inMemory) };
  }

  async function babylonLoad({ urls, index, fromMemory }) {
    const [, { Scene }, { ImportMeshAsync }, adapter] = await modules;
    const scene = new Scene(engine);
    const startedAt = performance.now();
    const registration = index ? await adapter.registerAwkb({ indexUrl: index.url, root: index.root, cache: null }) : undefined;
    const sources = fromMemory ? inMemory.splice(0) : urls;
    const results = await Promise.all(
      sources.map((source) => ImportMeshAsync(source, scene, fromMemory ? { pluginExtension: '.glb' } : {})),
    );
    const inHandAt = performance.now();
    const meshes = results.flatMap((result) => result.meshes).filter((mesh) => mesh.getTotalVertices() > 0);
    const vertices = meshes.reduce((sum, mesh) => sum + mesh.getTotalVertices(), 0);
    registration?.dispose();
    scene.dispose();
    return { files: urls.length, meshes: meshes.length, vertices, startedAt, inHandAt };
  }

  // Babylon imports parts of itself on first use (glTF extensions, the default PBR material, the
  // shaders that decode its BRDF texture): one unmeasured load of a tiny model, until its scene is
  // ready, brings them in before any emulation, so no case pays for (or counts) them.
  async function warmUp() {
    const [{ Engine }, { Scene }, { ImportMeshAsync, SceneLoader }] = await modules;
    SceneLoader.ShowLoadingScreen = false;
    engine = new Engine(document.getElementById('canvas'), false);
    const scene = new Scene(engine);
    await ImportMeshAsync('/warmup.glb', scene);
    await scene.whenReadyAsync();
    scene.dispose();
  }

  const total = (arrays) => arrays.reduce((sum, bytes) => sum + bytes.length, 0);
  globalThis.engineJobs = { babylonLoad, babylonFetch };
  globalThis.engineReady = warmUp();
}

// ---------------------------------------------------------------------------------------------
// Servers: `serve` for HTTP/1.1, nginx with TLS for HTTP/2

/** Everything started, so a failure or Ctrl-C stops it all. */
const running = new Set();
function track(stop) {
  const entry = { stop };
  running.add(entry);
  return async () => {
    running.delete(entry);
    await stop();
  };
}
async function stopEverything() {
  for (const entry of [...running].reverse()) {
    running.delete(entry);
    await entry.stop().catch((error) => console.error(`cleanup: ${error.message}`));
  }
}

/**
 * Requests and body bytes as the server saw them: the rewritten reader fetches in Web Workers,
 * whose requests the page's Resource Timing does not list. `mark()` then `since(mark)`.
 */
function requestCounter(readLines) {
  return {
    mark: () => readLines().length,
    since(mark) {
      const lines = readLines().slice(mark);
      return { requests: lines.length, bodyBytes: lines.reduce((sum, line) => sum + line.bytes, 0) };
    },
  };
}

async function startServe(dir) {
  const { startStaticServer } = await import(join(ROOT, 'dist', 'core', 'node', 'index.js'));
  const lines = [];
  // serve's access log: "<time> <method> <target> <status> <bytes>B <ms>ms …"
  const log = (line) => lines.push({ bytes: Number(/ (\d+)B /.exec(line)?.[1] ?? 0) });
  const server = await startStaticServer({ root: dir, host: '127.0.0.1', log });
  return { origin: server.url.replace(/\/$/, ''), counter: requestCounter(() => lines), stop: track(() => server.close()) };
}

function nginxConfig(folder, root, port) {
  const quoted = (path) => JSON.stringify(path);
  return `daemon off;
master_process off;
worker_processes 1;
pid ${quoted(join(folder, 'nginx.pid'))};
error_log stderr;
events { worker_connections 1024; }
http {
  log_format bench '$request_method $status $body_bytes_sent';
  access_log ${quoted(join(folder, 'access.log'))} bench;
  sendfile on;
  tcp_nopush on;
  types { text/html html; text/javascript js mjs; application/json json; }
  default_type application/octet-stream;
  # One connection carries a whole load (4,000 requests and more); the default closes it after 1,000.
  keepalive_requests 1000000;
  # Under emulated 20 Mbit/s, a stream among a thousand can wait minutes for Chromium to read it:
  # nginx's 60 s defaults would reset the connection (and fail every fetch on it).
  keepalive_timeout 3600s;
  send_timeout 3600s;
  http2_idle_timeout 3600s;
  http2_recv_timeout 3600s;
  client_body_temp_path ${quoted(join(folder, 'client_body'))};
  proxy_temp_path ${quoted(join(folder, 'proxy'))};
  fastcgi_temp_path ${quoted(join(folder, 'fastcgi'))};
  uwsgi_temp_path ${quoted(join(folder, 'uwsgi'))};
  scgi_temp_path ${quoted(join(folder, 'scgi'))};
  server {
    # nginx 1.22 (Debian 12): http2 is a listen parameter ("http2 on;" came in 1.25.1).
    listen 127.0.0.1:${port} ssl http2;
    ssl_certificate ${quoted(join(folder, 'cert.pem'))};
    ssl_certificate_key ${quoted(join(folder, 'key.pem'))};
    root ${quoted(root)};
  }
}
`;
}

async function startNginx(dir) {
  const folder = mkdtempSync(join(tmpdir(), 'awake-bench-nginx-'));
  const removeFolder = track(async () => rmSync(folder, { recursive: true, force: true }));
  for (const name of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(folder, name));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(folder, 'key.pem'),
      '-out',
      join(folder, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  let failure = '';
  for (let attempt = 1; attempt <= 5; attempt++) {
    const port = await freePort();
    writeFileSync(join(folder, 'nginx.conf'), nginxConfig(folder, dir, port));
    const child = spawn(NGINX, ['-p', folder, '-e', 'stderr', '-c', join(folder, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise((done) => child.once('exit', done));
    const stop = track(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(killer);
      }
    });
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && child.exitCode === null && !(await accepts(port))) await new Promise((wake) => setTimeout(wake, 25));
    if (child.exitCode === null && (await accepts(port))) {
      const readLines = () =>
        existsSync(join(folder, 'access.log'))
          ? readFileSync(join(folder, 'access.log'), 'utf8')
              .split('\n')
              .filter(Boolean)
              .map((line) => ({ bytes: Number(line.split(' ')[2]) }))
          : [];
      return {
        origin: `https://127.0.0.1:${port}`,
        counter: requestCounter(readLines),
        stop: async () => (await stop(), await removeFolder()),
      };
    }
    await stop();
    failure = stderr.trim();
    if (!/address already in use/i.test(stderr)) break;
  }
  await removeFolder();
  throw new Error(`nginx did not start: ${failure || 'no output'}`);
}

// ---------------------------------------------------------------------------------------------
// Chromium

async function launchChromium() {
  const profile = mkdtempSync(join(tmpdir(), 'awake-bench-chromium-'));
  const removeProfile = track(async () => rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }));
  let browser;
  try {
    browser = await puppeteer.launch({
      executablePath: process.env.PUPPETEER_EXECUTABLE_PATH || '/usr/bin/chromium',
      args: [...READER_CHROMIUM_ARGS, `--user-data-dir=${profile}`],
      headless: true,
      // A loose load of 4,000 files at 20 Mbit/s under emulation can take many minutes.
      protocolTimeout: 3_600_000,
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
  } catch (error) {
    await removeProfile();
    throw error;
  }
  const closeBrowser = track(async () => {
    const child = browser.process();
    const exited = child && child.exitCode === null ? new Promise((done) => child.once('exit', done)) : Promise.resolve();
    await Promise.race([browser.close().catch(() => undefined), new Promise((wake) => setTimeout(wake, 5_000))]);
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  return { browser, close: async () => (await closeBrowser(), await removeProfile()) };
}

/** The bench page (or an engine's, `phaser` or `babylon`) at `origin`, HTTP cache off, under the given network emulation. */
async function openPage(browser, origin, name = 'bench') {
  const page = await browser.newPage();
  page.on('pageerror', (error) => console.error(`[page] ${error}`));
  page.on('console', (message) => message.type() === 'error' && console.error(`[page console] ${message.text()}`));
  await page.setCacheEnabled(false);
  const session = await page.createCDPSession();
  await session.send('Network.enable');
  const goto = async () => {
    await emulate(session, 0, 0);
    await page.goto(`${origin}/${name}.html`, { waitUntil: 'load' });
    await page.evaluate(() => globalThis.bench.ready);
  };
  await goto();
  return {
    page,
    session,
    reload: goto,
    emulate: (latencyMs, mbit) => emulate(session, latencyMs, mbit),
    measure: (job, input) => page.evaluate((job, input) => globalThis.bench.measure(job, input), job, input),
  };
}

/**
 * The running service worker's own CDP session: Chromium applies a page's
 * Network.emulateNetworkConditions to the page's requests only, not to the fetches its service
 * worker makes, so the worker's target gets the same emulation, and its HTTP cache off as the
 * page's. Being attached also keeps Chromium from stopping the worker when idle.
 */
async function workerSession(browser) {
  const target = await browser.waitForTarget((candidate) => candidate.type() === 'service_worker', { timeout: 10_000 });
  const session = await target.createCDPSession();
  await session.send('Network.enable');
  await session.send('Network.setCacheDisabled', { cacheDisabled: true });
  return session;
}

/** Chromium's network emulation: added latency per request and a shared download/upload rate. */
function emulate(session, latencyMs, mbit) {
  const bytesPerSecond = mbit > 0 ? (mbit * MB) / 8 : -1;
  return session.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: latencyMs,
    downloadThroughput: bytesPerSecond,
    uploadThroughput: bytesPerSecond,
  });
}

// ---------------------------------------------------------------------------------------------
// One cell of the grid: a project under one latency and bandwidth

/** What --trace records: the timeline (tasks, network, workers), V8's samples and user timing. */
const TRACE_CATEGORIES = [
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'disabled-by-default-devtools.timeline.stack',
  'v8',
  'v8.execute',
  'disabled-by-default-v8.cpu_profiler',
  'blink.user_timing',
  'loading',
  'toplevel',
];

/** One sample of one case, in a fresh Chromium; with `tracePath`, its timed part traced into that file. */
async function runCase(id, project, servers, latencyMs, mbit, round, load, tracePath) {
  const spec = CASES[id];
  const { origin, counter } = servers[spec.protocol];
  const counted = async (job, input) => {
    const mark = counter.mark();
    if (tracePath) await view.page.tracing.start({ path: tracePath, categories: TRACE_CATEGORIES });
    const sample = await view.measure(job, input).finally(async () => {
      if (tracePath) await view.page.tracing.stop();
    });
    const seen = counter.since(mark);
    return { ...sample, pageRequests: sample.requests, requests: seen.requests, transferBytes: seen.bodyBytes };
  };
  let view;
  const indexUrl = `${origin}/published/project.index.json`;
  const chromium = await launchChromium();
  try {
    view = await openPage(chromium.browser, origin, spec.page);
    if (spec.kind === 'warm') {
      await view.measure('readerLoad', { indexUrl, cache: true, load }); // fills the store, unmeasured
      await view.reload();
      await view.emulate(latencyMs, mbit);
      return await warmAgainstDirect(
        round,
        () => counted('readerLoad', { indexUrl, cache: true, load }),
        () => view.measure('directFromStore', { indexUrl }),
      );
    }
    if (spec.kind === 'sw') return await runWorkerCase(spec, chromium.browser, view, counted, project, origin, latencyMs, mbit, round);
    await view.emulate(latencyMs, mbit);
    if (spec.kind === 'reader') return await counted('readerLoad', { indexUrl, cache: spec.cache, load });
    if (spec.kind === 'zip') return await counted('zipLoad', { url: `${origin}/project.zip` });
    // The engines ask for the loose URLs; with the adapter, those below files/ map to the index.
    const index = spec.adapter ? { url: indexUrl, root: `${origin}/files/`, cache: spec.cache } : undefined;
    if (spec.kind === 'phaser')
      return await counted('phaserLoad', { baseURL: `${origin}/files/`, paths: project.files.map((file) => file.path), index });
    const urls = project.files.map((file) => `${origin}/files/${file.path}`);
    if (spec.fromMemory) await view.measure('babylonFetch', { urls });
    if (spec.kind === 'babylon') return await counted('babylonLoad', { urls, index, fromMemory: spec.fromMemory });
    return await counted('looseLoad', { urls: project.files.map((file) => `${origin}/files/${file.path}`), inFlight: LOOSE_IN_FLIGHT });
  } finally {
    await chromium.close();
  }
}

/** The service worker's file, at the site's top (its scope holds the page and published/). */
const SW_SCRIPT = 'awake-bundle-sw.js';

/**
 * sw and sww: the worker registered and controlling the page (untimed, no emulation), its target
 * emulated as the page; timed: the page asks it to read the index again (`awkb:refresh`), then
 * fetches every file's URL (sw: the members from one request per bundle, on fresh storage; sww:
 * from the worker's IndexedDB cache, filled by an unmeasured load and a reload before). The worker
 * keeps running throughout (this session is attached to it): its start is not in the time.
 */
async function runWorkerCase(spec, browser, view, counted, project, origin, latencyMs, mbit, round) {
  const index = JSON.parse(readFileSync(join(project.dir, 'published', 'project.index.json'), 'utf8'));
  const storedKeys = [...new Set(index.files.map((file) => file.sha256))];
  const urls = project.files.map((file) => `${origin}/published/${file.path.split('/').map(encodeURIComponent).join('/')}`);
  const load = { urls, inFlight: LOOSE_IN_FLIGHT };
  await view.measure('swRegister', { script: `/${SW_SCRIPT}` });
  const worker = await workerSession(browser);
  const conditions = async () => {
    await emulate(worker, latencyMs, mbit);
    await view.emulate(latencyMs, mbit);
  };
  if (!spec.warm) {
    await conditions();
    return await counted('swLoad', { ...load, storedKeys });
  }
  await view.measure('swLoad', { ...load, storedKeys }); // fills the worker's cache, unmeasured
  await view.reload();
  await conditions();
  return await warmAgainstDirect(
    round,
    () => counted('swLoad', load),
    () => view.measure('directFromStore', { indexUrl: `${origin}/published/project.index.json` }),
  );
}

/**
 * A warm sample and its bound (the same store read directly on the page), the order alternating
 * by round so neither always meets a colder store (cases f and sww).
 */
async function warmAgainstDirect(round, warm, direct) {
  let sample, bound;
  if (round % 2 === 0) {
    sample = await warm();
    bound = await direct();
  } else {
    bound = await direct();
    sample = await warm();
  }
  return { ...sample, directMs: bound.ms };
}

/** Bytes each kind of case moves, for its bound. */
function caseBytes(project, kind) {
  return kind === 'loose' ? project.looseBytes : kind === 'zip' ? project.zipBytes : project.bundledBytes;
}

/**
 * The parts of the physical bounds, one round: in a fresh Chromium under the same emulation, the
 * bundled bytes (index + bundles) fetched as one response from each protocol's server (a range
 * of bound.bin), then one WebCrypto SHA-256 pass over them. Loose files and the zip differ from
 * the bundled bytes by under 1%: their bounds scale the transfer part (see boundMs).
 */
async function measureBoundParts(project, cases, servers, latencyMs, mbit) {
  const origins = Object.fromEntries(Object.entries(servers).map(([protocol, server]) => [protocol, server.origin]));
  const parts = { oneFileMs: {}, hashMsPerMB: undefined };
  const protocols = [...new Set(cases.map((id) => CASES[id].protocol))];
  const chromium = await launchChromium();
  try {
    for (const protocol of protocols) {
      const view = await openPage(chromium.browser, origins[protocol]);
      await view.emulate(latencyMs, mbit);
      parts.oneFileMs[protocol] = (
        await view.measure('oneFile', { url: `${origins[protocol]}/bound.bin`, bytes: project.bundledBytes })
      ).ms;
      if (parts.hashMsPerMB === undefined) {
        const digest = await view.measure('digestOnce', {});
        parts.hashMsPerMB = digest.ms / (digest.fileBytes / MB);
      }
      await view.page.close();
    }
  } finally {
    await chromium.close();
  }
  return parts;
}

/**
 * A case's physical bound from one round's parts. The one-file fetch already pays one round
 * trip, so the bound adds the others: none for loose files and the zip (every file can be asked
 * for at once), one for bundles (the index first). Cases that verify add one SHA-256 pass.
 */
function boundMs(id, project, parts, latencyMs) {
  const { protocol } = CASES[id];
  const kind = CASES[id].bound ?? CASES[id].kind;
  if (kind === 'warm' || kind === 'none') return undefined;
  const transferMs = Math.max(0, parts.oneFileMs[protocol] - latencyMs) * (caseBytes(project, kind) / project.bundledBytes);
  const roundTrips = kind === 'reader' ? 2 : 1;
  const hashMs = kind === 'reader' ? parts.hashMsPerMB * (project.bundledBytes / MB) : 0;
  return roundTrips * latencyMs + transferMs + hashMs;
}

async function runCell(project, cases, servers, latencyMs, mbit, runs, load, traceDir) {
  const samples = Object.fromEntries(cases.map((id) => [id, []]));
  const bounds = Object.fromEntries(cases.map((id) => [id, []]));
  const boundParts = [];
  let rounds = runs;
  const cellStarted = Date.now();
  const loadAtStart = loadavg()[0];
  for (let round = 0; round < rounds; round++) {
    const parts = await measureBoundParts(project, cases, servers, latencyMs, mbit);
    boundParts.push(parts);
    // A different case first each round, so drift does not land on one case.
    for (let i = 0; i < cases.length; i++) {
      const id = cases[(i + round) % cases.length];
      const sample = await runCase(id, project, servers, latencyMs, mbit, round, load);
      // Babylon holds meshes, not files: its check is the vertices every mesh was made with.
      if (CASES[id].kind === 'babylon' ? sample.vertices !== project.vertices : sample.fileBytes !== project.looseBytes) {
        throw new Error(
          `${id}: ${CASES[id].kind === 'babylon' ? `${sample.vertices} vertices in ${sample.meshes} meshes, expected ${project.vertices}` : `${sample.fileBytes} bytes in hand, expected ${project.looseBytes}`}`,
        );
      }
      samples[id].push(sample);
      bounds[id].push((CASES[id].bound ?? CASES[id].kind) === 'warm' ? sample.directMs : boundMs(id, project, parts, latencyMs));
      process.stderr.write(
        `  ${project.name} ${latencyMs} ms ${mbit || '∞'} Mbit/s round ${round + 1}/${rounds} ${id}: ${(sample.ms / 1000).toFixed(2)} s\n`,
      );
    }
    if (round === 0 && rounds > 3 && cases.some((id) => samples[id][0].ms > SLOW_SAMPLE_MS)) rounds = 3;
  }
  // --trace: one more sample of each case, traced, in none of the medians.
  const traced = {};
  if (traceDir) {
    mkdirSync(traceDir, { recursive: true });
    for (const id of cases) {
      const path = join(traceDir, `${project.name}-${latencyMs}ms-${mbit || 'inf'}-${id}.json`);
      traced[id] = { path, ms: (await runCase(id, project, servers, latencyMs, mbit, rounds, load, path)).ms };
      process.stderr.write(
        `  ${project.name} ${latencyMs} ms ${mbit || '∞'} Mbit/s traced ${id}: ${(traced[id].ms / 1000).toFixed(2)} s (not counted) → ${path}\n`,
      );
    }
  }
  const cell = summarizeCell(project, cases, latencyMs, mbit, load, samples, bounds, boundParts, (Date.now() - cellStarted) / 1000);
  // The 1-minute load average at the cell's start and end: on 2 cores, above 2 means something
  // besides this run wanted the CPU.
  return { ...cell, loadAverage: [loadAtStart, loadavg()[0]].map((value) => Number(value.toFixed(2))), ...(traceDir ? { traced } : {}) };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

function summarizeCell(project, cases, latencyMs, mbit, load, samples, bounds, boundParts, seconds) {
  const results = {};
  for (const id of cases) {
    const list = samples[id];
    const ms = list.map((s) => s.ms);
    results[id] = {
      runs: list.length,
      medianMs: median(ms),
      minMs: Math.min(...ms),
      maxMs: Math.max(...ms),
      boundMs: bounds[id].includes(undefined) ? undefined : median(bounds[id]),
      requests: median(list.map((s) => s.requests)),
      transferBytes: median(list.map((s) => s.transferBytes)),
      protocols: [...new Set(list.flatMap((s) => s.protocols))],
      longTasks: Math.max(...list.map((s) => s.longTasks)),
      longestTaskMs: Math.max(...list.map((s) => s.longestTaskMs)),
      storedAfterMs: CASES[id].cache ? median(list.map((s) => s.storedAfterMs ?? 0)) : undefined,
      samplesMs: ms,
    };
  }
  return {
    project: project.name,
    latencyMs,
    mbit,
    load,
    seconds,
    bundledBytes: project.bundledBytes,
    hashMBps: 1000 / median(boundParts.map((p) => p.hashMsPerMB)),
    oneFileMs: Object.fromEntries(
      Object.keys(boundParts[0].oneFileMs).map((key) => [key, median(boundParts.map((p) => p.oneFileMs[key]))]),
    ),
    cases: results,
  };
}

// ---------------------------------------------------------------------------------------------
// Verification speed and the incremental publish

async function runVerification(project, servers, rounds) {
  const origins = { h1: servers.h1.origin };
  const chromium = await launchChromium();
  try {
    const view = await openPage(chromium.browser, origins.h1);
    const {
      bytes,
      bundles,
      path,
      roundsMs: ms,
    } = await view.measure('verification', { indexUrl: `${origins.h1}/published/project.index.json`, rounds });
    const rate = (list) => bytes / MB / (median(list) / 1000);
    return {
      project: project.name,
      bytes,
      bundles,
      rounds,
      path,
      readerMBps: rate(ms.reader),
      webcryptoMBps: rate(ms.webcrypto),
      nobleMBps: rate(ms.noble),
    };
  } finally {
    await chromium.close();
  }
}

/** Publish the 4,000-file project, change one file (same size, new bytes), publish again. */
function runIncrementalPublish(project) {
  const work = mkdtempSync(join(tmpdir(), 'awake-bench-publish-'));
  const removeWork = () => rmSync(work, { recursive: true, force: true });
  try {
    cpSync(join(project.dir, 'files'), join(work, 'files'), { recursive: true });
    const publish = () =>
      JSON.parse(execFileSync(process.execPath, [CLI, join(work, 'files'), '--out', join(work, 'out'), '--json'], { encoding: 'utf8' }));
    const first = publish();
    const changed = project.files[project.files.length >> 1];
    const path = join(work, 'files', ...changed.path.split('/'));
    const bytes = readFileSync(path);
    bytes[bytes.length >> 1] ^= 0xff;
    writeFileSync(path, bytes);
    const second = publish();
    return {
      project: project.name,
      changed: changed.path,
      changedBytes: changed.size,
      bundles: second.bundles,
      bytes: second.bytes,
      newBundles: second.newBundles,
      newBytes: second.newBytes,
      firstSeconds: first.seconds,
      secondSeconds: second.seconds,
    };
  } finally {
    removeWork();
  }
}

// ---------------------------------------------------------------------------------------------
// Printing

const seconds = (ms) => (ms === undefined ? '–' : ms >= 10_000 ? (ms / 1000).toFixed(1) : (ms / 1000).toFixed(2));
const ratio = (a, b) => (a === undefined || b === undefined ? '–' : (a / b).toFixed(2));

function cellRatios(cell) {
  const c = cell.cases;
  const m = (id) => c[id]?.medianMs;
  return {
    'd/a': ratio(m('d'), m('a')),
    'dc/d': ratio(m('dc'), m('d')),
    'ba/bl': ratio(m('ba'), m('bl')),
    'c1/b': ratio(m('c1'), m('b')),
    'c1/b2': ratio(m('c1'), m('b2')),
    'c2/b2': ratio(m('c2'), m('b2')),
    'c1/e': ratio(m('c1'), m('e')),
    'c2/e': ratio(m('c2'), m('e')),
    'cc/c1': ratio(m('cc'), m('c1')),
    'cc2/c2': ratio(m('cc2'), m('c2')),
    'f/direct': ratio(m('f'), c.f?.boundMs),
    'f2/direct': ratio(m('f2'), c.f2?.boundMs),
    'sw/c1': ratio(m('sw'), m('c1')),
    'sw/b': ratio(m('sw'), m('b')),
    'sww/direct': ratio(m('sww'), c.sww?.boundMs),
    'sww/f': ratio(m('sww'), m('f')),
  };
}

/** The rate Chromium's emulation actually gave the one-file fetch (its own round trip left out). */
function effectiveMbit(cell, ms) {
  return ((cell.bundledBytes * 8) / 1e6 / (Math.max(1, ms - cell.latencyMs) / 1000)).toFixed(0);
}

function printCell(cell) {
  const title = `${cell.project}, latency ${cell.latencyMs} ms, ${cell.mbit ? `${cell.mbit} Mbit/s` : 'unlimited'}`;
  const oneFile = Object.entries(cell.oneFileMs)
    .map(([protocol, ms]) => `${protocol} ${seconds(ms)} s = ${effectiveMbit(cell, ms)} Mbit/s`)
    .join(', ');
  console.log(`\n${title} (one file: ${oneFile}; WebCrypto ${cell.hashMBps.toFixed(0)} MB/s; cell took ${cell.seconds.toFixed(0)} s)`);
  console.log(
    'case                                          median (min–max) s        bound s  ×bound  requests       MB  long tasks (max ms)  protocol',
  );
  for (const [id, r] of Object.entries(cell.cases)) {
    console.log(
      `${`${id.padEnd(4)}${CASES[id].label}`.padEnd(44)} ${`${seconds(r.medianMs)} (${seconds(r.minMs)}–${seconds(r.maxMs)})`.padStart(22)} ×${r.runs}` +
        ` ${seconds(r.boundMs).padStart(9)} ${ratio(r.medianMs, r.boundMs).padStart(7)} ${String(r.requests).padStart(9)} ${(r.transferBytes / MB).toFixed(1).padStart(8)}` +
        ` ${`${r.longTasks} (${r.longestTaskMs.toFixed(0)})`.padStart(20)}  ${r.protocols.join(',') || '(workers)'}` +
        (r.storedAfterMs !== undefined ? `  cache writes +${seconds(r.storedAfterMs)} s after` : ''),
    );
  }
  const ratios = Object.entries(cellRatios(cell)).filter(([, value]) => value !== '–');
  if (ratios.length) console.log(`ratios: ${ratios.map(([name, value]) => `${name} ${value}`).join(', ')}`);
}

// ---------------------------------------------------------------------------------------------
// BENCHMARKS.md

const SECTION_TITLE = '## Reader load (npm run bench)';

const caseGroup = (id) => (CASES[id].worker ? 'sw' : CASES[id].page ? 'engine' : 'reader');

function mergeParts(parts) {
  const cells = new Map();
  const merged = { machine: undefined, commands: [], projects: {}, verification: {}, incremental: undefined };
  for (const part of parts) {
    merged.machine = part.machine;
    // The command, and where the part says so, the code and the day it measured.
    merged.commands.push(
      part.code
        ? `${part.command}   # ${part.code.commit}${part.code.dirty ? ' + uncommitted changes' : ''}, ${part.startedAt.slice(0, 16).replace('T', ' ')} UTC`
        : part.command,
    );
    Object.assign(merged.projects, part.projects);
    Object.assign(merged.verification, part.verification);
    merged.incremental = part.incremental ?? merged.incremental;
    for (const whole of part.cells) {
      // The engine cases and the reader's apply to one cell apart: each keeps the bound parts
      // (one-file time, WebCrypto speed) and duration of the run that measured it.
      for (const group of ['reader', 'engine', 'sw']) {
        // The service worker's cases keep the medians of the reader's cases measured in the same
        // run beside them (sameRun), for their ratios.
        const sameRun = Object.fromEntries(['b', 'c1', 'f'].filter((id) => whole.cases[id]).map((id) => [id, whole.cases[id].medianMs]));
        const cases = Object.fromEntries(
          Object.entries(whole.cases)
            .filter(([id]) => caseGroup(id) === group)
            .map(([id, r]) => [id, group === 'sw' ? { ...r, sameRun } : r]),
        );
        if (Object.keys(cases).length === 0) continue;
        const cell = { ...whole, group, cases };
        const key = `${cell.project}|${cell.latencyMs}|${cell.mbit}|${group}`;
        const existing = cells.get(key);
        // A later part's cases replace an earlier part's, case by case.
        cells.set(key, existing ? { ...cell, cases: { ...existing.cases, ...cell.cases } } : cell);
      }
    }
  }
  const order = Object.keys(PROJECTS);
  merged.cells = [...cells.values()].sort(
    (a, b) =>
      order.indexOf(a.project) - order.indexOf(b.project) || a.latencyMs - b.latencyMs || (b.mbit || Infinity) - (a.mbit || Infinity),
  );
  return merged;
}

function aims(merged) {
  const lines = [];
  const verdict = (ok) => (ok ? '**met**' : '**missed**');
  const cells = merged.cells;
  const each = (ids, fn) => cells.flatMap((cell) => ids.filter((id) => cell.cases[id]).map((id) => fn(cell, id)));
  const where = (cell) => `${cell.project} ${cell.latencyMs} ms ${cell.mbit ? `${cell.mbit} Mbit/s` : '∞'}`;

  const bounded = each(BUNDLED_COLD, (cell, id) => ({ cell, id, value: cell.cases[id].medianMs / cell.cases[id].boundMs }));
  if (bounded.length) {
    const worst = bounded.reduce((a, b) => (b.value > a.value ? b : a));
    const over = bounded.filter((b) => b.value > 1.2);
    lines.push(
      `- Every bundled cold case within 1.2× of its bound: ${verdict(over.length === 0)} — worst ${worst.value.toFixed(2)}× (${worst.id}, ${where(worst.cell)}); ${over.length} of ${bounded.length} over 1.2×.`,
    );
  }
  // The streamed reader's aims: c1 within 1.2× of its bound, c2 within 1.3×, and neither slower than one zip (e).
  for (const [id, limit] of [
    ['c1', 1.2],
    ['c2', 1.3],
  ]) {
    const values = each([id], (cell) => ({ cell, value: cell.cases[id].medianMs / cell.cases[id].boundMs }));
    if (values.length === 0) continue;
    const over = values.filter((v) => v.value > limit);
    lines.push(
      `- ${id} within ${limit}× of its bound: ${verdict(over.length === 0)} — ${over.length} of ${values.length} cells over${over.length ? `: ${over.map((v) => `${where(v.cell)} ${v.value.toFixed(2)}×`).join('; ')}` : ''}.`,
    );
  }
  const versusZip = each(['c1', 'c2'], (cell, id) =>
    cell.cases.e ? { cell, id, value: cell.cases[id].medianMs / cell.cases.e.medianMs } : undefined,
  ).filter(Boolean);
  if (versusZip.length) {
    const slower = versusZip.filter((v) => v.value > 1);
    lines.push(
      `- c1 and c2 never slower than one zip + fflate (e): ${verdict(slower.length === 0)} — ${slower.length} of ${versusZip.length} over${slower.length ? `: ${slower.map((v) => `${v.id}/e ${v.value.toFixed(2)} (${where(v.cell)})`).join('; ')}` : ''}.`,
    );
  }
  const small40 = cells.filter((cell) => cell.project.startsWith('small') && cell.latencyMs === 40 && cell.cases.c1 && cell.cases.b);
  if (small40.length) {
    const values = small40.map((cell) => ({ cell, value: cell.cases.c1.medianMs / cell.cases.b.medianMs }));
    const worst = values.reduce((a, b) => (b.value > a.value ? b : a));
    lines.push(
      `- Many small files at 40 ms, bundled (c1) ≤ 1/12 (0.083) of loose over HTTP/1.1 (b): ${verdict(worst.value <= 1 / 12)} — ${values.map((v) => `${where(v.cell)}: ${v.value.toFixed(3)}`).join('; ')}.`,
    );
  }
  const versusH2 = each(['c1', 'c2'], (cell, id) =>
    cell.cases.b2 && cell.project.startsWith('small') ? { cell, id, value: cell.cases[id].medianMs / cell.cases.b2.medianMs } : undefined,
  ).filter(Boolean);
  if (versusH2.length) {
    const worst = versusH2.reduce((a, b) => (b.value > a.value ? b : a));
    lines.push(
      `- Many small files, bundled never slower than loose over HTTP/2 (b2): ${verdict(worst.value <= 1)} — worst ${worst.id}/b2 = ${worst.value.toFixed(2)} (${where(worst.cell)}); per cell in the table.`,
    );
  }
  const cached = each(['cc', 'cc2'], (cell, id) => {
    const base = cell.cases[id === 'cc' ? 'c1' : 'c2'];
    return base ? { cell, id, value: cell.cases[id].medianMs / base.medianMs } : undefined;
  }).filter(Boolean);
  if (cached.length) {
    const worst = cached.reduce((a, b) => (b.value > a.value ? b : a));
    lines.push(
      `- Cold with the persistent cache within 1.2× of cold without: ${verdict(worst.value <= 1.2)} — worst ${worst.id} = ${worst.value.toFixed(2)}× (${where(worst.cell)}).`,
    );
  }
  const warm = each(['f', 'f2'], (cell, id) => ({ cell, id, value: cell.cases[id].medianMs / cell.cases[id].boundMs }));
  if (warm.length) {
    const worst = warm.reduce((a, b) => (b.value > a.value ? b : a));
    lines.push(
      `- Warm within 1.2× of reading the same bytes from the store directly (index on the network): ${verdict(worst.value <= 1.2)} — worst ${worst.value.toFixed(2)}× (${worst.id}, ${where(worst.cell)}).`,
    );
  }
  const phaser = cells.filter((cell) => cell.project.startsWith('small') && cell.latencyMs === 40 && cell.cases.d && cell.cases.a);
  if (phaser.length) {
    const values = phaser.map((cell) => ({
      cell,
      bound: cell.cases.d.medianMs / cell.cases.d.boundMs,
      loose: cell.cases.d.medianMs / cell.cases.a.medianMs,
    }));
    const met = values.every((v) => v.bound <= 1.2 && v.loose <= 1 / 12);
    lines.push(
      `- Phaser, many small files at 40 ms: the adapter (d) within 1.2× of its bound and ≤ 1/12 (0.083) of Phaser's loose load (a): ${verdict(met)} — ${values.map((v) => `${where(v.cell)}: ${v.bound.toFixed(2)}× bound, d/a ${v.loose.toFixed(3)}`).join('; ')}.`,
    );
  }
  const babylon = each(['ba'], (cell, id) => ({ cell, id, value: cell.cases[id].medianMs / cell.cases[id].boundMs }));
  if (babylon.length) {
    const worst = babylon.reduce((a, b) => (b.value > a.value ? b : a));
    const alone = (cell) =>
      cell.cases.bm
        ? `, ba/(bound + Babylon alone, bm) ${ratio(cell.cases.ba.medianMs, cell.cases.ba.boundMs + cell.cases.bm.medianMs)}`
        : '';
    lines.push(
      `- Babylon, the glb project as a scene: the adapter (ba) within 1.2× of its bound: ${verdict(worst.value <= 1.2)} — worst ${worst.value.toFixed(2)}× (${where(worst.cell)}); ${babylon.map((b) => `${where(b.cell)}: ba/bl ${ratio(b.cell.cases.ba.medianMs, b.cell.cases.bl?.medianMs)}${alone(b.cell)}`).join('; ')}.`,
    );
  }
  const verification = Object.values(merged.verification);
  if (verification.length) {
    const worst = verification.reduce((a, b) => (b.readerMBps / b.webcryptoMBps < a.readerMBps / a.webcryptoMBps ? b : a));
    const share = worst.readerMBps / worst.webcryptoMBps;
    lines.push(
      `- Verification at ≥ 90% of raw WebCrypto throughput: ${verdict(share >= 0.9)} — ${(share * 100).toFixed(0)}% (${worst.project}).`,
    );
  }
  const readerTasks = each([...BUNDLED_COLD, 'f', 'f2'], (cell, id) => ({ cell, id, value: cell.cases[id].longestTaskMs }));
  if (readerTasks.length) {
    const worst = readerTasks.reduce((a, b) => (b.value > a.value ? b : a));
    lines.push(
      `- No long task over 50 ms during a reader load: ${verdict(worst.value <= 50)} — longest ${worst.value.toFixed(0)} ms (${worst.id}, ${where(worst.cell)}).`,
    );
  }
  if (merged.incremental) {
    const inc = merged.incremental;
    lines.push(
      `- An incremental publish uploads at most 2 bundles: ${verdict(inc.newBundles <= 2)} — ${inc.newBundles} bundle(s), ${(inc.newBytes / MB).toFixed(2)} MB.`,
    );
  }
  return lines;
}

function loadPatterns(merged) {
  const patterns = [...new Set(merged.cells.map((cell) => cell.load ?? 'together'))];
  if (patterns.length === 1 && patterns[0] === 'together') return '';
  return ` (\`--load ${patterns.join('/')}\`: "sequential" awaits the prefetch, cache writes included, before the reads)`;
}

function renderSection(merged, title = SECTION_TITLE) {
  const m = merged.machine;
  const out = [title, ''];
  if (title !== SECTION_TITLE) {
    // A section of its own (--title): the method is the main section's, said once there.
    out.push(
      `Measured by the same script as "${SECTION_TITLE.slice(3)}" below, in the same way (projects, servers, cases, bounds, rounds), on the cells and cases listed here only.`,
      `Medians of ${[...new Set(merged.cells.flatMap((c) => Object.values(c.cases).map((r) => r.runs)))].sort().join(' or ')} runs; a cell with a sample over 20 s in its first round runs 3 rounds.`,
      '',
    );
  } else
    out.push(
      '`npm run bench` (= `npm run build && node bench/reader.mjs`) loads a generated game project in',
      'headless Chromium (puppeteer-core, a fresh profile and browser per sample, HTTP cache off) from',
      "127.0.0.1 under Chromium's network emulation (CDP `Network.emulateNetworkConditions`: latency",
      'added per request, one shared download rate). A load is the time until every file is in hand',
      'as bytes; for the reader: `IndexedAssetSource.open({ indexUrl, cache })`, then',
      `\`prefetch(all paths)\` and \`read(path)\` of every path at once (\`Promise.all\`), as the engine adapters do${loadPatterns(merged)};`,
      'the cache writes that follow are timed apart ("writes after").',
      '',
      '- **Projects** (fixed seeds, xorshift32, incompressible bytes): ' +
        Object.values(merged.projects)
          .map(
            (p) =>
              `**${p.name}** ${p.files.toLocaleString('en')} files, ${(p.looseBytes / MB).toFixed(1)} MB → ${p.bundles} bundles (${(p.bundledBytes / MB).toFixed(1)} MB with the index)`,
          )
          .join('; ') +
        '. Many small files: ~75% of 1–16 KB, ~23% of 16–128 KB, ~2% of 256 KB–1 MB (.png/.json/.ogg under sprites/, ui/, data/, tiles/, sfx/, music/, atlases/); big assets: 0.2–8 MB (.ktx2/.glb/.ogg/.webm); glb: the big project\'s sizes as real .glb models, for Babylon (see "Engines" below). Published with the CLI defaults (a bundle per top folder, 16 MiB target).',
      "- **Servers:** HTTP/1.1 = the project's `serve` (`startStaticServer`), Chromium's 6 connections per host; HTTP/2 = nginx 1.22 with TLS (a self-signed certificate made by the script, `--ignore-certificate-errors`), `http2_max_concurrent_streams` at its default 128. The page is served by the same server as the case.",
      '- **Cases:** b loose files, one `fetch` each, 128 in flight at a time (Chromium fails a page\'s requests beyond ~1,400 outstanding with `net::ERR_INSUFFICIENT_RESOURCES`; 128 is nginx\'s HTTP/2 stream limit and far above HTTP/1.1\'s six connections) (HTTP/1.1); b2 the same over HTTP/2; c1/c2 the reader without a cache over HTTP/1.1 / HTTP/2; cc the reader with `openBrowserCache()` on fresh storage (HTTP/1.1); e one zip (stored, made with fflate `zipSync`) fetched and unpacked with fflate `unzipSync`; f warm: a second load through `openBrowserCache()`, the store filled by an unmeasured load in the same profile; a, d, dc (Phaser) and bl, ba (Babylon): the engines\' own loads, loose and through the adapters (see "Engines" below); sw, sww: the same files through the service worker, cold and warm (see "Service worker" below).',
      "- **Bound:** measured in each round under the same emulation, in a fresh Chromium: the time it takes to fetch the bundled bytes (index + bundles) as one response from the same server (a range of one large file), that fetch's own latency taken out; plus round trips × latency (bundled: 2, the index then the bundles; loose files and the zip: 1, every file can be asked for at once — HTTP/1.1's six connections are the case's problem, not the bound's); plus, for the reader, one SHA-256 pass over the bundled bytes at the speed WebCrypto showed on those same bytes in that page. Loose and zip cases verify nothing, so their bound has no hash term; their byte counts differ from the bundled ones by under 1%, and their transfer term is scaled to them. Warm bound (f): the index over the network, then every member read straight from the reader's IndexedDB layout (database `awake-bundle`, store `entries`, one transaction per bundle) and hashed once with WebCrypto, in the same page, before or after the warm load (alternating). The cold-with-cache case (cc) has the same bound as c1: storing is not physically required, its cost shows in cc/c1.",
      '- **Chromium\'s emulated rate is not the nominal one** on this machine: the one-file fetch shows the rate actually given (column "one file"); this is why every bound is measured under the same emulation instead of computed from the nominal rate.',
      "- **×bound below 1** happens and means \"at the bound\": the bound is one response, and several responses at once can beat it — from `serve`, one HTTP/1.1 connection is slower than six, and Chromium's throttle lets a few parallel requests together exceed one request's rate (and was far slower with a thousand requests outstanding than with 128, one more reason for the cap in b and b2). Under throttling, every case measures Chromium's emulation as much as a network.",
      "- **Cache writes after:** for cases with a cache, how long after the last file was in hand `source.whenStored()` (where the reader has it) resolved; not part of the load time. The warm case's filling load waits for it before the page reloads.",
      "- **Workers:** the reader fetches in dedicated Web Workers. Chromium applies the page's emulation to their fetches, one rate shared with the page's own (a dedicated worker's target answers `Network.emulateNetworkConditions` with \"Not supported\": its requests go by its page's conditions; `node bench/worker-emulation.mjs` shows it). A service worker's fetches are not reached: see \"Service worker\" below.",
      "- **Requests, MB:** as the server saw them (serve's access log, nginx's `access_log`): requests answered and body bytes sent during the load (the reader fetches in Web Workers, which the page's Resource Timing does not list). **Long tasks:** `PerformanceObserver` longtask entries overlapping the load (most in any run, and the longest).",
      `- Medians of ${[...new Set(merged.cells.flatMap((c) => Object.values(c.cases).map((r) => r.runs)))].sort().join(' or ') || 'no'} runs (min–max, the "runs" column); a cell with a sample over 20 s in its first round runs 3 rounds instead of 5. Each round measures the bound first, then every case, a different case first each round.`,
      '',
    );
  out.push(
    `Machine: ${m.cores} cores of an \`${m.cpu}\`, ${m.memoryGiB} GiB RAM, ${m.os}; ${m.chromium} (\`/usr/bin/chromium\`, \`--headless=new\`), ${m.nginx}, puppeteer-core ${m.puppeteer}, Node ${m.node}${m.phaser ? `; Phaser ${m.phaser}, Babylon ${m.babylon}` : ''}.`,
    '',
    'Commands:',
    '',
    '```sh',
    ...merged.commands,
    '```',
    '',
  );
  for (const project of Object.keys(PROJECTS)) {
    const cells = merged.cells.filter((cell) => cell.project === project && cell.group === 'reader');
    if (cells.length === 0) continue;
    out.push(`### ${PROJECTS[project].label} (${project})`, '');
    out.push(
      '| latency | bandwidth | case | median s (min–max) | runs | bound s | ×bound | requests | MB | long tasks (longest ms) | cache writes after, s |',
      '|--:|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|',
    );
    for (const cell of cells) {
      for (const [id, r] of Object.entries(cell.cases)) {
        out.push(
          `| ${cell.latencyMs} ms | ${cell.mbit ? `${cell.mbit} Mbit/s` : '∞'} | ${id} ${CASES[id].label} | ${seconds(r.medianMs)} (${seconds(r.minMs)}–${seconds(r.maxMs)}) | ${r.runs} | ${seconds(r.boundMs)} | ${ratio(r.medianMs, r.boundMs)} | ${r.requests} | ${(r.transferBytes / MB).toFixed(1)} | ${r.longTasks} (${r.longestTaskMs.toFixed(0)}) | ${r.storedAfterMs === undefined ? '–' : seconds(r.storedAfterMs)} |`,
        );
      }
    }
    out.push(
      '',
      '| latency | bandwidth | c1/b | c1/b2 | c2/b2 | c1/e | c2/e | cc/c1 | f/direct | one file (effective Mbit/s) | WebCrypto MB/s | cell took | load average |',
      '|--:|--:|--:|--:|--:|--:|--:|--:|--:|:--|--:|--:|--:|',
    );
    for (const cell of cells) {
      const r = cellRatios(cell);
      const oneFile = Object.entries(cell.oneFileMs)
        .map(([protocol, ms]) => `${protocol} ${seconds(ms)} s (${effectiveMbit(cell, ms)})`)
        .join(', ');
      const load = cell.loadAverage ? cell.loadAverage.map((value) => value.toFixed(1)).join(' → ') : '–';
      out.push(
        `| ${cell.latencyMs} ms | ${cell.mbit ? `${cell.mbit} Mbit/s` : '∞'} | ${r['c1/b']} | ${r['c1/b2']} | ${r['c2/b2']} | ${r['c1/e']} | ${r['c2/e']} | ${r['cc/c1']} | ${r['f/direct']} | ${oneFile} | ${cell.hashMBps.toFixed(0)} | ${cell.seconds.toFixed(0)} s | ${load} |`,
      );
    }
    out.push('');
  }
  out.push(...renderEngines(merged));
  out.push(...renderServiceWorker(merged));
  const verification = Object.values(merged.verification);
  if (verification.length) {
    out.push(
      '### Verification speed',
      '',
      'Every bundle fetched into the page first, then verified from memory, all bundles at once (`Promise.all`; median of 5 rounds): the reader\'s path (column "path": `acceptBundle` in the shared worker pool, hashing each byte once, where core exports it; else `verifyBundle`, which hashes the whole bundle and then each member) against one raw WebCrypto `digest` per bundle and `@noble/hashes` `sha256` per bundle (synchronous, one after another); MB of bundle bytes per second.',
      '',
    );
    out.push(
      '| project | path | bundles | MB | reader path MB/s | WebCrypto MB/s | @noble/hashes MB/s | reader / WebCrypto |',
      '|:--|:--|--:|--:|--:|--:|--:|--:|',
    );
    for (const v of verification)
      out.push(
        `| ${v.project} | ${v.path ?? 'verifyBundle'} | ${v.bundles} | ${(v.bytes / MB).toFixed(1)} | ${v.readerMBps.toFixed(0)} | ${v.webcryptoMBps.toFixed(0)} | ${v.nobleMBps.toFixed(0)} | ${((v.readerMBps / v.webcryptoMBps) * 100).toFixed(0)}% |`,
      );
    out.push('');
  }
  if (merged.incremental) {
    const inc = merged.incremental;
    out.push(
      '### Incremental publish',
      '',
      `The ${inc.project} project published into a fresh folder, then \`${inc.changed}\` (${(inc.changedBytes / KiB).toFixed(1)} KiB) changed in place (same size, one byte flipped) and published again into the same folder: **${inc.newBundles} new bundle(s), ${inc.newBytes.toLocaleString('en')} bytes (${(inc.newBytes / MB).toFixed(2)} MB)** to upload, of ${inc.bundles} bundles and ${(inc.bytes / MB).toFixed(1)} MB.`,
      '',
    );
  }
  out.push('### Aims', '', ...aims(merged), '');
  return out.join('\n');
}

/** The engine cases (a, d, dc, bl, ba): one table of loads, one of ratios and bound parts. */
function renderEngines(merged) {
  const cells = merged.cells.filter((cell) => cell.group === 'engine');
  if (cells.length === 0) return [];
  const where = (cell) => `${cell.project} | ${cell.latencyMs} ms | ${cell.mbit ? `${cell.mbit} Mbit/s` : '∞'}`;
  const out = [
    '### Engines: Phaser and Babylon through the adapters',
    '',
    "The same loads made by the engines' own loading code, in a real game or scene, loose and through the adapter (HTTP/1.1 from `serve`, the page served by it too); the bounds are those of loose files (a, bl) and of the reader without a cache (d, dc, ba: 2 round trips, the bundled bytes as one response, one SHA-256 pass), measured in the same rounds. The engines' own work (Phaser's queue, Babylon's glTF parse and WebGL uploads) is in the times and not in the bounds.",
    '',
    '- **a** (issue 7, case (a)): Phaser ' +
      (merged.machine?.phaser ?? '4') +
      " (`Phaser.HEADLESS`, no rendering), one scene whose `preload` queues `this.load.binary(path, path)` for every file of the project, so nothing is decoded; loose files through Phaser's loader (its default `maxParallelDownloads`, 32). Time: from `preload` until the loader's `complete`.",
    "- **d** (issue 7, case (d); aim: within 1.2× of its bound and ≤ 1/12 of a, many small files at 40 ms): the same scene with `this.load.awkbIndex('assets', indexUrl, { root, cache: null })` queued first (`import 'awake-bundle/phaser'`); the URLs stay the loose ones. **dc**: d with the adapter's default cache (`openBrowserCache()`, fresh storage); \"cache writes after\" = `whenStored()` after `complete`.",
    '- **bl**: Babylon ' +
      (merged.machine?.babylon ?? '9') +
      ", a real `Engine` on a canvas (WebGL by SwiftShader, `--disable-gpu --enable-unsafe-swiftshader`), `ImportMeshAsync(url, scene)` of every .glb of the glb project at once, loose; time until every mesh is imported (vertex buffers are uploaded to WebGL as each mesh is made). Before the load, unmeasured, the page imports a tiny model until its scene is ready, so the modules Babylon imports on first use are in. **ba** (aim: within 1.2× of its bound): the same after `registerAwkb({ indexUrl, root, cache: null })`, which is inside the time. **bm**: the same models fetched first, untimed, then imported from memory (`ImportMeshAsync(bytes, scene, { pluginExtension: '.glb' })`): Babylon's own work, which no network or bundle takes away; no bound.",
    "- **glb project:** the big project's 200 sizes (same seed), each a valid glTF 2.0 binary: one node, one mesh, one non-indexed triangle list whose POSITION buffer holds random float32 in [-1, 1] (xorshift32) with exact min/max; a 1 KiB JSON chunk. glb20 is its first 20 files scaled to 25 MB, for trying.",
    '',
    '| project | latency | bandwidth | case | median s (min–max) | runs | bound s | ×bound | requests | MB | long tasks (longest ms) | cache writes after, s |',
    '|:--|--:|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const cell of cells) {
    for (const [id, r] of Object.entries(cell.cases)) {
      out.push(
        `| ${where(cell)} | ${id} ${CASES[id].label} | ${seconds(r.medianMs)} (${seconds(r.minMs)}–${seconds(r.maxMs)}) | ${r.runs} | ${seconds(r.boundMs)} | ${ratio(r.medianMs, r.boundMs)} | ${r.requests} | ${(r.transferBytes / MB).toFixed(1)} | ${r.longTasks} (${r.longestTaskMs.toFixed(0)}) | ${r.storedAfterMs === undefined ? '–' : seconds(r.storedAfterMs)} |`,
      );
    }
  }
  out.push('', 'd/c1: the Phaser adapter against the bare reader (case c1) of the same cell, where a part measured it.', '');
  out.push("ba/(bound+bm): the Babylon adapter against its bound with Babylon's own work (bm) added.", '');
  out.push(
    '| project | latency | bandwidth | d/a | dc/d | d/c1 | ba/bl | ba/(bound+bm) | one file (effective Mbit/s) | WebCrypto MB/s | cell took |',
    '|:--|--:|--:|--:|--:|--:|--:|--:|:--|--:|--:|',
  );
  for (const cell of cells) {
    const r = cellRatios(cell);
    const reader = merged.cells.find(
      (other) =>
        other.group === 'reader' && other.project === cell.project && other.latencyMs === cell.latencyMs && other.mbit === cell.mbit,
    );
    const oneFile = Object.entries(cell.oneFileMs)
      .map(([protocol, ms]) => `${protocol} ${seconds(ms)} s (${effectiveMbit(cell, ms)})`)
      .join(', ');
    // Three places for d/a: its aim is 1/12 = 0.083.
    const dOverA = cell.cases.d && cell.cases.a ? (cell.cases.d.medianMs / cell.cases.a.medianMs).toFixed(3) : '–';
    out.push(
      `| ${where(cell)} | ${dOverA} | ${r['dc/d']} | ${ratio(cell.cases.d?.medianMs, reader?.cases.c1?.medianMs)} | ${r['ba/bl']} | ${ratio(cell.cases.ba?.medianMs, cell.cases.ba && cell.cases.bm ? cell.cases.ba.boundMs + cell.cases.bm.medianMs : undefined)} | ${oneFile} | ${cell.hashMBps.toFixed(0)} | ${cell.seconds.toFixed(0)} s |`,
    );
  }
  out.push('');
  return out;
}

/** The service worker's cases (sw, sww), with the reader's cases of the same run beside them. */
function renderServiceWorker(merged) {
  const cells = merged.cells.filter((cell) => cell.group === 'sw');
  if (cells.length === 0) return [];
  const where = (cell) => `${cell.project} | ${cell.latencyMs} ms | ${cell.mbit ? `${cell.mbit} Mbit/s` : '∞'}`;
  const out = [
    '### Service worker (cases sw, sww)',
    '',
    "The page's plain `fetch()` of every file's URL below `published/` (128 in flight, as in b), answered by the prebuilt worker (`awake-bundle sw --index published/project.index.json`, at the top of the site served by `serve`, HTTP/1.1). The worker is registered and controls the page before the time starts (untimed: registration, activation and the index fetch it makes on starting); the time starts with the page asking it to read the index again (`awkb:refresh`: `no-cache`, checked, kept), so the index is in the time as in c1, and ends when every response's bytes are in the page. **sw** cold: fresh storage, every member from its bundle (one request per bundle), verified on the worker's thread; bound as c1 (2 round trips, the bundled bytes as one response, one SHA-256 pass). **sww** warm: after an unmeasured sw load in the same profile (until the worker's IndexedDB cache held every member) and a page reload; the index over the network, every member from the cache; bound as f (the index over the network, every member read from the same store on the page and hashed once). The worker keeps running through a sample (a CDP session is attached to it), so its start-up is not in the time. Chromium's page emulation does not reach a service worker's own fetches: the worker's target gets the same `Network.emulateNetworkConditions`, and its HTTP cache off as the page's. c1, b and f are from the same run (same rounds, same bound parts).",
    '',
    '| project | latency | bandwidth | case | median s (min–max) | runs | bound s | ×bound | c1 s | ×c1 | b s | ×b | f s | ×f | requests | MB | long tasks (longest ms) |',
    '|:--|--:|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const cell of cells) {
    for (const [id, r] of Object.entries(cell.cases)) {
      const same = r.sameRun ?? {};
      out.push(
        `| ${where(cell)} | ${id} ${CASES[id].label} | ${seconds(r.medianMs)} (${seconds(r.minMs)}–${seconds(r.maxMs)}) | ${r.runs} | ${seconds(r.boundMs)} | ${ratio(r.medianMs, r.boundMs)} | ${seconds(same.c1)} | ${ratio(r.medianMs, same.c1)} | ${seconds(same.b)} | ${ratio(r.medianMs, same.b)} | ${seconds(same.f)} | ${ratio(r.medianMs, same.f)} | ${r.requests} | ${(r.transferBytes / MB).toFixed(1)} | ${r.longTasks} (${r.longestTaskMs.toFixed(0)}) |`,
      );
    }
  }
  out.push('');
  return out;
}

function writeBenchmarks(merged, title = SECTION_TITLE) {
  const path = join(ROOT, 'BENCHMARKS.md');
  const text = readFileSync(path, 'utf8');
  const section = renderSection(merged, title);
  const start = text.indexOf(`${title}\n`);
  let next;
  if (start === -1) {
    // A new top section, right after the title.
    const afterTitle = text.indexOf('\n## ');
    next =
      afterTitle === -1 ? `${text.trimEnd()}\n\n${section}\n` : `${text.slice(0, afterTitle + 1)}${section}\n${text.slice(afterTitle + 1)}`;
  } else {
    const end = text.indexOf('\n## ', start + title.length);
    next = `${text.slice(0, start)}${section}\n${end === -1 ? '' : text.slice(end + 1)}`;
  }
  writeFileSync(path, next);
  console.error(`wrote ${path} (section "${title.slice(3)}")`);
}

// ---------------------------------------------------------------------------------------------
// Main

const packageVersion = (name) => JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;

function machine(chromium) {
  const os = existsSync('/etc/os-release')
    ? (/PRETTY_NAME="([^"]+)"/.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? 'Linux')
    : process.platform;
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `Linux ${execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim()}, ${os}`,
    chromium,
    // nginx prints its version on stderr.
    nginx: execFileSync('sh', ['-c', `${NGINX} -v 2>&1`], { encoding: 'utf8' })
      .trim()
      .replace('nginx version: ', ''),
    puppeteer: packageVersion('puppeteer-core'),
    phaser: packageVersion('phaser'),
    babylon: `core ${packageVersion('@babylonjs/core')}, loaders ${packageVersion('@babylonjs/loaders')}`,
    node: process.version,
  };
}

/** The commit measured, and whether tracked files had changes on top of it. */
function codeMeasured() {
  const git = (...command) => execFileSync('git', command, { cwd: ROOT, encoding: 'utf8' }).trim();
  try {
    return { commit: git('rev-parse', '--short', 'HEAD'), dirty: git('status', '--porcelain', '--untracked-files=no') !== '' };
  } catch {
    return undefined;
  }
}

async function runGrid(options) {
  if (!existsSync(CLI)) throw new Error('dist/ is missing: run `npm run build` first (npm run bench does)');
  const command = `node bench/reader.mjs ${args.join(' ')}`.trim();
  const part = {
    command,
    startedAt: new Date().toISOString(),
    code: codeMeasured(),
    machine: undefined,
    projects: {},
    cells: [],
    verification: {},
    incremental: undefined,
  };
  const needsH2 = options.cases.some((id) => CASES[id].protocol === 'h2');
  const save = () => {
    const path = options.out ?? join(BENCH_DIR, 'last.json');
    mkdirSync(dirname(resolve(path)), { recursive: true });
    writeFileSync(path, JSON.stringify(part, null, 2));
  };
  const probe = await launchChromium();
  try {
    part.machine = machine(await probe.browser.version());
  } finally {
    await probe.close();
  }
  for (const name of options.projects) {
    const project = await prepareProject(name);
    part.projects[name] = {
      name,
      files: project.files.length,
      looseBytes: project.looseBytes,
      bundledBytes: project.bundledBytes,
      zipBytes: project.zipBytes,
      bundles: project.bundles,
      vertices: project.vertices,
    };
    console.error(
      `${name}: ${project.files.length} files, ${(project.looseBytes / MB).toFixed(1)} MB loose, ${project.bundles} bundles + index ${(project.bundledBytes / MB).toFixed(1)} MB, zip ${(project.zipBytes / MB).toFixed(1)} MB`,
    );
    const cases = options.cases.filter((id) => caseFits(id, project));
    const skipped = options.cases.filter((id) => !cases.includes(id));
    if (skipped.length) console.error(`${name}: cases ${skipped.join(', ')} are not for this project (see caseFits)`);
    const serve = await startServe(project.dir);
    const nginx = needsH2 ? await startNginx(project.dir) : undefined;
    const servers = { h1: serve, ...(nginx ? { h2: nginx } : {}) };
    try {
      if (options.extras.includes('verify')) {
        part.verification[name] = await runVerification(project, servers, 5);
        const v = part.verification[name];
        console.log(
          `\n${name} verification: reader path (${v.path}) ${v.readerMBps.toFixed(0)} MB/s, WebCrypto ${v.webcryptoMBps.toFixed(0)} MB/s, @noble/hashes ${v.nobleMBps.toFixed(0)} MB/s (reader/WebCrypto ${((v.readerMBps / v.webcryptoMBps) * 100).toFixed(0)}%)`,
        );
        save();
      }
      for (const latencyMs of cases.length > 0 ? options.latencies : []) {
        for (const mbit of options.bandwidths) {
          const cell = await runCell(project, cases, servers, latencyMs, mbit, options.runs, options.load, options.trace);
          part.cells.push(cell);
          printCell(cell);
          save();
        }
      }
    } finally {
      await nginx?.stop();
      await serve.stop();
    }
  }
  if (options.extras.includes('publish')) {
    const project = await prepareProject('small4k');
    part.incremental = runIncrementalPublish(project);
    const inc = part.incremental;
    console.log(
      `\nincremental publish (${inc.project}, changed ${inc.changed}): ${inc.newBundles} new bundle(s), ${inc.newBytes} bytes of ${inc.bundles} bundles / ${inc.bytes} bytes`,
    );
    save();
  }
  const merged = mergeParts([part]);
  console.log(`\nAims (this run only):\n${aims(merged).join('\n')}`);
  if (options.out) console.error(`results in ${options.out}; merge parts with: node bench/reader.mjs --report <part.json>…`);
  else writeBenchmarks(merged);
}

async function main() {
  const options = parseOptions();
  const interrupted = async (signal) => {
    console.error(`\n${signal}: stopping Chromium, nginx and the servers`);
    await stopEverything();
    process.exit(130);
  };
  process.once('SIGINT', () => void interrupted('SIGINT'));
  process.once('SIGTERM', () => void interrupted('SIGTERM'));
  try {
    if (options.report) {
      const files = args.filter((arg) => arg.endsWith('.json'));
      if (files.length === 0) usage('--report takes the results files to merge: --report a.json b.json');
      writeBenchmarks(
        mergeParts(files.map((file) => JSON.parse(readFileSync(file, 'utf8')))),
        options.title ? `## ${options.title}` : SECTION_TITLE,
      );
      return;
    }
    await runGrid(options);
  } finally {
    await stopEverything();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
