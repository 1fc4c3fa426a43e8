// What the throttled benchmarks (engines, first-member) share: their flags and grid of network
// conditions, rounds with the slow-sample rule, medians, the machine and code measured, and
// the writing of their section of BENCHMARKS.md.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchFreshChromium } from './chromium.mjs';

export const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const MB = 1e6;
/** A cell whose first round has a sample slower than this runs 3 rounds instead of --runs (as bench/reader.mjs). */
export const SLOW_SAMPLE_MS = 20_000;
/** 0, 40 and 150 ms RTT without a cap, and 20 Mbit/s at 40 ms. */
const DEFAULT_CONDITIONS = [
  { latencyMs: 0, mbit: 0 },
  { latencyMs: 40, mbit: 0 },
  { latencyMs: 150, mbit: 0 },
  { latencyMs: 40, mbit: 20 },
];

/**
 * The common flags: --runs n, --latency a,b (RTT ms), --bandwidth a,b (Mbit/s, 0 = no cap),
 * --label text, --out results.json, --report [results.json …]. Without --latency and
 * --bandwidth the grid is DEFAULT_CONDITIONS; with either, every latency (default 0,40,150)
 * at every bandwidth (default 0). `extra` names the script's own flags that take a value,
 * `switches` those that take none (values[name] = true). `args`: the command line's by default,
 * or what a runner passes to a script's exported main.
 */
export function parseBenchArgs(script, extra = [], switches = [], args = process.argv.slice(2)) {
  const usage = (message) => {
    console.error(`${script}: ${message}`);
    process.exit(2);
  };
  const takesValue = new Set(['runs', 'latency', 'bandwidth', 'label', 'out', ...extra]);
  const values = {};
  const reportFiles = [];
  let report = false;
  for (let i = 0; i < args.length; i++) {
    const name = args[i].replace(/^--/, '');
    if (args[i] === '--report') report = true;
    else if (switches.includes(name) && args[i].startsWith('--')) values[name] = true;
    else if (takesValue.has(name) && args[i].startsWith('--')) {
      if (args[i + 1] === undefined) usage(`${args[i]} needs a value`);
      values[name] = args[++i];
    } else if (report && args[i].endsWith('.json')) reportFiles.push(args[i]);
    else usage(`unknown argument ${args[i]}`);
  }
  const numbers = (text) => text.split(',').map((item) => Number(item.trim()));
  const latencies = numbers(values.latency ?? '0,40,150');
  const bandwidths = numbers(values.bandwidth ?? '0');
  if ([...latencies, ...bandwidths].some((n) => !(n >= 0))) usage('--latency and --bandwidth take numbers ≥ 0 (bandwidth 0 = no cap)');
  const runs = Number(values.runs ?? '5');
  if (!(Number.isInteger(runs) && runs >= 1)) usage('--runs must be a positive integer');
  const conditions =
    values.latency === undefined && values.bandwidth === undefined
      ? DEFAULT_CONDITIONS
      : latencies.flatMap((latencyMs) => bandwidths.map((mbit) => ({ latencyMs, mbit })));
  return { args, values, runs, conditions, label: values.label, out: values.out, report, reportFiles, usage };
}

/**
 * Runs `round(i)` (resolving to the sample times of that round, ms) --runs times, or 3 times
 * when a sample of the first round took over SLOW_SAMPLE_MS.
 */
export async function runRounds(runs, round) {
  let rounds = runs;
  let reduced = false;
  for (let i = 0; i < rounds; i++) {
    const times = await round(i, rounds);
    if (i === 0 && rounds > 3 && times.some((ms) => ms > SLOW_SAMPLE_MS)) {
      rounds = 3;
      reduced = true;
    }
  }
  return { rounds, reduced };
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Median, min and max of `values`. */
export function spread(values) {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
}

export const seconds = (ms) => (ms === undefined ? '–' : ms >= 10_000 ? (ms / 1000).toFixed(1) : (ms / 1000).toFixed(2));
export const ratio = (a, b) => (a === undefined || b === undefined || b === 0 ? '–' : (a / b).toFixed(2));
export const where = ({ latencyMs, mbit }) => `${latencyMs} ms | ${mbit ? `${mbit} Mbit/s` : '∞'}`;

const packageVersion = (name) => JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;

export function machine(chromium) {
  const os = existsSync('/etc/os-release')
    ? (/PRETTY_NAME="([^"]+)"/.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? 'Linux')
    : process.platform;
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `Linux ${execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim()}, ${os}`,
    chromium,
    puppeteer: packageVersion('puppeteer-core'),
    phaser: packageVersion('phaser'),
    babylon: packageVersion('@babylonjs/core'),
    node: process.version,
  };
}

/** The 1-minute load average now (2 cores: above 2 means something else wanted the CPU too). */
export const loadNow = () => Number(loadavg()[0].toFixed(2));

/** "load average 1.2–3.4 (1 min, at the start and end of each cell)" from the cells' `load` pairs, where recorded. */
export function loadLine(cells) {
  const values = cells.flatMap((cell) => cell.load ?? []);
  if (values.length === 0) return '';
  return `Load average (1 min, \`uptime\`, at the start and end of each cell): ${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)} on ${cells.length} cells.`;
}

/** machine() with the version of the Chromium the benches launch (a fresh one, started and closed for it). */
export async function machineWithChromium() {
  const probe = await launchFreshChromium();
  return machine(await probe.browser.version().finally(() => probe.close()));
}

export function machineLine(m) {
  return `Machine: ${m.cores} cores of an \`${m.cpu}\`, ${m.memoryGiB} GiB RAM, ${m.os}; ${m.chromium} (\`/usr/bin/chromium\`, \`--headless=new\`), puppeteer-core ${m.puppeteer}, Node ${m.node}; Phaser ${m.phaser}, Babylon ${m.babylon}.`;
}

/** The commit measured, and whether the worktree had changes on top of it. */
export function codeMeasured() {
  const git = (...command) => execFileSync('git', command, { cwd: ROOT, encoding: 'utf8' }).trim();
  try {
    const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
    return { commit: git('rev-parse', '--short', 'HEAD'), subject: git('log', '-1', '--format=%s'), dirty };
  } catch {
    return { commit: 'unknown', subject: '', dirty: false };
  }
}

export function codeLine(code) {
  return `\`${code.commit}\`${code.dirty ? ' with uncommitted changes' : ''}`;
}

/** The command as typed: `node <script>` and the arguments, quoted where a shell needs it. */
export function commandLine(script, args) {
  const quoted = args.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`));
  return ['node', script, ...quoted].join(' ');
}

export function saveResults(path, results) {
  mkdirSync(dirname(resolve(path)), { recursive: true });
  writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`);
}

/** Replaces the section titled `title` ("## …") of BENCHMARKS.md with `section`, or appends it. */
export function writeBenchmarksSection(title, section) {
  const path = join(ROOT, 'BENCHMARKS.md');
  const text = readFileSync(path, 'utf8');
  const start = text.indexOf(`\n${title}\n`);
  let next;
  if (start === -1) {
    next = `${text.trimEnd()}\n\n${section.trimEnd()}\n`;
  } else {
    const end = text.indexOf('\n## ', start + title.length + 1);
    next = `${text.slice(0, start + 1)}${section.trimEnd()}\n${end === -1 ? '' : text.slice(end)}`;
  }
  writeFileSync(path, next);
  console.error(`wrote ${path} (section "${title.slice(3)}")`);
}
