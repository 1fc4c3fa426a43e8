// The engines grid's parts (bench/engines.mjs --out …) as one table per cell, judged by the same
// rule (`judgeCell`), against an earlier run's table in BENCHMARKS.md where one is named:
//
//   node bench/engines-compare.mjs .bench/runs/h1.json .bench/runs/h1-20.json [--against '<section title>']
//
// Prints a Markdown table: first visit bundled / loose (the earlier run's → now, when --against
// names a BENCHMARKS.md section whose table has a row for the cell), the first scene's bundle
// bytes fetched and their ratio to the bytes loose used, return and update bundled / loose, the
// game's limit, the adapter's call → the first bundle request (ms, median of the bundled first
// visits), runs and load; then how many cells meet each aim (issue 27 item 7).
import { readFileSync } from 'node:fs';
import { judgeCell } from './engines.mjs';

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
const rows = [];
const counts = { fetched: 0, first: 0, return: 0, returnRatio: 0, update: 0, cells: 0, at150: 0 };
for (const file of files) {
  const part = JSON.parse(readFileSync(file, 'utf8'));
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
    counts.cells++;
    counts.fetched += judged.fetchedMet ? 1 : 0;
    counts.first += judged.firstMet ? 1 : 0;
    counts.return += judged.returnMet ? 1 : 0;
    counts.update += judged.updateMet ? 1 : 0;
    if (judged.returnRatioMet !== undefined) {
      counts.at150++;
      counts.returnRatio += judged.returnRatioMet ? 1 : 0;
    }
  }
}
console.log(
  `| game | protocol | RTT | bandwidth | first b/l${against ? ' (earlier → now)' : ''} | fetched kB (÷ used) | return b/l | update b/l | limit s | call → first bundle ms | runs | load |`,
);
console.log('|:--|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
for (const row of rows) console.log(row);
console.log('');
console.log('(✗: the cell misses that aim: first ≤ 1.0× loose, ≤ 0.8× at 150 ms; return and update within 1.1× of their bounds.)');
console.log('');
console.log(`- first scene fetched / used ≤ 1.1: ${counts.fetched} of ${counts.cells}`);
console.log(`- first visit b/l ≤ 1.0 (≤ 0.8 at 150 ms): ${counts.first} of ${counts.cells}`);
console.log(`- return ≤ 1.1 × (limit + RTT): ${counts.return} of ${counts.cells}`);
console.log(`- return b/l ≤ 0.8 at 150 ms: ${counts.returnRatio} of ${counts.at150}`);
console.log(`- update ≤ 1.1 × (limit + RTT + changed at line rate): ${counts.update} of ${counts.cells}`);
