/**
 * Crash safety, the small version of `npm run crash` (scripts/crash-publish.mjs): a publish
 * SIGKILLed at seeded random points, 8 times into one out folder on a ~20 MiB tree. After every
 * kill the index names only whole bundles; afterwards a publish finishes and no temporary file
 * is left. The script does the killing and counting; this test checks the folder again itself.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO, runCli, temporaryDir } from './helpers/cli.js';
import { indexViolations, temporaryFilesIn } from './helpers/trees.js';

test('8 SIGKILLs at random points never leave an index naming a missing or partial bundle', () => {
  runCli(['--help']); // fails early with a clear message when dist/ is not built
  const dir = temporaryDir('awkb-crash-test-');
  const run = spawnSync(
    process.execPath,
    [join(REPO, 'scripts', 'crash-publish.mjs'), '--runs', '8', '--size-mb', '20', '--seed', '7', '--dir', dir, '--json'],
    { encoding: 'utf8', timeout: 240_000 },
  );
  expect(run.stderr).toBe('');
  const result = JSON.parse(run.stdout);
  expect(result.problems).toEqual([]);
  expect(result).toMatchObject({ runs: 8, violations: 0, failed: 0, finalPublishExitCode: 0, temporaryFilesLeft: 0, verifyExitCode: 0 });
  expect(result.killed).toBeGreaterThan(0);
  expect(run.status).toBe(0);
  const out = join(dir, 'out');
  expect(indexViolations(out)).toEqual([]);
  expect(temporaryFilesIn(out)).toEqual([]);
}, 300_000);
