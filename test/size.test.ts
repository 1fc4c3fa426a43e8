/**
 * What each entry adds to a game (issue 21 "Size"), measured as `npm run size` measures it
 * (scripts/size.mjs, run here with `--json` over the built dist): esbuild bundles a module that
 * imports the entry, minified, for the browser, engines external; the bytes that load with the
 * game, gzipped (level 9), stay within a budget. A budget sits a little above the measure, so
 * growth shows here first; raising one is a decision to write in BENCHMARKS.md ("Size").
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO } from './helpers/cli.js';

interface Measure {
  name: string;
  importPath: string;
  min: number;
  gzip: number;
  lazy: { min: number; gzip: number };
  /** The import the docs show (`import 'awake-bundle/phaser'`, …), measured alike. */
  typical?: { code: string; min: number; gzip: number };
  inputs: { input: string; bytes: number }[];
}

const KB = 1024;

/** Min+gzip bytes that load with the game, per entry. */
// Issue 26's read path (a bounded machine per read, the load planner, the parts split out of the
// façade) and issue 27's read-ahead hook cost ~2.3 KB on the game entries; the core entry also
// exports the reference reader now in core/format (BENCHMARKS.md "Size").
const BUDGETS: Record<string, number> = {
  // Issue 27's needed bytes (the planner's rule, the line measure, gathering, aside ranges) added ~2.6 KB;
  // issue 28's writer side (AWKB version 2 layout, the encoding rule, the index's storedBytes and
  // encoding, MemberDecodeError), which `export *` of the core carries, ~1.1 KB more; its reader
  // (decoding as stored bytes arrive, in the streamed check, the pool and the reader's worker) ~1.9 KB.
  // Issue 27's start (a cold page's request sent before a worker answers, its body handed to the
  // worker; the first load's chunks asked for early): ~0.1-0.2 KB on each. RELIABILITY 41 (the
  // planner keeps out what this page has already: never the whole bundle then): ~0.25 KB. Issue 27's
  // tail (the pool's deferred start, the stores opened once it has, small digests kept here): ~0.1 KB.
  // What a first visit runs (the range requests and multipart parser, the whole bundle's
  // acceptance, the reference reader) is in the entry, not chunks in front of the first request:
  // +4.4 KB here, +8.3 KB on the game entries, whose on-demand part fell from 18.5 to 7.9 KB (a
  // first visit loads about as many bytes as before, none of them after the adapter's call).
  core: 62 * KB,
  // Issue 21 aims at 25 KB; what stands between is in BENCHMARKS.md ("Size"). Issue 28's reader: +2.2 KB.
  // Issue 27's first requests before the engine's first frame (the marked index asked for as the
  // page is parsed, core/read/open/early-index.ts; Phaser's first-frame hold): ~0.4 KB on babylon, ~0.55 on phaser.
  // The planner's keep-out of members the page has: ~0.05 KB. The first visit's code in the entry
  // (see core): +8.3 KB; the cache writes after the first scene, the read-ahead's keep-out and
  // return-visit batch, ranges past the HTTP cache: ~0.5 KB.
  phaser: 50.5 * KB,
  // Issue 27's tail: the Babylon adapter asks for a first load's parts (and the marked index) as it is
  // imported, as the Phaser one does: ~0.35 KB. The first visit's code in the entry (see core): +8.3 KB.
  babylon: 49.75 * KB,
  // Issue 21: the service worker at most 40 KB gzipped.
  sw: 40 * KB,
};

let measures: Measure[];

beforeAll(() => {
  const output = execFileSync(process.execPath, [join(REPO, 'scripts/size.mjs'), '--json'], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 120_000,
  });
  measures = JSON.parse(output) as Measure[];
}, 180_000);

const measureOf = (name: string): Measure => {
  const measure = measures.find((candidate) => candidate.name === name);
  if (!measure) throw new Error(`scripts/size.mjs measured no entry "${name}"`);
  return measure;
};

test.each(Object.keys(BUDGETS))('awake-bundle entry "%s" stays within its min+gzip budget', (name) => {
  const { importPath, gzip } = measureOf(name);
  expect({ importPath, gzip, withinBudget: gzip <= BUDGETS[name]! }).toEqual({ importPath, gzip, withinBudget: true });
});

test.each(['core', 'phaser', 'babylon'])('the import the docs show for "%s" loads no more than everything the entry exports', (name) => {
  const { typical, gzip } = measureOf(name);
  expect(typical).toBeDefined();
  expect(typical!.gzip).toBeLessThanOrEqual(gzip);
});

test('the service worker, as shipped, is at most 40 KB gzipped', () => {
  expect(measureOf('sw').gzip).toBeLessThanOrEqual(40 * KB);
});

test.each(['phaser', 'babylon'])('a game importing awake-bundle/%s loads no JavaScript SHA-256 with it (WebCrypto serves)', (name) => {
  const measure = measureOf(name);
  expect(measure.inputs.filter(({ input }) => /@noble\/hashes|core\/hash-noble\.js/.test(input))).toEqual([]);
  expect(measure.lazy.gzip).toBeGreaterThan(0); // opaque ids and the no-WebCrypto fallback load on demand
});

// With needed bytes on by default, a first visit's first load plans ranges, asks for them (one
// or several in one request), checks the answers, reads a glTF's references ahead and, where a
// bundle comes whole, accepts it: a chunk imported on demand for any of these would stand in
// front of the first request for a load's bytes, or of its hand-over. They load with the game.
test.each(['phaser', 'babylon'])('what a first visit runs loads with awake-bundle/%s, not as a chunk on demand', (name) => {
  const loaded = measureOf(name).inputs.map(({ input }) => input);
  for (const module of [
    'core/read/fetch/bundle-ranges.js',
    'core/read/plan/delta-plan.js',
    'core/net/transport-ranges.js',
    'core/net/multipart.js',
    'core/read/verify/accept.js',
    'core/read/load/read-ahead-references.js',
    'core/format/references.js',
  ])
    expect({ module, loadsWithTheGame: loaded.some((input) => input.endsWith(module)) }).toEqual({ module, loadsWithTheGame: true });
});
