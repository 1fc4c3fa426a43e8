// After tsc: makes the compiled CLI entry executable, so `npx awake-bundle` runs it directly,
// builds the reader's Web Worker from core/read/workers/worker-main.ts into the text of
// dist/core/read/workers/worker-script.js, and builds the self-contained service worker
// (dist/sw/awake-bundle-sw.js), both with webpack.
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
const entry = new URL('../dist/cli/main.js', import.meta.url);
if (existsSync(entry)) chmodSync(entry, 0o755);

const require = createRequire(import.meta.url);
const webpack = require('webpack');

async function build(config) {
  const stats = await new Promise((resolve, reject) => webpack(config, (error, result) => (error ? reject(error) : resolve(result))));
  if (stats.hasErrors() || stats.hasWarnings()) {
    console.error(stats.toString('errors-warnings'));
    if (stats.hasErrors()) process.exit(1);
  }
}

// The reader's worker: the script's text replaces the compiled placeholder (undefined in the sources).
await build(require('./reader-worker.webpack.config.cjs'));
const workerDir = new URL('../dist/.reader-worker/', import.meta.url);
const workerScript = readFileSync(new URL('worker.js', workerDir), 'utf8');
writeFileSync(
  new URL('../dist/core/read/workers/worker-script.js', import.meta.url),
  [
    '// Built by scripts/postbuild.mjs from core/read/workers/worker-main.ts (see core/read/workers/worker-script.ts).',
    `export const WORKER_SCRIPT = ${JSON.stringify(workerScript)};`,
    '',
  ].join('\n'),
);
rmSync(workerDir, { recursive: true, force: true });

await build(require('../adapters/service-worker/webpack.config.cjs'));
