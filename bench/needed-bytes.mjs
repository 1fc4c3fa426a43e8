// Needed bytes (issue 27 item 2; `node bench/needed-bytes.mjs` after `npm run build`): the
// example games' first loads from the DEFAULT publish of examples/assets (the CLI's defaults, no
// loads file), bytes fetched against bytes used, with needed bytes on (the default) and off
// (whole bundles). In Node against `serve`'s server on 127.0.0.1, no cache: a first visit. Bytes
// only (no timing): fetched = the body bytes the bundle requests asked for (whole bundle, or the
// ranges' bytes), used = the listed sizes of the load's files. Each game's first load is the
// recorded one (examples/*/awkb-loads.json), asked for as the adapters ask: one `load` of it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IndexedAssetSource } from '../dist/core/internal.js';
import { startStaticServer } from '../dist/core/node/index.js';

const ROOT = new URL('..', import.meta.url).pathname;
const out = mkdtempSync(join(tmpdir(), 'awkb-needed-bench-'));
execFileSync(process.execPath, [join(ROOT, 'dist/cli/main.js'), join(ROOT, 'examples/assets'), '--out', out]);
const server = await startStaticServer({ root: out });
const index = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'));
const sizeOf = new Map(index.files.map((file) => [file.path, file.sizeBytes]));
const bundleSize = new Map(index.bundles.map((bundle) => [bundle.url.split('/').pop(), bundle.sizeBytes]));

async function firstLoad(paths, neededBytes) {
  let fetched = 0;
  let requests = 0;
  const counting = (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input.url);
    if (url.pathname.endsWith('.awkb')) {
      requests++;
      const range = new Headers(init?.headers).get('range');
      fetched += range
        ? [...range.matchAll(/(\d+)-(\d+)/g)].reduce((sum, [, a, b]) => sum + Number(b) - Number(a) + 1, 0)
        : bundleSize.get(url.pathname.split('/').pop());
    }
    return fetch(input, init);
  };
  const source = await IndexedAssetSource.open({
    indexUrl: `${server.url}project.index.json`,
    fetch: counting,
    neededBytes,
    hashWorkers: 0,
  });
  await source.load(paths);
  source.dispose();
  return { fetched, requests };
}

const MB = (bytes) => (bytes / 1e6).toFixed(2);
console.log(
  `default publish of examples/assets: ${index.bundles.length} bundles, ${MB(index.bundles.reduce((s, b) => s + b.sizeBytes, 0))} MB`,
);
const CONFIGS = [
  ['needed bytes, measured line', true],
  ['needed bytes, roundTripBytes 16 KiB (the floor)', { roundTripBytes: 16 * 1024 }],
  ['needed bytes, roundTripBytes 375 KB (150 ms × 20 Mbit/s)', { roundTripBytes: 375_000 }],
  ['whole bundles (neededBytes: false)', false],
];
console.log('game     load     files used MB | ' + CONFIGS.map(([label]) => label).join(' | ') + '  (fetched MB, fetched/used, requests)');
for (const game of ['phaser', 'babylon']) {
  const loads = JSON.parse(readFileSync(join(ROOT, `examples/${game}/awkb-loads.json`), 'utf8')).loads;
  const { name, paths } = loads[0];
  const used = paths.reduce((sum, path) => sum + sizeOf.get(path), 0);
  const cells = [];
  for (const [, option] of CONFIGS) {
    const { fetched, requests } = await firstLoad(paths, option);
    cells.push(`${MB(fetched)} MB, ${(fetched / used).toFixed(2)}, ${requests}`);
  }
  console.log(`${game.padEnd(8)} ${name.padEnd(8)} ${String(paths.length).padStart(5)} ${MB(used).padStart(7)} | ${cells.join(' | ')}`);
}
await server.close();
