// After tsc: makes the compiled CLI entry executable, so `npx awake-bundle` runs it directly, and
// builds the self-contained service worker (dist/sw/awake-bundle-sw.js) with webpack.
import { chmodSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
const entry = new URL('../dist/cli/main.js', import.meta.url);
if (existsSync(entry)) chmodSync(entry, 0o755);

const require = createRequire(import.meta.url);
const webpack = require('webpack');
const config = require('../adapters/service-worker/webpack.config.cjs');
const stats = await new Promise((resolve, reject) => webpack(config, (error, result) => (error ? reject(error) : resolve(result))));
if (stats.hasErrors() || stats.hasWarnings()) {
  console.error(stats.toString('errors-warnings'));
  if (stats.hasErrors()) process.exit(1);
}
