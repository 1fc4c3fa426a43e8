/**
 * Imports run one way (issue 26, STYLE.md "imports run one way"): no module in these folders is
 * part of an import circle, as scripts/import-cycles.mjs finds them over the sources
 * (`import … from`, `import '…'`, `export … from`, `import('…')`). Type-only imports count: they
 * leave no trace at runtime, but two modules that need each other's types are still two modules
 * that cannot be read, or moved, apart. A lazy `import()` counts too: the shared pieces go in a
 * third module that both import, and the lazy module imports downward only.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO } from './helpers/cli.js';

interface Cycle {
  files: string[];
  steps: { from: string; to: string; how: string }[];
}

const CYCLE_FREE_FOLDERS = [
  'adapters/babylon',
  'adapters/service-worker',
  'core/net',
  'core/format',
  'core/publish',
  'core/node',
  'cli',
  'integrations',
  'core/read',
  'adapters/phaser',
  'core/cache',
  'core/page',
];

/** The script's circles through `folders`; it exits 1 when it finds any, 0 when none. */
const cyclesThrough = (folders: string[]): Cycle[] => {
  const run = spawnSync(process.execPath, [join(REPO, 'scripts/import-cycles.mjs'), '--json', ...folders], { cwd: REPO, encoding: 'utf8' });
  if (run.status !== 0 && run.status !== 1) throw new Error(`scripts/import-cycles.mjs failed (${run.status}): ${run.stderr}`);
  return JSON.parse(run.stdout) as Cycle[];
};

/** `a.ts → b.ts (type) → a.ts`, as the script prints a circle. */
const described = ({ files, steps }: Cycle): string =>
  [files[0], ...steps.map(({ to, how }) => (how === 'value' ? to : `${to} (${how})`))].join(' → ');

test.each(CYCLE_FREE_FOLDERS)('no import circle passes through %s', (folder) => {
  expect(cyclesThrough([folder]).map(described)).toEqual([]);
});
