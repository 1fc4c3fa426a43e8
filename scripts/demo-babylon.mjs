// The Babylon example: build examples/babylon (webpack 5 + ts-loader; the awake-bundle webpack
// plugin publishes examples/assets into bundles beside it), and serve it on 127.0.0.1 (PORT,
// default 8080) until Ctrl-C.
// `--no-serve` only builds it (the tests do that once per run); `--production` minifies (slower).
//
// `buildBabylonExample({ out })` is what `npm run demo` calls to serve this example beside the
// Phaser one: it writes a self-contained site (index.html, main.js, published/) into `out`.
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

export const BABYLON_EXAMPLE_DIR = join(repo, 'build', 'babylon-example');

/** Builds the example into `out` (default build/babylon-example); resolves to `out`. */
export async function buildBabylonExample({ out = BABYLON_EXAMPLE_DIR, production = false } = {}) {
  mkdirSync(out, { recursive: true });
  const webpack = require('webpack');
  const config = await require(join(repo, 'examples/babylon/webpack.config.cjs'))({ production, out });
  const stats = await new Promise((resolveBuild, reject) =>
    webpack(config, (error, result) => (error ? reject(error) : resolveBuild(result))),
  );
  if (stats.hasErrors()) throw new Error(`building examples/babylon failed:\n${stats.toString('errors-only')}`);
  return out;
}

if (resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) {
  const site = await buildBabylonExample({ production: process.argv.includes('--production') });
  if (process.argv.includes('--no-serve')) {
    console.log(`Built the Babylon example in ${site}`);
  } else {
    const { serveSite } = await import('./serve-site.mjs');
    const server = await serveSite(repo, site, 'demo:babylon');
    console.log(`\nThe Babylon example: open ${server.url} (Ctrl-C stops the server)`);
  }
}
