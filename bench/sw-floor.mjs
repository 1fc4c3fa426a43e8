// The service worker's floor (`npm run bench:sw-floor`): how much of the worker's load time is
// Chromium's own price of a fetch answered by a service worker, whatever the worker does.
// One run, on loopback without emulation (so the network takes nothing), 1,000 files of the
// reader benchmark's small project, 128 fetches in flight, each sample in a fresh Chromium:
//   null  a worker of a dozen lines that answers each file's URL with that many zero bytes from
//         memory (sizes from the index, read at install): the floor
//   cold  awake-bundle-sw.js on fresh storage: the index, one request per bundle, every member verified
//   warm  the same worker after the cold load is in its IndexedDB cache and a page reload
// Printed: medians, and cold/null and warm/null: how far the worker is above the floor.
//
//   node bench/sw-floor.mjs [--runs 5] [--files 1000]
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStaticServer } from '../dist/core/node/index.js';
import { launchFreshChromium } from './chromium.mjs';
import { planProject, random } from './projects.mjs';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const argument = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
};
const RUNS = argument('runs', 5);
const FILES = argument('files', 1000);
const IN_FLIGHT = 128;

const NULL_WORKER = `// The floor: each indexed URL answered with that many zero bytes, nothing read or verified.
const sizes = new Map();
self.addEventListener('install', (event) => event.waitUntil(fetch('published/project.index.json').then((r) => r.json()).then((index) => {
  for (const file of index.files) sizes.set(new URL('published/' + file.path.split('/').map(encodeURIComponent).join('/'), self.location.href).pathname, file.sizeBytes);
}).then(() => self.skipWaiting())));
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
self.addEventListener('fetch', (event) => {
  const size = sizes.get(new URL(event.request.url).pathname);
  if (size !== undefined) event.respondWith(new Response(new Uint8Array(size), { headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(size) } }));
});
`;

function buildSite() {
  const dir = join(ROOT, '.bench', 'sw-floor');
  rmSync(dir, { recursive: true, force: true });
  const files = planProject({ shape: 'scene', files: FILES, seed: 0x5eed0001 });
  const rng = random(0x5eed0001 ^ 0xa5a5a5a5);
  for (const file of files) {
    const path = join(dir, 'files', ...file.path.split('/'));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, rng.fill(new Uint8Array(file.size)));
  }
  const site = join(dir, 'site');
  execFileSync(process.execPath, [CLI, join(dir, 'files'), '--out', join(site, 'published')], { stdio: 'ignore' });
  execFileSync(process.execPath, [CLI, 'sw', '--out', site, '--index', 'published/project.index.json'], { stdio: 'ignore' });
  writeFileSync(join(site, 'null-sw.js'), NULL_WORKER);
  writeFileSync(join(site, 'page.html'), '<!doctype html><meta charset="utf-8"><title>sw floor</title>\n');
  return { site, files, bytes: files.reduce((sum, file) => sum + file.size, 0) };
}

/** Registers `script` and waits until it controls the page. */
async function register(page, script) {
  await page.evaluate(async (script) => {
    await navigator.serviceWorker.register(script);
    await navigator.serviceWorker.ready;
    if (!navigator.serviceWorker.controller)
      await new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true }));
  }, script);
}

/** Every file's URL fetched, IN_FLIGHT at a time, every byte in hand: milliseconds. */
function load(page, urls, refresh) {
  return page.evaluate(
    async (urls, inFlight, refresh) => {
      const started = performance.now();
      if (refresh) {
        // As a worker that starts: the index read again (no-cache), in the time.
        await new Promise((resolve, reject) => {
          const channel = new MessageChannel();
          channel.port1.onmessage = ({ data }) => (data.type === 'awkb:refreshed' ? resolve() : reject(new Error(data.message)));
          navigator.serviceWorker.controller.postMessage({ type: 'awkb:refresh' }, [channel.port2]);
        });
      }
      let next = 0;
      let bytes = 0;
      const lane = async () => {
        while (next < urls.length) {
          const url = urls[next++];
          const response = await fetch(url);
          if (response.status !== 200) throw new Error(`${url}: ${response.status}`);
          const size = (await response.arrayBuffer()).byteLength; // read before adding: `bytes +=` across an await loses sums
          bytes += size;
        }
      };
      await Promise.all(Array.from({ length: Math.min(inFlight, urls.length) }, lane));
      return { ms: performance.now() - started, bytes };
    },
    urls,
    IN_FLIGHT,
    refresh,
  );
}

/** Waits until the worker's cache holds what it read (its `awkb:stored` answer). */
function stored(page) {
  return page.evaluate(
    () =>
      new Promise((resolve, reject) => {
        const channel = new MessageChannel();
        channel.port1.onmessage = ({ data }) => (data.type === 'awkb:stored' ? resolve() : reject(new Error(data.message)));
        navigator.serviceWorker.controller.postMessage({ type: 'awkb:stored' }, [channel.port2]);
      }),
  );
}

async function sample(kind, origin, urls, expectedBytes) {
  const chromium = await launchFreshChromium();
  try {
    const page = await chromium.browser.newPage();
    await page.goto(`${origin}/page.html`);
    await register(page, kind === 'null' ? '/null-sw.js' : '/awake-bundle-sw.js');
    if (kind === 'null') return await load(page, urls, false);
    const cold = await load(page, urls, true);
    if (cold.bytes !== expectedBytes) throw new Error(`cold: ${cold.bytes} bytes, expected ${expectedBytes}`);
    await stored(page);
    await page.reload();
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
    const warm = await load(page, urls, true);
    return { cold, warm };
  } finally {
    await chromium.close();
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const { site, files, bytes } = buildSite();
const server = await startStaticServer({ root: site });
const origin = server.url.replace(/\/$/, '');
const urls = files.map((file) => `${origin}/published/${file.path.split('/').map(encodeURIComponent).join('/')}`);
const times = { null: [], cold: [], warm: [] };
try {
  for (let run = 0; run < RUNS; run++) {
    // Alternate which goes first.
    const order = run % 2 === 0 ? ['null', 'worker'] : ['worker', 'null'];
    for (const kind of order) {
      const result = await sample(kind, origin, urls, bytes);
      if (kind === 'null') times.null.push(result.ms);
      else (times.cold.push(result.cold.ms), times.warm.push(result.warm.ms));
    }
    console.log(
      `run ${run + 1}/${RUNS}: null ${times.null.at(-1).toFixed(0)} ms, cold ${times.cold.at(-1).toFixed(0)} ms, warm ${times.warm.at(-1).toFixed(0)} ms`,
    );
  }
} finally {
  await server.close();
}
const [n, c, w] = [median(times.null), median(times.cold), median(times.warm)];
console.log(`\n${files.length} files, ${(bytes / 1e6).toFixed(1)} MB, ${IN_FLIGHT} fetches in flight, loopback, ${RUNS} runs (medians):`);
console.log(`  null worker (the floor)     ${(n / 1000).toFixed(2)} s  (${(n / files.length).toFixed(2)} ms a file)`);
console.log(`  awake-bundle worker, cold   ${(c / 1000).toFixed(2)} s  ×${(c / n).toFixed(2)} the floor`);
console.log(`  awake-bundle worker, warm   ${(w / 1000).toFixed(2)} s  ×${(w / n).toFixed(2)} the floor`);
