/**
 * A server for streamed reads (SPEC §7 "Streamed members"): it serves a folder on 127.0.0.1
 * with CORS, and can hold a file's body at a byte of the test's choosing until the test lets it
 * go, so a test sees what the reader does while a bundle is only partly in, with no timers.
 *
 *   const server = await startGatedServer(dir);
 *   const gate = server.gate('/bundles/<sha>.awkb', 4096); // the next answer stops after 4096 bytes
 *   … read the first member; await gate.reached; check what the page has …
 *   gate.release();
 */
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import { join, normalize } from 'node:path';
import { contentTypeOf } from '../../core/format/media-types.js';
import { listenOnLoopback } from './loopback.js';

export interface Gate {
  /** Resolves once the held answer has sent its first bytes and waits. */
  reached: Promise<void>;
  /** Sends the rest. */
  release(): void;
}

export interface GatedServer {
  origin: string;
  /** Holds the next answer for `path` after `afterBytes` bytes of its body. */
  gate(path: string, afterBytes: number): Gate;
  /** Requests by URL path, in order. */
  requests: string[];
  close(): Promise<void>;
}

export async function startGatedServer(root: string): Promise<GatedServer> {
  const gates = new Map<string, { afterBytes: number; reached: () => void; released: Promise<void> }>();
  const requests: string[] = [];
  const server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url ?? '/', 'http://localhost').pathname);
    requests.push(path);
    response.setHeader('Access-Control-Allow-Origin', '*');
    response.setHeader('Access-Control-Allow-Headers', '*');
    response.setHeader('Cache-Control', 'no-store');
    if (request.method === 'OPTIONS') return void response.writeHead(204).end();
    let body: Buffer;
    try {
      body = readFileSync(join(root, normalize(path).replace(/^(\.\.[/\\])+/, '')));
    } catch {
      return void response.writeHead(404).end();
    }
    response.writeHead(200, { 'Content-Type': contentTypeOf(path), 'Content-Length': String(body.length) });
    const gate = gates.get(path);
    gates.delete(path);
    if (!gate) return void response.end(body);
    void sendHeld(response, body, gate);
  });
  const { origin, close } = await listenOnLoopback(server);
  return {
    origin,
    requests,
    gate(path, afterBytes) {
      let reached!: () => void;
      let release!: () => void;
      const gate = { afterBytes, reached: () => reached(), released: new Promise<void>((resolve) => (release = resolve)) };
      const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
      gates.set(path, gate);
      return { reached: reachedPromise, release: () => release() };
    },
    close,
  };
}

async function sendHeld(
  response: ServerResponse,
  body: Buffer,
  gate: { afterBytes: number; reached: () => void; released: Promise<void> },
): Promise<void> {
  const first = body.subarray(0, gate.afterBytes);
  // Written and flushed before the test is told: the reader may have these bytes now.
  await new Promise<void>((resolve) => response.write(first, () => resolve()));
  gate.reached();
  await gate.released;
  response.end(body.subarray(gate.afterBytes));
}
