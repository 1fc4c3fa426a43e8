// Browser cache throughput in real Chromium: writes then reads 200 MB of entries of 4 KB–4 MB
// (log-uniform sizes, fixed seed, incompressible bytes) through IndexedDBCache,
// CacheStorageCache and OpfsCache from dist/, and prints MB/s, the median of 3 runs, each run on
// fresh storage. Reads happen twice: in the page that wrote, and after Chromium restarts on the
// same profile (a returning visitor; the OS page cache stays warm in both).
//
//   npm run bench:browser-cache
//   node bench/browser-cache.mjs [--mb 200] [--small 2000] [--runs 3] [--backends opfs,indexeddb,cache-storage] [--json]
//
// Plain Node + puppeteer-core, no jest. Chromium: $PUPPETEER_EXECUTABLE_PATH or /usr/bin/chromium.
import { createReadStream, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, tmpdir, totalmem } from 'node:os';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';
import { CHROMIUM_ARGS } from './chromium.mjs';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const MB = 1024 * 1024;

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : args[at + 1];
};
const totalMb = Number(option('mb', '200'));
const runs = Number(option('runs', '3'));
const backends = option('backends', 'indexeddb,cache-storage,opfs').split(',');
const json = args.includes('--json');
const SEED = 0x5eed2026;
// A second, small-entry set (4–64 KB): per-entry overhead, which the byte-weighted mix hides.
const SMALL_COUNT = Number(option('small', '2000'));

const BROWSER_CACHE_CHROMIUM_ARGS = [...CHROMIUM_ARGS, '--enable-unsafe-swiftshader']; // the benches' flags (bench/chromium.mjs)

const HARNESS_HTML = `<!doctype html><meta charset="utf-8"><title>bench</title>
<script type="importmap">${JSON.stringify({ imports: { '@noble/hashes/': '/node_modules/@noble/hashes/', 'awake-bundle': '/dist/core/internal.js' } })}</script>`;

/** The same small server as test/helpers/browser.ts: dist/, node_modules/ and the page. */
async function startServer() {
  const mounts = { '/dist/': join(ROOT, 'dist'), '/node_modules/': join(ROOT, 'node_modules') };
  const server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url ?? '/', 'http://localhost').pathname);
    if (path === '/harness.html') {
      response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
      return void response.end(HARNESS_HTML);
    }
    const prefix = Object.keys(mounts).find((p) => path.startsWith(p));
    const file = prefix && resolve(mounts[prefix], '.' + path.slice(prefix.length - 1));
    if (!file || !file.startsWith(mounts[prefix] + sep) || !existsSync(file) || !statSync(file).isFile()) {
      response.writeHead(404);
      return void response.end();
    }
    const type = ['.js', '.mjs'].includes(extname(file)) ? 'text/javascript; charset=utf-8' : 'application/octet-stream';
    response.writeHead(200, { 'Content-Type': type, 'Cache-Control': 'no-store' });
    createReadStream(file).pipe(response);
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((done) => (server.closeAllConnections(), server.close(done))),
  };
}

async function launch(userDataDir) {
  return puppeteer.launch({
    executablePath: process.env.PUPPETEER_EXECUTABLE_PATH || '/usr/bin/chromium',
    args: [...BROWSER_CACHE_CHROMIUM_ARGS, `--user-data-dir=${userDataDir}`],
    headless: true,
    protocolTimeout: 600_000,
  });
}

async function openPage(browser, origin) {
  const page = await browser.newPage();
  page.on('pageerror', (error) => console.error(`[page] ${error}`));
  await page.goto(`${origin}/harness.html`);
  // The entries, made once per page: same seed, same sizes, same bytes, same keys every time.
  await page.evaluate(
    async (totalBytes, smallCount, seed) => {
      const core = await import('/dist/core/internal.js');
      let state = seed >>> 0;
      const next = () => ((state ^= state << 13), (state ^= state >>> 17), (state ^= state << 5), state >>> 0);
      // log-uniform sizes: as many 4–40 KB entries as 400 KB–4 MB ones, most bytes in the large ones.
      const logUniform = (min, max) => Math.round(min * Math.pow(max / min, next() / 2 ** 32));
      const make = async (sizes) => {
        const entries = [];
        for (const size of sizes) {
          const words = new Uint32Array(Math.ceil(size / 4));
          for (let i = 0; i < words.length; i++) words[i] = next();
          const bytes = new Uint8Array(words.buffer, 0, size);
          entries.push({ sha256: await core.sha256Hex(bytes), bytes });
        }
        return entries;
      };
      const sizes = [];
      for (let left = totalBytes; left > 0;) {
        const size = logUniform(4 * 1024, 4 * 1024 * 1024);
        const take = left - size < 4 * 1024 ? left : size;
        sizes.push(take);
        left -= take;
      }
      globalThis.benchEntries = {
        mix: await make(sizes),
        small: await make(Array.from({ length: smallCount }, () => logUniform(4 * 1024, 64 * 1024))),
      };
    },
    totalMb * MB,
    SMALL_COUNT,
    SEED,
  );
  return page;
}

async function timeWrites(page, backend, name, set = 'mix') {
  return page.evaluate(
    async (backend, name, set) => {
      const core = await import('/dist/core/internal.js');
      const cache = core.createBrowserCache(backend, { name });
      await cache.open();
      const started = performance.now();
      for (const { sha256, bytes } of globalThis.benchEntries[set]) await cache.put(sha256, bytes);
      const ms = performance.now() - started;
      cache.close?.();
      return ms;
    },
    backend,
    name,
    set,
  );
}

async function timeReads(page, backend, name, set = 'mix') {
  return page.evaluate(
    async (backend, name, set) => {
      const core = await import('/dist/core/internal.js');
      const cache = core.createBrowserCache(backend, { name });
      await cache.open();
      const started = performance.now();
      for (const { sha256, bytes } of globalThis.benchEntries[set]) {
        const got = await cache.get(sha256);
        if (!got || got.byteLength !== bytes.byteLength || got[got.length - 1] !== bytes[bytes.length - 1]) {
          throw new Error(`${backend}: entry ${sha256} came back wrong`);
        }
      }
      const ms = performance.now() - started;
      cache.close?.();
      return ms;
    },
    backend,
    name,
    set,
  );
}

async function dropStorage(page, backend, name) {
  await page.evaluate(
    async (backend, name) => {
      const core = await import('/dist/core/internal.js');
      const cache = core.createBrowserCache(backend, { name });
      await cache.clear();
      if (backend === 'cache-storage') await caches.delete(name);
      if (backend === 'indexeddb') {
        cache.close();
        await new Promise((done, fail) => {
          const request = indexedDB.deleteDatabase(name);
          request.onsuccess = done;
          request.onerror = () => fail(request.error);
        });
      }
    },
    backend,
    name,
  );
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mbPerSecond = (ms) => totalMb / (ms / 1000);
const perSecond = (ms) => SMALL_COUNT / (ms / 1000);

/** One run of one backend on fresh storage; a fresh Chromium for the write, another for the cold read. */
async function runOnce(profile, origin, backend, run) {
  const name = `bench-${backend}-${run}-${Date.now()}`;
  let browser = await launch(profile);
  try {
    let page = await openPage(browser, origin);
    const sample = {
      entries: await page.evaluate(() => globalThis.benchEntries.mix.length),
      chromium: await browser.version(),
      write: await timeWrites(page, backend, name),
      read: await timeReads(page, backend, name),
      smallWrite: await timeWrites(page, backend, `${name}-small`, 'small'),
      smallRead: await timeReads(page, backend, `${name}-small`, 'small'),
    };
    await dropStorage(page, backend, `${name}-small`);
    await browser.close();
    browser = await launch(profile);
    page = await openPage(browser, origin);
    sample.readAfterRestart = await timeReads(page, backend, name);
    await dropStorage(page, backend, name);
    return sample;
  } finally {
    await browser.close();
  }
}

async function main() {
  if (!existsSync(join(ROOT, 'dist', 'core', 'index.js'))) throw new Error('dist/ is missing: run `npm run build` first');
  const server = await startServer();
  const profile = mkdtempSync(join(tmpdir(), 'awake-bundle-bench-'));
  const samples = Object.fromEntries(backends.map((b) => [b, []]));
  let chromium = '';
  let entries = 0;
  try {
    // Round-robin, starting with a different backend each round, so drift and warm-up
    // (the profile's first use) do not land on one backend.
    for (let run = 0; run < runs; run++) {
      for (let i = 0; i < backends.length; i++) {
        const backend = backends[(i + run) % backends.length];
        const sample = await runOnce(profile, server.origin, backend, run);
        ({ chromium, entries } = sample);
        samples[backend].push(sample);
        if (!json) {
          console.error(
            `run ${run + 1} ${backend}: write ${mbPerSecond(sample.write).toFixed(0)} MB/s, read ${mbPerSecond(sample.read).toFixed(0)} MB/s, ` +
              `read after restart ${mbPerSecond(sample.readAfterRestart).toFixed(0)} MB/s; small: ${perSecond(sample.smallWrite).toFixed(0)} puts/s, ${perSecond(sample.smallRead).toFixed(0)} gets/s`,
          );
        }
      }
    }
  } finally {
    rmSync(profile, { recursive: true, force: true });
    await server.close();
  }
  const results = Object.fromEntries(
    Object.entries(samples).map(([backend, list]) => {
      const mid = (key) => median(list.map((s) => s[key]));
      return [
        backend,
        {
          writeMBps: +mbPerSecond(mid('write')).toFixed(1),
          readMBps: +mbPerSecond(mid('read')).toFixed(1),
          readAfterRestartMBps: +mbPerSecond(mid('readAfterRestart')).toFixed(1),
          smallPutsPerSecond: +perSecond(mid('smallWrite')).toFixed(0),
          smallGetsPerSecond: +perSecond(mid('smallRead')).toFixed(0),
        },
      ];
    }),
  );
  const machine = {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  };
  if (json) {
    console.log(JSON.stringify({ totalMb, entries, smallEntries: SMALL_COUNT, runs, seed: SEED, chromium, machine, results }, null, 2));
    return;
  }
  console.log(`\n${totalMb} MB in ${entries} entries of 4 KB–4 MB, then ${SMALL_COUNT} entries of 4–64 KB; median of ${runs} runs`);
  console.log(`${chromium}; ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB; Node ${machine.node}`);
  console.log('backend         write MB/s  read MB/s  read after restart MB/s  small puts/s  small gets/s');
  for (const [backend, r] of Object.entries(results)) {
    console.log(
      `${backend.padEnd(15)} ${r.writeMBps.toFixed(0).padStart(10)} ${r.readMBps.toFixed(0).padStart(10)} ${r.readAfterRestartMBps.toFixed(0).padStart(24)}` +
        ` ${String(r.smallPutsPerSecond).padStart(13)} ${String(r.smallGetsPerSecond).padStart(13)}`,
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
