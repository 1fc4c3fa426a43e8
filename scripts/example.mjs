// `npm run example`: publish examples/assets into bundles, stage the example page beside them,
// and serve it on 127.0.0.1 (PORT, default 8080) until Ctrl-C. `--no-serve` only stages it.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const site = join(repo, 'build', 'example');
const published = join(site, 'published');

mkdirSync(site, { recursive: true });
const publish = spawnSync(
  process.execPath,
  [join(repo, 'dist/cli/main.js'), join(repo, 'examples/assets'), '--out', published, '--target-mb', '1'],
  { stdio: 'inherit' },
);
if (publish.status !== 0) process.exit(publish.status ?? 1);

for (const [from, to] of [
  ['dist/core', 'lib/awake-bundle'],
  ['node_modules/@noble/hashes', 'lib/noble-hashes'],
]) {
  rmSync(join(site, to), { recursive: true, force: true });
  cpSync(join(repo, from), join(site, to), { recursive: true });
}
cpSync(join(repo, 'examples/reader/index.html'), join(site, 'index.html'));

if (process.argv.includes('--no-serve')) {
  console.log(`Staged the example in ${site}`);
} else {
  const { serveSite } = await import('./serve-site.mjs');
  const server = await serveSite(repo, site, 'example');
  console.log(`\nThe example: open ${server.url} (Ctrl-C stops the server)`);
}
