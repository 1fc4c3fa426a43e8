#!/usr/bin/env node
/**
 * `npm run fuzz`: runs test/fuzz.test.ts with FUZZ_RUNS runs per property (default 100,000)
 * and a fixed seed (FUZZ_SEED, default the suite's), then prints the runs, time and outcome of
 * every property, grouped by target. `npm test` runs the same properties a few hundred times.
 *
 *   npm run fuzz
 *   FUZZ_RUNS=1000000 FUZZ_SEED=7 npm run fuzz
 *   npm run fuzz -- -t 'fuzz: parseProjectIndex'   (arguments after -- go to jest)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = process.env.FUZZ_RUNS ?? '100000';
const folder = mkdtempSync(join(tmpdir(), 'awkb-fuzz-'));
const report = join(folder, 'report.json');
const jest = createRequire(import.meta.url).resolve('jest/bin/jest');

const started = Date.now();
const run = spawnSync(process.execPath, [jest, '--runInBand', 'test/fuzz.test.ts', ...process.argv.slice(2)], {
  cwd: repo,
  stdio: 'inherit',
  env: { ...process.env, FUZZ_RUNS: runs, FUZZ_REPORT: report },
});
const seconds = ((Date.now() - started) / 1000).toFixed(0);

let summary;
try {
  summary = JSON.parse(readFileSync(report, 'utf8'));
} catch {
  console.error(`fuzz: no report from jest (exit ${run.status}); see its output above`);
  process.exit(1);
} finally {
  rmSync(folder, { recursive: true, force: true });
}

const byTarget = new Map();
for (const entry of summary.reports) byTarget.set(entry.target, [...(byTarget.get(entry.target) ?? []), entry]);
console.log(`\nfuzz: seed ${summary.seed}, ${summary.runsPerProperty} runs per property, ${seconds} s in all`);
for (const [target, entries] of byTarget) {
  const total = entries.reduce((sum, entry) => sum + entry.runs, 0);
  const failed = entries.filter((entry) => entry.failed).length;
  console.log(`\n${target}: ${total} runs, ${failed} failing propert${failed === 1 ? 'y' : 'ies'}`);
  for (const entry of entries)
    console.log(
      `  ${entry.failed ? 'FAIL' : 'ok  '} ${String(entry.runs).padStart(8)} runs ${String((entry.ms / 1000).toFixed(1)).padStart(7)} s  ${entry.property}`,
    );
}
process.exit(run.status ?? 1);
