// Probes of issue 27 item 6 (BENCHMARKS.md "First requests before the engine's first frame"); not part of a bench run:
//   node bench/trace/build-dev.mjs phaser                      # the default-publish site, unminified, in .bench/dev/phaser
//   ROOT=.bench/dev/phaser node bench/trace/trace-start.mjs phaser links 0   # one traced sample, saved as /tmp/trace-phaser-links.json
//   node bench/trace/trace-window.mjs /tmp/trace-phaser-links.json          # the main thread's tasks and requests after the call
//   node bench/trace/trace-cpu.mjs /tmp/trace-phaser-links.json FROM TO     # JS time by function in that window (ms)
//   node bench/trace/trace-start.mjs phaser loose 0                          # the loose files (a bench:engines site, which has them)
// Probe: trace one sample of a built example (no-links page, or the built page), and summarize the
// page's main thread between the adapter's call and the first bundle request, and from the last
// bundle byte to the first frame. node bench/trace/trace-start.mjs <game> [links|no-links|loose|page.html] [latency]
import { launchFreshChromium } from '../chromium.mjs';
import { startThrottledServer } from '../throttled-server.mjs';
import { sampleChromiumArgs, FIRST_FRAME } from '../example-page.mjs';
import { writeFileSync } from 'node:fs';
const [game = 'phaser', mode = 'no-links', latency = '0'] = process.argv.slice(2);
const server = await startThrottledServer({ root: process.env.ROOT ?? `.bench/engines/${game}`, latencyMs: Number(latency) });
const chromium = await launchFreshChromium({ args: sampleChromiumArgs(server) });
const page = await chromium.browser.newPage();
await page.setCacheEnabled(false);
const ff = FIRST_FRAME[game.startsWith('babylon') ? 'babylon' : 'phaser'];
await page.evaluateOnNewDocument((firstFrame) => {
  const state = {};
  globalThis.__engineBench = state;
  let ready;
  Object.defineProperty(globalThis, 'exampleReady', {
    configurable: true,
    get: () => ready,
    set(v) {
      ready = v;
      state.readyAt = performance.now();
      performance.mark('probe:ready');
      if (firstFrame === 'at-ready') {
        state.firstFrameAt = state.readyAt;
        performance.mark('probe:frame');
      } else
        requestAnimationFrame(() => {
          state.firstFrameAt = performance.now();
          performance.mark('probe:frame');
        });
    },
  });
}, ff);
await page.tracing.start({
  categories: [
    'devtools.timeline',
    'disabled-by-default-devtools.timeline',
    'blink.user_timing',
    'v8.execute',
    'toplevel',
    'disabled-by-default-v8.cpu_profiler',
    'loading',
    'blink',
    'gpu',
  ],
});
// links: the built page; no-links: it without its preload links; loose: the loose files; a.html: that page of the site.
const PAGES = { links: '', 'no-links': 'loose.html', loose: 'loose.html?loose' };
await page.goto(`${server.origin}/${PAGES[mode] ?? mode}`, { waitUntil: 'domcontentloaded' });
await page.waitForFunction(() => globalThis.__engineBench.firstFrameAt !== undefined || globalThis.exampleFailed !== undefined, {
  polling: 50,
  timeout: 120000,
});
await new Promise((r) => setTimeout(r, 500));
const buf = await page.tracing.stop();
await chromium.close();
await server.close();
const trace = JSON.parse(Buffer.from(buf).toString('utf8'));
const events = trace.traceEvents ?? trace;
writeFileSync(`/tmp/trace-${game}-${mode}.json`, JSON.stringify(events));
// main thread of the renderer: thread_name CrRendererMain
const names = new Map();
for (const e of events) if (e.name === 'thread_name') names.set(`${e.pid}:${e.tid}`, e.args.name);
const marks = events.filter(
  (e) => e.cat?.includes('blink.user_timing') && (e.name.startsWith('awake-bundle') || e.name.startsWith('probe:')),
);
const indexSend = events.find((e) => e.name === 'ResourceSendRequest' && /project\.index\.json|main\.js/.test(e.args.data.url));
const mainKey = [...names].find(([k, v]) => v === 'CrRendererMain' && k.startsWith(indexSend.pid + ':'))?.[0];
const sends = events
  .filter((e) => e.name === 'ResourceSendRequest')
  .map((e) => ({ ts: e.ts, url: e.args.data.url, thread: names.get(`${e.pid}:${e.tid}`) }));
const t0 = Math.min(...events.filter((e) => e.ts > 0 && e.name === 'RunTask' && `${e.pid}:${e.tid}` === mainKey).map((e) => e.ts));
const rel = (ts) => ((ts - t0) / 1000).toFixed(1);
console.log('marks', marks.map((m) => `${m.name}@${rel(m.ts)}`).join(' '));
for (const s of sends.filter((s) => s.url.startsWith(server.origin)))
  console.log('send', rel(s.ts), s.thread, s.url.replace(server.origin, ''));
const tasks = events
  .filter((e) => e.name === 'RunTask' && `${e.pid}:${e.tid}` === mainKey && e.dur > 15000)
  .map((e) => ({ ts: e.ts, dur: e.dur }));
// what's inside: top-level children names
const inner = events.filter((e) => `${e.pid}:${e.tid}` === mainKey && e.ph === 'X' && e.name !== 'RunTask');
for (const t of tasks) {
  const kids = inner.filter((e) => e.ts >= t.ts && e.ts < t.ts + t.dur && e.dur > 3000);
  const desc = kids
    .slice(0, 8)
    .map(
      (k) =>
        `${k.name}${k.args?.data?.url ? '(' + k.args.data.url.split('/').pop().slice(0, 30) + ')' : ''}${k.args?.data?.functionName ? '[' + k.args.data.functionName + ']' : ''}:${(k.dur / 1000).toFixed(0)}`,
    );
  console.log('task', rel(t.ts), (t.dur / 1000).toFixed(0), 'ms', desc.join(' | '));
}
