// Encoded members (issue 28, SPEC §5a; `npm run bench:encoded`): what the default publish's
// deflate-raw members save on the wire, how fast a browser decodes them, and what decoding costs
// the page's thread. Four parts, each with its baseline measured in the same run:
//
//   npm run bench:encoded                          # build, every part, print; results in .bench/encoded/last.json
//   node bench/encoded.mjs [--parts bytes,decode,main,frames,build] [--runs 5] [--frame-runs 3]
//                          [--latency 40] [--bandwidth 20] [--no-build] [--profile] [--text-ext txt|json] [--out results.json]
//
//   bytes   Bytes on the wire. (a) `examples/assets` published by the CLI, default (encoded) and
//           `--no-compress` (plain): the bundles' bytes. (b) For each example game's first scene
//           (phaser and babylon: loads[0] of the recorded awkb-loads.json; phaser-levels: the
//           files LevelOne's preload asks for at devicePixelRatio 1), the game's assets published
//           as the build plugin's default publish does (`--group auto`), encoded and plain:
//             members  the stored bytes of the scene's members (what needed-bytes ranges fetch,
//                      multipart framing left out),
//             whole    every bundle that holds one of them, whole,
//           each plus the index as a compressing host sends it (gzip 6), against the same files
//           loose from a compressing host: gzip level 6 (node:zlib, as nginx's gzip_comp_level 6)
//           for .json .gltf .js .svg .xml .txt .fnt .atlas .md .css .html, every other file raw.
//   decode  Decode throughput in one dedicated Worker of headless Chromium: real encoded members
//           of the examples/assets publish (a glTF's .bin, two .glb, two JSON files) and one
//           8 MiB member of the examples' text and geometry concatenated (deflated by node:zlib
//           level 6, as the publisher does), each decoded through core's StreamMemberDecoder
//           (dist/core/format/encoded-member.js, DecompressionStream('deflate-raw') fed in 16 KiB
//           pieces, output collected into the listed size) and, as the baseline, by a bare
//           DecompressionStream (the stored bytes written at once, the output chunks joined); a sample decodes the member over and over until ≥ 16 MB of
//           output; MB/s = decoded bytes / time (10^6 bytes); median of --runs samples; node:zlib's
//           inflateRawSync in this process beside them.
//   main    The page's thread while a 50 MB bundle streams through the reader: a generated tree
//           (25 files of 2 MiB: tile-map JSON, glTF-like JSON with float arrays, float32 geometry;
//           the JSON named .txt unless --text-ext json, so that the reader's read-ahead, which
//           parses .json files on the page's thread for references, does not hide what decoding costs)
//           published into one bundle (`--target-mb 64`), encoded and plain; a fresh Chromium per
//           sample opens a page that runs `IndexedAssetSource.open({ indexUrl, cache: null })`
//           (default options: the reader's workers stream, verify and decode), prefetch(every path)
//           and read(every path), over loopback without a throttle (the bytes arrive as fast as
//           they can, the worst case for the page). Longest 'longtask' (PerformanceObserver) and
//           longest gap between requestAnimationFrame callbacks and between setTimeout(0)
//           callbacks during the read; medians of --runs, the variants' order rotating. Each of
//           encoded and plain is read cold (the reader's workers start with the read: a first
//           bundle streams on the page's thread until a worker answers, by design) and warm (the
//           shared pool warmed a second before: the bundle streams and decodes in a worker). With
//           --profile, the first round also reads each again, untimed, in a new page under
//           V8's sampling profiler, and prints the page thread's functions by self time.
//   frames  First frame of the example games (bench/engines.mjs's sites and sampling:
//           bench/example-page.mjs, a fresh Chromium per sample, HTTP cache off) at --latency ms
//           RTT and --bandwidth Mbit/s (bench/throttled-server.mjs, HTTP/1.1, nginx with gzip on:
//           bench/nginx-backend.mjs `gzip`), three modes on the same server: loose files gzipped
//           by the host, the default publish (encoded) and the same with `compress: false`
//           (plain); the bytes are the access log's bodies. --frame-runs rounds, order rotating.
//           The six sites are built first (webpack) unless --no-build; `--parts build` builds only.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname, join, relative } from 'node:path';
import { deflateRawSync, gzipSync, inflateRawSync } from 'node:zlib';
import { launchFreshChromium } from './chromium.mjs';
import { runWebpack, sampleExamplePage, withoutPreload } from './example-page.mjs';
import { GAMES } from './engines.mjs';
import { codeMeasured, loadNow, machine, MB, median, ROOT, saveResults, spread } from './harness.mjs';
import { startThrottledServer } from './throttled-server.mjs';

const BENCH_DIR = join(ROOT, '.bench', 'encoded');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const EXAMPLE_ASSETS = join(ROOT, 'examples', 'assets');
const require = createRequire(import.meta.url);
/** What a compressing host gzips (see the header). */
const GZIP_EXTENSIONS = new Set(['.json', '.gltf', '.js', '.mjs', '.svg', '.xml', '.txt', '.fnt', '.atlas', '.md', '.css', '.html']);
const AIMS = { examplesRatio: 0.7, wireVsGzip: 1.0, decodeMBps: 150, longTaskMs: 50, frameVsGzip: 0.9 };
const GAME_NAMES = ['phaser', 'babylon', 'phaser-levels'];

// ---------------------------------------------------------------------------------------------
// Arguments

function parseArgs(args) {
  const options = {
    parts: ['bytes', 'decode', 'main', 'frames'],
    runs: 5,
    frameRuns: 3,
    textExtension: 'txt',
    latencyMs: 40,
    mbit: 20,
    build: true,
    out: join(BENCH_DIR, 'last.json'),
  };
  for (let i = 0; i < args.length; i++) {
    const value = () => {
      if (args[i + 1] === undefined) throw new Error(`${args[i]} needs a value`);
      return args[++i];
    };
    if (args[i] === '--parts') options.parts = value().split(',');
    else if (args[i] === '--runs') options.runs = Number(value());
    else if (args[i] === '--frame-runs') options.frameRuns = Number(value());
    else if (args[i] === '--latency') options.latencyMs = Number(value());
    else if (args[i] === '--bandwidth') options.mbit = Number(value());
    else if (args[i] === '--no-build') options.build = false;
    else if (args[i] === '--profile') options.profile = true;
    else if (args[i] === '--text-ext') options.textExtension = value();
    else if (args[i] === '--out') options.out = value();
    else {
      console.error(`bench/encoded.mjs: unknown argument ${args[i]}`);
      process.exit(2);
    }
  }
  return options;
}

// ---------------------------------------------------------------------------------------------
// Helpers

const sum = (list, pick = (x) => x) => list.reduce((total, item) => total + pick(item), 0);
const gzipBytes = (bytes) => gzipSync(bytes, { level: 6 }).length;
/** The bytes a compressing host sends for this file (see the header). */
const looseWireBytes = (path, bytes) => (GZIP_EXTENSIONS.has(extname(path).toLowerCase()) ? gzipBytes(bytes) : bytes.length);
const r3 = (a, b) => (b ? (a / b).toFixed(3) : '–');
const kB = (bytes) => (bytes / 1e3).toFixed(1);

function publish(input, out, extra = []) {
  rmSync(out, { recursive: true, force: true });
  const json = execFileSync(process.execPath, [CLI, input, '--out', out, '--json', ...extra], { encoding: 'utf8' });
  const result = JSON.parse(json);
  const index = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'));
  return {
    result,
    index,
    indexBytes: statSync(join(out, 'project.index.json')).size,
    indexGzip: gzipBytes(readFileSync(join(out, 'project.index.json'))),
  };
}

function filesBelow(dir) {
  const found = [];
  const walk = (at) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else found.push(relative(dir, path).split('\\').join('/'));
    }
  };
  walk(dir);
  return found.sort();
}

/** The files each game's first scene loads (see the header). */
function firstScene(name) {
  if (name === 'phaser-levels')
    return [
      'maps/level-1.json',
      'tiles/kenney-tileset-64px-extruded.png',
      'sprites/emoji.png',
      'sprites/emoji.json',
      'sprites/player.png',
      'sprites/slime.png',
      'fonts/font-16x16.png',
      'images/background.png',
      'images/particle.png',
      'audio/theme-4.ogg',
      'audio/coin.ogg',
      'audio/laser1.ogg',
    ];
  return JSON.parse(readFileSync(join(ROOT, 'examples', name, 'awkb-loads.json'), 'utf8')).loads[0].paths;
}

const gameAssets = (name) => (name === 'phaser-levels' ? join(ROOT, 'examples', 'phaser-levels', 'assets') : EXAMPLE_ASSETS);

// ---------------------------------------------------------------------------------------------
// Part 1: bytes

function partBytes() {
  const load = [loadNow()];
  const enc = publish(EXAMPLE_ASSETS, join(BENCH_DIR, 'pub-enc'));
  const plain = publish(EXAMPLE_ASSETS, join(BENCH_DIR, 'pub-plain'), ['--no-compress']);
  const allFiles = filesBelow(EXAMPLE_ASSETS);
  const examples = {
    files: allFiles.length,
    rawBytes: sum(allFiles, (path) => statSync(join(EXAMPLE_ASSETS, path)).size),
    looseGzipBytes: sum(allFiles, (path) => looseWireBytes(path, readFileSync(join(EXAMPLE_ASSETS, path)))),
    plainBundleBytes: plain.result.bytes,
    encodedBundleBytes: enc.result.bytes,
    plainIndexBytes: plain.indexBytes,
    encodedIndexBytes: enc.indexBytes,
    encodedMembers: enc.index.files.filter((file) => file.encoding).length,
    bundles: [plain.result.bundles, enc.result.bundles],
  };
  examples.ratio = examples.encodedBundleBytes / examples.plainBundleBytes;
  const games = {};
  for (const name of GAME_NAMES) {
    const assets = gameAssets(name);
    const paths = firstScene(name);
    const variants = {
      encoded: publish(assets, join(BENCH_DIR, `${name}-enc`), ['--group', 'auto']),
      plain: publish(assets, join(BENCH_DIR, `${name}-plain`), ['--group', 'auto', '--no-compress']),
    };
    const row = { files: paths.length, raw: 0, looseGzip: 0 };
    for (const path of paths) {
      const bytes = readFileSync(join(assets, path));
      row.raw += bytes.length;
      row.looseGzip += looseWireBytes(path, bytes);
    }
    for (const [variant, { index, indexGzip, indexBytes }] of Object.entries(variants)) {
      const byPath = new Map(index.files.map((file) => [file.path, file]));
      const used = paths.map((path) => {
        const file = byPath.get(path);
        if (!file) throw new Error(`${name}: ${path} is not in the ${variant} index`);
        return file;
      });
      const bundles = new Set(used.map((file) => file.bundle));
      const bundleSize = new Map(index.bundles.map((bundle) => [bundle.sha256, bundle.sizeBytes]));
      row[variant] = {
        members: sum(used, (file) => file.storedBytes ?? file.sizeBytes),
        whole: sum([...bundles], (sha) => bundleSize.get(sha)),
        bundles: bundles.size,
        encodedMembers: used.filter((file) => file.encoding).length,
        indexBytes,
        indexGzip,
      };
    }
    games[name] = row;
  }
  load.push(loadNow());
  return { examples, games, load };
}

function printBytes({ examples, games, load }) {
  console.log(`\n### bytes (load ${load.join(' → ')})\n`);
  console.log('| examples/assets (all files) | bytes | ÷ plain |\n|:--|--:|--:|');
  console.log(`| loose, raw | ${examples.rawBytes} | ${r3(examples.rawBytes, examples.plainBundleBytes)} |`);
  console.log(
    `| loose, compressing host (gzip 6 for text) | ${examples.looseGzipBytes} | ${r3(examples.looseGzipBytes, examples.plainBundleBytes)} |`,
  );
  console.log(`| plain publish (\`--no-compress\`), bundles | ${examples.plainBundleBytes} | 1.000 |`);
  console.log(
    `| **encoded publish (default), bundles** | **${examples.encodedBundleBytes}** | **${r3(examples.encodedBundleBytes, examples.plainBundleBytes)}** |`,
  );
  console.log(
    `\n${examples.encodedMembers} of ${examples.files} members encoded; bundles ${examples.bundles.join(' / ')}; index ${examples.plainIndexBytes} / ${examples.encodedIndexBytes} bytes (plain / encoded).\n`,
  );
  console.log(
    '| game, first scene | files | loose raw | loose gzip (host) | plain: members + index gz | encoded: members + index gz | **encoded ÷ loose gzip** | plain: whole bundles + index gz | encoded: whole bundles + index gz | encoded whole ÷ loose gzip |\n|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  );
  for (const [name, row] of Object.entries(games)) {
    const em = row.encoded.members + row.encoded.indexGzip;
    const pm = row.plain.members + row.plain.indexGzip;
    const ew = row.encoded.whole + row.encoded.indexGzip;
    const pw = row.plain.whole + row.plain.indexGzip;
    console.log(
      `| ${name} | ${row.files} | ${kB(row.raw)} kB | ${kB(row.looseGzip)} kB | ${kB(pm)} kB | ${kB(em)} kB | **${r3(em, row.looseGzip)}** | ${kB(pw)} kB (${row.plain.bundles}) | ${kB(ew)} kB (${row.encoded.bundles}) | ${r3(ew, row.looseGzip)} |`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// The pages' site: a copy of dist/ and @noble/hashes, and the data, served by `serve`

const SITE = join(BENCH_DIR, 'site');

function prepareSite() {
  rmSync(join(SITE, 'dist'), { recursive: true, force: true });
  cpSync(join(ROOT, 'dist'), join(SITE, 'dist'), { recursive: true });
  rmSync(join(SITE, 'node_modules'), { recursive: true, force: true });
  cpSync(join(ROOT, 'node_modules', '@noble', 'hashes'), join(SITE, 'node_modules', '@noble', 'hashes'), {
    recursive: true,
    dereference: true,
  });
}

async function startSite() {
  const { startStaticServer } = await import(join(ROOT, 'dist', 'core', 'node', 'index.js'));
  const server = await startStaticServer({ root: SITE, host: '127.0.0.1' });
  return { origin: `http://127.0.0.1:${server.port}`, close: () => server.close() };
}

const IMPORTS = { '@noble/hashes/': '/node_modules/@noble/hashes/', 'awake-bundle': '/dist/core/internal.js' };

// ---------------------------------------------------------------------------------------------
// Part 2: decode throughput in a dedicated worker

const DECODE_WORKER = `import { StreamMemberDecoder } from '/dist/core/format/encoded-member.js';
const decoders = {
  member: (stored, info) => {
    const decoder = new StreamMemberDecoder(info);
    decoder.write(stored);
    return decoder.end();
  },
  bare: async (stored) => {
    const stream = new DecompressionStream('deflate-raw');
    const writer = stream.writable.getWriter();
    writer.write(stored).catch(() => {});
    writer.close().catch(() => {});
    const reader = stream.readable.getReader();
    const chunks = [];
    let length = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks.push(value);
      length += value.length;
    }
    const out = new Uint8Array(length);
    let at = 0;
    for (const chunk of chunks) { out.set(chunk, at); at += chunk.length; }
    return out;
  },
};
onmessage = async ({ data }) => {
  try {
    const { stored, sizeBytes, key, mode, minBytes } = data;
    const bytes = new Uint8Array(stored);
    const info = { key, sizeBytes, encoding: 'deflate-raw' };
    const decode = decoders[mode];
    const check = (out) => { if (out.length !== sizeBytes) throw new Error(key + ': decoded ' + out.length + ' of ' + sizeBytes); };
    check(await decode(bytes, info));
    const times = Math.max(1, Math.ceil(minBytes / sizeBytes));
    const started = performance.now();
    for (let i = 0; i < times; i++) check(await decode(bytes, info));
    const ms = performance.now() - started;
    postMessage({ ok: true, ms, decodedBytes: times * sizeBytes, times });
  } catch (error) {
    postMessage({ ok: false, error: String(error && error.stack || error) });
  }
};
`;

/** The members the decode part times (see the header): name, stored (deflate-raw), decoded size. */
function decodeInputs() {
  const dir = join(BENCH_DIR, 'pub-enc');
  if (!existsSync(join(dir, 'project.index.json'))) publish(EXAMPLE_ASSETS, dir);
  const index = JSON.parse(readFileSync(join(dir, 'project.index.json'), 'utf8'));
  const url = new Map(index.bundles.map((bundle) => [bundle.sha256, bundle.url]));
  const pick = [
    'gltf/CesiumMilkTruck/CesiumMilkTruck_data.bin',
    'glb/CesiumMan.glb',
    'glb/CesiumMilkTruck.glb',
    'tilemap/tilemaps/simple-map.json',
    'sources.json',
  ];
  const inputs = pick.map((path) => {
    const file = index.files.find((entry) => entry.path === path);
    if (!file?.encoding) throw new Error(`${path} is not encoded in ${dir}`);
    const bundle = readFileSync(join(dir, url.get(file.bundle)));
    const stored = bundle.subarray(file.offset, file.offset + file.storedBytes);
    const decoded = inflateRawSync(stored);
    if (decoded.length !== file.sizeBytes) throw new Error(`${path}: node:zlib decoded ${decoded.length} of ${file.sizeBytes}`);
    return { name: path, kind: /\.(json|gltf)$/.test(path) ? 'JSON' : 'geometry', stored: Buffer.from(stored), sizeBytes: file.sizeBytes };
  });
  // 8 MiB of the examples' text and geometry, one member.
  const parts = [
    'gltf/CesiumMilkTruck/CesiumMilkTruck.gltf',
    'gltf/CesiumMilkTruck/CesiumMilkTruck_data.bin',
    'glb/CesiumMan.glb',
    'tilemap/tilemaps/simple-map.json',
    'sources.json',
    'atlas/emoji/emoji.json',
  ].map((path) => readFileSync(join(EXAMPLE_ASSETS, path)));
  const big = Buffer.alloc(8 * 1024 * 1024);
  for (let at = 0, i = 0; at < big.length; i++) at += parts[i % parts.length].copy(big, at);
  inputs.push({
    name: '8 MiB of the above, concatenated',
    kind: 'mixed',
    stored: deflateRawSync(big, { level: 6 }),
    sizeBytes: big.length,
  });
  return inputs;
}

async function partDecode(runs) {
  const inputs = decodeInputs();
  prepareSite();
  writeFileSync(join(SITE, 'decode-worker.js'), DECODE_WORKER);
  writeFileSync(join(SITE, 'decode.html'), '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>decode</title>');
  const site = await startSite();
  const chromium = await launchFreshChromium();
  const load = [loadNow()];
  const rows = [];
  try {
    const page = await chromium.browser.newPage();
    await page.goto(`${site.origin}/decode.html`);
    const version = await chromium.browser.version();
    await page.evaluate(() => {
      globalThis.decodeWorker = new Worker('/decode-worker.js', { type: 'module' });
    });
    const inWorker = (input, mode) =>
      page.evaluate(
        (base64, sizeBytes, key, mode) =>
          new Promise((done, fail) => {
            const stored = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)).buffer;
            globalThis.decodeWorker.onmessage = ({ data }) => (data.ok ? done(data) : fail(new Error(data.error)));
            globalThis.decodeWorker.onerror = (event) => fail(new Error(event.message));
            globalThis.decodeWorker.postMessage({ stored, sizeBytes, key, mode, minBytes: 16e6 }, [stored]);
          }),
        input.stored.toString('base64'),
        input.sizeBytes,
        input.name,
        mode,
      );
    for (const input of inputs) {
      const samples = { member: [], bare: [], node: [] };
      for (let run = 0; run < runs; run++) {
        for (const mode of run % 2 ? ['bare', 'member'] : ['member', 'bare']) {
          const result = await inWorker(input, mode);
          samples[mode].push(result.decodedBytes / MB / (result.ms / 1000));
        }
        const times = Math.max(1, Math.ceil(16e6 / input.sizeBytes));
        const started = performance.now();
        for (let i = 0; i < times; i++) inflateRawSync(input.stored);
        samples.node.push((times * input.sizeBytes) / MB / ((performance.now() - started) / 1000));
      }
      const row = {
        name: input.name,
        kind: input.kind,
        sizeBytes: input.sizeBytes,
        storedBytes: input.stored.length,
        member: spread(samples.member),
        bare: spread(samples.bare),
        node: spread(samples.node),
      };
      rows.push(row);
      console.error(
        `  decode ${input.name}: member ${row.member.median.toFixed(0)} MB/s, bare ${row.bare.median.toFixed(0)} MB/s, node ${row.node.median.toFixed(0)} MB/s`,
      );
    }
    load.push(loadNow());
    return { chromium: version, rows, load };
  } finally {
    await chromium.close();
    await site.close();
  }
}

function printDecode({ rows, load, chromium }) {
  console.log(`\n### decode (${chromium}; load ${load.join(' → ')})\n`);
  console.log(
    '| member | decoded | stored | StreamMemberDecoder in a worker, MB/s (median, min–max) | bare DecompressionStream, MB/s | member ÷ bare | node:zlib inflateRawSync, MB/s |\n|:--|--:|--:|--:|--:|--:|--:|',
  );
  for (const row of rows)
    console.log(
      `| ${row.name} (${row.kind}) | ${kB(row.sizeBytes)} kB | ${kB(row.storedBytes)} kB | **${row.member.median.toFixed(0)}** (${row.member.min.toFixed(0)}–${row.member.max.toFixed(0)}) | ${row.bare.median.toFixed(0)} (${row.bare.min.toFixed(0)}–${row.bare.max.toFixed(0)}) | ${r3(row.member.median, row.bare.median)} | ${row.node.median.toFixed(0)} |`,
    );
}

// ---------------------------------------------------------------------------------------------
// Part 3: the page's thread while a 50 MB bundle streams through the reader

/** xorshift32 */
function prng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

function makeTree(dir, textExtension) {
  const FILE = 2 * 1024 * 1024;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'data'), { recursive: true });
  const random = prng(28);
  for (let i = 0; i < 25; i++) {
    let bytes;
    if (i % 3 === 0) {
      // A tile map: layers of small tile ids.
      let text = `{"width":512,"height":512,"tilewidth":64,"layers":[`;
      while (text.length < FILE) {
        const row = [];
        for (let j = 0; j < 64; j++) row.push(random() < 0.7 ? 0 : 1 + Math.floor(random() * 40));
        text += row.join(',') + ',';
      }
      bytes = Buffer.from(text).subarray(0, FILE);
    } else if (i % 3 === 1) {
      // glTF-like JSON: accessors with float arrays in text.
      let text = `{"asset":{"version":"2.0"},"accessors":[`;
      while (text.length < FILE)
        text += `{"bufferView":${Math.floor(random() * 100)},"min":[${(random() * 10).toFixed(4)},${(random() * 10).toFixed(4)}],"values":[${Array.from({ length: 12 }, () => (random() * 2 - 1).toFixed(5)).join(',')}]},`;
      bytes = Buffer.from(text).subarray(0, FILE);
    } else {
      // Geometry: float32 positions on a smooth surface, quantized a little.
      const floats = new Float32Array(FILE / 4);
      for (let j = 0; j < floats.length; j += 3) {
        const u = (j / 3) % 256;
        const v = Math.floor(j / 3 / 256);
        floats[j] = u / 16;
        floats[j + 1] = Math.round(Math.sin(u / 20) * Math.cos(v / 30) * 256) / 256;
        floats[j + 2] = v / 16 + i;
      }
      bytes = Buffer.from(floats.buffer);
    }
    writeFileSync(join(dir, 'data', `part-${String(i).padStart(2, '0')}${i % 3 === 2 ? '.bin' : `.${textExtension}`}`), bytes);
  }
}

function mainPageScript() {
  const longTasks = [];
  new PerformanceObserver((list) =>
    longTasks.push(...list.getEntries().map((entry) => ({ start: entry.startTime, duration: entry.duration }))),
  ).observe({
    type: 'longtask',
    buffered: true,
  });
  globalThis.readAll = async (indexUrl, warm) => {
    const core = await import('awake-bundle');
    // warm: the reader's workers started (and given a second to answer) before the read, as on a
    // page whose source opened earlier; cold: they start with the read, which streams its first
    // bundles on the page's thread until one answers (digest-pool.ts streamBundle).
    if (warm) core.sharedDigestPool().warm();
    await new Promise((done) => setTimeout(done, warm ? 1000 : 200));
    let probing = true;
    const gaps = { raf: 0, timeout: 0 };
    let lastRaf = performance.now();
    const raf = () => {
      const now = performance.now();
      gaps.raf = Math.max(gaps.raf, now - lastRaf);
      lastRaf = now;
      if (probing) requestAnimationFrame(raf);
    };
    requestAnimationFrame(raf);
    let lastTimeout = performance.now();
    const timeout = () => {
      const now = performance.now();
      gaps.timeout = Math.max(gaps.timeout, now - lastTimeout);
      lastTimeout = now;
      if (probing) setTimeout(timeout, 0);
    };
    setTimeout(timeout, 0);
    const started = performance.now();
    const source = await core.IndexedAssetSource.open({ indexUrl, cache: null });
    const paths = source.paths();
    const prefetch = source.prefetch(paths);
    const files = await Promise.all(paths.map((path) => source.read(path)));
    await prefetch;
    const ms = performance.now() - started;
    probing = false;
    await new Promise((done) => setTimeout(done, 300));
    const during = longTasks.filter((task) => task.start >= started && task.start <= started + ms);
    return {
      ms,
      files: files.length,
      bytes: files.reduce((total, bytes) => total + bytes.length, 0),
      longTasks: during.length,
      longestTaskMs: during.reduce((most, task) => Math.max(most, task.duration), 0),
      over50: during.filter((task) => task.duration > 50).length,
      // Each task over 50 ms: [start after the read began, duration], ms.
      tasksOver50: during.filter((task) => task.duration > 50).map((task) => [Math.round(task.start - started), Math.round(task.duration)]),
      rafGapMs: gaps.raf,
      timeoutGapMs: gaps.timeout,
    };
  };
}

/** The functions of a V8 CPU profile by self time, ms, the largest first (idle and the profiler's own left out). */
function topFunctions(profile, count = 12) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id).callFrame;
    const name =
      `${frame.functionName || '(anonymous)'} ${frame.url ? frame.url.replace(/^.*\/(dist|node_modules)\//, '$1/') : ''}${frame.url ? `:${frame.lineNumber + 1}` : ''}`.trim();
    self.set(name, (self.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return [...self.entries()]
    .filter(([name]) => !/^\((idle|program|garbage collector)\)/.test(name))
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, ms]) => [name, Math.round(ms)]);
}

async function partMain(runs, profile, textExtension) {
  const profiles = {};
  const tree = join(BENCH_DIR, 'tree50');
  makeTree(tree, textExtension);
  const variants = {
    encoded: publish(tree, join(SITE, 'main-enc'), ['--target-mb', '64']),
    plain: publish(tree, join(SITE, 'main-plain'), ['--target-mb', '64', '--no-compress']),
  };
  prepareSite();
  writeFileSync(
    join(SITE, 'main.html'),
    `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>main thread</title>
<script type="importmap">${JSON.stringify({ imports: IMPORTS })}</script>
<script type="module">(${mainPageScript.toString()})();</script>`,
  );
  const site = await startSite();
  const load = [loadNow()];
  const VARIANTS = ['encoded cold', 'plain cold', 'encoded warm', 'plain warm'];
  const samples = Object.fromEntries(VARIANTS.map((variant) => [variant, []]));
  try {
    for (let run = 0; run < runs; run++) {
      for (const variant of VARIANTS.map((_, i) => VARIANTS[(i + run) % VARIANTS.length])) {
        const warm = variant.endsWith('warm');
        const chromium = await launchFreshChromium();
        try {
          const page = await chromium.browser.newPage();
          await page.goto(`${site.origin}/main.html`, { waitUntil: 'load' });
          await page.waitForFunction(() => typeof globalThis.readAll === 'function');
          const url = `/main-${variant.startsWith('encoded') ? 'enc' : 'plain'}/project.index.json`;
          const result = await page.evaluate((at, w) => globalThis.readAll(at, w), url, warm);
          samples[variant].push(result);
          // Then, untimed, the same read again in a fresh page under V8's sampling profiler: what ran on the page's thread.
          if (profile && run === 0) {
            const again = await chromium.browser.newPage();
            await again.goto(`${site.origin}/main.html`, { waitUntil: 'load' });
            await again.waitForFunction(() => typeof globalThis.readAll === 'function');
            const cdp = await again.createCDPSession();
            await cdp.send('Profiler.enable');
            await cdp.send('Profiler.setSamplingInterval', { interval: 500 });
            await cdp.send('Profiler.start');
            await again.evaluate((at, w) => globalThis.readAll(at, w), url, warm);
            const { profile: taken } = await cdp.send('Profiler.stop');
            profiles[variant] = topFunctions(taken);
            console.error(
              `  main ${variant}: the page's thread by self time (profiled read): ${profiles[variant].map(([name, ms]) => `${name} ${ms} ms`).join('; ')}`,
            );
          }
          console.error(
            `  main ${variant} ${run + 1}/${runs}: ${(result.ms / 1000).toFixed(2)} s, ${(result.bytes / MB).toFixed(1)} MB, longest task ${result.longestTaskMs.toFixed(0)} ms (${result.longTasks} long, ${result.over50} > 50 ms), rAF gap ${result.rafGapMs.toFixed(0)} ms, setTimeout gap ${result.timeoutGapMs.toFixed(0)} ms; tasks > 50 ms [at, ms]: ${JSON.stringify(result.tasksOver50)}`,
          );
        } finally {
          await chromium.close();
        }
      }
    }
  } finally {
    await site.close();
  }
  load.push(loadNow());
  const summary = (list) =>
    Object.fromEntries(
      ['ms', 'longestTaskMs', 'longTasks', 'over50', 'rafGapMs', 'timeoutGapMs'].map((key) => [key, spread(list.map((s) => s[key]))]),
    );
  return {
    load,
    bundles: Object.fromEntries(
      Object.entries(variants).map(([name, v]) => [name, { bundles: v.result.bundles, bytes: v.result.bytes, files: v.result.files }]),
    ),
    textExtension,
    decodedBytes: samples['encoded cold'][0]?.bytes,
    variants: Object.fromEntries(VARIANTS.map((variant) => [variant, summary(samples[variant])])),
    samples,
    profiles,
  };
}

function printMain(result) {
  console.log(`\n### main thread (text files .${result.textExtension}; load ${result.load.join(' → ')})\n`);
  console.log(
    `bundles: encoded ${result.bundles.encoded.bytes} bytes (${result.bundles.encoded.bundles}), plain ${result.bundles.plain.bytes} bytes (${result.bundles.plain.bundles}); ${result.decodedBytes} bytes read\n`,
  );
  const cell = (s) => `${s.median.toFixed(0)} (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;
  console.log(
    '| bundle | read, ms | longest long task, ms | long tasks | > 50 ms | longest rAF gap, ms | longest setTimeout(0) gap, ms |\n|:--|--:|--:|--:|--:|--:|--:|',
  );
  for (const [name, v] of Object.entries(result.variants))
    console.log(
      `| ${name} | ${cell(v.ms)} | **${cell(v.longestTaskMs)}** | ${cell(v.longTasks)} | ${cell(v.over50)} | ${cell(v.rafGapMs)} | ${cell(v.timeoutGapMs)} |`,
    );
}

// ---------------------------------------------------------------------------------------------
// Part 4: first frames at a throttled line

async function buildGame(name, out, compress) {
  const game = GAMES[name];
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const webpack = require('webpack');
  const config = await require(join(ROOT, 'examples', game.example, 'webpack.config.cjs'))({ production: true, out, assets: game.assets });
  const at = config.plugins.findIndex((plugin) => plugin?.constructor?.name === 'AwakeBundlePlugin');
  const AwakeBundlePlugin = config.plugins[at].constructor;
  config.plugins[at] = new AwakeBundlePlugin({
    assets: game.assets,
    output: 'published',
    loads: false,
    ...(compress ? {} : { compress: false }),
  });
  const started = Date.now();
  await runWebpack(webpack, config, `examples/${game.example}`);
  writeFileSync(join(out, 'loose.html'), withoutPreload(readFileSync(join(out, 'index.html'), 'utf8')));
  const index = JSON.parse(readFileSync(join(out, 'published', 'project.index.json'), 'utf8'));
  for (const file of index.files) cpSync(join(game.assets, ...file.path.split('/')), join(out, 'published', ...file.path.split('/')));
  console.error(`${name} (${compress ? 'encoded' : 'plain'}): built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

const frameDir = (name, variant) => join(BENCH_DIR, 'frames', `${name}-${variant}`);

async function partFrames({ frameRuns, latencyMs, mbit, build }) {
  if (build)
    for (const name of GAME_NAMES)
      for (const variant of ['encoded', 'plain']) await buildGame(name, frameDir(name, variant), variant === 'encoded');
  const cells = [];
  for (const name of GAME_NAMES) {
    const game = GAMES[name];
    const index = { encoded: null, plain: null };
    for (const variant of Object.keys(index))
      index[variant] = JSON.parse(readFileSync(join(frameDir(name, variant), 'published', 'project.index.json'), 'utf8'));
    const server = await startThrottledServer({
      roots: { encoded: { root: frameDir(name, 'encoded'), gzip: true }, plain: { root: frameDir(name, 'plain'), gzip: true } },
      protocol: 'http/1.1',
      latencyMs,
      mbit,
    });
    const load = [loadNow()];
    const modes = ['loose', 'encoded', 'plain'];
    const samples = Object.fromEntries(modes.map((mode) => [mode, []]));
    try {
      for (let round = 0; round < frameRuns; round++) {
        const order = modes.map((_, i) => modes[(i + round) % modes.length]);
        for (const mode of order) {
          server.use(mode === 'plain' ? 'plain' : 'encoded');
          const kind = mode === 'loose' ? 'loose' : 'bundled';
          const { requests, ...measured } = await sampleExamplePage({
            server,
            path: mode === 'loose' ? '/loose.html?loose' : '/',
            firstFrame: game.firstFrame,
            what: `${name} ${mode}`,
            check: (ready) => game.check(ready, kind, index[mode === 'plain' ? 'plain' : 'encoded']),
          });
          const assets = requests.filter((entry) => entry.target.startsWith('/published/'));
          const failed = requests.filter((entry) => !/^(200|206|304)$/.test(entry.status));
          if (failed.length) throw new Error(`${name} ${mode}: ${failed.map((entry) => `${entry.target} ${entry.status}`).join(', ')}`);
          const sample = {
            ms: measured.ms,
            assetRequests: assets.length,
            assetBytes: sum(assets, (entry) => entry.bytes),
            allBytes: sum(requests, (entry) => entry.bytes),
          };
          samples[mode].push(sample);
          console.error(
            `  frames ${name} ${mode} round ${round + 1}/${frameRuns}: ${(sample.ms / 1000).toFixed(2)} s, ${sample.assetRequests} asset requests, ${kB(sample.assetBytes)} kB assets`,
          );
        }
      }
    } finally {
      server.use('encoded');
      await server.close();
    }
    load.push(loadNow());
    cells.push({
      game: name,
      load,
      ...Object.fromEntries(
        modes.map((mode) => [
          mode,
          {
            ms: spread(samples[mode].map((s) => s.ms)),
            samplesMs: samples[mode].map((s) => Math.round(s.ms)),
            assetBytes: median(samples[mode].map((s) => s.assetBytes)),
            assetRequests: median(samples[mode].map((s) => s.assetRequests)),
          },
        ]),
      ),
    });
  }
  return { latencyMs, mbit, cells };
}

function printFrames({ latencyMs, mbit, cells }) {
  console.log(`\n### first frames (${latencyMs} ms RTT, ${mbit} Mbit/s, HTTP/1.1, nginx gzip on)\n`);
  console.log(
    '| game | loose + gzip: first frame (s), asset kB | plain bundles | encoded bundles | **encoded ÷ loose gzip** (time) | encoded ÷ plain (time) | encoded ÷ loose gzip (asset bytes) | load |\n|:--|--:|--:|--:|--:|--:|--:|--:|',
  );
  const cell = (m) =>
    `${(m.ms.median / 1000).toFixed(2)} s (${(m.ms.min / 1000).toFixed(2)}–${(m.ms.max / 1000).toFixed(2)}), ${kB(m.assetBytes)} kB / ${m.assetRequests} req`;
  for (const c of cells)
    console.log(
      `| ${c.game} | ${cell(c.loose)} | ${cell(c.plain)} | ${cell(c.encoded)} | **${r3(c.encoded.ms.median, c.loose.ms.median)}** | ${r3(c.encoded.ms.median, c.plain.ms.median)} | ${r3(c.encoded.assetBytes, c.loose.assetBytes)} | ${c.load.join(' → ')} |`,
    );
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const options = parseArgs(process.argv.slice(2));
  mkdirSync(BENCH_DIR, { recursive: true });
  const results = { code: codeMeasured(), started: new Date().toISOString(), machine: machine('–'), options, aims: AIMS };
  const save = () => saveResults(options.out, results);
  if (options.parts.includes('bytes')) {
    results.bytes = partBytes();
    printBytes(results.bytes);
    save();
  }
  if (options.parts.includes('decode')) {
    results.decode = await partDecode(options.runs);
    printDecode(results.decode);
    save();
  }
  if (options.parts.includes('main')) {
    results.main = await partMain(options.runs, options.profile, options.textExtension);
    printMain(results.main);
    save();
  }
  if (options.parts.includes('build')) {
    for (const name of GAME_NAMES)
      for (const variant of ['encoded', 'plain']) await buildGame(name, frameDir(name, variant), variant === 'encoded');
    options.build = false;
  }
  if (options.parts.includes('frames')) {
    results.frames = await partFrames(options);
    printFrames(results.frames);
    save();
  }
  results.finished = new Date().toISOString();
  save();
  console.error(`results in ${options.out}`);
}

await main();
