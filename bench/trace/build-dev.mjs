// node .bench/build-dev.mjs <game>: the bench's default-publish site, unminified, into .bench/dev/<game>
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync, rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runWebpack, withoutPreload } from '../example-page.mjs';
const require = createRequire(import.meta.url);
const game = process.argv[2] ?? 'phaser';
const out = join(process.cwd(), '.bench/dev', game);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const assets = join(process.cwd(), 'examples/assets');
const config = await require(join(process.cwd(), 'examples', game, 'webpack.config.cjs'))({ production: true, out, assets });
config.optimization = { ...(config.optimization ?? {}), minimize: false };
const at = config.plugins.findIndex((p) => p?.constructor?.name === 'AwakeBundlePlugin');
const P = config.plugins[at].constructor;
config.plugins[at] = new P({ assets, output: 'published', loads: false });
await runWebpack(require('webpack'), config, game);
writeFileSync(join(out, 'loose.html'), withoutPreload(readFileSync(join(out, 'index.html'), 'utf8')));
console.log('built', out);
