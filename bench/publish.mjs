#!/usr/bin/env node
/**
 * Publish benchmark (`npm run bench:publish`): how fast `awake-bundle <folder> --out <dir>`
 * publishes a ~1 GiB project, against a shell baseline doing the least a publish must do
 * (hash every byte once and write every byte once), and how much memory it takes.
 *
 *   node bench/publish.mjs [--gib 1] [--runs 5] [--target-mb 16] [--regen]
 *   (env: BENCH_GIB, BENCH_RUNS)
 *
 * It generates a deterministic tree once under .bench/tree (kept and reused), then measures:
 *   baseline   find -print0 | xargs -0 sha256sum >/dev/null, then ... | xargs -0 cat > all.bin
 *   publish    dist/cli/main.js .bench/tree --out .bench/out-N (a fresh out folder each run)
 *   republish  the same into an out folder that already holds every bundle (nothing to write)
 * Each is run once unmeasured first (to warm the page cache; we cannot drop it), then --runs
 * times; medians are printed. Peak memory is the publish process's max RSS (/usr/bin/time -v,
 * or a -r preload printing process.resourceUsage().maxRSS when /usr/bin/time is missing).
 * No assertions: it prints numbers.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const benchDir = join(repo, '.bench');
const treeDir = join(benchDir, 'tree');
const manifestPath = join(benchDir, 'tree-manifest.json');
const cli = join(repo, 'dist', 'cli', 'main.js');

// ---------------------------------------------------------------- options
function option(name, fallback) {
  const args = process.argv.slice(2);
  const at = args.indexOf(`--${name}`);
  if (at >= 0) return args[at + 1];
  const inline = args.find((arg) => arg.startsWith(`--${name}=`));
  return inline ? inline.slice(name.length + 3) : fallback;
}
const gib = Number(option('gib', process.env.BENCH_GIB ?? '1'));
const runs = Math.max(1, Math.floor(Number(option('runs', process.env.BENCH_RUNS ?? '5'))));
const targetMb = Number(option('target-mb', '16'));
const regen = process.argv.includes('--regen');
if (!(gib > 0) || !(targetMb > 0)) {
  console.error('usage: node bench/publish.mjs [--gib <n>] [--runs <n>] [--target-mb <n>] [--regen]');
  process.exit(2);
}
const targetBytes = Math.floor(targetMb * MiB);
const budgetBytes = 2 * targetBytes + 100 * MiB;

// ---------------------------------------------------------------- tree generation
const GENERATOR_VERSION = 1;

/** xorshift32: small, seeded, deterministic. */
function prng(seed) {
  let x = seed >>> 0 || 0x9e3779b9;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x100000000;
  };
}

/** The files of the tree: paths and sizes, from the seed and the size only. */
function treeLayout(totalBytes) {
  const random = prng(20261130);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const large = (gib >= 1 ? [40, 70, 100].map((m) => m * gib) : [20, 24, 28]).map((m) => Math.round(m * MiB));
  const files = [
    { path: 'models/characters/hero/hero-highres.glb', size: large[0] },
    { path: 'audio/music/soundtrack.ogg', size: large[1] },
    { path: 'levels/world/terrain.bin', size: large[2] },
  ];
  let remaining = totalBytes - large.reduce((a, b) => a + b, 0);
  const tops = {
    audio: ['music', 'sfx', 'voice', 'ambience'],
    models: ['characters', 'props', 'vehicles', 'buildings'],
    textures: ['characters', 'props', 'terrain', 'sky', 'ui'],
    levels: ['world', 'dungeon', 'city'],
    ui: ['icons', 'fonts', 'menus'],
    scripts: ['ai', 'quests', 'dialogue'],
  };
  const names = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
  const exts = ['.png', '.ktx2', '.glb', '.ogg', '.json', '.bin', '.wav'];
  files.push({ path: 'awake.project.json', size: 2048 }, { path: 'readme.txt', size: 900 });
  let n = 0;
  while (remaining > 0) {
    // Log-uniform between 1 KiB and 2 MiB.
    let size = Math.round(1024 * Math.exp(random() * Math.log(2048)));
    size = Math.min(size, remaining);
    const top = pick(Object.keys(tops));
    const depth = 1 + Math.floor(random() * 3);
    const parts = [top, pick(tops[top])];
    for (let d = 1; d < depth; d++) parts.push(pick(names));
    parts.push(`asset-${String(n++).padStart(5, '0')}${pick(exts)}`);
    files.push({ path: parts.join('/'), size });
    remaining -= size;
  }
  // A few duplicates (same content under another name, same folder), as real projects have.
  for (let i = 0; i < files.length; i += 97) {
    const file = files[i];
    if (file.size > 4 * MiB) continue;
    files.push({ path: file.path.replace(/(\.[a-z0-9]+)$/, '-copy$1'), size: file.size, copyOf: file.path });
  }
  return files;
}

function generateTree() {
  const totalBytes = Math.round(gib * GiB);
  const files = treeLayout(totalBytes);
  const stamp = JSON.stringify({ version: GENERATOR_VERSION, gib, files: files.length });
  if (!regen && existsSync(manifestPath) && existsSync(treeDir)) {
    try {
      if (JSON.parse(readFileSync(manifestPath, 'utf8')).stamp === stamp) return JSON.parse(readFileSync(manifestPath, 'utf8'));
    } catch {
      /* regenerate */
    }
  }
  const started = performance.now();
  rmSync(treeDir, { recursive: true, force: true });
  rmSync(manifestPath, { force: true });
  // A 64 MiB pool of PRNG bytes; each file is a unique 32-byte header then a slice of the pool.
  const pool = new Uint32Array(16 * MiB);
  const random = prng(7);
  for (let i = 0; i < pool.length; i++) pool[i] = (random() * 0x100000000) >>> 0;
  const poolBytes = new Uint8Array(pool.buffer);
  const headerOf = new Map();
  let bytes = 0;
  for (const [index, file] of files.entries()) {
    const target = join(treeDir, ...file.path.split('/'));
    mkdirSync(dirname(target), { recursive: true });
    const fd = openSync(target, 'w');
    const seed = file.copyOf ?? file.path;
    const header = Buffer.alloc(32);
    header.write(`${seed.length}:${seed}`.slice(-32).padEnd(32, '#'));
    headerOf.set(file.path, header);
    let start = (Math.imul(file.copyOf ? files.findIndex((f) => f.path === file.copyOf) : index, 2654435761) >>> 0) % poolBytes.length;
    let left = file.size;
    const first = header.subarray(0, Math.min(32, left));
    writeSync(fd, first);
    left -= first.length;
    while (left > 0) {
      const take = Math.min(left, poolBytes.length - start, 8 * MiB);
      writeSync(fd, poolBytes, start, take);
      left -= take;
      start = (start + take) % poolBytes.length;
    }
    closeSync(fd);
    bytes += file.size;
  }
  const manifest = { stamp, files: files.length, bytes, largeFiles: files.filter((f) => f.size > targetBytes).length };
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(
    `generated ${treeDir}: ${files.length} files, ${(bytes / MiB).toFixed(0)} MiB in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return manifest;
}

// ---------------------------------------------------------------- measuring
const hasTime = existsSync('/usr/bin/time');
const preload = join(benchDir, 'maxrss-preload.cjs');

function sh(command) {
  const result = spawnSync('bash', ['-c', command], { cwd: repo, encoding: 'utf8', maxBuffer: 64 * MiB });
  if (result.status !== 0) throw new Error(`failed (${result.status}): ${command}\n${result.stderr}`);
  return result;
}

/** Wall time, and CPU time (user + system, children included) when /usr/bin/time is there. */
function timed(command) {
  sh('sync');
  const started = performance.now();
  const result = hasTime
    ? spawnSync('/usr/bin/time', ['-f', 'cpu %U %S', 'bash', '-c', command], { cwd: repo, encoding: 'utf8', maxBuffer: 64 * MiB })
    : spawnSync('bash', ['-c', command], { cwd: repo, encoding: 'utf8', maxBuffer: 64 * MiB });
  const seconds = (performance.now() - started) / 1000;
  if (result.status !== 0) throw new Error(`failed (${result.status}): ${command}\n${result.stderr}`);
  const cpu = /cpu ([\d.]+) ([\d.]+)/.exec(result.stderr);
  return { seconds, cpu: cpu ? Number(cpu[1]) + Number(cpu[2]) : Number.NaN };
}

function publishOnce(outDir) {
  const args = [cli, treeDir, '--out', outDir, '--target-mb', String(targetMb), '--json'];
  sh('sync');
  let result;
  const started = performance.now();
  // As users run it: the bin itself, through its shebang (and NODE_OPTIONS, if set).
  if (hasTime) result = spawnSync('/usr/bin/time', ['-v', ...args], { cwd: repo, encoding: 'utf8', maxBuffer: 64 * MiB });
  else result = spawnSync(process.execPath, ['-r', preload, ...args], { cwd: repo, encoding: 'utf8', maxBuffer: 64 * MiB });
  const seconds = (performance.now() - started) / 1000;
  if (result.status !== 0) throw new Error(`publish failed (${result.status}):\n${result.stderr}`);
  const kib = hasTime ? /Maximum resident set size \(kbytes\): (\d+)/.exec(result.stderr) : /maxRSS=(\d+)/.exec(result.stderr);
  const summary = JSON.parse(result.stdout);
  const user = /User time \(seconds\): ([\d.]+)/.exec(result.stderr);
  const system = /System time \(seconds\): ([\d.]+)/.exec(result.stderr);
  const preloaded = /cpu=([\d.]+)/.exec(result.stderr);
  const cpu = user && system ? Number(user[1]) + Number(system[1]) : preloaded ? Number(preloaded[1]) : Number.NaN;
  return { seconds, cpu, maxRss: kib ? Number(kib[1]) * 1024 : Number.NaN, summary };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const mbps = (bytes, seconds) => bytes / 1e6 / seconds;
const mib = (bytes) => `${(bytes / MiB).toFixed(1)} MiB`;

// ---------------------------------------------------------------- main
mkdirSync(benchDir, { recursive: true });
if (!hasTime)
  writeFileSync(
    preload,
    "process.on('exit', () => { const u = process.resourceUsage(); process.stderr.write(`maxRSS=${u.maxRSS} cpu=${(u.userCPUTime + u.systemCPUTime) / 1e6}\\n`); });\n",
  );
if (!existsSync(cli)) {
  console.error(`${cli} is missing: run npm run build (npm run bench:publish does)`);
  process.exit(1);
}
const manifest = generateTree();
const inputBytes = Number(sh(`find "${treeDir}" -type f -printf '%s\\n' | awk '{s+=$1} END {print s}'`).stdout.trim());
const fileCount = Number(sh(`find "${treeDir}" -type f | wc -l`).stdout.trim());
const allBin = join(benchDir, 'all.bin');
const outDirs = [];
const outDir = (name) => {
  const dir = join(benchDir, name);
  rmSync(dir, { recursive: true, force: true });
  outDirs.push(dir);
  return dir;
};
const shaCommand = `find "${treeDir}" -type f -print0 | xargs -0 sha256sum > /dev/null`;
// A stricter hash baseline, for information: OpenSSL's SHA-256 (SHA-NI where the CPU has it, as
// node:crypto does), where coreutils sha256sum may not use those instructions.
const hasOpenssl = sh('command -v openssl || true').stdout.trim() !== '';
const opensslCommand = `find "${treeDir}" -type f -print0 | xargs -0 openssl dgst -sha256 > /dev/null`;
const catCommand = `rm -f "${allBin}"; find "${treeDir}" -type f -print0 | xargs -0 cat > "${allBin}"`;

console.log(
  `awake-bundle publish benchmark: ${fileCount} files, ${mib(inputBytes)} (${inputBytes} bytes), target ${targetMb} MiB, ${runs} runs each`,
);
console.log(
  `machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / GiB).toFixed(0)} GiB RAM, node ${process.version}`,
);
console.log('page cache: not dropped (cannot); every measurement is warmed by one unmeasured run first, and `sync` runs before each');
console.log(
  `load average before: ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')} (other processes on the machine skew wall times)`,
);

try {
  // Warm-up, unmeasured.
  process.stdout.write('warming up ... ');
  sh(shaCommand);
  sh(catCommand);
  const warm = outDir('out-warm');
  publishOnce(warm);
  rmSync(warm, { recursive: true, force: true });
  console.log('done');

  // Baseline and publish runs alternate, so a load that comes and goes (other processes on
  // the machine) falls on both alike.
  const baseline = [];
  const fresh = [];
  let kept;
  for (let i = 0; i < runs; i++) {
    const shaRun = timed(shaCommand);
    const catRun = timed(catCommand);
    const sha = shaRun.seconds;
    const cat = catRun.seconds;
    rmSync(allBin, { force: true });
    const ossl = hasOpenssl ? timed(opensslCommand).seconds : Number.NaN;
    baseline.push({ sha, cat, total: sha + cat, shaCpu: shaRun.cpu, catCpu: catRun.cpu, ossl, osslTotal: ossl + cat });
    console.log(
      `  baseline run ${i + 1}: sha256sum ${sha.toFixed(2)} s + cat ${cat.toFixed(2)} s = ${(sha + cat).toFixed(2)} s${hasOpenssl ? `   (openssl sha256 ${ossl.toFixed(2)} s)` : ''}`,
    );
    const dir = outDir(`out-${i + 1}`);
    const run = publishOnce(dir);
    fresh.push(run);
    console.log(
      `  publish run ${i + 1}:  ${run.seconds.toFixed(2)} s (cpu ${run.cpu.toFixed(2)} s), max RSS ${mib(run.maxRss)}, ${run.summary.bundles} bundles, ${run.summary.newBundles} new   [load ${loadavg()[0].toFixed(2)}]`,
    );
    if (kept) rmSync(dir, { recursive: true, force: true });
    else kept = dir;
  }

  const again = [];
  for (let i = 0; i < runs; i++) {
    const run = publishOnce(kept);
    again.push(run);
    console.log(
      `  republish run ${i + 1}: ${run.seconds.toFixed(2)} s (cpu ${run.cpu.toFixed(2)} s), max RSS ${mib(run.maxRss)}, ${run.summary.newBundles} new bundles, ${run.summary.existingBundles} already there`,
    );
  }

  const med = (runs, key) => median(runs.map((r) => r[key]));
  const base = {
    sha: med(baseline, 'sha'),
    cat: med(baseline, 'cat'),
    total: med(baseline, 'total'),
    shaCpu: med(baseline, 'shaCpu'),
    catCpu: med(baseline, 'catCpu'),
    ossl: med(baseline, 'ossl'),
    osslTotal: med(baseline, 'osslTotal'),
  };
  const pub = {
    seconds: med(fresh, 'seconds'),
    cpu: med(fresh, 'cpu'),
    rss: med(fresh, 'maxRss'),
    rssMax: Math.max(...fresh.map((r) => r.maxRss)),
  };
  const rep = {
    seconds: med(again, 'seconds'),
    cpu: med(again, 'cpu'),
    rss: med(again, 'maxRss'),
    rssMax: Math.max(...again.map((r) => r.maxRss)),
  };
  const ratio = mbps(inputBytes, pub.seconds) / mbps(inputBytes, base.total);
  const cpu = (seconds) => (Number.isNaN(seconds) ? '?' : `${seconds.toFixed(2)} s`);

  const rows = [
    ['measurement', 'median wall time', 'MB/s (input / wall)', 'median CPU (user+sys)', 'peak RSS (median / max)'],
    ['baseline: sha256sum all files', `${base.sha.toFixed(2)} s`, mbps(inputBytes, base.sha).toFixed(0), cpu(base.shaCpu), '-'],
    ['baseline: cat all files > all.bin', `${base.cat.toFixed(2)} s`, mbps(inputBytes, base.cat).toFixed(0), cpu(base.catCpu), '-'],
    [
      'baseline: both (sum per run)',
      `${base.total.toFixed(2)} s`,
      mbps(inputBytes, base.total).toFixed(0),
      cpu(base.shaCpu + base.catCpu),
      '-',
    ],
    ...(hasOpenssl
      ? [
          ['(stricter) openssl dgst -sha256 all files', `${base.ossl.toFixed(2)} s`, mbps(inputBytes, base.ossl).toFixed(0), '-', '-'],
          [
            '(stricter) openssl + cat (sum per run)',
            `${base.osslTotal.toFixed(2)} s`,
            mbps(inputBytes, base.osslTotal).toFixed(0),
            '-',
            '-',
          ],
        ]
      : []),
    [
      'publish, fresh out folder',
      `${pub.seconds.toFixed(2)} s`,
      mbps(inputBytes, pub.seconds).toFixed(0),
      cpu(pub.cpu),
      `${mib(pub.rss)} / ${mib(pub.rssMax)}`,
    ],
    [
      'publish again, nothing new',
      `${rep.seconds.toFixed(2)} s`,
      mbps(inputBytes, rep.seconds).toFixed(0),
      cpu(rep.cpu),
      `${mib(rep.rss)} / ${mib(rep.rssMax)}`,
    ],
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const line = (row) => `| ${row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join(' | ')} |`;
  console.log('');
  console.log(line(rows[0]));
  console.log(`|${widths.map((w, c) => (c === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const row of rows.slice(1)) console.log(line(row));
  console.log('');
  console.log(`publish / baseline throughput: ${(ratio * 100).toFixed(0)}% (aim: >= 60%) -> ${ratio >= 0.6 ? 'met' : 'NOT met'}`);
  if (hasOpenssl)
    console.log(`(for information: publish / stricter openssl+cat baseline: ${((base.osslTotal / pub.seconds) * 100).toFixed(0)}%)`);
  console.log(
    `peak RSS: ${mib(Math.max(pub.rssMax, rep.rssMax))} vs budget 2 x ${targetMb} MiB + 100 MiB = ${mib(budgetBytes)} -> ${Math.max(pub.rssMax, rep.rssMax) < budgetBytes ? 'within' : 'OVER'}`,
  );
  console.log(
    `load average after: ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    `(MB = 10^6 bytes; input = ${inputBytes} bytes in ${fileCount} files, ${manifest.largeFiles} of them larger than the target)`,
  );
} finally {
  for (const dir of outDirs) rmSync(dir, { recursive: true, force: true });
  rmSync(allBin, { force: true });
  rmSync(preload, { force: true });
}
