/**
 * A server for "no byte twice" tests: what a page asks for, visit by visit.
 *
 * It serves the built package, node_modules and test pages as cacheable files (a page load after
 * the first costs a few requests, not Babylon's hundreds of modules again), and published sites
 * below a visit prefix: `/visit-7/site/published/project.index.json` is `site/published/…` of a
 * mount, so every request says which page load made it, even one that reaches the server after
 * the next page has started. Site files go out `no-store` with `Accept-Ranges`, answering one
 * range (206) or several (206 `multipart/byteranges`, as `serve` does), so that every request the
 * reader makes reaches the server and is logged with its Range header. `/blank.html` is an empty
 * page of the same origin, where a test can clear the origin's storage with nothing holding it open.
 *
 *   const server = await startVisitServer({ '/site/': dir, '/page/': pageDir });
 *   await page.goto(`${server.origin}/page/index.html`);
 *   … the page reads `/visit-1/site/published/project.index.json` …
 *   expect(bytesAskedTwice(server.requests.filter((r) => r.visit === 1), sizeOf)).toEqual([]);
 */
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import { join, resolve, sep } from 'node:path';
import { contentTypeOf } from '../../core/format/media-types.js';
import { requestedRanges } from '../../core/format/range-header.js';
import { REPO_ROOT } from './browser';
import { listenOnLoopback } from './loopback';

export interface VisitRequest {
  /** The visit number of a `/visit-<n>/` request; undefined for the package and pages. */
  visit: number | undefined;
  /** The URL path without the visit prefix, decoded. */
  path: string;
  range: string | undefined;
  /** The answer's status once its headers went out (0 before, or for a request dropped unanswered). */
  status: number;
  /** Body bytes this server wrote for it (a multipart answer's part headers included; HTTP headers not). */
  bodyBytes: number;
  /** Whether its answer has been sent in full (false while it is in flight, or when the client left first). */
  finished: boolean;
}

export interface VisitServer {
  origin: string;
  /** Site requests (those below a visit prefix), in the order they arrived. */
  requests: VisitRequest[];
  /** Resolves with the first site request (from now, or already logged) that `matches`. */
  arrival(matches: (request: VisitRequest) => boolean): Promise<VisitRequest>;
  /**
   * Holds the next site request for `path` (without its visit prefix) until `release`: unanswered,
   * or with `afterBytes`, answered up to that byte of its body (`arrived` then resolves once those
   * bytes are written), the rest held.
   */
  hold(path: string, options?: { afterBytes?: number }): { arrived: Promise<void>; release(): void };
  /** Resolves once no site request is in flight: each has been answered in full, or its client has gone. */
  quiet(): Promise<void>;
  close(): Promise<void>;
}

/** Files below these prefixes may be kept by the browser's HTTP cache: they do not change during a test. */
const CACHEABLE = { '/dist/': join(REPO_ROOT, 'dist'), '/node_modules/': join(REPO_ROOT, 'node_modules') };

/**
 * `sites`: folders by URL prefix. A prefix reached below `/visit-<n>/` is a site (no-store, logged);
 * reached directly, a page folder (cacheable, not logged).
 */
export async function startVisitServer(sites: Record<string, string>): Promise<VisitServer> {
  const mounts = Object.entries({ ...CACHEABLE, ...sites })
    .map(([prefix, dir]) => [prefix, resolve(dir)] as const)
    .sort(([a], [b]) => b.length - a.length);
  const requests: VisitRequest[] = [];
  const watchers: { matches: (request: VisitRequest) => boolean; resolve: (request: VisitRequest) => void }[] = [];
  const holds = new Map<string, { afterBytes: number; arrived: () => void; released: Promise<void> }>();
  let inFlight = 0;
  const quietWaiters: (() => void)[] = [];
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const visited = /^\/visit-(\d+)(\/.*)$/.exec(decodeURIComponent(url.pathname));
    const path = visited ? visited[2]! : decodeURIComponent(url.pathname);
    if (visited) {
      const logged: VisitRequest = {
        visit: Number(visited[1]),
        path,
        range: request.headers.range,
        status: 0,
        bodyBytes: 0,
        finished: false,
      };
      requests.push(logged);
      logBody(response, logged);
      inFlight++;
      response.on('close', () => {
        logged.status = response.headersSent ? response.statusCode : 0;
        logged.finished = response.writableFinished;
        if (--inFlight === 0) for (const quiet of quietWaiters.splice(0)) quiet();
      });
      for (const watcher of watchers.splice(0)) {
        if (watcher.matches(logged)) watcher.resolve(logged);
        else watchers.push(watcher);
      }
    }
    if (path === '/blank.html') {
      response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
      return void response.end('<!doctype html><meta charset="utf-8"><title>blank</title>');
    }
    const mount = mounts.find(([prefix]) => path.startsWith(prefix));
    const file = mount && resolve(mount[1], '.' + path.slice(mount[0].length - 1));
    if (!mount || !file || (file !== mount[1] && !file.startsWith(mount[1] + sep))) return void response.writeHead(404).end();
    let size: number;
    try {
      const stat = statSync(file);
      if (!stat.isFile()) return void response.writeHead(404).end();
      size = stat.size;
    } catch {
      return void response.writeHead(404).end();
    }
    response.setHeader('Content-Type', contentTypeOf(file));
    response.setHeader('Cache-Control', visited ? 'no-store' : 'max-age=3600');
    if (visited) response.setHeader('Accept-Ranges', 'bytes');
    const held = visited ? holds.get(path) : undefined;
    if (held) holds.delete(path);
    if (held && held.afterBytes > 0 && request.headers.range === undefined) return void sendHeld(response, file, size, held);
    const answer = () => sendRanges(response, file, size, visited ? request.headers.range : undefined, request.method === 'HEAD');
    if (!held) return answer();
    held.arrived();
    void held.released.then(answer);
  });
  const { origin, close } = await listenOnLoopback(server);
  return {
    origin,
    requests,
    arrival: (matches) =>
      new Promise<VisitRequest>((resolveArrival) => {
        const logged = requests.find(matches);
        if (logged) return resolveArrival(logged);
        watchers.push({ matches, resolve: resolveArrival });
      }),
    hold(path, options = {}) {
      let arrived!: () => void;
      let release!: () => void;
      const arrival = new Promise<void>((resolveArrived) => (arrived = resolveArrived));
      const released = new Promise<void>((resolveRelease) => (release = resolveRelease));
      holds.set(path, { afterBytes: options.afterBytes ?? 0, arrived, released });
      return { arrived: arrival, release: () => release() };
    },
    quiet: () => new Promise<void>((resolveQuiet) => (inFlight === 0 ? resolveQuiet() : quietWaiters.push(resolveQuiet))),
    close,
  };
}

/** Counts into `logged.bodyBytes` every body byte handed to `response` (by `write` and `end`). */
function logBody(response: ServerResponse, logged: VisitRequest): void {
  const count = (chunk: unknown) => {
    if (typeof chunk === 'string') logged.bodyBytes += Buffer.byteLength(chunk);
    else if (chunk instanceof Uint8Array) logged.bodyBytes += chunk.byteLength;
  };
  const write = response.write.bind(response) as (...args: unknown[]) => boolean;
  const end = response.end.bind(response) as (...args: unknown[]) => ServerResponse;
  response.write = ((chunk: unknown, ...rest: unknown[]) => (count(chunk), write(chunk, ...rest))) as typeof response.write;
  response.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if (typeof chunk !== 'function') count(chunk);
    return end(chunk, ...rest);
  }) as typeof response.end;
}

/** The file whole (200), one range of it (206), or several (206 multipart/byteranges). */
function sendRanges(response: ServerResponse, file: string, size: number, header: string | undefined, headOnly: boolean): void {
  const ranges = requestedRanges(header, size);
  if (ranges === 'unsatisfiable') {
    response.writeHead(416, { 'Content-Range': `bytes */${size}` });
    return void response.end();
  }
  if (ranges && ranges.length > 1) {
    const bytes = readFileSync(file);
    const boundary = 'visit-server-boundary';
    const body = Buffer.concat([
      ...ranges.flatMap(({ start, end }) => [
        Buffer.from(`\r\n--${boundary}\r\nContent-Type: ${contentTypeOf(file)}\r\nContent-Range: bytes ${start}-${end}/${size}\r\n\r\n`),
        bytes.subarray(start, end + 1),
      ]),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    response.writeHead(206, { 'Content-Type': `multipart/byteranges; boundary=${boundary}`, 'Content-Length': String(body.length) });
    return void response.end(headOnly ? undefined : body);
  }
  const { start, end } = ranges?.[0] ?? { start: 0, end: size - 1 };
  if (ranges) response.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
  response.writeHead(ranges ? 206 : 200, { 'Content-Length': String(end - start + 1) });
  if (headOnly || end < start) return void response.end();
  createReadStream(file, { start, end }).pipe(response);
}

/** A whole file (200) whose body stops after `afterBytes` until released. */
async function sendHeld(
  response: ServerResponse,
  file: string,
  size: number,
  held: { afterBytes: number; arrived: () => void; released: Promise<void> },
): Promise<void> {
  const bytes = readFileSync(file);
  response.writeHead(200, { 'Content-Length': String(size) });
  await new Promise<void>((written) => response.write(bytes.subarray(0, held.afterBytes), () => written()));
  held.arrived();
  await held.released;
  response.end(bytes.subarray(held.afterBytes));
}

/** Bytes of one file that a visit asked for more than once: which, by which requests. */
export interface AskedTwice {
  path: string;
  /** The first byte asked for twice, and the Range headers (`whole` for none) of the two requests. */
  byte: number;
  requests: [string, string];
}

/**
 * For each file of `sizeOf` (a bundle's path → its size), the ranges `requests` asked for (no
 * Range header: the whole file, [0, size)); the first overlap of each file, if any. Only bytes
 * count, not requests: a load that fetches a bundle's members by several ranges is fine.
 */
export function bytesAskedTwice(requests: readonly VisitRequest[], sizeOf: ReadonlyMap<string, number>): AskedTwice[] {
  const spans = new Map<string, { start: number; end: number; header: string }[]>();
  for (const request of requests) {
    const size = sizeOf.get(request.path);
    if (size === undefined) continue;
    const asked = requestedRanges(request.range, size);
    if (asked === 'unsatisfiable') continue;
    const ranges = asked ?? [{ start: 0, end: size - 1 }];
    const list = spans.get(request.path) ?? [];
    for (const { start, end } of ranges) list.push({ start, end: end + 1, header: request.range ?? 'whole' });
    spans.set(request.path, list);
  }
  const twice: AskedTwice[] = [];
  for (const [path, list] of spans) {
    list.sort((a, b) => a.start - b.start);
    for (let i = 1; i < list.length; i++) {
      const before = list.slice(0, i).find((span) => span.end > list[i]!.start);
      if (!before) continue;
      twice.push({ path, byte: list[i]!.start, requests: [before.header, list[i]!.header] });
      break;
    }
  }
  return twice;
}
