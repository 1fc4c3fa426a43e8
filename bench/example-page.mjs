// What the benchmarks of the example games (engines, grouping) share: building an example with
// webpack, and one sample of its page: a fresh headless Chromium opens it over the throttled
// server and takes the time from navigation start to the first frame after loading, the server's
// requests for the sample, and when the first index and bundle requests went out.
//
// The first frame is taken by a hook the bench adds before the page's scripts run: it watches the
// global the examples set when ready (`window.exampleReady`).
//   Phaser ('at-ready'): set in the first `postrender` after the harbour scene's `create` (its
//     preload scene loaded every file): that moment is the time.
//   Babylon ('next-frame'): set after `scene.whenReadyAsync()` and `engine.runRenderLoop(…)`,
//     which queues the first frame's animation callback; the time is the end of the next
//     animation frame, whose first callback is that render.
// Requests are the server's access log from the navigation until 0.5 s passed without a new one
// after the first frame (the page, the scripts, the assets, requests from workers included).
// Start times are the page's Resource Timing (`startTime`); a bundle a reader worker fetched is
// not in the page's timeline: its time is CDP's (the worker's Network.requestWillBeSent wallTime,
// less the page's timeOrigin).
import { launchFreshChromium } from './chromium.mjs';

export const SAMPLE_TIMEOUT_MS = 180_000;
/** After the first frame, the sample's requests are counted once none came for this long. */
const QUIET_MS = 500;

/** The build plugin's preload links in a built page (integrations/build/preload.ts), quoted or, minified, not. */
export const PRELOAD_LINK = /<link rel="?preload"?[^>]*>/g;

/** The head's meta that says the preload links follow the scripts (integrations/build/preload.ts): a page without the links goes without it too. */
export const PRELOAD_MARKER_TAG = /<meta name="?awake-bundle-preload"?[^>]*>/g;

/** The built page as one without the build plugin's preload links. */
export const withoutPreload = (html) => html.replace(PRELOAD_LINK, '').replace(PRELOAD_MARKER_TAG, '');

/** How each example's first frame is taken (see the header). */
export const FIRST_FRAME = { phaser: 'at-ready', babylon: 'next-frame' };

/** The Phaser example's ready report against what it loads (`indexFiles`: the index's file count, 0 loose). */
export function checkPhaser(ready, indexFiles, extra = {}) {
  const expected = { textures: 7, emojiFrames: 24, mapLayers: 3, sounds: 3, indexFiles, ...extra };
  const wrong = Object.entries(expected).filter(([key, value]) => ready?.[key] !== value);
  return wrong.length ? `exampleReady ${JSON.stringify(ready)}, expected ${JSON.stringify(expected)}` : undefined;
}

/** The Phaser levels example's ready report, level 1 (its first scene). */
export function checkPhaserLevels(ready, indexFiles) {
  return checkPhaser(ready, indexFiles, { level: 1 });
}

/** The Babylon example's ready report: meshes, an animation and the sound. */
export function checkBabylon(ready) {
  return ready?.meshes > 0 && ready?.animations > 0 && ready?.soundMs > 0 ? undefined : `exampleReady ${JSON.stringify(ready)}`;
}

/** Runs webpack on `config` (an example's configuration); rejects with its errors. */
export async function runWebpack(webpack, config, what) {
  const stats = await new Promise((resolveBuild, reject) =>
    webpack(config, (error, result) => (error ? reject(error) : resolveBuild(result))),
  );
  if (stats.hasErrors()) throw new Error(`building ${what} failed:\n${stats.toString('errors-only')}`);
  return stats;
}

/**
 * Runs in the page before its scripts (evaluateOnNewDocument): records when the example sets
 * `window.exampleReady`, and the first frame after it (see the header) in globalThis.__engineBench.
 */
function firstFrameHook(firstFrame) {
  const state = {};
  globalThis.__engineBench = state;
  // Room for every request of a sample in the page's Resource Timing (the default keeps 250).
  performance.setResourceTimingBufferSize(5000);
  let ready;
  Object.defineProperty(globalThis, 'exampleReady', {
    configurable: true,
    get: () => ready,
    set(value) {
      ready = value;
      state.readyAt = performance.now();
      if (firstFrame === 'at-ready') state.firstFrameAt = state.readyAt;
      else requestAnimationFrame(() => (state.firstFrameAt = performance.now()));
    },
  });
}

/**
 * The requests the page's dedicated workers send (CDP, each worker attached as it starts): their
 * URL, wall-clock time, and when their last byte came (`endWallTimeMs`, once finished: CDP's
 * `Network.loadingFinished`, a monotonic time, set against the request's own wall time).
 */
async function logWorkerRequests(page) {
  const requests = [];
  const cdp = await page.createCDPSession();
  cdp.on('Target.attachedToTarget', (event) => {
    const session = cdp.connection().session(event.sessionId);
    if (!session || event.targetInfo.type !== 'worker') return;
    const byId = new Map();
    session.on('Network.requestWillBeSent', (sent) => {
      const request = { url: sent.request.url, wallTimeMs: sent.wallTime * 1000, sentAt: sent.timestamp };
      byId.set(sent.requestId, request);
      requests.push(request);
    });
    session.on('Network.loadingFinished', (finished) => {
      const request = byId.get(finished.requestId);
      if (request) request.endWallTimeMs = request.wallTimeMs + (finished.timestamp - request.sentAt) * 1000;
    });
    void session.send('Network.enable').catch(() => undefined);
  });
  // Not paused at start: the bench must not delay the workers it measures.
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: true });
  return requests;
}

/**
 * The start of loading, in ms from navigation start: the first request below `published` (the
 * published folder's path on the server, `/published/`) that is neither the index nor a bundle
 * (loose), the adapter's first call (its User Timing mark), the index request, and the first
 * bundle request and which thread sent it; and the tail: from the last byte of what the first
 * frame needed (loose: the last asset response that ended before the first frame; bundled: the
 * last bundle's; none when that was in before the adapter's call, as a preloaded bundle may be)
 * to the first frame (`firstFrameMs`).
 */
function startTimes(timing, workerRequests, published, firstFrameMs) {
  const pathOf = (url) => new URL(url).pathname;
  const below = timing.resources.filter((entry) => pathOf(entry.url).startsWith(published));
  const isIndex = (entry) => pathOf(entry.url) === `${published}project.index.json`;
  const isBundle = (entry) => pathOf(entry.url).startsWith(`${published}bundles/`) && /\/[0-9a-f]{64}\.awkb$/.test(pathOf(entry.url));
  const index = below.find(isIndex);
  const bundles = [
    ...below.filter(isBundle).map((entry) => ({ at: entry.startTime, end: entry.responseEnd, by: 'page' })),
    ...workerRequests
      .filter(isBundle)
      .map((entry) => ({ at: entry.wallTimeMs - timing.timeOrigin, end: entry.endWallTimeMs - timing.timeOrigin, by: 'worker' })),
  ].sort((a, b) => a.at - b.at);
  const assets = below.filter((entry) => !isIndex(entry) && !isBundle(entry));
  // What ended before the first frame (a video streamed while it plays is left out).
  const ends = (bundles.length ? bundles.map((bundle) => bundle.end) : assets.map((entry) => entry.responseEnd)).filter(
    (end) => Number.isFinite(end) && end <= firstFrameMs,
  );
  const lastByteMs = ends.length ? Math.max(...ends) : undefined;
  const first = (list) => (list.length ? Math.min(...list.map((entry) => entry.startTime)) : undefined);
  return {
    firstAssetMs: first(assets),
    callMs: timing.call,
    indexMs: index?.startTime,
    indexRequestStartMs: index?.requestStart,
    indexAfterCallMs: index && timing.call !== undefined ? index.startTime - timing.call : undefined,
    indexEndMs: index?.responseEnd,
    firstBundleMs: bundles[0]?.at,
    // How long after the index arrived the first bundle request went out (its parse and checks, then the game's first load).
    firstBundleAfterIndexMs: index && bundles.length ? bundles[0].at - index.responseEnd : undefined,
    firstBundleBy: bundles[0]?.by,
    bundlesByPage: bundles.filter((bundle) => bundle.by === 'page').length,
    bundlesByWorkers: bundles.filter((bundle) => bundle.by === 'worker').length,
    lastByteMs,
    // None when the bundles were in before the adapter's call (preloaded): nothing was handed off after a last byte.
    tailMs: lastByteMs === undefined || (bundles.length && lastByteMs < timing.call) ? undefined : firstFrameMs - lastByteMs,
  };
}

/**
 * What a page's per-file hand-off record needs besides itself (bench/shapes/phaser-handoff.ts:
 * `handed`, `done`): each file's path below `published` (its src resolved against the page), and
 * the responses below `published` ({ path, start, end } in ms from navigation start), the page's
 * Resource Timing and the bundles its workers fetched (CDP: see logWorkerRequests).
 */
function handoffTimes(timing, workerRequests, published) {
  const pathOf = (url) => decodeURIComponent(new URL(url, timing.href).pathname);
  const below = (path) => path.startsWith(published);
  return {
    handed: timing.handoff.handed.map(([type, key, src, ms]) => ({ type, key, path: pathOf(src).slice(published.length), ms })),
    done: timing.handoff.done.map(([type, key, ms]) => ({ type, key, ms })),
    responses: [
      ...timing.resources.map((entry) => ({ path: pathOf(entry.url), start: entry.startTime, end: entry.responseEnd, by: 'page' })),
      ...workerRequests.map((entry) => ({
        path: pathOf(entry.url),
        start: entry.wallTimeMs - timing.timeOrigin,
        end: entry.endWallTimeMs - timing.timeOrigin,
        by: 'worker',
      })),
    ]
      .filter((entry) => below(entry.path))
      .map((entry) => ({ ...entry, path: entry.path.slice(published.length) })),
  };
}

/** The server's log entries since `mark`, once QUIET_MS passed without a new one (at most 10 s). */
async function quietRequests(server, mark) {
  const deadline = Date.now() + 10_000;
  let seen = -1;
  while (server.requests.length !== seen && Date.now() < deadline) {
    seen = server.requests.length;
    await new Promise((wake) => setTimeout(wake, QUIET_MS));
  }
  return server.requests.slice(mark);
}

/** The flags every sample's Chromium gets: WebGL by SwiftShader, and trust in the server's certificate (h2). */
export const sampleChromiumArgs = (server) => ['--enable-unsafe-swiftshader', ...(server.chromiumArgs ?? [])];

/**
 * One sample: a fresh Chromium (fresh profile, HTTP cache off, WebGL by SwiftShader) opens
 * `server.origin + path` until the first frame; `check(ready)` returns a problem with the
 * example's ready report, or undefined. Resolves to the first frame and ready times (ms from
 * navigation start), the server's requests of the sample (`target`, `status`, `bytes`), the start
 * times (see startTimes; `published` is the published folder's path on the server) and page errors.
 */
export async function sampleExamplePage(options) {
  const chromium = await launchFreshChromium({ args: sampleChromiumArgs(options.server) });
  try {
    return await visitExamplePage({ ...options, browser: chromium.browser, cache: false });
  } finally {
    await chromium.close();
  }
}

/**
 * One visit in an open `browser` (a new tab), as sampleExamplePage's sample: with `cache` (the
 * default) the tab keeps Chromium's HTTP cache on, as a player's browser has it. With `waitStored`,
 * after the first frame and the quiet time it also waits for `window.exampleStored` (the
 * examples set it to their source's `whenStored()`), so that what the page stored is there when
 * the browser closes: the next visit is a return visit. Not timed. With `storedTimeoutMs` it waits
 * at most that long and says how it went (`stored`: see waitForStored).
 */
export async function visitExamplePage({
  browser,
  server,
  path = '/',
  firstFrame,
  check,
  what,
  published = '/published/',
  cache = true,
  waitStored = false,
  storedTimeoutMs,
}) {
  const errors = [];
  const page = await browser.newPage();
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.setCacheEnabled(cache);
  await page.evaluateOnNewDocument(firstFrameHook, firstFrame);
  const workerRequests = await logWorkerRequests(page);
  const mark = server.requests.length;
  await page.goto(`${server.origin}${path}`, { waitUntil: 'domcontentloaded', timeout: SAMPLE_TIMEOUT_MS });
  await page.waitForFunction(() => globalThis.__engineBench.firstFrameAt !== undefined || globalThis.exampleFailed !== undefined, {
    timeout: SAMPLE_TIMEOUT_MS,
    polling: 50,
  });
  const result = await page.evaluate(() => ({
    ...globalThis.__engineBench,
    ready: globalThis.exampleReady,
    failed: globalThis.exampleFailed,
  }));
  if (result.failed !== undefined) throw new Error(`${what}: the example failed: ${result.failed}`);
  const problem = check(result.ready);
  if (problem) throw new Error(`${what}: ${problem}${errors.length ? `; page errors: ${errors.join('; ')}` : ''}`);
  const requests = await quietRequests(server, mark);
  const timing = await page.evaluate(() => ({
    timeOrigin: performance.timeOrigin,
    call: performance.getEntriesByType('mark').find((mark) => mark.name.startsWith('awake-bundle:'))?.startTime,
    resources: performance.getEntriesByType('resource').map((entry) => ({
      url: entry.name,
      startTime: entry.startTime,
      requestStart: entry.requestStart,
      responseEnd: entry.responseEnd,
    })),
    protocol: performance.getEntriesByType('navigation')[0]?.nextHopProtocol,
    // Per-file hand-off times, where the page records them (bench/shapes/phaser-handoff.ts).
    handoff: globalThis.exampleHandoff,
    href: location.href,
  }));
  const stored = waitStored ? await waitForStored(page, storedTimeoutMs) : undefined;
  return {
    ms: result.firstFrameAt,
    readyAtMs: result.readyAt,
    requests,
    start: startTimes(timing, workerRequests, published, result.firstFrameAt),
    protocol: timing.protocol,
    ...(timing.handoff ? { handoff: handoffTimes(timing, workerRequests, published) } : {}),
    pageErrors: errors,
    ...(stored ? { stored } : {}),
  };
}

/**
 * Waits for `window.exampleStored`; with `timeoutMs`, at most that long, and resolves with how it
 * went: `{ outcome: 'stored' | 'rejected: …' | 'timeout', ms }`, and on a timeout the page's
 * `window.exampleSource.stats()` where it has one (what the source still holds and loads).
 */
async function waitForStored(page, timeoutMs) {
  if (timeoutMs === undefined) {
    await page.evaluate(() => globalThis.exampleStored);
    return undefined;
  }
  const started = Date.now();
  const outcome = await page.evaluate(
    (ms) =>
      Promise.race([
        Promise.resolve(globalThis.exampleStored).then(
          () => 'stored',
          (error) => `rejected: ${error}`,
        ),
        new Promise((done) => setTimeout(() => done('timeout'), ms)),
      ]),
    timeoutMs,
  );
  const stats = outcome === 'timeout' ? await page.evaluate(() => globalThis.exampleSource?.stats?.()) : undefined;
  return { outcome, ms: Date.now() - started, ...(stats ? { stats } : {}) };
}
