/**
 * A node:http server on 127.0.0.1 whose bundle answers a test writes itself (a 206 whose
 * Content-Range claims a terabyte, a body that never ends, parts out of order…) and that counts,
 * per request, the body bytes it handed to the socket and whether the client closed the
 * connection before the answer ended. Everything else (the index, and for a page `/dist/`,
 * `/node_modules/` and `/index.html`) is served as it is, one origin for all.
 *
 *   const site = await startRangeAnswerServer(resources, (request, response, bundle) => {
 *     response.writeHead(206, { 'Content-Range': 'bytes 0-1099511627775/*' });
 *     endless(response, request, bundle);     // the bundle, then zeros until the client closes
 *   });
 *   … read through a source on site.origin …
 *   expect(await site.requests[0].ended).toBe('closed by the client');
 *   expect(site.requests[0].sent).toBeLessThan(bound + slack);
 */
import { readFileSync, statSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import { join, resolve, sep } from 'node:path';
import { contentTypeOf } from '../../core/format/media-types.js';
import { listenOnLoopback } from './loopback';

export interface AnsweredRequest {
  path: string;
  /** The Range header, if any. */
  range: string | undefined;
  /** The ranges it asks for, inclusive, in its order (none without a Range header). */
  ranges: { first: number; last: number }[];
  /** Body bytes handed to the socket so far. */
  sent: number;
  /** How the answer ended: written to its end, or the connection closed by the client first. */
  ended: Promise<'finished' | 'closed by the client'>;
}

export interface RangeAnswerServer {
  origin: string;
  /** Every request, in order. */
  requests: AnsweredRequest[];
  /** The requests for bundles (`.awkb`). */
  bundleRequests(): AnsweredRequest[];
  close(): Promise<void>;
}

/** Writes one bundle answer; `bundle` is the bundle's bytes as published. */
export type BundleAnswer = (request: AnsweredRequest, response: ServerResponse, bundle: Uint8Array) => void;

/** The most an endless body sends before it ends by itself (a client that never stops reading). */
export const ENDLESS_CAP_BYTES = 96 * 1024 * 1024;

const ZEROS = new Uint8Array(64 * 1024);

/**
 * Writes `start`, then zeros, for as long as the client reads (at the socket's pace), counting
 * what it sent; ends by itself after `ENDLESS_CAP_BYTES`.
 */
export function endless(response: ServerResponse, request: AnsweredRequest, start: Uint8Array = new Uint8Array(0)): void {
  let offset = 0;
  const next = (): Uint8Array => {
    if (offset < start.length) {
      const chunk = start.subarray(offset, offset + ZEROS.length);
      offset += chunk.length;
      return chunk;
    }
    return ZEROS;
  };
  const pump = (): void => {
    while (!response.destroyed) {
      if (request.sent >= ENDLESS_CAP_BYTES) return void response.end();
      const chunk = next();
      request.sent += chunk.length;
      if (!response.write(chunk)) return void response.once('drain', pump);
    }
  };
  pump();
}

/** Writes `body` whole (counting it) and ends. */
export function sendBody(response: ServerResponse, request: AnsweredRequest, body: Uint8Array): void {
  request.sent += body.length;
  response.end(body);
}

/** A `multipart/byteranges` body of `parts` of `bundle` in the order given, as RFC 9110 §14.6 writes one. */
export function multipartBody(bundle: Uint8Array, parts: { first: number; last: number }[], boundary: string): Uint8Array {
  const chunks = parts.flatMap(({ first, last }) => [
    Buffer.from(
      `--${boundary}\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes ${first}-${last}/${bundle.length}\r\n\r\n`,
    ),
    bundle.subarray(first, last + 1),
    Buffer.from('\r\n'),
  ]);
  return Buffer.concat([...chunks, Buffer.from(`--${boundary}--\r\n`)]);
}

function parseRanges(header: string | undefined): { first: number; last: number }[] {
  if (header === undefined) return [];
  return header
    .replace(/^bytes=/, '')
    .split(',')
    .map((spec) => {
      const [first, last] = spec.trim().split('-').map(Number);
      return { first: first!, last: last! };
    });
}

/**
 * Serves `resources` (URL path → bytes) and the folders in `mounts` (URL prefix → folder), with
 * every request for a `.awkb` answered by `answer`.
 */
export async function startRangeAnswerServer(
  resources: Map<string, Uint8Array>,
  answer: BundleAnswer,
  mounts: Record<string, string> = {},
  page?: string,
): Promise<RangeAnswerServer> {
  const requests: AnsweredRequest[] = [];
  const server = createServer((message, response) => {
    const path = decodeURIComponent(new URL(message.url ?? '/', 'http://x').pathname);
    let ended!: (how: 'finished' | 'closed by the client') => void;
    const request: AnsweredRequest = {
      path,
      range: message.headers.range,
      ranges: parseRanges(message.headers.range),
      sent: 0,
      ended: new Promise((resolveEnded) => (ended = resolveEnded)),
    };
    requests.push(request);
    response.on('close', () => ended(response.writableFinished ? 'finished' : 'closed by the client'));
    response.setHeader('Cache-Control', 'no-store');
    const bytes = resources.get(path);
    if (bytes && path.endsWith('.awkb')) return answer(request, response, bytes);
    if (bytes) return void response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': bytes.length }).end(bytes);
    if (page !== undefined && path === '/index.html')
      return void response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
    const prefix = Object.keys(mounts).find((each) => path.startsWith(each));
    if (prefix !== undefined) {
      const root = resolve(mounts[prefix]!);
      const file = resolve(root, `.${path.slice(prefix.length - 1)}`);
      if (file.startsWith(root + sep) && statSync(file, { throwIfNoEntry: false })?.isFile())
        return void response.writeHead(200, { 'Content-Type': contentTypeOf(file) }).end(readFileSync(file));
    }
    response.writeHead(404, { 'Content-Length': 0 }).end();
  });
  const { origin, close } = await listenOnLoopback(server);
  return {
    origin,
    requests,
    bundleRequests: () => requests.filter((request) => request.path.endsWith('.awkb')),
    close,
  };
}

/** The repository's folders a page needs to import the built package (see test/helpers/browser.ts). */
export function packageMounts(repo: string): Record<string, string> {
  return { '/dist/': join(repo, 'dist'), '/node_modules/': join(repo, 'node_modules') };
}
