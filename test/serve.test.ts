/**
 * `awake-bundle serve` and `startStaticServer`: the embedded host, exercised over real HTTP on
 * 127.0.0.1 (SPEC §7 relies on its Range, ETag, CORS, token and fault behaviour).
 */
import type { EventEmitter } from 'node:events';
import { setTimeout as setTimeoutPromise } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { parseServeArguments } from '../cli/commands/serve.js';
import {
  MAX_RANGES_PER_REQUEST,
  parseFaultRule,
  requestedRange,
  requestedRanges,
  startStaticServer,
  type StaticServer,
  type StaticServerOptions,
} from '../core/node/server.js';
import { CLI, FIXTURES, runCli, temporaryDir } from './helpers/cli.js';

const PUBLISHED = join(FIXTURES, 'expected', 'small-default');
const INDEX: { bundles: { sha256: string; sizeBytes: number; url: string }[] } = JSON.parse(
  readFileSync(join(PUBLISHED, 'project.index.json'), 'utf8'),
);
const BIG_BUNDLE = INDEX.bundles.reduce((a, b) => (b.sizeBytes > a.sizeBytes ? b : a));
const BIG_BUNDLE_BYTES = readFileSync(join(PUBLISHED, BIG_BUNDLE.url));

const started: StaticServer[] = [];
async function serve(options: Partial<StaticServerOptions> = {}): Promise<StaticServer> {
  const server = await startStaticServer({ root: PUBLISHED, ...options });
  started.push(server);
  return server;
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((server) => server.close()));
});

/** A request whose path goes on the wire exactly as written (fetch would normalise `..`). */
function rawGet(
  base: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: hostname, port, path, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

/** A folder of loose files: one per content type, a space in a name, folders with and without index.html. */
let site: string;
let outsideFile: string;
const TYPES: [string, string][] = [
  ['bundle.awkb', 'application/octet-stream'],
  ['data.json', 'application/json; charset=utf-8'],
  ['page.html', 'text/html; charset=utf-8'],
  ['main.js', 'text/javascript; charset=utf-8'],
  ['module.mjs', 'text/javascript; charset=utf-8'],
  ['style.css', 'text/css; charset=utf-8'],
  ['image.png', 'image/png'],
  ['photo.jpg', 'image/jpeg'],
  ['photo.JPEG', 'image/jpeg'],
  ['image.webp', 'image/webp'],
  ['anim.gif', 'image/gif'],
  ['icon.svg', 'image/svg+xml'],
  ['model.glb', 'model/gltf-binary'],
  ['model.gltf', 'model/gltf+json'],
  ['model.bin', 'application/octet-stream'],
  ['music.ogg', 'audio/ogg'],
  ['music.mp3', 'audio/mpeg'],
  ['sound.wav', 'audio/wav'],
  ['notes.txt', 'text/plain; charset=utf-8'],
  ['atlas.xml', 'application/xml; charset=utf-8'],
  ['engine.wasm', 'application/wasm'],
  ['main.js.map', 'application/json; charset=utf-8'],
  ['font.fnt', 'text/plain; charset=utf-8'],
  ['mystery.xyz', 'application/octet-stream'],
];

beforeAll(() => {
  site = temporaryDir('awkb-serve-');
  mkdirSync(join(site, 'files', 'assets'), { recursive: true });
  writeFileSync(join(site, 'files', 'assets', 'späce name.txt'), 'a file with a space\n');
  mkdirSync(join(site, 'game'));
  writeFileSync(join(site, 'game', 'index.html'), '<!doctype html><title>game</title>\n');
  mkdirSync(join(site, 'no-index'));
  writeFileSync(join(site, 'empty.txt'), '');
  mkdirSync(join(site, 'types'));
  for (const [name] of TYPES) writeFileSync(join(site, 'types', name), `content of ${name}\n`);
  const outside = temporaryDir('awkb-outside-');
  outsideFile = join(outside, 'secret.txt');
  writeFileSync(outsideFile, 'must not be served\n');
  symlinkSync(outsideFile, join(site, 'link-out.txt'));
  symlinkSync(join(site, 'game', 'index.html'), join(site, 'link-in.html'));
});

describe('serving files', () => {
  test('a bundle: whole bytes, octet-stream, its SHA-256 as the ETag, cached for a year', async () => {
    const { url } = await serve();
    const response = await fetch(new URL(BIG_BUNDLE.url, url));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expect(response.headers.get('content-length')).toBe(String(BIG_BUNDLE.sizeBytes));
    expect(response.headers.get('etag')).toBe(`"${BIG_BUNDLE.sha256}"`);
    expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(response.headers.get('accept-ranges')).toBe('bytes');
    expect(new Date(response.headers.get('last-modified')!).getTime()).toBe(
      Math.floor(statSync(join(PUBLISHED, BIG_BUNDLE.url)).mtimeMs / 1000) * 1000,
    );
    expect(Buffer.from(await response.arrayBuffer()).equals(BIG_BUNDLE_BYTES)).toBe(true);
  });

  test('the index: JSON, a strong ETag, and no-cache so a new publish is seen at once', async () => {
    const { url } = await serve();
    const response = await fetch(new URL('project.index.json', url));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('etag')).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);
    expect(await response.json()).toEqual(INDEX);
  });

  test('HEAD answers the same headers with no body', async () => {
    const { url } = await serve();
    const head = await fetch(new URL(BIG_BUNDLE.url, url), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(BIG_BUNDLE.sizeBytes));
    expect(head.headers.get('etag')).toBe(`"${BIG_BUNDLE.sha256}"`);
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });

  test.each(TYPES)('%s is served as %s', async (name, type) => {
    const { url } = await serve({ root: site });
    const response = await fetch(new URL(`types/${name}`, url));
    expect(response.headers.get('content-type')).toBe(type);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await response.text()).toBe(`content of ${name}\n`);
  });

  test('every file but a bundle is no-cache', async () => {
    const { url } = await serve({ root: site });
    expect((await fetch(new URL('types/bundle.awkb', url))).headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await fetch(new URL('types/image.png', url))).headers.get('cache-control')).toBe('no-cache');
  });

  test('an empty file is 200 with Content-Length 0', async () => {
    const { url } = await serve({ root: site });
    const response = await fetch(new URL('empty.txt', url));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe('0');
    expect(await response.text()).toBe('');
  });

  test('percent-encoded names are decoded: files/assets/sp%C3%A4ce%20name.txt', async () => {
    const { url } = await serve({ root: site });
    const response = await fetch(`${url}files/assets/sp%C3%A4ce%20name.txt`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('a file with a space\n');
    // The URL a loose index writes for the path (SPEC §2) is the same thing.
    const fromIndexUrl = `files/${['assets', 'späce name.txt'].map(encodeURIComponent).join('/')}`;
    expect((await fetch(new URL(fromIndexUrl, url))).status).toBe(200);
  });

  test('a folder serves its index.html; without the slash it redirects first; without index.html it is 404', async () => {
    const { url } = await serve({ root: site });
    const folder = await fetch(new URL('game/', url));
    expect(folder.status).toBe(200);
    expect(folder.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await folder.text()).toContain('<title>game</title>');
    const bare = await fetch(new URL('game?x=1', url), { redirect: 'manual' });
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe('/game/?x=1');
    expect((await fetch(new URL('no-index/', url))).status).toBe(404);
    expect((await fetch(url)).status).toBe(404); // the published folder has no index.html
    expect((await fetch(new URL('missing.txt', url))).status).toBe(404);
    expect((await fetch(new URL('empty.txt/', url))).status).toBe(404);
  });

  test('methods other than GET, HEAD and OPTIONS are 405', async () => {
    const { url } = await serve();
    const response = await fetch(new URL('project.index.json', url), { method: 'POST', body: 'x' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
  });
});

describe('refusing paths outside the folder', () => {
  const escapes = [
    '/../package.json',
    '/bundles/../../package.json',
    '/%2e%2e/package.json',
    '/bundles/%2E%2E/%2E%2E/package.json',
    '/bundles%2F..%2F..%2Fpackage.json',
    '/..%5C..%5Cpackage.json',
    '//etc/passwd',
    '/bundles//x',
  ];
  test.each(escapes)('%s is 403', async (path) => {
    const { url } = await serve();
    const response = await rawGet(url, path);
    expect(response.status).toBe(403);
    expect(response.body.toString()).not.toContain('awake-bundle');
  });

  test('a malformed percent-encoding is 400', async () => {
    const { url } = await serve();
    expect((await rawGet(url, '/bundles/%E0%A4%A')).status).toBe(400);
  });

  test('a symbolic link that leaves the folder is 403; one that stays inside is served', async () => {
    const { url } = await serve({ root: site });
    const out = await rawGet(url, '/link-out.txt');
    expect(out.status).toBe(403);
    expect(out.body.toString()).not.toContain('must not be served');
    expect((await rawGet(url, '/link-in.html')).status).toBe(200);
  });
});

describe('Range', () => {
  async function range(header: string, extra: Record<string, string> = {}) {
    const { url } = await serve();
    return fetch(new URL(BIG_BUNDLE.url, url), { headers: { Range: header, ...extra } });
  }
  const size = BIG_BUNDLE.sizeBytes;

  test('bytes=a-b is 206 with exactly those bytes', async () => {
    const response = await range('bytes=16-1039');
    expect(response.status).toBe(206);
    expect(response.headers.get('content-range')).toBe(`bytes 16-1039/${size}`);
    expect(response.headers.get('content-length')).toBe('1024');
    expect(Buffer.from(await response.arrayBuffer()).equals(BIG_BUNDLE_BYTES.subarray(16, 1040))).toBe(true);
  });

  test('bytes=a- runs to the end; bytes=-n is the last n bytes; an end past the file is clamped', async () => {
    const open = await range(`bytes=${size - 100}-`);
    expect(open.status).toBe(206);
    expect(open.headers.get('content-range')).toBe(`bytes ${size - 100}-${size - 1}/${size}`);
    expect(Buffer.from(await open.arrayBuffer()).equals(BIG_BUNDLE_BYTES.subarray(size - 100))).toBe(true);

    const suffix = await range('bytes=-10');
    expect(suffix.headers.get('content-range')).toBe(`bytes ${size - 10}-${size - 1}/${size}`);
    expect(Buffer.from(await suffix.arrayBuffer()).equals(BIG_BUNDLE_BYTES.subarray(size - 10))).toBe(true);

    const clamped = await range(`bytes=0-${size * 2}`);
    expect(clamped.status).toBe(206);
    expect(clamped.headers.get('content-range')).toBe(`bytes 0-${size - 1}/${size}`);
    expect((await clamped.arrayBuffer()).byteLength).toBe(size);
  });

  test.each([`bytes=${BIG_BUNDLE.sizeBytes}-`, `bytes=${BIG_BUNDLE.sizeBytes + 5}-${BIG_BUNDLE.sizeBytes + 10}`, 'bytes=-0'])(
    '%s is 416 with bytes */size',
    async (header) => {
      const response = await range(header);
      expect(response.status).toBe(416);
      expect(response.headers.get('content-range')).toBe(`bytes */${size}`);
    },
  );

  test('several ranges, a malformed header or a stale If-Range get the whole file', async () => {
    for (const response of [
      await range('bytes=0-1,9-5'),
      await range('bytes=9-1'),
      await range('items=0-1'),
      await range('bytes=0-9', { 'If-Range': '"stale"' }),
    ]) {
      expect(response.status).toBe(200);
      expect(response.headers.get('content-length')).toBe(String(size));
      await response.arrayBuffer();
    }
    const current = await range('bytes=0-9', { 'If-Range': `"${BIG_BUNDLE.sha256}"` });
    expect(current.status).toBe(206);
  });

  /** The parts of a multipart/byteranges body, read by their Content-Range lengths. */
  function partsOf(response: { headers: Record<string, string | string[] | undefined>; body: Buffer }) {
    const boundary = /boundary=([^;\s]+)/.exec(String(response.headers['content-type']))![1]!;
    const parts: { headers: Record<string, string>; first: number; last: number; bytes: Buffer }[] = [];
    let pos = 0;
    for (;;) {
      expect(response.body.subarray(pos, pos + boundary.length + 2).toString('latin1')).toBe(`--${boundary}`);
      pos += boundary.length + 2;
      if (response.body.subarray(pos, pos + 2).toString('latin1') === '--') break;
      const end = response.body.indexOf('\r\n\r\n', pos);
      const headers = Object.fromEntries(
        response.body
          .subarray(pos + 2, end)
          .toString('latin1')
          .split('\r\n')
          .map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      const [, first, last] = /^bytes (\d+)-(\d+)\/\d+$/.exec(headers['content-range']!)!.map(Number);
      const bytes = response.body.subarray(end + 4, end + 4 + last! - first! + 1);
      parts.push({ headers, first: first!, last: last!, bytes });
      pos = end + 4 + bytes.length;
      expect(response.body.subarray(pos, pos + 2).toString('latin1')).toBe('\r\n');
      pos += 2;
    }
    expect(response.body.subarray(pos).toString('latin1')).toBe('--\r\n');
    return parts;
  }

  test('several ranges: 206 multipart/byteranges, each part with its Content-Type and Content-Range, sorted, an exact Content-Length', async () => {
    const { url } = await serve();
    const response = await rawGet(url, `/${BIG_BUNDLE.url}`, { Range: 'bytes=5000-5099, 16-31,-10' });
    expect(response.status).toBe(206);
    expect(response.headers['content-type']).toMatch(/^multipart\/byteranges; boundary=\S+$/);
    expect(response.headers['content-range']).toBeUndefined();
    expect(Number(response.headers['content-length'])).toBe(response.body.length);
    const parts = partsOf(response);
    expect(parts.map(({ first, last }) => [first, last])).toEqual([
      [16, 31],
      [5000, 5099],
      [size - 10, size - 1],
    ]);
    for (const part of parts) {
      expect(part.headers['content-type']).toBe('application/octet-stream');
      expect(part.headers['content-range']).toBe(`bytes ${part.first}-${part.last}/${size}`);
      expect(part.bytes.equals(BIG_BUNDLE_BYTES.subarray(part.first, part.last + 1))).toBe(true);
    }
  });

  test('overlapping and adjacent ranges are joined (one range left: a plain 206); unsatisfiable ones are left out; all unsatisfiable is 416', async () => {
    const { url } = await serve();
    const joined = await rawGet(url, `/${BIG_BUNDLE.url}`, { Range: `bytes=0-9,5-19,20-29,${size + 1}-` });
    expect(joined.status).toBe(206);
    expect(joined.headers['content-range']).toBe(`bytes 0-29/${size}`);
    expect(joined.body.equals(BIG_BUNDLE_BYTES.subarray(0, 30))).toBe(true);
    const two = await rawGet(url, `/${BIG_BUNDLE.url}`, { Range: 'bytes=0-9,5-19,40-49' });
    expect(partsOf(two).map(({ first, last }) => [first, last])).toEqual([
      [0, 19],
      [40, 49],
    ]);
    const none = await rawGet(url, `/${BIG_BUNDLE.url}`, { Range: `bytes=${size}-,${size + 5}-${size + 9}` });
    expect(none.status).toBe(416);
    expect(none.headers['content-range']).toBe(`bytes */${size}`);
  });

  test(`${MAX_RANGES_PER_REQUEST} ranges of one file: every part whole (one past 64 KiB), read without a listener per part on the file`, async () => {
    const { url } = await serve();
    // Node warns past 10 listeners on one emitter: a read stream per part would add one each to the open file.
    const fsPromises = jest.requireActual<typeof import('node:fs/promises')>('node:fs/promises');
    const realOpen = fsPromises.open;
    let mostCloseListeners = 0;
    const opening = jest.spyOn(fsPromises, 'open').mockImplementation(async (...args: Parameters<typeof realOpen>) => {
      const handle = await realOpen(...args);
      // A FileHandle is an EventEmitter (its types leave that out).
      const emitter = handle as unknown as EventEmitter;
      const on = emitter.on.bind(emitter);
      emitter.on = (event: string | symbol, listener: (...a: unknown[]) => void) => {
        on(event, listener);
        if (event === 'close') mostCloseListeners = Math.max(mostCloseListeners, emitter.listenerCount('close'));
        return emitter;
      };
      return handle;
    });
    try {
      // The last range, the back half, is over 64 KiB: read in pieces.
      const half = Math.floor(size / 2);
      const step = Math.floor(half / (2 * MAX_RANGES_PER_REQUEST));
      const asked = Array.from({ length: MAX_RANGES_PER_REQUEST }, (_, i) =>
        i === MAX_RANGES_PER_REQUEST - 1 ? [half, size - 1] : [i * 2 * step, i * 2 * step + step - 1],
      );
      expect(size - half).toBeGreaterThan(64 * 1024);
      const response = await rawGet(url, `/${BIG_BUNDLE.url}`, { Range: `bytes=${asked.map(([a, b]) => `${a}-${b}`).join(',')}` });
      expect(response.status).toBe(206);
      const parts = partsOf(response);
      expect(parts.map(({ first, last }) => [first, last])).toEqual(asked);
      for (const part of parts) expect(part.bytes.equals(BIG_BUNDLE_BYTES.subarray(part.first, part.last + 1))).toBe(true);
      expect(opening).toHaveBeenCalled();
      expect(mostCloseListeners).toBeLessThanOrEqual(1);
    } finally {
      opening.mockRestore();
    }
  });

  test(`more than ${MAX_RANGES_PER_REQUEST} ranges get the whole file (200); a truncate fault cuts a multipart body short`, async () => {
    const { url } = await serve();
    const many = Array.from({ length: MAX_RANGES_PER_REQUEST + 1 }, (_, i) => `${i * 10}-${i * 10 + 4}`).join(',');
    const whole = await rawGet(url, `/${BIG_BUNDLE.url}`, { Range: `bytes=${many}` });
    expect(whole.status).toBe(200);
    expect(whole.body.equals(BIG_BUNDLE_BYTES)).toBe(true);
    const most = Array.from({ length: MAX_RANGES_PER_REQUEST }, (_, i) => `${i * 10}-${i * 10 + 4}`).join(',');
    expect(partsOf(await rawGet(url, `/${BIG_BUNDLE.url}`, { Range: `bytes=${most}` }))).toHaveLength(MAX_RANGES_PER_REQUEST);

    const faulty = await serve({ faults: [{ fault: 'truncate', probability: 1 }] });
    const cut = await fetch(new URL(BIG_BUNDLE.url, faulty.url), { headers: { Range: 'bytes=0-999,5000-5999' } });
    expect(cut.status).toBe(206);
    expect(Number(cut.headers.get('content-length'))).toBeGreaterThan(2000);
    await expect(cut.arrayBuffer()).rejects.toThrow();
  });

  test('requestedRanges, the multi-range parser on its own', () => {
    expect(requestedRanges(undefined, 100)).toBeUndefined();
    expect(requestedRanges('bytes=2-4', 100)).toEqual([{ start: 2, end: 4 }]);
    expect(requestedRanges('bytes=50-59, 0-9 ,-5', 100)).toEqual([
      { start: 0, end: 9 },
      { start: 50, end: 59 },
      { start: 95, end: 99 },
    ]);
    expect(requestedRanges('bytes=0-9,10-19', 100)).toEqual([{ start: 0, end: 19 }]);
    expect(requestedRanges('bytes=0-9,9-1', 100)).toBeUndefined();
    expect(requestedRanges('bytes=0-9,x', 100)).toBeUndefined();
    expect(requestedRanges('bytes=100-,200-', 100)).toBe('unsatisfiable');
    expect(requestedRanges('bytes=0-0,2-2,4-4', 100, 2)).toBeUndefined();
  });

  test('requestedRange, the parser on its own', () => {
    expect(requestedRange(undefined, 10)).toBeUndefined();
    expect(requestedRange('bytes=2-4', 10)).toEqual({ start: 2, end: 4 });
    expect(requestedRange('bytes=-3', 10)).toEqual({ start: 7, end: 9 });
    expect(requestedRange('bytes=-30', 10)).toEqual({ start: 0, end: 9 });
    expect(requestedRange('bytes=0-', 0)).toBe('unsatisfiable');
    expect(requestedRange('bytes=-', 10)).toBeUndefined();
  });
});

describe('conditional requests', () => {
  test('If-None-Match with the ETag is 304 with no body; another tag is 200', async () => {
    const { url } = await serve();
    const first = await fetch(new URL('project.index.json', url));
    const etag = first.headers.get('etag')!;
    await first.arrayBuffer();
    const again = await fetch(new URL('project.index.json', url), { headers: { 'If-None-Match': etag } });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(etag);
    expect(again.headers.get('cache-control')).toBe('no-cache');
    expect(await again.text()).toBe('');
    expect((await fetch(new URL('project.index.json', url), { headers: { 'If-None-Match': `"other", W/${etag}` } })).status).toBe(304);
    expect((await fetch(new URL('project.index.json', url), { headers: { 'If-None-Match': '"other"' } })).status).toBe(200);
  });

  test('If-Modified-Since at or after Last-Modified is 304', async () => {
    const { url } = await serve();
    const first = await fetch(new URL(BIG_BUNDLE.url, url), { method: 'HEAD' });
    const lastModified = first.headers.get('last-modified')!;
    expect((await fetch(new URL(BIG_BUNDLE.url, url), { method: 'HEAD', headers: { 'If-Modified-Since': lastModified } })).status).toBe(
      304,
    );
    expect(
      (await fetch(new URL(BIG_BUNDLE.url, url), { method: 'HEAD', headers: { 'If-Modified-Since': new Date(0).toUTCString() } })).status,
    ).toBe(200);
  });
});

describe('CORS', () => {
  test('a page on this machine (any loopback origin) gets its Origin echoed, and the headers a reader needs', async () => {
    const { url } = await serve();
    for (const origin of ['http://127.0.0.1:5173', 'http://localhost:8080', 'https://[::1]:3000']) {
      for (const path of [BIG_BUNDLE.url, 'missing.json']) {
        const response = await fetch(new URL(path, url), { headers: { Origin: origin } });
        expect(response.headers.get('access-control-allow-origin')).toBe(origin);
        expect(response.headers.get('access-control-expose-headers')).toBe(
          'Content-Length, Content-Range, ETag, Accept-Ranges, Retry-After',
        );
        expect(response.headers.get('vary')).toBe('Origin');
        await response.arrayBuffer();
      }
    }
  });

  test('a page from another origin gets no Access-Control-Allow-Origin unless corsOrigins lists it (or *)', async () => {
    const closed = await serve();
    const other = await fetch(new URL(BIG_BUNDLE.url, closed.url), { headers: { Origin: 'http://game.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    await other.arrayBuffer();
    const listed = await serve({ corsOrigins: ['http://game.example'] });
    const allowed = await fetch(new URL(BIG_BUNDLE.url, listed.url), { headers: { Origin: 'http://game.example' } });
    expect(allowed.headers.get('access-control-allow-origin')).toBe('http://game.example');
    await allowed.arrayBuffer();
    const open = await serve({ corsOrigins: ['*'] });
    const any = await fetch(new URL(BIG_BUNDLE.url, open.url), { headers: { Origin: 'http://game.example' } });
    expect(any.headers.get('access-control-allow-origin')).toBe('*');
    expect(any.headers.get('vary')).toBeNull();
    await any.arrayBuffer();
  });

  test('a preflight is 204 with the allowed methods and headers', async () => {
    const { url } = await serve({ corsOrigins: ['http://game.example'] });
    const response = await fetch(new URL(BIG_BUNDLE.url, url), {
      method: 'OPTIONS',
      headers: {
        Origin: 'http://game.example',
        'Access-Control-Request-Method': 'GET',
        'Access-Control-Request-Headers': 'range, authorization',
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('http://game.example');
    expect(response.headers.get('access-control-allow-methods')).toBe('GET, HEAD, OPTIONS');
    expect(response.headers.get('access-control-allow-headers')).toBe('Range, Authorization, If-None-Match, Content-Type');
  });
});

describe('token', () => {
  test('GET needs the bearer token, in the Authorization header or ?token=; a preflight never does', async () => {
    const { url } = await serve({ token: 's3cret' });
    const target = new URL('project.index.json', url);
    const missing = await fetch(target, { headers: { Origin: 'http://localhost:5173' } });
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expect(missing.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect((await fetch(target, { headers: { Authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await fetch(target, { method: 'HEAD' })).status).toBe(401);
    expect((await fetch(target, { headers: { Authorization: 'Bearer s3cret' } })).status).toBe(200);
    expect((await fetch(`${target}?token=s3cret`)).status).toBe(200);
    expect((await fetch(`${target}?token=wrong`)).status).toBe(401);
    expect(
      (await fetch(target, { method: 'OPTIONS', headers: { Origin: 'http://localhost:5173', 'Access-Control-Request-Method': 'GET' } }))
        .status,
    ).toBe(204);
  });
});

describe('latency', () => {
  test('every response, a preflight included, waits for a latencyMs delay first', async () => {
    // The delay is the server's own hook, held by the test: no clock is read.
    const asked: number[] = [];
    let release: () => void = () => undefined;
    const { url } = await serve({
      latencyMs: 150,
      delay: (ms) =>
        new Promise<void>((resolve) => {
          asked.push(ms);
          release = resolve;
        }),
    });
    for (const method of ['GET', 'OPTIONS']) {
      let answered = false;
      const response = fetch(new URL('project.index.json', url), { method }).then((r) => ((answered = true), r));
      while (asked.length === 0) await new Promise((resolve) => setImmediate(resolve));
      expect(asked.splice(0)).toEqual([150]);
      for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
      expect(answered).toBe(false); // held as long as the delay is
      release();
      expect((await response).status).toBe(method === 'GET' ? 200 : 204);
    }
  });

  test('close() does not wait for delayed responses', async () => {
    let waiting!: () => void;
    const delayed = new Promise<void>((resolve) => (waiting = resolve));
    // The real timer, told of when the request reached it: close() comes while it waits.
    const server = await startStaticServer({
      root: PUBLISHED,
      latencyMs: 60_000,
      delay: (ms, signal) => (waiting(), setTimeoutPromise(ms, undefined, { signal })),
    });
    const pending = fetch(new URL('project.index.json', server.url)).then(
      () => 'answered',
      () => 'dropped',
    );
    await delayed;
    await server.close();
    expect(await pending).toBe('dropped');
  });
});

describe('faults', () => {
  test.each([429, 503])('--fail %i:1 answers that status with Retry-After: 1', async (status) => {
    const { url } = await serve({ faults: [{ fault: status, probability: 1 }] });
    const response = await fetch(new URL(BIG_BUNDLE.url, url), { headers: { Origin: 'http://127.0.0.1:5173' } });
    expect(response.status).toBe(status);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(response.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:5173');
  });

  test('another status carries no Retry-After', async () => {
    const { url } = await serve({ faults: [{ fault: 500, probability: 1 }] });
    const response = await fetch(new URL(BIG_BUNDLE.url, url));
    expect(response.status).toBe(500);
    expect(response.headers.get('retry-after')).toBeNull();
  });

  test('reset drops the connection without an answer', async () => {
    const { url } = await serve({ faults: [{ fault: 'reset', probability: 1 }] });
    await expect(fetch(new URL(BIG_BUNDLE.url, url))).rejects.toThrow();
  });

  test('truncate sends the full Content-Length and then less body than it promised', async () => {
    const { url } = await serve({ faults: [{ fault: 'truncate', probability: 1 }] });
    const response = await fetch(new URL(BIG_BUNDLE.url, url));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String(BIG_BUNDLE.sizeBytes));
    await expect(response.arrayBuffer()).rejects.toThrow();

    const { hostname, port } = new URL(url);
    const received = await new Promise<number>((resolve) => {
      httpRequest({ host: hostname, port, path: `/${BIG_BUNDLE.url}`, agent: false }, (raw) => {
        let bytes = 0;
        raw.on('data', (chunk: Buffer) => (bytes += chunk.length));
        raw.on('error', () => resolve(bytes));
        raw.on('end', () => resolve(bytes));
      }).end();
    });
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(BIG_BUNDLE.sizeBytes);

    // Only a body can be cut short: a HEAD, a 304 and an error go out whole.
    expect((await fetch(new URL(BIG_BUNDLE.url, url), { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(new URL(BIG_BUNDLE.url, url), { headers: { 'If-None-Match': `"${BIG_BUNDLE.sha256}"` } })).status).toBe(304);
    expect(await (await fetch(new URL('missing.json', url))).text()).toBe('404 Not Found\n');
  });

  test('a preflight is never faulted; probability 0 never fires', async () => {
    const { url } = await serve({ faults: [{ fault: 503, probability: 1 }] });
    expect((await fetch(url, { method: 'OPTIONS' })).status).toBe(204);
    const calm = await serve({ faults: [{ fault: 503, probability: 0 }] });
    for (let i = 0; i < 10; i++) expect((await fetch(new URL('project.index.json', calm.url))).status).toBe(200);
  });

  test('the same seed gives the same faults to the same requests', async () => {
    const faults = [
      { fault: 503, probability: 0.4 },
      { fault: 429, probability: 0.3 },
    ];
    async function statuses(seed: number): Promise<number[]> {
      const { url } = await serve({ faults, seed });
      const result: number[] = [];
      for (let i = 0; i < 30; i++) {
        const response = await fetch(new URL('project.index.json', url));
        await response.arrayBuffer();
        result.push(response.status);
      }
      return result;
    }
    const first = await statuses(7);
    expect(await statuses(7)).toEqual(first);
    expect(new Set(first)).toEqual(new Set([200, 429, 503]));
  });

  test('parseFaultRule reads the --fail forms and names what is wrong', () => {
    expect(parseFaultRule('429:0.1')).toEqual({ fault: 429, probability: 0.1 });
    expect(parseFaultRule('reset:1')).toEqual({ fault: 'reset', probability: 1 });
    expect(parseFaultRule('truncate:.05')).toEqual({ fault: 'truncate', probability: 0.05 });
    expect(() => parseFaultRule('boom:0.1')).toThrow(/unknown fault "boom"/);
    expect(() => parseFaultRule('200:0.1')).toThrow(/unknown fault 200/);
    expect(() => parseFaultRule('503:1.5')).toThrow(/from 0 to 1, got 1.5/);
    expect(() => parseFaultRule('503:-0.1')).toThrow(/from 0 to 1, got "-0.1"/);
    expect(() => parseFaultRule('503:half')).toThrow(/from 0 to 1, got "half"/);
    expect(() => parseFaultRule('503')).toThrow(/<status\|reset\|truncate>:<probability>/);
  });

  test('startStaticServer refuses bad options and a missing folder', async () => {
    await expect(startStaticServer({ root: PUBLISHED, port: 70000 })).rejects.toThrow(/port/);
    await expect(startStaticServer({ root: PUBLISHED, faults: [{ fault: 'boom' as 'reset', probability: 1 }] })).rejects.toThrow(
      /unknown fault/,
    );
    await expect(startStaticServer({ root: join(site, 'nope') })).rejects.toThrow(/nope: no such folder/);
  });
});

describe('access log', () => {
  test('one line per request, with method, path, status and bytes; a query token is hidden', async () => {
    const lines: string[] = [];
    const { url } = await serve({ token: 't0k', log: (line) => lines.push(line) });
    await (await fetch(new URL(`${BIG_BUNDLE.url}?token=t0k`, url), { headers: { Range: 'bytes=0-99' } })).arrayBuffer();
    await (await fetch(new URL('missing.json', url))).arrayBuffer();
    // The line is written when the connection side closes: wait for it, not for a clock.
    while (lines.length < 2) await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      new RegExp(`GET /${BIG_BUNDLE.url}\\?token=\\*\\*\\* 206 100B \\d+ms \\(bytes 0-99/${BIG_BUNDLE.sizeBytes}\\)$`),
    );
    expect(lines[1]).toMatch(/GET \/missing\.json 401 \d+B/);
    expect(lines.join('\n')).not.toContain('t0k');
  });
});

describe('awake-bundle serve', () => {
  test('parseServeArguments: defaults and every flag', () => {
    expect(parseServeArguments(['out'])).toEqual({ root: 'out', port: 8080, host: '127.0.0.1', faults: [], quiet: false });
    expect(
      parseServeArguments([
        'out',
        '--port',
        '0',
        '--host',
        '::1',
        '--latency',
        '20',
        '--token',
        'abc',
        '--fail',
        '429:0.1',
        '--fail',
        'reset:0.05',
        '--seed',
        '3',
        '--quiet',
      ]),
    ).toEqual({
      root: 'out',
      port: 0,
      host: '::1',
      latencyMs: 20,
      token: 'abc',
      faults: [
        { fault: 429, probability: 0.1 },
        { fault: 'reset', probability: 0.05 },
      ],
      seed: 3,
      quiet: true,
    });
  });

  test('the built CLI prints its URL, serves, logs, and stops on SIGTERM', async () => {
    runCli(['--help']); // fails early with a clear message when dist/ is not built
    const child = spawn(process.execPath, [CLI, 'serve', PUBLISHED, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    /** Resolves with the first match of `pattern` in stdout so far, as soon as the output holds one. */
    const printed = (pattern: RegExp) =>
      new Promise<RegExpExecArray>((resolve, reject) => {
        const check = (): boolean => {
          const match = pattern.exec(stdout);
          if (match) resolve(match);
          return match !== null;
        };
        if (check()) return;
        const onData = (): void => void (check() && child.stdout.off('data', onData));
        child.stdout.on('data', onData);
        child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${stdout}`)));
      });
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    try {
      const url = (await printed(/Serving .* at (http:\/\/\S+)[^]*Press Ctrl-C/))[1]!;
      expect(stdout).toContain(`index: ${url}project.index.json`);
      const response = await fetch(new URL('project.index.json', url));
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual(INDEX);
      await printed(/GET \/project\.index\.json 200/); // the log line, when the server writes it
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  // Each row: the flags after `serve <dir>`, and what stderr must say.
  test.each([
    ['--port 70000', /--port must be an integer from 0 to 65535, got "70000"/],
    ['--port http', /--port/],
    ['--latency slow', /--latency/],
    ['--fail boom:0.1', /--fail boom:0.1: unknown fault "boom"/],
    ['--fail 503:1.5', /--fail 503:1.5: fault probability must be a number from 0 to 1/],
    ['--fail 503', /--fail 503:/],
    ['--seed 1', /--seed is only used with --fail/],
    ['--fail 503:0.5 --seed x', /--seed/],
    ['--verbose', /--verbose/],
  ])('serve <dir> %s exits 2 naming the flag', (flags, message) => {
    const result = runCli(['serve', PUBLISHED, ...flags.split(' ')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  test('no folder, two folders, or an empty --token exit 2', () => {
    for (const [args, message] of [
      [['serve'], /serve takes one folder/],
      [['serve', PUBLISHED, 'another'], /serve takes one folder/],
      [['serve', PUBLISHED, '--token', ''], /--token/],
    ] as const) {
      const result = runCli([...args]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
    }
  });

  test('a missing folder exits 1 naming it', () => {
    const missing = join(site, 'not-there');
    const result = runCli(['serve', missing, '--port', '0']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${missing}: no such folder`);
  });

  test('a port already taken exits 1 naming it and how to pick another, without a stack trace', async () => {
    const taken = await serve();
    const result = runCli(['serve', PUBLISHED, '--port', String(taken.port)]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`port ${taken.port} on 127.0.0.1 is busy`);
    expect(result.stderr).toContain('--port');
    expect(result.stderr).not.toMatch(/^\s+at .+[:(]/m);
  });

  test('--help describes the flags', () => {
    const result = runCli(['serve', '--help']);
    expect(result.code).toBe(0);
    for (const flag of ['--port', '--host', '--latency', '--token', '--fail', '--seed', '--quiet']) expect(result.stdout).toContain(flag);
  });
});
