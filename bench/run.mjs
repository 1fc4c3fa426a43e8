// `npm run bench`: the benchmark's parts, one after another, each a script of its own that can
// also run alone (their headers give their options and how long they take):
//   reader    bench/reader.mjs: every file of a generated project in hand, loose, bundled and zipped (hours: run it in parts)
//   start     bench/start.mjs: the example games' first requests from navigation start, loose against bundled
//   grouping  bench/grouping.mjs: the example games grouped by folder, auto and recorded loads: bytes fetched against used, first frame
//
//   npm run bench                                  # build, then every part with its defaults
//   node bench/run.mjs --parts start,grouping      # some parts (after `npm run build`)
//   node bench/run.mjs --parts start -- --runs 3   # one part, with its own options after --
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** Each part's script, and its flag to reuse the build `npm run bench` made (reader.mjs never builds). */
const PARTS = { reader: 'reader.mjs', start: 'start.mjs', grouping: 'grouping.mjs' };
const NO_BUILD = { reader: [], start: ['--no-build'], grouping: ['--no-build'] };
const split = process.argv.indexOf('--');
const own = split === -1 ? process.argv.slice(2) : process.argv.slice(2, split);
const rest = split === -1 ? [] : process.argv.slice(split + 1);
const { values } = parseArgs({ args: own, options: { parts: { type: 'string', default: Object.keys(PARTS).join(',') } } });
const parts = values.parts.split(',').filter(Boolean);
const unknown = parts.filter((part) => !(part in PARTS));
if (unknown.length) {
  console.error(`bench/run.mjs: unknown part ${unknown.join(', ')}; the parts are ${Object.keys(PARTS).join(', ')}`);
  process.exit(2);
}
if (rest.length && parts.length !== 1) {
  console.error('bench/run.mjs: options after -- go to one part: name it with --parts');
  process.exit(2);
}

for (const part of parts) {
  const script = fileURLToPath(new URL(PARTS[part], import.meta.url));
  const args = [...NO_BUILD[part], ...rest];
  console.log(`\n== bench ${part}: node bench/${PARTS[part]} ${args.join(' ')}`.trimEnd());
  const code = await new Promise((resolve) => {
    spawn(process.execPath, [script, ...args], { stdio: 'inherit' }).on('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0)));
  });
  if (code !== 0) {
    console.error(`bench ${part} failed (exit ${code})`);
    process.exit(code);
  }
}
