// The engines grid's parts (bench/engines.mjs --out …) as one table per cell, judged by the same
// rule (`judgeCell`), against an earlier run's table in BENCHMARKS.md where one is named:
//
//   node bench/engines-compare.mjs .bench/runs/h1.json .bench/runs/h1-20.json [--against '<section title>']
//
// Prints a Markdown table: first visit bundled / loose (the earlier run's → now, when --against
// names a BENCHMARKS.md section whose table has a row for the cell), the first scene's bundle
// bytes fetched and their ratio to the bytes loose used, return and update bundled / loose, the
// game's limit, the adapter's call → the first bundle request (ms, median of the bundled first
// visits), runs and load; then how many cells meet each aim.
import { readFileSync } from 'node:fs';
import { aimCounts, judgeCell } from './engines.mjs';

const args = process.argv.slice(2);
const against = args.includes('--against') ? args[args.indexOf('--against') + 1] : undefined;
const files = args.filter((arg, i) => !arg.startsWith('--') && args[i - 1] !== '--against');
if (files.length === 0) {
  console.error("usage: node bench/engines-compare.mjs part.json … [--against '<BENCHMARKS.md section title>']");
  process.exit(2);
}

const protocolName = (cell) => (cell.protocol === 'h2' ? 'HTTP/2' : 'HTTP/1.1');
const bandwidth = (cell) => (cell.mbit ? `${cell.mbit} Mbit/s` : '∞');
const keyOf = (game, protocol, rtt, bw) => `${game}|${protocol}|${rtt}|${bw}`;

/** The earlier run's first b/l by cell, from its table in BENCHMARKS.md (the value after its arrow). */
function earlier(title) {
  if (!title) return new Map();
  const text = readFileSync(new URL('../BENCHMARKS.md', import.meta.url), 'utf8');
  const start = text.indexOf(`## ${title}`);
  if (start < 0) throw new Error(`BENCHMARKS.md has no section "## ${title}"`);
  const found = new Map();
  for (const line of text.slice(start).split('\n').slice(1)) {
    if (line.startsWith('## ')) break;
    const cells = line.split('|').map((cell) => cell.trim());
    if (cells.length < 7 || !/^(phaser|babylon)/.test(cells[1] ?? '')) continue;
    const value = cells[5].split('→').at(-1).trim();
    found.set(keyOf(cells[1], cells[2], cells[3], cells[4]), value);
  }
  return found;
}

const before = earlier(against);
// The parts as one (the same sites, built once): a cell's engine time is then its game's 0 ms cell in any part.
const parts = files.map((file) => JSON.parse(readFileSync(file, 'utf8')));
const part = { ...parts[0], cells: parts.flatMap((each) => each.cells) };
const rows = [];
for (const cell of part.cells) {
  const judged = judgeCell(part, cell);
  const b = cell.bundled.first;
  const start = Number.isFinite(b.firstBundleMs - b.callMs) ? Math.round(b.firstBundleMs - b.callMs) : '–';
  const rtt = `${cell.latencyMs} ms`;
  const was = before.get(keyOf(cell.game, protocolName(cell), rtt, bandwidth(cell)));
  const first = `${was ? `${was} → ` : ''}${judged.firstRatio.toFixed(2)}${judged.firstMet ? '' : ' ✗'}`;
  rows.push(
    `| ${cell.game} | ${protocolName(cell)} | ${rtt} | ${bandwidth(cell)} | ${first} | ${(judged.fetchedBytes / 1000).toFixed(0)} (${judged.fetchedPerUsed.toFixed(2)}) | ${judged.returnRatio.toFixed(2)}${judged.returnMet ? '' : ' ✗'} | ${judged.updateRatio.toFixed(2)}${judged.updateMet ? '' : ' ✗'} | ${(judged.limitMs / 1000).toFixed(2)} | ${start} | ${cell.rounds} | ${cell.load.join('–')} |`,
  );
}
console.log(
  `| game | protocol | RTT | bandwidth | first b/l${against ? ' (earlier → now)' : ''} | fetched kB (÷ used) | return b/l | update b/l | limit s | call → first bundle ms | runs | load |`,
);
console.log('|:--|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
for (const row of rows) console.log(row);
console.log('');
console.log('(✗: the cell misses that aim: first ≤ 1.0× loose, ≤ 0.8× at 150 ms; return and update within 1.1× of their bounds.)');
console.log(['', ...aimCounts(part)].join('\n'));
