// Cutting range answers into members (`node bench/range-members.mjs` after `npm run build`). A CPU
// bench: how long `RangeMembers` (core/read/fetch/range-members.ts, from dist/) takes to cut the
// bytes of range answers into members as the number of members and of ranges grows (a load of
// 25,000 tiny members of one bundle: up to 64 ranges in one multi-range request, or a request each).
//
// A synthetic bundle: N wanted members of 20–600 bytes (seeded, distinct contents), back to back,
// an unwanted member of 20–600 bytes after every 8th (bytes inside a range that are not cut, as
// the planner's merged gaps), and 1–4 KiB of other bytes between ranges; the N members split into R
// ranges of consecutive members. The answers' bytes are fed as the transport feeds them: pieces
// of 16–64 KiB (seeded), at their bundle offsets, a piece that crosses the end of a range given
// as two calls (as the multipart parser does).
//   multipart:  one sink for the R ranges (one multi-range request), the pieces cut from the
//               answer as one stream, parts in the order asked
//       sink():   the sink made (which members the ranges hold)
//       data():   every piece given to it, Σ (each member cut, and its check started)
//   separate:   one sink per range (one request per range), each range's pieces on their own:
//               the R sink() calls Σ, and the data() calls Σ
//   to done():  multipart again, with the real `InThreadDigests` (WebCrypto) and no cache: from
//               the first sink() to `done()` resolved (every member hashed and handed over)
// In the sink() and data() columns the pool never answers: the hashing is not in them.
// Medians of 5 runs (after one unmeasured run), each after a full garbage collection. Prints the
// machine, Node, the date and the load average (a shared machine's other work shows in every number).
// Plain Node, no assertions: it prints numbers.
//
//   node bench/range-members.mjs [--runs 5] [--sizes 1000,10000,50000] [--ranges 1,4,64] [--only sink]
// (`--only sink`: without the to done() column, which takes most of the run.)
import { createHash } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { mulberry32 } from './seeded.mjs';

const { RangeMembers } = await import('../dist/core/read/fetch/range-members.js');
const { VerifiedCache } = await import('../dist/core/read/state/verified-cache.js');
const { InThreadDigests } = await import('../dist/core/internal.js');

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : args[at + 1];
};
const RUNS = Number(option('runs', '5'));
const SIZES = option('sizes', '1000,10000,50000').split(',').map(Number);
const RANGES = option('ranges', '1,4,64').split(',').map(Number);
const only = option('only', 'all');

/** A full garbage collection: the last run's garbage is not collected in the next one's time. */
const collect = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc');
})();

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const ms = (value) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

/** The bundle's bytes, the N wanted entries and the R ranges that hold them. */
function bundleOf(n, r) {
  const rng = mulberry32(0x7a11 + n * 131 + r);
  const between = (low, high) => low + Math.floor(rng() * (high - low + 1));
  const layout = [];
  const ranges = [];
  let offset = 0;
  for (let range = 0, i = 0; range < r; range++) {
    const end = Math.round(((range + 1) * n) / r);
    if (range > 0) offset += between(1024, 4096);
    const start = offset;
    for (let inRange = 0; i < end; i++, inRange++) {
      if (inRange > 0 && inRange % 8 === 0) offset += between(20, 600);
      const sizeBytes = between(20, 600);
      layout.push({ i, offset, sizeBytes });
      offset += sizeBytes;
    }
    ranges.push({ offset: start, length: offset - start });
  }
  const bytes = new Uint8Array(offset);
  for (let at = 0; at < bytes.length; at++) bytes[at] = (rng() * 256) | 0;
  // Distinct contents: the member's number in its first bytes.
  const wanted = layout.map(({ i, offset, sizeBytes }) => {
    new DataView(bytes.buffer).setUint32(offset, i);
    return { i, offset, sizeBytes };
  });
  const entries = wanted.map(({ i, offset, sizeBytes }) => ({
    path: `m/${String(i).padStart(6, '0')}.bin`,
    bundle: 'b'.repeat(64),
    offset,
    sizeBytes,
    sha256: createHash('sha256')
      .update(bytes.subarray(offset, offset + sizeBytes))
      .digest('hex'),
  }));
  return { bytes, entries, ranges };
}

/** The data() calls of one answer: pieces of 16–64 KiB over `ranges` as one stream, split where a range ends. */
function piecesOf(bytes, ranges, rng) {
  const pieces = [];
  let left = 0;
  for (const range of ranges) {
    for (let at = range.offset, end = range.offset + range.length; at < end;) {
      if (left === 0) left = 16 * 1024 + Math.floor(rng() * 48 * 1024);
      const size = Math.min(left, end - at);
      pieces.push([at, bytes.subarray(at, at + size)]);
      at += size;
      left -= size;
    }
  }
  return pieces;
}

const silent = { digest: () => new Promise(() => {}), terminate() {} };
const noCache = (pool) => new VerifiedCache(undefined, pool, undefined, () => undefined);
const callbacks = (onContent = () => {}) => ({ signal: new AbortController().signal, onContent });

function timeSinks(entries, answers) {
  const members = new RangeMembers(entries, silent, noCache(silent), callbacks());
  let start = performance.now();
  const sinks = answers.map(({ ranges }) => members.sink(ranges));
  const sinkMs = performance.now() - start;
  start = performance.now();
  for (const [a, { pieces }] of answers.entries()) for (const [offset, piece] of pieces) sinks[a].data(offset, piece);
  return { sinkMs, dataMs: performance.now() - start };
}

async function timeToDone(entries, answer) {
  const pool = new InThreadDigests();
  let handed = 0;
  const members = new RangeMembers(
    entries,
    pool,
    noCache(pool),
    callbacks(() => handed++),
  );
  const start = performance.now();
  const sink = members.sink(answer.ranges);
  for (const [offset, piece] of answer.pieces) sink.data(offset, piece);
  await members.done({ sha256: 'b'.repeat(64), sizeBytes: 0, url: 'x.awkb' }, 'https://cdn.example/x.awkb', undefined);
  const doneMs = performance.now() - start;
  if (handed !== entries.length) console.log(`  (${handed} of ${entries.length} members handed over)`);
  return doneMs;
}

async function settle() {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setTimeout(resolve, 5));
  collect();
}

console.log(
  `RangeMembers bench, ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} cores of ${cpus()[0]?.model ?? 'unknown CPU'}, load average ${load()}`,
);
console.log(`members of 20–600 B, pieces of 16–64 KiB; median ms of ${RUNS} (after one unmeasured run)`);
console.log(
  '\nmembers ranges  pieces | multipart: sink()    data() | separate: sink() Σ  data() Σ' + (only === 'sink' ? '' : ' | to done()'),
);
for (const n of SIZES) {
  for (const r of RANGES) {
    const { bytes, entries, ranges } = bundleOf(n, r);
    const multipart = [{ ranges, pieces: piecesOf(bytes, ranges, mulberry32(n + r)) }];
    const separate = ranges.map((range, i) => ({ ranges: [range], pieces: piecesOf(bytes, [range], mulberry32(n + r + i)) }));
    const rows = [];
    for (let run = 0; run <= RUNS; run++) {
      await settle();
      const one = timeSinks(entries, multipart);
      await settle();
      const each = timeSinks(entries, separate);
      let doneMs = NaN;
      if (only !== 'sink') {
        await settle();
        doneMs = await timeToDone(entries, multipart[0]);
      }
      if (run > 0) rows.push({ one, each, doneMs });
    }
    const cell = (pick) => ms(median(rows.map(pick)));
    console.log(
      `${String(n).padStart(7)} ${String(r).padStart(6)} ${String(multipart[0].pieces.length).padStart(7)} | ` +
        `${cell((row) => row.one.sinkMs).padStart(16)} ${cell((row) => row.one.dataMs).padStart(9)} | ` +
        `${cell((row) => row.each.sinkMs).padStart(16)} ${cell((row) => row.each.dataMs).padStart(9)}` +
        (only === 'sink' ? '' : ` | ${cell((row) => row.doneMs).padStart(10)}`),
    );
  }
}
console.log(`\nload average at the end: ${load()}`);
