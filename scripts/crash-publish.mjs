#!/usr/bin/env node
/**
 * Crash safety of a publish (`npm run crash`): SIGKILLs `awake-bundle <tree> --out <out>` at
 * random points, again and again into the same out folder, and after every kill checks what a
 * reader would meet: the index (when there is one) must name only bundles that exist with the
 * listed size and SHA-256 (SPEC §8: the index is written last, every file fsynced and renamed
 * into place). After the series, one publish runs to the end; it must succeed, leave no
 * temporary file, and pass `awake-bundle verify`.
 *
 *   node scripts/crash-publish.mjs [--runs 50] [--size-mb 200] [--seed 1] [--dir <folder>] [--json]
 *
 * The tree is random incompressible data (seeded): many folders, sizes from 1 KiB to 24 MiB (the
 * largest above the bundle target, so they are streamed). Each run changes a few files and picks
 * another bundle target (0.5 to 8 MiB), so nearly every bundle of each publish is new; before a
 * run, bundles the current index does not name are removed, as a host's cleanup would do, so
 * the folder stays about twice the tree's size. Kill points come from the
 * seeded generator, alternately: a delay (a share of the first full publish's duration), or the
 * moment the out folder has gained a random number of bytes since the run started (up to 70% of
 * the tree: a run rewrites most, not all, of it). Nothing is
 * timed or asserted on durations; it prints counts (and exits 1 on any violation).
 */
import { spawn, spawnSync } from 'node:child_process';
import { createCipheriv, createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(repo, 'dist', 'cli', 'main.js');
const MiB = 1024 * 1024;

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '50' },
    'size-mb': { type: 'string', default: '200' },
    seed: { type: 'string', default: '1' },
    dir: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const runs = Number(values.runs);
const sizeMb = Number(values['size-mb']);
const seed = Number(values.seed);
if (!(Number.isInteger(runs) && runs > 0) || !(sizeMb > 0) || !Number.isInteger(seed)) {
  process.stderr.write('usage: crash-publish.mjs [--runs <n ≥ 1>] [--size-mb <n > 0>] [--seed <integer>] [--dir <folder>] [--json]\n');
  process.exit(2);
}
if (!existsSync(cli)) {
  process.stderr.write(`${cli} is missing: run npm run build first\n`);
  process.exit(2);
}

/** mulberry32: small and seedable; the kill points need repeatability, not quality. */
function seededRandom(state) {
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = seededRandom(seed);
const between = (low, high) => low + Math.floor(random() * (high - low + 1));

function incompressible(size, contentSeed) {
  const key = createHash('sha256').update(`crash:${contentSeed}`).digest().subarray(0, 16);
  return createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(size));
}

/** Random tree of about `sizeMb` MiB: ~70% small files, ~25% medium, ~5% larger than a bundle. */
function generateTree(root) {
  const files = [];
  let total = 0;
  for (let n = 0; total < sizeMb * MiB; n++) {
    const kind = random();
    const large = Math.max(3 * MiB, Math.min(24 * MiB, Math.floor((sizeMb * MiB) / 8)));
    const size = kind < 0.7 ? between(1024, 64 * 1024) : kind < 0.95 ? between(64 * 1024, 2 * MiB) : between(2 * MiB, large);
    const depth = between(0, 3);
    const folders = Array.from({ length: depth }, (_, level) => (level === 0 ? `area-${between(0, 15)}` : `sub-${between(0, 5)}`));
    const path = [...folders, `file-${n}.bin`].join('/');
    mkdirSync(join(root, ...folders), { recursive: true });
    writeFileSync(join(root, path), incompressible(size, `${seed}:${n}`));
    files.push({ path, size });
    total += size;
  }
  return { files, total };
}

function temporaryFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.includes('.tmp-'));
}

function sha256File(path) {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** What a reader would trip over: an index naming a missing, partial or different bundle. */
function violations(out) {
  const indexPath = join(out, 'project.index.json');
  if (!existsSync(indexPath)) return [];
  let index;
  try {
    index = JSON.parse(readFileSync(indexPath, 'utf8'));
  } catch (error) {
    return [`project.index.json is not JSON: ${error.message}`];
  }
  const problems = [];
  for (const bundle of index.bundles ?? []) {
    const path = join(out, bundle.url);
    if (!existsSync(path)) problems.push(`${bundle.url}: missing`);
    else if (statSync(path).size !== bundle.sizeBytes)
      problems.push(`${bundle.url}: ${statSync(path).size} bytes, the index says ${bundle.sizeBytes}`);
    else if (sha256File(path) !== bundle.sha256) problems.push(`${bundle.url}: SHA-256 differs`);
  }
  return problems;
}

/** Bytes in the bundle folder (finished and temporary files). */
function bytesIn(dir) {
  if (!existsSync(dir)) return 0;
  let sum = 0;
  for (const name of readdirSync(dir)) sum += statSync(join(dir, name), { throwIfNoEntry: false })?.size ?? 0;
  return sum;
}

/** Removes bundles the index does not name (never while a publish runs). */
function pruneUnindexedBundles(out) {
  const indexPath = join(out, 'project.index.json');
  if (!existsSync(indexPath)) return;
  const named = new Set(JSON.parse(readFileSync(indexPath, 'utf8')).bundles.map((bundle) => bundle.url.split('/').pop()));
  for (const name of readdirSync(join(out, 'bundles'))) {
    if (name.endsWith('.awkb') && !named.has(name)) rmSync(join(out, 'bundles', name));
  }
}

function publishArgs(tree, out, targetMb) {
  return [cli, tree, '--out', out, '--target-mb', String(targetMb), '--json'];
}

/** Runs one publish and SIGKILLs it at the chosen point; resolves with what happened. */
function killedPublish(tree, out, targetMb, killPoint) {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, publishArgs(tree, out, targetMb), { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    let sent = false;
    let midWrite = false;
    let poller;
    let timer;
    const kill = () => {
      if (sent || child.exitCode !== null) return;
      midWrite = temporaryFiles(out).length > 0;
      sent = child.kill('SIGKILL');
    };
    if (killPoint.kind === 'delay') timer = setTimeout(kill, killPoint.ms);
    else {
      const start = bytesIn(join(out, 'bundles'));
      const check = () => {
        if (bytesIn(join(out, 'bundles')) - start >= killPoint.bytes) kill();
        else poller = setTimeout(check, 2);
      };
      check();
    }
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(poller);
      resolveRun({ killed: signal === 'SIGKILL', midWrite: signal === 'SIGKILL' && midWrite, code, stderr });
    });
  });
}

const work = values.dir ? resolve(values.dir) : mkdtempSync(join(tmpdir(), 'awkb-crash-'));
const tree = join(work, 'tree');
const out = join(work, 'out');
rmSync(tree, { recursive: true, force: true });
rmSync(out, { recursive: true, force: true });
mkdirSync(tree, { recursive: true });
const log = (line) => values.json || process.stdout.write(`${line}\n`);

const began = performance.now();
const { files, total } = generateTree(tree);
log(`tree: ${files.length} files, ${(total / MiB).toFixed(1)} MiB in ${tree}`);

// One full publish first: a duration to spread the delay kills over, and an index to protect.
const calibrationStart = performance.now();
const calibration = spawnSync(process.execPath, publishArgs(tree, out, 4), { encoding: 'utf8' });
if (calibration.status !== 0) {
  process.stderr.write(`the first publish failed: ${calibration.stderr}\n`);
  process.exit(1);
}
const fullMs = performance.now() - calibrationStart;

const counts = { runs: 0, killed: 0, killedMidWrite: 0, finishedBeforeKill: 0, failed: 0, violations: 0 };
const problems = [];
for (let run = 1; run <= runs; run++) {
  // New content for a few files and another target: this publish has new bundles to write.
  for (let i = 0; i < 3; i++) {
    const file = files[between(0, files.length - 1)];
    writeFileSync(join(tree, file.path), incompressible(file.size, `${seed}:${file.path}:${run}:${i}`));
  }
  const targetMb = Math.round((0.5 + random() * 7.5) * 100) / 100;
  pruneUnindexedBundles(out);
  const killPoint =
    run % 2 === 1
      ? { kind: 'delay', ms: Math.floor(random() * fullMs * 0.9) }
      : { kind: 'bytes', bytes: Math.floor(random() * total * 0.7) };
  const result = await killedPublish(tree, out, targetMb, killPoint);
  counts.runs++;
  if (result.killed) counts.killed++;
  if (result.midWrite) counts.killedMidWrite++;
  if (!result.killed && result.code === 0) counts.finishedBeforeKill++;
  if (!result.killed && result.code !== 0) {
    counts.failed++;
    problems.push(`run ${run}: publish exited ${result.code}: ${result.stderr.trim()}`);
  }
  const found = violations(out);
  counts.violations += found.length;
  problems.push(...found.map((problem) => `run ${run}: ${problem}`));
  log(
    `run ${String(run).padStart(3)}: target ${targetMb} MiB, ${killPoint.kind === 'delay' ? `kill after ${killPoint.ms} ms` : `kill after +${(killPoint.bytes / MiB).toFixed(1)} MiB`}: ${result.killed ? (result.midWrite ? 'killed mid-write' : 'killed') : `finished (exit ${result.code})`}, ${temporaryFiles(out).length} temporary files, ${found.length} violations`,
  );
}

const temporaryBefore = temporaryFiles(out).length;
const final = spawnSync(process.execPath, publishArgs(tree, out, 4), { encoding: 'utf8' });
const finalSummary = final.status === 0 ? JSON.parse(final.stdout) : undefined;
const temporaryLeft = temporaryFiles(out);
const verify = spawnSync(process.execPath, [cli, 'verify', out], { encoding: 'utf8' });
const finalViolations = violations(out);
if (final.status !== 0) problems.push(`final publish exited ${final.status}: ${final.stderr.trim()}`);
if (temporaryLeft.length > 0) problems.push(`temporary files left after the final publish: ${temporaryLeft.join(', ')}`);
if (verify.status !== 0) problems.push(`verify after the final publish: ${verify.stderr.trim()}`);
problems.push(...finalViolations.map((problem) => `final: ${problem}`));

const result = {
  ...counts,
  files: files.length,
  treeBytes: total,
  temporaryFilesBeforeFinal: temporaryBefore,
  staleTemporaryFilesRemoved: finalSummary?.staleTemporaryFilesRemoved ?? null,
  finalPublishExitCode: final.status,
  temporaryFilesLeft: temporaryLeft.length,
  verifyExitCode: verify.status,
  problems,
  seconds: Math.round((performance.now() - began) / 100) / 10,
  dir: work,
};
if (values.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
else {
  log(
    `\n${counts.runs} runs: ${counts.killed} killed (${counts.killedMidWrite} with a temporary file open), ${counts.finishedBeforeKill} finished before the kill, ${counts.failed} failed otherwise`,
  );
  log(`violations after kills: ${counts.violations}`);
  log(
    `temporary files before the final publish: ${temporaryBefore}; removed by it: ${result.staleTemporaryFilesRemoved}; left: ${temporaryLeft.length}`,
  );
  log(`final publish exit ${final.status}, verify exit ${verify.status}; ${result.seconds} s in all`);
  for (const problem of problems) log(`PROBLEM ${problem}`);
}
if (!values.dir) rmSync(work, { recursive: true, force: true });
process.exitCode = problems.length === 0 ? 0 : 1;
