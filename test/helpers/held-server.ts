/**
 * A server that answers when the test says: it serves a folder on 127.0.0.1 (one
 * `bytes=a-b` range when asked), and can hold the next answer for a path until the test releases
 * it (with the bytes the test gives), or stall a path for good (the connection accepted, no
 * answer ever). It counts requests, connections, and the most requests in flight at once; every
 * answer waits for the next turn of the event loop, so concurrent requests overlap as on a network.
 *
 *   const host = await startHeldServer(dir);
 *   const held = host.hold('/project.index.json');
 *   … something asks for the index; await held.arrived …
 *   held.release(v2); // the held request is answered now, with v2
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join, normalize } from 'node:path';
import { listenOnLoopback } from './loopback.js';

export interface Held {
  /** Resolves once the held request has arrived. */
  arrived: Promise<void>;
  /** Answers it: with `body` (200), else the file as it is now. */
  release(body?: string | Uint8Array): void;
}

export interface HeldServer {
  origin: string;
  /** Every request, in order: its URL path (decoded) and Range header. */
  requests: { path: string; range: string | undefined }[];
  /** Requests for `path` so far. */
  count(path: string): number;
  /** TCP connections opened so far. */
  connections: number;
  /** The most requests in flight at once so far. */
  maxInFlight: number;
  /** Holds the next request for `path` until `release`. */
  hold(path: string): Held;
  /** Every request for `path` from now on is accepted and never answered. */
  stall(path: string): void;
  /** Resolves once `count` answers for `path` have been sent in full. */
  answered(path: string, count: number): Promise<void>;
  /** Resolves once the client has closed a request for `path` before its answer was sent in full (it aborted). */
  dropped(path: string): Promise<void>;
  close(): Promise<void>;
}

export async function startHeldServer(root: string): Promise<HeldServer> {
  const holds = new Map<string, { arrived: () => void; released: Promise<string | Uint8Array | undefined> }[]>();
  const stalled = new Set<string>();
  const finished = new Map<string, number>();
  const watchers: { path: string; count: number; resolve: () => void }[] = [];
  const droppedPaths = new Set<string>();
  const dropWatchers: { path: string; resolve: () => void }[] = [];
  let inFlight = 0;
  const server = createServer((request, response) => void answer(request, response));
  // `origin` and `close` are set once it listens.
  const host: HeldServer = {
    origin: '',
    requests: [],
    count: (path) => host.requests.filter((request) => request.path === path).length,
    connections: 0,
    maxInFlight: 0,
    hold(path) {
      let arrived!: () => void;
      let release!: (body?: string | Uint8Array) => void;
      const arrivedPromise = new Promise<void>((resolve) => (arrived = resolve));
      const released = new Promise<string | Uint8Array | undefined>((resolve) => (release = resolve));
      const list = holds.get(path) ?? [];
      list.push({ arrived, released });
      holds.set(path, list);
      return { arrived: arrivedPromise, release };
    },
    stall: (path) => void stalled.add(path),
    answered: (path, count) =>
      new Promise<void>((resolve) => {
        if ((finished.get(path) ?? 0) >= count) return resolve();
        watchers.push({ path, count, resolve });
      }),
    dropped: (path) =>
      new Promise<void>((resolve) => {
        if (droppedPaths.has(path)) return resolve();
        dropWatchers.push({ path, resolve });
      }),
    close: async () => undefined,
  };

  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = decodeURIComponent(new URL(request.url ?? '/', 'http://localhost').pathname);
    host.requests.push({ path, range: request.headers.range });
    inFlight++;
    host.maxInFlight = Math.max(host.maxInFlight, inFlight);
    response.on('close', () => {
      inFlight--;
      if (response.writableFinished) return;
      droppedPaths.add(path);
      for (const watcher of dropWatchers.splice(0)) {
        if (watcher.path === path) watcher.resolve();
        else dropWatchers.push(watcher);
      }
    });
    response.on('finish', () => {
      finished.set(path, (finished.get(path) ?? 0) + 1);
      for (const watcher of watchers.splice(0)) {
        if ((finished.get(watcher.path) ?? 0) >= watcher.count) watcher.resolve();
        else watchers.push(watcher);
      }
    });
    response.setHeader('Cache-Control', 'no-store');
    if (stalled.has(path)) return;
    const held = holds.get(path)?.shift();
    let body: string | Uint8Array | undefined;
    if (held) {
      held.arrived();
      body = await held.released;
    } else {
      // The next turn of the event loop: requests sent together are in flight together.
      await new Promise((resolve) => setImmediate(resolve));
    }
    let bytes: Buffer;
    try {
      bytes = body === undefined ? readFileSync(join(root, normalize(path).replace(/^(\.\.[/\\])+/, ''))) : Buffer.from(body);
    } catch {
      return void response.writeHead(404).end();
    }
    const range = /^bytes=(\d+)-(\d+)$/.exec(request.headers.range ?? '');
    if (range && body === undefined) {
      const first = Number(range[1]);
      const last = Math.min(Number(range[2]), bytes.length - 1);
      response.writeHead(206, { 'Content-Range': `bytes ${first}-${last}/${bytes.length}`, 'Content-Length': String(last - first + 1) });
      return void response.end(bytes.subarray(first, last + 1));
    }
    response.writeHead(200, { 'Content-Length': String(bytes.length) });
    response.end(bytes);
  }

  server.on('connection', () => host.connections++);
  const { origin, close } = await listenOnLoopback(server);
  host.origin = origin;
  host.close = close;
  return host;
}
