// Does Chromium's network emulation (CDP Network.emulateNetworkConditions), as bench/reader.mjs
// applies it on the page's session, reach fetches made in a dedicated Web Worker, where the
// reader fetches the index and its bundles? A check, not a benchmark: it prints times.
//
//   node bench/worker-emulation.mjs [--latency 150] [--bandwidth 20] [--bytes 5000000]
//
// Serves a temporary folder holding one file of random bytes (read by range) from `serve` on
// loopback. In a fresh Chromium per mode, the page starts two dedicated workers (blob: URLs, as
// the reader's pool does); each fetches its own range of this file, after the page fetched one:
//   none           no emulation
//   page           the page's session only (what bench/reader.mjs does)
//   worker         the page's session, and each worker's own target asked too (Chromium refuses:
//                  "Not supported", printed)
// If the page's emulation reaches the workers, their fetches take the latency, and at a
// bandwidth the two share one rate with each other and the page.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStaticServer } from '../dist/core/node/index.js';
import { launchFreshChromium } from './chromium.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(`--${name}`) ? Number(args[args.indexOf(`--${name}`) + 1]) : fallback);
const latency = option('latency', 150);
const mbit = option('bandwidth', 0);
const bytes = option('bytes', mbit ? 5_000_000 : 1000);
const bytesPerSecond = mbit > 0 ? (mbit * 1e6) / 8 : -1;
const conditions = { offline: false, latency, downloadThroughput: bytesPerSecond, uploadThroughput: bytesPerSecond };

/** In the page: one fetch on the page, then one in each of two dedicated workers, at once. */
async function fetchInWorkers({ url, bytes }) {
  const range = (from) => ({ headers: { Range: `bytes=${from}-${from + bytes - 1}` }, cache: 'no-store' });
  const worker = `onmessage = async ({ data }) => { const started = performance.now(); const body = await (await fetch(data.url, data.init)).arrayBuffer(); postMessage({ ms: performance.now() - started, bytes: body.byteLength }); };`;
  const script = URL.createObjectURL(new Blob([worker], { type: 'text/javascript' }));
  const workers = [new Worker(script), new Worker(script)];
  // Give the workers (and the bench's CDP sessions with them) time to start.
  await new Promise((wake) => setTimeout(wake, 500));
  const started = performance.now();
  await (await fetch(url, range(0))).arrayBuffer();
  const pageMs = performance.now() - started;
  const workerMs = await Promise.all(
    workers.map(
      (one, i) =>
        new Promise((resolve) => {
          one.onmessage = ({ data }) => resolve(data.ms);
          one.postMessage({ url, init: range((i + 1) * bytes) });
        }),
    ),
  );
  return { pageMs, workerMs };
}

const site = mkdtempSync(join(tmpdir(), 'awake-bench-worker-emulation-'));
writeFileSync(join(site, 'file.bin'), randomBytes(3 * bytes));
writeFileSync(join(site, 'page.html'), '<!doctype html><title>worker emulation</title>');
const server = await startStaticServer({ root: site, host: '127.0.0.1', log: () => {} });
const origin = server.url.replace(/\/$/, '');
console.log(`${latency} ms, ${mbit ? `${mbit} Mbit/s` : 'no bandwidth cap'}, ${bytes} bytes a fetch`);
try {
  for (const mode of ['none', 'page', 'worker']) {
    const { browser, close } = await launchFreshChromium(); // its profile goes with close()
    try {
      const page = await browser.newPage();
      await page.setCacheEnabled(false);
      const session = await page.createCDPSession();
      await session.send('Network.enable');
      const refusals = [];
      if (mode === 'worker') {
        page.on(
          'workercreated',
          (worker) =>
            void worker.client.send('Network.emulateNetworkConditions', conditions).catch((error) => refusals.push(error.message)),
        );
      }
      await page.goto(`${origin}/page.html`);
      if (mode !== 'none') await session.send('Network.emulateNetworkConditions', conditions);
      const { pageMs, workerMs } = await page.evaluate(fetchInWorkers, { url: `${origin}/file.bin`, bytes });
      console.log(
        `  ${mode.padEnd(7)} page fetch ${pageMs.toFixed(0).padStart(5)} ms, worker fetches ${workerMs.map((ms) => ms.toFixed(0).padStart(5)).join(', ')} ms${refusals.length ? `; worker targets refused: ${[...new Set(refusals)].join('; ')}` : ''}`,
      );
    } finally {
      await close();
    }
  }
} finally {
  await server.close();
  rmSync(site, { recursive: true, force: true });
}
