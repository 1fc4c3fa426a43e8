// `npm run demo`: build the Phaser example (webpack 5 + ts-loader; the awake-bundle webpack plugin
// publishes examples/assets into bundles beside it), and the Babylon example under babylon/
// (scripts/demo-babylon.mjs), and serve both on 127.0.0.1 (PORT, default 8080) until Ctrl-C.
// `--no-serve` only builds it (the tests do that once per run); `--production` minifies (slower).
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const site = join(repo, 'build', 'phaser-example');
const require = createRequire(import.meta.url);

mkdirSync(site, { recursive: true });
const webpack = require('webpack');
const config = await require(join(repo, 'examples/phaser/webpack.config.cjs'))({
  production: process.argv.includes('--production'),
  out: site,
});
const stats = await new Promise((resolve, reject) => webpack(config, (error, result) => (error ? reject(error) : resolve(result))));
if (stats.hasErrors()) {
  console.error(stats.toString('errors-only'));
  process.exit(1);
}

const { buildBabylonExample } = await import('./demo-babylon.mjs');
await buildBabylonExample({ out: join(site, 'babylon'), production: process.argv.includes('--production') });

if (process.argv.includes('--no-serve')) {
  console.log(`Built the Phaser example in ${site}, the Babylon example in ${join(site, 'babylon')}`);
} else {
  const { serveSite } = await import('./serve-site.mjs');
  const server = await serveSite(repo, site, 'demo');
  console.log(`\nThe Phaser example: open ${server.url}\nThe Babylon example: open ${server.url}babylon/\n(Ctrl-C stops the server)`);
}
