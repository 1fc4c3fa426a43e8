/**
 * The type declarations work for users on the oldest TypeScript the README claims (5.7): a game's
 * file that imports every entry of the package by name is type-checked against dist/*.d.ts with
 * `skipLibCheck: false`, so an error in our declarations fails here (5.6, for one, rejects
 * `Uint8Array<ArrayBuffer>` with TS2315).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO } from './helpers/cli';

const OLDEST_TYPESCRIPT = join(REPO, 'node_modules/typescript57/bin/tsc');

test('TypeScript 5.7 type-checks a consumer of awake-bundle, /node, /phaser, /babylon, /sw, /webpack and /vite', () => {
  const version = spawnSync(process.execPath, [OLDEST_TYPESCRIPT, '--version'], { encoding: 'utf8' });
  expect(version.stdout).toMatch(/^Version 5\.7\./);
  const result = spawnSync(process.execPath, [OLDEST_TYPESCRIPT, '-p', join(REPO, 'test/types/tsconfig.json')], { cwd: REPO, encoding: 'utf8' });
  const errors = result.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
  // Phaser 4's own declarations do not pass a full lib check (TS2526, TS2416 inside phaser.d.ts);
  // that is Phaser's, and users meet it with skipLibCheck. Every other error is ours.
  const ours = errors.filter((line) => !line.startsWith('node_modules/phaser/'));
  expect(ours).toEqual([]);
}, 120_000);
