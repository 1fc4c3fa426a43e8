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

/**
 * Min+gzip bytes that load with the game, per entry: guards against growth, set a little above
 * what each measures (BENCHMARKS.md "Size" has the figures and what each part costs). What a first
 * visit runs (the range requests and multipart parser, the whole bundle's acceptance, the
 * reference reader) is in the entries, not chunks in front of the first request. The game entries
 * last grew for encoded members decoded in turn (~0.2 KB) and a cold page's large bundle fed to a
 * worker still starting, with the copy kept should it never start (~0.35 KB); the option check that
 * refuses neededBytes with deltaReads: false (~0.05 KB); the source mount both adapters share
 * (core/page/mount.ts, ~0.2 KB: a class where each adapter had its own few lines); a pool that
 * finds its dead workers (a watchdog, jobs answered without them: ~0.45 KB) and one content
 * ledger with one member check (~0.2 KB); range answers bounded by what was asked and buffers
 * that grow with the bytes (~0.4 KB); the near-miss warning's notice (~0.1 KB; its search is a
 * chunk of its own); the planner's turns between large bundles (~0.03 KB); then a bundle layout
 * twice as fast (ASCII keys written by their code units, ~0.15 KB), a load of many paths looked
 * up in turns and a whole bundle's stream plan made in one (~0.2 KB), and a worker lost for a job
 * it holds past its time (~0.05 KB). The service worker lost 2.4 KB: its own synchronous SHA-256
 * and HMAC (adapters/service-worker/hash-sync.ts) in place of @noble/hashes; then 0.6 KB by
 * leaving out what only a page has (its document's preload links, transport attempts in
 * workers), which paid for its share of that growth; it is at its 38 KB aim.
 */
const BUDGETS: Record<string, number> = {
  core: 50 * KB,
  phaser: 53 * KB,
  babylon: 52.5 * KB,
  // The service worker at most 38 KB gzipped; it reads no references ahead, records no loads,
  // leaves out what only a page's document asks for (preload links, the early index) and what
  // runs in a page's workers (transport attempts there), and hashes synchronously with code of its own.
  sw: 38 * KB,
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

test('the service worker, as shipped, is at most 38 KB gzipped', () => {
  expect(measureOf('sw').gzip).toBeLessThanOrEqual(38 * KB);
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
