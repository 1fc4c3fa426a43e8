/**
 * A real-browser harness for browser tests: `launchBrowser()` starts Debian's Chromium (or, with
 * `{ kind: 'firefox' }`, Debian's Firefox ESR over WebDriver BiDi) through puppeteer-core (which
 * never downloads a browser), and `startRepoServer()` serves the built package so a page can
 * import it natively, with no bundler.
 *
 *   const server = await startRepoServer({ mounts: { '/published/': publishedDir } });
 *   const browser = await launchBrowser({ kind: 'firefox' });
 *   const page = await browser.openHarness(server);
 *   const hex = await page.evaluate(async () => {
 *     const core = await harnessImport('/dist/core/internal.js');
 *     return core.sha256Hex(new Uint8Array([1, 2, 3]));
 *   });
 *   expect(server.requestCount('/published/project.index.json')).toBe(1);
 *   await browser.close();
 *   await server.close();
 *
 * Which browsers a suite runs in: `TESTED_BROWSERS` (both, unless `AWKB_BROWSERS=chromium` or
 * `AWKB_BROWSERS=firefox` says otherwise); a suite wraps its tests in
 * `describe.each(TESTED_BROWSERS)('%s', (kind) => …)`. A browser that is listed but not installed
 * fails its suite with a message saying so; it is never skipped quietly.
 *
 * Why `harnessImport` and not `import()`: jest compiles test files to CommonJS, which rewrites
 * `import()` inside an evaluated function into `require()`, and the page has no `require`.
 * The harness page defines `globalThis.harnessImport = (specifier) => import(specifier)`; a test
 * that prefers the literal form can pass a string instead (`page.evaluate("import('/dist/…')")`).
 *
 * Firefox notes: WebCrypto (`crypto.subtle`) exists only in a secure context, so a page must be on
 * `http://127.0.0.1` (the repository server), not `about:blank` or a `data:` URL; and under BiDi
 * there is no CDP (`page.createCDPSession()` throws), so a test that needs one is Chromium-only.
 */
import { contentTypeOf } from '../../core/format/media-types.js';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, createReadStream } from 'node:fs';
import { requestedRanges } from '../../core/node/server.js';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

/** The repository root (this file is test/helpers/browser.ts). */
export const REPO_ROOT = resolve(__dirname, '..', '..');

export type BrowserKind = 'chromium' | 'firefox';

export const BROWSER_KINDS: readonly BrowserKind[] = ['chromium', 'firefox'];

/**
 * The browsers the cross-browser suites run in: every kind, or the comma-separated list in
 * `AWKB_BROWSERS` (`AWKB_BROWSERS=chromium` on a machine without Firefox ESR).
 */
export function testedBrowsers(value: string | undefined): BrowserKind[] {
  if (value === undefined || value.trim() === '') return [...BROWSER_KINDS];
  const kinds = value
    .split(',')
    .map((kind) => kind.trim().toLowerCase())
    .filter((kind) => kind !== '');
  for (const kind of kinds) {
    if (!(BROWSER_KINDS as readonly string[]).includes(kind))
      throw new Error(`AWKB_BROWSERS: unknown browser "${kind}" (known: ${BROWSER_KINDS.join(', ')})`);
  }
  return [...new Set(kinds)] as BrowserKind[];
}

export const TESTED_BROWSERS: BrowserKind[] = testedBrowsers(process.env.AWKB_BROWSERS);

/** A test that runs only where `condition` holds, skipped (and counted as skipped) elsewhere. */
export const testIf = (condition: boolean): jest.It => (condition ? test : test.skip);

export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--enable-unsafe-swiftshader',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Firefox preferences for tests (puppeteer adds its own automation ones): media plays without a
 * user gesture, and no background traffic. No preference gives headless Firefox on Linux a WebGL
 * context (FEATURE_FAILURE_WEBGL_EXHAUSTED_DRIVERS, Mozilla bug 1375585; webgl.force-enabled,
 * gfx.x11-egl.force-enabled and software WebRender were tried), so WebGL tests are Chromium's.
 */
export const FIREFOX_PREFS: Record<string, unknown> = {
  'media.autoplay.default': 0,
  'media.autoplay.blocking_policy': 0,
  'app.update.enabled': false,
  'browser.shell.checkDefaultBrowser': false,
  'datareporting.policy.dataSubmissionEnabled': false,
  'toolkit.telemetry.enabled': false,
};

// ---------------------------------------------------------------------------------------------
// Launching

export interface LaunchOptions {
  /** Which browser; Chromium unless said. */
  kind?: BrowserKind;
  /**
   * Reuse this profile folder, so a test can close the browser and launch it again on the same
   * storage (persistence across browser restarts). The harness never deletes a folder it was
   * given; without this option it makes a fresh temporary profile and deletes it on `close()`.
   */
  userDataDir?: string;
  /** More Chromium command-line arguments (Firefox ignores them). */
  chromiumArgs?: string[];
  /** More Firefox preferences (Chromium ignores them). */
  firefoxPrefs?: Record<string, unknown>;
}

export interface LaunchedBrowser {
  kind: BrowserKind;
  browser: Browser;
  /** The profile folder in use. */
  userDataDir: string;
  /** A new tab showing the server's `/harness.html`, with `harnessImport` ready. */
  openHarness(server: RepoServer): Promise<Page>;
  /** Closes the browser (flushing its storage to the profile) and deletes a temporary profile. */
  close(): Promise<void>;
}

/** A fresh, empty profile folder for tests that relaunch a browser; remove it with `removeProfile`. */
export function createProfile(kind: BrowserKind = 'chromium'): string {
  return mkdtempSync(join(tmpdir(), `awake-bundle-${kind}-`));
}

export function removeProfile(userDataDir: string): void {
  rmSync(userDataDir, { recursive: true, force: true });
}

export function chromiumExecutablePath(): string {
  return process.env.PUPPETEER_EXECUTABLE_PATH || '/usr/bin/chromium';
}

export function firefoxExecutablePath(): string {
  return process.env.AWKB_FIREFOX_PATH || '/usr/bin/firefox-esr';
}

export function executablePath(kind: BrowserKind): string {
  return kind === 'firefox' ? firefoxExecutablePath() : chromiumExecutablePath();
}

/** "Chromium" or "Firefox ESR", for messages and test names. */
export function browserName(kind: BrowserKind): string {
  return kind === 'firefox' ? 'Firefox ESR' : 'Chromium';
}

export async function launchBrowser(options: LaunchOptions = {}): Promise<LaunchedBrowser> {
  const kind = options.kind ?? 'chromium';
  const path = executablePath(kind);
  const ownsProfile = options.userDataDir === undefined;
  const userDataDir = options.userDataDir ?? createProfile(kind);
  const common = { executablePath: path, headless: true, handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false } as const;
  let browser: Browser;
  try {
    if (!existsSync(path)) throw new Error(`${path} does not exist`);
    browser =
      kind === 'firefox'
        ? await puppeteer.launch({
            ...common,
            browser: 'firefox',
            userDataDir,
            extraPrefsFirefox: { ...FIREFOX_PREFS, ...options.firefoxPrefs },
          })
        : // With --user-data-dir among the arguments puppeteer uses that profile, not one of its own.
          await puppeteer.launch({
            ...common,
            args: [...CHROMIUM_ARGS, ...(options.chromiumArgs ?? []), `--user-data-dir=${userDataDir}`],
          });
  } catch (error) {
    if (ownsProfile) removeProfile(userDataDir);
    const hint =
      kind === 'firefox'
        ? "install Debian's firefox-esr (.ci/run does), set AWKB_FIREFOX_PATH to another one, or run Chromium alone with AWKB_BROWSERS=chromium"
        : 'set PUPPETEER_EXECUTABLE_PATH to another one, or run Firefox alone with AWKB_BROWSERS=firefox';
    throw new Error(`could not launch ${browserName(kind)} at ${path} (${hint})`, { cause: error });
  }
  let closed = false;
  return {
    kind,
    browser,
    userDataDir,
    async openHarness(server) {
      const page = await browser.newPage();
      page.on('pageerror', (error) => console.error(`[page error] ${String(error)}`));
      await gotoHarness(page, server);
      return page;
    },
    async close() {
      if (closed) return;
      closed = true;
      await browser.close();
      if (ownsProfile) removeProfile(userDataDir);
    },
  };
}

/** Loads (or reloads) the harness page and waits until `harnessImport` is defined. */
export async function gotoHarness(page: Page, server: RepoServer): Promise<void> {
  await page.goto(`${server.origin}/harness.html`, { waitUntil: 'load' });
  await page.waitForFunction(() => typeof (globalThis as { harnessImport?: unknown }).harnessImport === 'function');
}

/** Reloads a harness page: same origin, so its persistent storage is still there. */
export async function reloadHarness(page: Page): Promise<void> {
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => typeof (globalThis as { harnessImport?: unknown }).harnessImport === 'function');
}

/**
 * Installs, in `page`, workers whose answer to the digest pool's ping reaches the pool only when
 * the page calls `releasePongs()`: a cold page (no worker heard from) for as long as a test needs.
 * Call it before the page's source makes its pool.
 */
export async function holdWorkerPongs(page: Page): Promise<void> {
  await page.evaluate(() => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    (globalThis as unknown as { releasePongs: () => void }).releasePongs = release;
    globalThis.Worker = class extends Worker {
      override set onmessage(handler: ((event: MessageEvent) => void) | null) {
        super.onmessage =
          handler &&
          ((event: MessageEvent) => (event.data?.pong ? void held.then(() => handler.call(this, event)) : handler.call(this, event)));
      }
      override get onmessage() {
        return super.onmessage;
      }
    };
  });
}

/**
 * Counts, on `page`, the bytes each `DecompressionStream` made there (a worker's are its own), in
 * `globalThis.decodedOnPage`: one entry per stream, in the order they were made.
 */
export async function countPageDecoding(page: Page): Promise<void> {
  await page.evaluate(() => {
    const decodedOnPage: number[] = [];
    (globalThis as unknown as { decodedOnPage: number[] }).decodedOnPage = decodedOnPage;
    const PageDecompression = globalThis.DecompressionStream;
    globalThis.DecompressionStream = class extends PageDecompression {
      constructor(format: CompressionFormat) {
        super(format);
        const index = decodedOnPage.push(0) - 1;
        const counted = new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            decodedOnPage[index]! += chunk.byteLength;
            controller.enqueue(chunk);
          },
        });
        Object.defineProperty(this, 'readable', { value: super.readable.pipeThrough(counted) });
      }
    };
  });
}

/** For the page's type: `harnessImport` as test code sees it inside `page.evaluate`. */
declare global {
  var harnessImport: (specifier: string) => Promise<any>;
}

// ---------------------------------------------------------------------------------------------
// The repository server

export interface RepoServerOptions {
  /** Extra folders to serve, by URL prefix: `{ '/published/': someDir }`. */
  mounts?: Record<string, string>;
  /** Paths answered whole without Content-Length (chunked), as a server that compresses on the fly answers. */
  chunked?: (path: string) => boolean;
}

export interface RequestRecord {
  method: string;
  /** The URL path, decoded, without the query. */
  path: string;
  /** The `Range` header, if any. */
  range?: string;
  status: number;
}

export interface RepoServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  port: number;
  /** Serve another folder from now on. */
  mount(prefix: string, dir: string): void;
  /** Every request answered since start (or since `resetRequests()`), in order. */
  requests: RequestRecord[];
  /** How many requests (any method) asked for `path`. */
  requestCount(path: string): number;
  resetRequests(): void;
  /**
   * Holds the next request for `path` (a URL path) until `release`: answered then with `body`
   * (200, `application/json`), else as usual. `arrived` resolves once it has come. With
   * `headersFirst`, the headers of that 200 (`no-store`, no length) go at once and only its body
   * (`body`, given to `release`) is held: Chromium's HTTP cache holds a second request for the same URL until the first one's
   * headers have come, so two requests for one URL overlap only so.
   */
  hold(path: string, options?: { headersFirst?: boolean }): { arrived: Promise<void>; release(body?: string): void };
  /** Resolves once `count` answers for `path` have been sent in full since start. */
  answered(path: string, count: number): Promise<void>;
  close(): Promise<void>;
}

export function contentTypeFor(path: string): string {
  return contentTypeOf(path);
}

export const HARNESS_HTML = `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<title>awake-bundle harness</title>
<script type="importmap">
${JSON.stringify({ imports: { '@noble/hashes/': '/node_modules/@noble/hashes/', 'awake-bundle': '/dist/core/internal.js' } }, null, 2)}
</script>
<script type="module">
globalThis.harnessImport = (specifier) => import(specifier);
</script>
</head>
<body></body>
</html>
`;

/** Fails with a clear message when `npm run build` has not produced dist/ yet. */
export function assertDistBuilt(): void {
  const entry = join(REPO_ROOT, 'dist', 'core', 'index.js');
  if (!existsSync(entry)) {
    throw new Error(`${entry} is missing: browser tests load the built package, so run \`npm run build\` first (\`npm test\` does).`);
  }
}

export async function startRepoServer(options: RepoServerOptions = {}): Promise<RepoServer> {
  assertDistBuilt();
  const mounts = new Map<string, string>([
    ['/dist/', join(REPO_ROOT, 'dist')],
    ['/node_modules/', join(REPO_ROOT, 'node_modules')],
  ]);
  const mount = (prefix: string, dir: string) => {
    if (!prefix.startsWith('/') || !prefix.endsWith('/')) throw new Error(`a mount prefix starts and ends with "/": ${prefix}`);
    mounts.set(prefix, resolve(dir));
  };
  for (const [prefix, dir] of Object.entries(options.mounts ?? {})) mount(prefix, dir);

  const requests: RequestRecord[] = [];
  const holds = new Map<string, { arrived: () => void; released: Promise<string | undefined>; headersFirst: boolean }[]>();
  const finished = new Map<string, number>();
  const watchers: { path: string; count: number; resolve: () => void }[] = [];
  const server = createServer((request, response) => {
    const record: RequestRecord = { method: request.method ?? 'GET', path: '', status: 0 };
    if (request.headers.range !== undefined) record.range = request.headers.range;
    requests.push(record);
    response.on('finish', () => {
      record.status = response.statusCode;
      finished.set(record.path, (finished.get(record.path) ?? 0) + 1);
      for (const watcher of watchers.splice(0)) {
        if ((finished.get(watcher.path) ?? 0) >= watcher.count) watcher.resolve();
        else watchers.push(watcher);
      }
    });
    try {
      record.path = decodeURIComponent(new URL(request.url ?? '/', 'http://localhost').pathname);
      const held = holds.get(record.path)?.shift();
      if (!held) return route(request, response, record.path, mounts, options.chunked?.(record.path) ?? false);
      if (held.headersFirst) response.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }).flushHeaders();
      held.arrived();
      void held.released.then((body) => {
        if (held.headersFirst) return void response.end(body ?? '');
        if (body === undefined) return route(request, response, record.path, mounts, options.chunked?.(record.path) ?? false);
        response.setHeader('Cache-Control', 'no-store');
        send(response, 200, body, 'application/json');
      });
    } catch {
      send(response, 400, 'bad request');
    }
  });
  await new Promise<void>((resolveListen, rejectListen) => {
    server.once('error', rejectListen);
    server.listen(0, '127.0.0.1', () => resolveListen());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    mount,
    requests,
    requestCount: (path) => requests.filter((r) => r.path === path).length,
    resetRequests: () => void requests.splice(0),
    hold(path, options = {}) {
      let arrived!: () => void;
      let release!: (body?: string) => void;
      const arrivedPromise = new Promise<void>((resolveArrived) => (arrived = resolveArrived));
      const released = new Promise<string | undefined>((resolveRelease) => (release = resolveRelease));
      holds.set(path, [...(holds.get(path) ?? []), { arrived, released, headersFirst: options.headersFirst ?? false }]);
      return { arrived: arrivedPromise, release };
    },
    answered: (path, count) =>
      new Promise<void>((resolveAnswered) => {
        if ((finished.get(path) ?? 0) >= count) return resolveAnswered();
        watchers.push({ path, count, resolve: resolveAnswered });
      }),
    close: () =>
      new Promise<void>((resolveClose) => {
        server.closeAllConnections();
        server.close(() => resolveClose());
      }),
  };
}

function route(request: IncomingMessage, response: ServerResponse, path: string, mounts: Map<string, string>, chunked: boolean): void {
  if (request.method !== 'GET' && request.method !== 'HEAD') return send(response, 405, 'method not allowed');
  if (path === '/harness.html' || path === '/') {
    response.setHeader('Cache-Control', 'no-store');
    // `?csp=no-workers`: a page whose Content-Security-Policy forbids every worker.
    if (new URL(request.url ?? '/', 'http://localhost').searchParams.get('csp') === 'no-workers')
      response.setHeader('Content-Security-Policy', "worker-src 'none'");
    return send(response, 200, HARNESS_HTML, 'text/html; charset=utf-8', request.method === 'HEAD');
  }
  // Longest prefix first, so '/published/v2/' can shadow '/published/'.
  const prefix = [...mounts.keys()].sort((a, b) => b.length - a.length).find((p) => path.startsWith(p));
  if (prefix === undefined) return send(response, 404, 'not found');
  const root = mounts.get(prefix)!;
  const file = resolve(root, '.' + path.slice(prefix.length - 1));
  if (file !== root && !file.startsWith(root + sep)) return send(response, 403, 'forbidden');
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) return send(response, 404, 'not found');
    size = stat.size;
  } catch {
    return send(response, 404, 'not found');
  }
  if (chunked && request.method === 'GET') {
    response.setHeader('Cache-Control', 'no-store');
    response.setHeader('Content-Type', contentTypeFor(file));
    return void createReadStream(file).pipe(response);
  }
  serveFile(request, response, file, size);
}

/** A file, whole (200), one byte range of it (206, RFC 9110 §14), or several (206 multipart/byteranges). */
function serveFile(request: IncomingMessage, response: ServerResponse, file: string, size: number): void {
  // no-store: every load reaches this server, so request counts say what the page really asked.
  response.setHeader('Cache-Control', 'no-store');
  response.setHeader('Accept-Ranges', 'bytes');
  response.setHeader('Content-Type', contentTypeFor(file));
  // Several ranges: one 206 multipart/byteranges answer (RFC 9110 §14.6), as `serve` gives.
  const several = request.headers.range?.includes(',') ? requestedRanges(request.headers.range, size) : undefined;
  if (Array.isArray(several) && several.length > 1 && request.method === 'GET') {
    const bytes = readFileSync(file);
    const boundary = 'harness-boundary';
    const body = Buffer.concat([
      ...several.flatMap(({ start, end }) => [
        Buffer.from(`--${boundary}\r\nContent-Type: ${contentTypeFor(file)}\r\nContent-Range: bytes ${start}-${end}/${size}\r\n\r\n`),
        bytes.subarray(start, end + 1),
        Buffer.from('\r\n'),
      ]),
      Buffer.from(`--${boundary}--\r\n`),
    ]);
    response.statusCode = 206;
    response.setHeader('Content-Type', `multipart/byteranges; boundary=${boundary}`);
    response.setHeader('Content-Length', String(body.length));
    return void response.end(body);
  }
  const range = parseRange(request.headers.range, size);
  if (range === 'unsatisfiable') {
    response.setHeader('Content-Range', `bytes */${size}`);
    return send(response, 416, 'range not satisfiable');
  }
  const [start, end] = range ?? [0, size - 1];
  response.statusCode = range ? 206 : 200;
  if (range) response.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
  response.setHeader('Content-Length', String(end - start + 1));
  if (request.method === 'HEAD' || end < start) return void response.end();
  createReadStream(file, { start, end }).pipe(response);
}

/**
 * One `bytes=` range as [first, last], inclusive; undefined means "send the whole file" (no
 * header, a malformed one, or several ranges, which a server may answer with 200).
 */
export function parseRange(header: string | undefined, size: number): [number, number] | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return [Math.max(0, size - suffix), size - 1];
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (match[2] !== '' && Number(match[2]) < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return [start, end];
}

function send(response: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8', headOnly = false): void {
  response.statusCode = status;
  response.setHeader('Content-Type', type);
  response.setHeader('Content-Length', String(Buffer.byteLength(body)));
  response.end(headOnly ? undefined : body);
}
