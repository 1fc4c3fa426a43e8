// The start of the example games, loose against bundled (`npm run bench:start`; issue 22): how
// soon after navigation start the first requests go out, and, for the Phaser game with a video
// in its preload, how soon the first frame comes.
//
//   npm run bench:start                          # build, 0 and 150 ms RTT, 3 runs, print, results in .bench/engines/start.json
//   node bench/start.mjs [--games phaser,phaser-video,babylon] [--runs 3] [--latency 0,150] [--bandwidth 0]
//                        [--label text] [--no-build] [--out part.json] [--report]
//   node bench/start.mjs --report part.json      # those results as BENCHMARKS.md's section
//   node bench/start.mjs --tail [--games phaser,babylon] [--runs 5] [--latency 0,40] [--no-build] [--out part.json]
//                        [--against <another checkout's .bench/engines> --against-label text]
//   node bench/start.mjs --report tail-part.json  # a --tail part's table, printed
//   --publish default                            # the sites as bench:engines publishes them (no loads file:
//                                                # only the index preloaded), not with their recorded loads
//
// --tail: each cell samples three pages in turn: loose, bundled with the build
// plugin's preload links (the built page) and bundled without them (loose.html, as a game whose
// page has none), and prints the medians of two gaps: from the end of the index response to the
// first bundle request (aim ≤ 20 ms; without links, nothing but the reader's and the game's own
// work lies between), and from the last byte the first frame needed to the first frame (loose:
// the last asset response that ended before it; bundled: the last bundle's), bundled against
// loose (aim: bundled's ≤ loose's). Defaults: phaser and babylon, 0 and 40 ms RTT, 5 runs.
//
// `import { main } from './start.mjs'; await main(['--no-build'])` runs it from another script.
//
// The samples are bench/engines.mjs's (same sites, same fresh Chromium per sample, same throttled
// server, same Resource Timing and CDP times): this script picks its start times and sets them
// against issue 22's aims:
// - the index request goes out within 10 ms of the adapter's first call (its User Timing mark),
//   in every sample (the largest is compared);
// - a game with a video in its preload (phaser-video) starts as fast as loose: bundled's median
//   first frame at most loose's.
// Times are ms from navigation start; loose: the first asset request; bundled: the adapter's
// call, the index request, the first bundle request and which thread sent it, and the first
// bundle request less the end of the index response (nothing but the index's parse and checks,
// and the game's own first load, between them).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ALL_MODES, BENCH_DIR, buildSite, byWhom, describeSite, GAMES, ms, runCell, summarizeSamples } from './engines.mjs';
import {
  codeLine,
  codeMeasured,
  commandLine,
  loadLine,
  machineLine,
  machineWithChromium,
  parseBenchArgs,
  saveResults,
  seconds,
  where,
  writeBenchmarksSection,
} from './harness.mjs';

const SECTION_TITLE = '## Start: index and first bundle requests (npm run bench:start)';
const DEFAULT_GAMES = 'phaser,phaser-video,babylon';
/** Aim: the index request this long after the adapter's first call, at most. */
const INDEX_AFTER_CALL_AIM_MS = 10;
/** The game the first-frame aim is about. */
const VIDEO_GAME = 'phaser-video';
/** Aim of --tail: the first bundle request this long after the index response ended, at most. */
const FIRST_BUNDLE_AFTER_INDEX_AIM_MS = 20;

export async function main(args = process.argv.slice(2)) {
  // 0 and 150 ms RTT, no cap, 3 runs, unless told otherwise; `--report file.json` runs nothing.
  const given = (flag) => args.includes(`--${flag}`);
  const reportOnly = given('report') && args[args.indexOf('--report') + 1]?.endsWith('.json');
  const tail = given('tail');
  const defaults = reportOnly
    ? []
    : [
        ...(given('latency') || given('bandwidth') ? [] : ['--latency', tail ? '0,40' : '0,150']),
        ...(given('runs') ? [] : ['--runs', tail ? '5' : '3']),
      ];
  const options = parseBenchArgs(
    'bench/start.mjs',
    ['games', 'against', 'against-label', 'publish'],
    ['no-build', 'tail'],
    [...defaults, ...args],
  );
  const against = options.values.against;
  if (against && !tail) options.usage('--against goes with --tail');
  if (options.reportFiles.length > 0) {
    const saved = JSON.parse(readFileSync(options.reportFiles[0], 'utf8'));
    // A --tail part is printed (its subsection of BENCHMARKS.md is written by hand), not written.
    if (saved.tail) console.log(renderTailTable(saved).join('\n'));
    else writeBenchmarksSection(SECTION_TITLE, renderSection(saved));
    return;
  }
  const games = (options.values.games ?? (tail ? 'phaser,babylon' : DEFAULT_GAMES)).split(',').map((name) => name.trim());
  for (const name of games) if (!GAMES[name]) options.usage(`unknown game ${name} (${Object.keys(GAMES).join(', ')})`);
  // The examples as their configs publish them (with their recorded loads: the first load's bundles
  // preloaded), or with --publish default as bench:engines does.
  const publish = options.values.publish ?? 'loads';
  if (!['loads', 'default'].includes(publish)) options.usage(`--publish is loads or default, got ${publish}`);
  if (!options.values['no-build']) for (const name of games) await buildSite(name, { publish });
  const part = {
    command: commandLine('bench/start.mjs', args),
    label: options.label,
    code: codeMeasured(),
    startedAt: new Date().toISOString(),
    machine: await machineWithChromium(),
    runs: options.runs,
    tail,
    publish,
    cells: [],
  };
  const out = options.out ?? join(BENCH_DIR, tail ? 'start-tail.json' : 'start.json');
  if (against) part.against = { dir: against, label: options.values['against-label'] ?? against };
  for (const condition of options.conditions) {
    for (const name of games) {
      const cells = against
        ? await interleavedCells(name, condition, options.runs, [
            { code: options.label ?? part.code.commit, dir: BENCH_DIR },
            { code: part.against.label, dir: against },
          ])
        : [await runCell(GAMES[name], describeSite(name), condition, options.runs, tail ? ALL_MODES : undefined)];
      part.cells.push(...cells);
      saveResults(out, part);
    }
  }
  console.log((tail ? renderTailTable(part) : renderTables(part)).join('\n'));
  console.error(`results in ${out}${options.report ? '' : `; write BENCHMARKS.md's section with: node bench/start.mjs --report ${out}`}`);
  if (options.report && !tail) writeBenchmarksSection(SECTION_TITLE, renderSection(part));
  return part;
}

/** Whether the index request met its aim in every sample of a cell (the largest gap). */
function indexVerdict(cell) {
  const worst = cell.bundled.start?.maxIndexAfterCallMs;
  if (worst === undefined || !Number.isFinite(worst)) return '–';
  return worst <= INDEX_AFTER_CALL_AIM_MS ? 'met' : `missed (${ms(worst)} ms)`;
}

/** phaser-video: bundled's median first frame against loose's. */
function videoVerdict(cell) {
  if (cell.game !== VIDEO_GAME) return '–';
  const over = cell.bundled.median - cell.loose.median;
  return over <= 0 ? `met (${ms(-over)} ms sooner)` : `missed by ${ms(over)} ms`;
}

function renderTables(part) {
  const rows = [
    '| game | RTT | bandwidth | loose: first asset | bundled: call | index | index − call (max) | index ends | first bundle | first bundle − index end | first bundle by | index aim ≤ 10 ms |',
    '|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|:--|:--|',
  ];
  for (const cell of part.cells) {
    const l = cell.loose.start ?? {};
    const b = cell.bundled.start ?? {};
    rows.push(
      `| ${cell.game} | ${where(cell)} | ${ms(l.firstAssetMs)} | ${ms(b.callMs)} | ${ms(b.indexMs)} | ${ms(b.indexAfterCallMs)} (${ms(b.maxIndexAfterCallMs)}) | ${ms(b.indexEndMs)} | ${ms(b.firstBundleMs)} | ${ms(b.firstBundleAfterIndexMs)} | ${byWhom(b.firstBundleBy)} | ${indexVerdict(cell)} |`,
    );
  }
  rows.push(
    '',
    '| game | RTT | bandwidth | loose: first frame s (min–max) | bundled: first frame s (min–max) | b/l | as fast as loose? | runs |',
    '|:--|--:|--:|--:|--:|--:|:--|--:|',
  );
  for (const cell of part.cells) {
    const { loose, bundled } = cell;
    rows.push(
      `| ${cell.game} | ${where(cell)} | ${seconds(loose.median)} (${seconds(loose.min)}–${seconds(loose.max)}) | ${seconds(bundled.median)} (${seconds(bundled.min)}–${seconds(bundled.max)}) | ${(bundled.median / loose.median).toFixed(2)} | ${cell.game === VIDEO_GAME ? videoVerdict(cell) : '(no aim)'} | ${cell.rounds} |`,
    );
  }
  return rows;
}

/**
 * --against: one game under one condition for two builds of the sites (this checkout's and
 * another's), a round of each in turn (which goes first alternates), so both meet the same
 * machine load; one cell per build, labelled with its `code`.
 */
async function interleavedCells(name, condition, runs, builds) {
  const raw = builds.map(() => ({}));
  const cells = [];
  for (let round = 0; round < runs; round++) {
    const order = round % 2 === 0 ? builds.map((_, i) => i) : builds.map((_, i) => i).reverse();
    for (const i of order) {
      const cell = await runCell(GAMES[name], describeSite(name, builds[i].dir), condition, 1, ALL_MODES);
      for (const [mode, list] of Object.entries(cell.samples)) (raw[i][mode] ??= []).push(...list);
      cells[i] = { ...cell, load: [cells[i]?.load[0] ?? cell.load[0], cell.load[1]] };
    }
  }
  return builds.map((build, i) => ({
    ...cells[i],
    code: build.code,
    rounds: runs,
    samples: raw[i],
    ...Object.fromEntries(Object.entries(raw[i]).map(([mode, list]) => [mode, summarizeSamples(list)])),
  }));
}

/**
 * --tail: per cell and bundled page (with the preload links, without), medians of the first
 * bundle request less the end of the index response, and of last byte → first frame against loose's.
 */
export function renderTailTable(part) {
  const withCode = part.cells.some((cell) => cell.code !== undefined);
  const rows = [
    `| game | RTT | bandwidth | page |${withCode ? ' code |' : ''} call → index request ms | index end → first bundle request ms (aim ≤ ${FIRST_BUNDLE_AFTER_INDEX_AIM_MS}) | last byte → first frame ms, loose | bundled | bundled − loose | first frame s, loose | bundled | runs | load avg |`,
    `|:--|--:|--:|:--|${withCode ? ':--|' : ''}--:|--:|--:|--:|--:|--:|--:|--:|--:|`,
  ];
  for (const cell of part.cells) {
    const loose = cell.loose;
    for (const [page, bundled] of [
      ['no links', cell.noLinks],
      ['links', cell.bundled],
    ]) {
      if (!bundled) continue;
      const gap = bundled.start?.firstBundleAfterIndexMs;
      const verdict =
        gap === undefined
          ? ''
          : gap <= FIRST_BUNDLE_AFTER_INDEX_AIM_MS
            ? ' (met)'
            : ` (missed by ${ms(gap - FIRST_BUNDLE_AFTER_INDEX_AIM_MS)})`;
      const over = (bundled.start?.tailMs ?? NaN) - (loose.start?.tailMs ?? NaN);
      rows.push(
        `| ${cell.game} | ${where(cell)} | ${page} |${withCode ? ` ${cell.code ?? ''} |` : ''} ${ms(bundled.start?.indexAfterCallMs)} | ${ms(gap)}${verdict} | ${ms(loose.start?.tailMs)} | ${ms(bundled.start?.tailMs)} | ${Number.isFinite(over) ? `${over > 0 ? '+' : ''}${ms(over)}` : '–'} | ${seconds(loose.median)} | ${seconds(bundled.median)} | ${cell.rounds} | ${cell.load?.map((value) => value.toFixed(1)).join('–') ?? '–'} |`,
      );
    }
  }
  return rows;
}

function renderSection(part) {
  return [
    SECTION_TITLE,
    '',
    "`npm run bench:start` (= `npm run build && node bench/start.mjs`) runs the samples of `npm run bench:engines` (see that section: the example games built for production, a fresh headless Chromium per sample, HTTP cache off, the throttled server; loose = `?loose`, plain files; bundled = the adapters with their default browser cache on fresh storage), by default at 0 and 150 ms RTT without a bandwidth cap, 3 runs (each part below says what it ran), and reports when the first requests went out, in ms from navigation start (medians): loose, the first asset request; bundled, the adapter's first call (its User Timing mark), the index request, the index request less the call (and the largest over the samples), the end of the index response, the first bundle request, that less the end of the index response, and which thread sent the first bundle request (samples). Page requests are Resource Timing `startTime`; a bundle a reader worker fetched is timed by CDP (`Network.requestWillBeSent` wall time less `timeOrigin`). Then the first frame after loading, loose against bundled.",
    '',
    `Aims: the index request goes out within ${INDEX_AFTER_CALL_AIM_MS} ms of the adapter's first call, in every sample; a game with a video in its preload (${VIDEO_GAME}) starts as fast as loose (bundled's median first frame ≤ loose's).`,
    '',
    `### ${part.label ? `${part.label}: ` : ''}code ${codeLine(part.code)}`,
    '',
    `${machineLine(part.machine)} Measured ${part.startedAt.slice(0, 10)}. ${loadLine(part.cells)} The machine is shared (2 cores, other jobs running tests): a load average above 2 means the samples competed for the CPU.`.trimEnd(),
    '',
    '```sh',
    part.command,
    '```',
    '',
    ...renderTables(part),
    '',
  ].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
