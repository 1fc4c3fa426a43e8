/**
 * What held against issue 26's hostile probe, kept held (SPEC §7 "Verified", "Streamed members"):
 * one bundle of 21 files served by a scripted node:http server on 127.0.0.1 with 20 hostile
 * bodies (cut with and without Content-Length, longer and shorter, stalls, flips in the head, the
 * first, a duplicated and the last member, garbage, an empty 200, an HTML page, …), 21 reads at
 * once each. Every read gets the file's own bytes or a typed error, none hangs (stalls end by the
 * transport's quiet-time limit), and nothing of a failed bundle is cached. Seeded and bounded.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { AwakeError, IndexedAssetSource } from '../core/internal.js';
import { listenOnLoopback } from './helpers/loopback.js';
import { RecordingCache } from './helpers/recording-cache.js';
import { runCli, temporaryDir } from './helpers/cli.js';
import { seededBytes, writeTree } from './helpers/trees.js';

const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** 21 files in one bundle; `b/dup.bin` holds the same content as `a/dup.bin` (stored once). */
const FILES: Record<string, Uint8Array> = {};
for (let i = 0; i < 19; i++) FILES[`a/f${String(i).padStart(2, '0')}.bin`] = seededBytes(2048 + i * 97, 40 + i);
FILES['a/dup.bin'] = seededBytes(3000, 99);
FILES['b/dup.bin'] = FILES['a/dup.bin'];

type Answer = (response: ServerResponse, bundle: Buffer, socket: Socket) => void;
const flip = (bundle: Buffer, at: number) => {
  const copy = Buffer.from(bundle);
  copy[at]! ^= 0x5a;
  return copy;
};
const send =
  (body: Buffer | string, headers: Record<string, string | number> = {}): Answer =>
  (response) => {
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': Buffer.byteLength(body), ...headers });
    response.end(body);
  };
const chunked =
  (body: Buffer): Answer =>
  (response) => {
    response.writeHead(200, { 'content-type': 'application/octet-stream' });
    response.end(body);
  };

describe('20 hostile bodies × 21 reads: verified bytes or a typed error, never a hang, nothing cached from a failed bundle', () => {
  let root: string;
  let bundle: Buffer;
  let index: { bundles: { url: string }[]; files: { path: string; offset: number; sizeBytes: number; sha256: string }[] };

  beforeAll(() => {
    root = temporaryDir('awkb-hostile-');
    const tree = temporaryDir('awkb-hostile-tree-');
    writeTree(tree, FILES);
    const result = runCli([tree, '--out', join(root, 'site'), '--group', 'one']);
    if (result.code !== 0) throw new Error(result.stderr);
    index = JSON.parse(readFileSync(join(root, 'site/project.index.json'), 'utf8'));
    bundle = readFileSync(join(root, 'site', index.bundles[0]!.url));
  });

  const member = (path: string) => index.files.find((file) => file.path === path)!;
  const hostile = (): [string, Answer][] => {
    const first = member('a/f00.bin');
    const dup = member('a/dup.bin');
    const last = [...index.files].sort((x, y) => y.offset - x.offset)[0]!;
    const half = Math.floor(bundle.length / 2);
    return [
      [
        'cut, with Content-Length',
        (response, body, socket) => {
          response.writeHead(200, { 'content-length': body.length });
          response.write(body.subarray(0, half), () => socket.destroy());
        },
      ],
      [
        'cut, chunked',
        (response, body, socket) => {
          response.writeHead(200);
          response.write(body.subarray(0, half), () => socket.destroy());
        },
      ],
      ['longer, with Content-Length', send(Buffer.concat([bundle, Buffer.alloc(500, 1)]))],
      ['longer, chunked', chunked(Buffer.concat([bundle, Buffer.alloc(500, 1)]))],
      ['shorter, with Content-Length', send(bundle.subarray(0, bundle.length - 1))],
      ['shorter, chunked', chunked(bundle.subarray(0, bundle.length - 100))],
      ['a stall before the headers', () => undefined],
      [
        'a stall mid-body',
        (response, body) => {
          response.writeHead(200, { 'content-length': body.length });
          response.write(body.subarray(0, half));
        },
      ],
      ['a flip in the magic', send(flip(bundle, 0))],
      ['a flip in the table', send(flip(bundle, 20))],
      ['a flip in the first member', send(flip(bundle, first.offset))],
      ['a flip in the duplicated member', send(flip(bundle, dup.offset + 5))],
      ['a flip in the last member', send(flip(bundle, last.offset + last.sizeBytes - 1))],
      ['garbage of the right length', send(seededBytes(bundle.length, 7))],
      ['an empty 200', send(Buffer.alloc(0))],
      ['an HTML page', send('<!doctype html><title>Not here</title>', { 'content-type': 'text/html' })],
      ['the head alone', send(bundle.subarray(0, first.offset))],
      [
        'two members swapped',
        send(Buffer.concat([bundle.subarray(0, first.offset), Buffer.from(bundle.subarray(first.offset)).reverse()])),
      ],
      ['a 500, every time', (response) => response.writeHead(500, { 'content-length': 0 }).end()],
      ['the bundle as it is (the control)', send(bundle)],
    ];
  };

  test('each body', async () => {
    const outcomes: Record<string, string> = {};
    for (const [name, answer] of hostile()) {
      const server = createServer((request, response) => {
        const path = decodeURIComponent(new URL(request.url!, 'http://x').pathname);
        if (path.endsWith('.awkb')) return answer(response, bundle, request.socket);
        send(readFileSync(join(root, path)), { 'content-type': 'application/json' })(response, bundle, request.socket);
      });
      const { origin, close } = await listenOnLoopback(server);
      try {
        const cache = new RecordingCache();
        const source = await IndexedAssetSource.open({
          indexUrl: `${origin}/site/project.index.json`,
          cache,
          hashWorkers: 0,
          timeoutMs: 300, // a stall ends by the transport's quiet-time limit
          retry: { attempts: 2, baseDelayMs: 1 },
        });
        const reads = await Promise.all(
          Object.keys(FILES).map((path) =>
            source.read(path).then(
              (bytes) => (sha256Hex(bytes) === sha256Hex(FILES[path]!) ? 'bytes' : `WRONG BYTES for ${path}`),
              (error: unknown) => (error instanceof AwakeError ? error.code : `untyped ${String(error)}`),
            ),
          ),
        );
        await source.whenStored();
        const kinds = [...new Set(reads)].sort();
        const control = name.includes('control');
        outcomes[name] = `${kinds.join(',')}${cache.puts.length > 0 ? ` cached ${new Set(cache.puts).size}` : ''}`;
        expect(kinds.filter((kind) => kind.startsWith('WRONG') || kind.startsWith('untyped'))).toEqual([]);
        if (control) expect(outcomes[name]).toBe(`bytes cached ${new Set(index.files.map((f) => f.sha256)).size}`);
        // A bundle that failed: nothing of it is cached (SPEC §7), whatever reads got early.
        else if (reads.some((read) => read !== 'bytes')) expect(cache.puts).toEqual([]);
        source.dispose();
      } finally {
        await close();
      }
    }
    if (process.env.HOSTILE_REPORT) console.log(outcomes);
    // Every hostile body was refused by some read (streamed members before a damaged part may be handed out).
    for (const [name, outcome] of Object.entries(outcomes))
      if (!name.includes('control')) expect([name, outcome]).toEqual([name, expect.stringMatching(/E_/)]);
  });
});
