/** Runs the built CLI (dist/cli/main.js) as users do: a child process with exit code and output. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const REPO = resolve(__dirname, '..', '..');
export const CLI = join(REPO, 'dist', 'cli', 'main.js');
export const FIXTURES = join(REPO, 'test', 'fixtures', 'conformance');

export function runCli(args: string[], options: { cwd?: string } = {}) {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build (npm test does it first)`);
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd: options.cwd ?? REPO, encoding: 'utf8', timeout: 120_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

export function temporaryDir(prefix = 'awkb-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
