/**
 * A published project served by a plain node:http server on 127.0.0.1 whose every answer can be
 * scripted: a status with `Retry-After`, a reset, a body cut short, a stall, a server that
 * ignores `Range`, a 206 of the wrong size, an oversized body. The fault and network tests
 * (faults.test.ts, security-token.test.ts) read through it and count what it received.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { BundledIndex } from '../../core/internal.js';
import { looseFileLocator, looseIndexFromFolder, publishToDirectory } from '../../core/node/index.js';
import { temporaryDir } from './cli';
import { listenOnLoopback } from './loopback';

export interface PublishedSite {
  index: BundledIndex;
  /** Served bytes by URL path (`/project.index.json`, `/bundles/<sha>.awkb`). */
  resources: Map<string, Uint8Array>;
  /** Each project file's bytes, by path. */
  files: Map<string, Uint8Array>;
}

/** Deterministic bytes that do not compress or repeat between files. */
function fileContent(seed: number, size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  let state = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    bytes[i] = state & 0xff;
  }
  return bytes;
}

/** Publishes `folders` folders of `filesPerFolder` files (one bundle per folder) and loads it all in memory. */
export async function publishSite(folders: number, filesPerFolder: number, fileBytes: (file: number) => number): Promise<PublishedSite> {
  const dir = temporaryDir('awkb-scripted-');
  const tree = join(dir, 'tree');
  const files = new Map<string, Uint8Array>();
  for (let folder = 0; folder < folders; folder++) {
    mkdirSync(join(tree, `f${folder}`), { recursive: true });
    for (let file = 0; file < filesPerFolder; file++) {
      const n = folder * filesPerFolder + file;
      const path = `f${folder}/file${file}.bin`;
      const bytes = fileContent(n + 1, fileBytes(n));
      writeFileSync(join(tree, path), bytes);
      files.set(path, bytes);
    }
  }
  const { index: looseIndex } = await looseIndexFromFolder(tree);
  writeFileSync(join(dir, 'loose.index.json'), JSON.stringify(looseIndex));
  const out = join(dir, 'out');
  const { index } = await publishToDirectory({ looseIndex, locate: looseFileLocator(join(dir, 'loose.index.json'), tree), outDir: out });
  const resources = new Map<string, Uint8Array>([['/project.index.json', new Uint8Array(readFileSync(join(out, 'project.index.json')))]]);
  for (const bundle of index.bundles) resources.set(`/${bundle.url}`, new Uint8Array(readFileSync(join(out, bundle.url))));
  return { index, resources, files };
}

/** What the server does with one request instead of answering it properly. */
export type Fault =
  | { kind: 'status'; status: number; retryAfter?: string }
  | { kind: 'reset' }
  /** Content-Length of the whole body, then half of it, then the connection closes. */
  | { kind: 'short' }
  /** Headers, then nothing until the client gives up. */
  | { kind: 'stall' }
  /** A 200 with the whole resource to a Range request. */
  | { kind: 'ignore-range' }
  /** A 206 one byte longer than asked for. */
  | { kind: 'wrong-range' }
  /** `extraBytes` more than the resource, streamed; `declare` sends a Content-Length of the lot. */
  | { kind: 'oversize'; extraBytes: number; declare: boolean };

export interface ScriptedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  /** How many requests for this path came before, from 0. */
  seen: number;
}

export interface ScriptedServer {
  origin: string;
  requests: ScriptedRequest[];
  count(path: string): number;
  /** Body bytes the server has handed to the socket, over every request. */
  bytesWritten: number;
  /** Requests whose answer is still being written or stalled. */
  open: number;
  close(): Promise<void>;
}

/** Serves `resources` (honouring `Range`), except where `script` returns a fault for a request. */
export async function startScriptedServer(
  resources: Map<string, Uint8Array>,
  script: (request: ScriptedRequest) => Fault | undefined = () => undefined,
): Promise<ScriptedServer> {
  const seenByPath = new Map<string, number>();
  // `origin` and `close` are set once it listens.
  const state: ScriptedServer = {
    origin: '',
    requests: [],
    bytesWritten: 0,
    open: 0,
    count: (path) => state.requests.filter((request) => request.path === path).length,
    close: async () => undefined,
  };
  const server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname);
    const seen = seenByPath.get(path) ?? 0;
    seenByPath.set(path, seen + 1);
    const scripted: ScriptedRequest = { path, headers: request.headers, seen };
    state.requests.push(scripted);
    state.open++;
    response.on('close', () => state.open--);
    const bytes = resources.get(path);
    if (!bytes) return void response.writeHead(404, { 'Content-Length': 0 }).end();
    answer(response, bytes, request.headers.range, script(scripted), state);
  });
  const { origin, close } = await listenOnLoopback(server);
  state.origin = origin;
  state.close = close;
  return state;
}

function answer(
  response: ServerResponse,
  bytes: Uint8Array,
  range: string | undefined,
  fault: Fault | undefined,
  state: ScriptedServer,
): void {
  const write = (chunk: Uint8Array): void => {
    state.bytesWritten += chunk.length;
    response.write(chunk);
  };
  switch (fault?.kind) {
    case 'status':
      response.writeHead(fault.status, {
        'Content-Length': 0,
        ...(fault.retryAfter !== undefined ? { 'Retry-After': fault.retryAfter } : {}),
      });
      return void response.end();
    case 'reset':
      return void response.socket?.destroy();
    case 'short':
      response.writeHead(200, { 'Content-Length': bytes.length });
      write(bytes.subarray(0, bytes.length >> 1));
      return void setImmediate(() => response.socket?.destroy());
    case 'stall':
      response.writeHead(200, { 'Content-Length': bytes.length });
      return void response.flushHeaders();
    case 'ignore-range':
      response.writeHead(200, { 'Content-Length': bytes.length });
      write(bytes);
      return void response.end();
    case 'oversize':
      return void streamOversized(response, bytes, fault, state);
  }
  const asked = range === undefined ? undefined : /^bytes=(\d+)-(\d+)$/.exec(range);
  if (asked) {
    const first = Number(asked[1]);
    const last = Math.min(Number(asked[2]) + (fault?.kind === 'wrong-range' ? 1 : 0), bytes.length - 1);
    const part = bytes.subarray(first, last + 1);
    response.writeHead(206, { 'Content-Length': part.length, 'Content-Range': `bytes ${first}-${last}/${bytes.length}` });
    write(part);
    return void response.end();
  }
  response.writeHead(200, { 'Content-Length': bytes.length });
  write(bytes);
  response.end();
}

/** The resource, then `extraBytes` more in 64 KiB chunks, written only as fast as the client reads. */
function streamOversized(
  response: ServerResponse,
  bytes: Uint8Array,
  fault: Extract<Fault, { kind: 'oversize' }>,
  state: ScriptedServer,
): void {
  const total = bytes.length + fault.extraBytes;
  response.writeHead(200, fault.declare ? { 'Content-Length': total } : {});
  const chunk = new Uint8Array(64 * 1024).fill(0x5a);
  let sent = 0;
  const pump = (): void => {
    while (sent < total && !response.destroyed) {
      const piece =
        sent < bytes.length
          ? bytes.subarray(sent, Math.min(bytes.length, sent + chunk.length))
          : chunk.subarray(0, Math.min(chunk.length, total - sent));
      sent += piece.length;
      state.bytesWritten += piece.length;
      if (!response.write(piece)) return void response.once('drain', pump);
    }
    if (sent >= total) response.end();
  };
  pump();
}
