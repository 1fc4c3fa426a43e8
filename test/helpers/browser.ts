/**
 * A real-Chromium harness for browser tests: `launchBrowser()` starts Debian's Chromium through
 * puppeteer-core (which never downloads a browser), and `startRepoServer()` serves the built
 * package so a page can import it natively, with no bundler.
 *
 *   const server = await startRepoServer({ mounts: { '/published/': publishedDir } });
 *   const chromium = await launchBrowser();
 *   const page = await chromium.openHarness(server);
 *   const hex = await page.evaluate(async () => {
 *     const core = await harnessImport('/dist/core/index.js');
 *     return core.sha256Hex(new Uint8Array([1, 2, 3]));
 *   });
 *   expect(server.requestCount('/published/project.index.json')).toBe(1);
 *   await chromium.close();
 *   await server.close();
 *
 * Why `harnessImport` and not `import()`: jest compiles test files to CommonJS, which rewrites
 * `import()` inside an evaluated function into `require()`, and the page has no `require`.
 * The harness page defines `globalThis.harnessImport = (specifier) => import(specifier)`; a test
 * that prefers the literal form can pass a string instead (`page.evaluate("import('/dist/…')")`).
 */
import { contentTypeOf } from '../../core/read/media-types.js';
import { existsSync, mkdtempSync, rmSync, statSync, createReadStream } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

/** The repository root (this file is test/helpers/browser.ts). */
export const REPO_ROOT = resolve(__dirname, '..', '..');

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

// ---------------------------------------------------------------------------------------------
// Chromium

export interface LaunchOptions {
  /**
   * Reuse this profile folder, so a test can close the browser and launch it again on the same
   * storage (persistence across browser restarts). The harness never deletes a folder it was
   * given; without this option it makes a fresh temporary profile and deletes it on `close()`.
   */
  userDataDir?: string;
}

export interface LaunchedBrowser {
  browser: Browser;
  /** The profile folder in use. */
  userDataDir: string;
  /** A new tab showing the server's `/harness.html`, with `harnessImport` ready. */
  openHarness(server: RepoServer): Promise<Page>;
  /** Closes Chromium (flushing its storage to the profile) and deletes a temporary profile. */
  close(): Promise<void>;
}

/** A fresh, empty profile folder for tests that relaunch Chromium; remove it with `removeProfile`. */
export function createProfile(): string {
  return mkdtempSync(join(tmpdir(), 'awake-bundle-chromium-'));
}

export function removeProfile(userDataDir: string): void {
  rmSync(userDataDir, { recursive: true, force: true });
}

export function chromiumExecutablePath(): string {
  return process.env.PUPPETEER_EXECUTABLE_PATH || '/usr/bin/chromium';
}

export async function launchBrowser(options: LaunchOptions = {}): Promise<LaunchedBrowser> {
  const ownsProfile = options.userDataDir === undefined;
  const userDataDir = options.userDataDir ?? createProfile();
  let browser: Browser;
  try {
    browser = await puppeteer.launch({
      executablePath: chromiumExecutablePath(),
      args: [...CHROMIUM_ARGS, `--user-data-dir=${userDataDir}`],
      // With --user-data-dir among the arguments puppeteer uses that profile, not one of its own.
      headless: true,
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
  } catch (error) {
    if (ownsProfile) removeProfile(userDataDir);
    throw new Error(`could not launch Chromium at ${chromiumExecutablePath()} (set PUPPETEER_EXECUTABLE_PATH to another one)`, { cause: error });
  }
  let closed = false;
  return {
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

/** For the page's type: `harnessImport` as test code sees it inside `page.evaluate`. */
declare global {
  // eslint-disable-next-line no-var
  var harnessImport: (specifier: string) => Promise<any>;
}

// ---------------------------------------------------------------------------------------------
// The repository server

export interface RepoServerOptions {
  /** Extra folders to serve, by URL prefix: `{ '/published/': someDir }`. */
  mounts?: Record<string, string>;
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
${JSON.stringify({ imports: { '@noble/hashes/': '/node_modules/@noble/hashes/', 'awake-bundle': '/dist/core/index.js' } }, null, 2)}
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
  const server = createServer((request, response) => {
    const record: RequestRecord = { method: request.method ?? 'GET', path: '', status: 0 };
    if (request.headers.range !== undefined) record.range = request.headers.range;
    requests.push(record);
    response.on('finish', () => (record.status = response.statusCode));
    try {
      record.path = decodeURIComponent(new URL(request.url ?? '/', 'http://localhost').pathname);
      route(request, response, record.path, mounts);
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
    close: () =>
      new Promise<void>((resolveClose) => {
        server.closeAllConnections();
        server.close(() => resolveClose());
      }),
  };
}

function route(request: IncomingMessage, response: ServerResponse, path: string, mounts: Map<string, string>): void {
  if (request.method !== 'GET' && request.method !== 'HEAD') return send(response, 405, 'method not allowed');
  if (path === '/harness.html' || path === '/') {
    response.setHeader('Cache-Control', 'no-store');
    // `?csp=no-workers`: a page whose Content-Security-Policy forbids every worker.
    if (new URL(request.url ?? '/', 'http://localhost').searchParams.get('csp') === 'no-workers') response.setHeader('Content-Security-Policy', "worker-src 'none'");
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
  serveFile(request, response, file, size);
}

/** A file, whole (200) or one byte range of it (206, RFC 9110 §14). */
function serveFile(request: IncomingMessage, response: ServerResponse, file: string, size: number): void {
  // no-store: every load reaches this server, so request counts say what the page really asked.
  response.setHeader('Cache-Control', 'no-store');
  response.setHeader('Accept-Ranges', 'bytes');
  response.setHeader('Content-Type', contentTypeFor(file));
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
