/**
 * Buffers are allocated by the bytes that arrive, not by the sizes an index claims (SPEC §5: a
 * reader never allocates from a size it has not bounded against the bytes it holds), and a size
 * no reader can hold in one buffer is refused when the index is read. A node:http server on
 * 127.0.0.1 serves crafted indexes whose bundle heads are the canonical ones for their claims
 * (so every check before the member's bytes passes), then 100 bytes of a member listed at GiB:
 * the read fails typed and memory holds no GiB, on the whole-bundle, range-read and needed-ranges
 * paths. A size of 2^53 − 1 is an `IndexValidationError` naming the file, the index asked for once.
 */
import { createServer } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { AwakeError, IndexedAssetSource, IndexValidationError, MAX_READ_BYTES } from '../core/internal.js';
import { layoutBundle } from '../core/format/awkb.js';
import { sha256Hex } from './helpers/trees.js';
import { listenOnLoopback } from './helpers/loopback.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const FAKE_SHA = (seed: string) => sha256Hex(Buffer.from(seed));

interface Member {
  key: string;
  sizeBytes: number;
}

/** A bundled index whose one bundle holds `members` as listed, and that bundle's canonical head. */
function craftedSite(members: Member[]) {
  const layout = layoutBundle(
    members.map(({ key, sizeBytes }) => ({ key, sizeBytes, sha256: FAKE_SHA(key) })),
    { dataOrder: 'given' },
  );
  const bundleSha = FAKE_SHA('bundle');
  const index = {
    formatVersion: 3,
    rootPath: '/crafted',
    bundles: [{ sha256: bundleSha, sizeBytes: layout.sizeBytes, url: `bundles/${bundleSha}.awkb` }],
    files: layout.records.map((record) => ({
      path: record.key,
      sizeBytes: record.sizeBytes,
      sha256: record.sha256,
      bundle: bundleSha,
      offset: record.offset,
    })),
  };
  return { index, head: layout.head, offsetOf: (key: string) => layout.records.find((record) => record.key === key)!.offset };
}

interface Served {
  origin: string;
  /** Requests by URL path, in order, with their Range header. */
  requests: { path: string; range: string | undefined }[];
  close(): Promise<void>;
}

/**
 * Serves `index` as JSON and, for its bundle, `bytes(range)` with no Content-Length (200 without
 * a Range header, else 206 with the Content-Range asked for), held open `holdMs` before it ends:
 * long enough for the reader to have taken what came, while memory is sampled.
 */
async function serve(index: unknown, bytes: (range: string | undefined) => Uint8Array, holdMs = 300): Promise<Served> {
  const requests: Served['requests'] = [];
  const server = createServer((request, response) => {
    const path = new URL(request.url!, 'http://x').pathname;
    requests.push({ path, range: request.headers.range });
    if (path === '/project.index.json')
      return void response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(index));
    const range = request.headers.range;
    if (range === undefined) response.writeHead(200, { 'Content-Type': 'application/octet-stream' });
    else response.writeHead(206, { 'Content-Range': `${range.replace('=', ' ')}/*` });
    response.write(bytes(range));
    setTimeout(() => response.end(), holdMs);
  });
  return { ...(await listenOnLoopback(server)), requests };
}

// A collection before each measure, so that a buffer an earlier test left is not counted in (nor
// freed during) the next one's.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** The most `process.memoryUsage().arrayBuffers` rose above its start while `run` ran. */
async function arrayBufferRise(run: () => Promise<unknown>): Promise<number> {
  // Twice, a task apart: a backing store is freed (and uncounted) after the collection that found it dead.
  collectGarbage();
  await new Promise((resolve) => setTimeout(resolve, 20));
  collectGarbage();
  const start = process.memoryUsage().arrayBuffers;
  let most = start;
  const sample = () => (most = Math.max(most, process.memoryUsage().arrayBuffers));
  const timer = setInterval(sample, 2);
  try {
    await run();
  } finally {
    clearInterval(timer);
    sample();
  }
  return most - start;
}

const outcome = (read: Promise<unknown>) =>
  read.then(
    () => 'read',
    (error: unknown) => (error instanceof AwakeError ? error.code : `untyped ${String(error)}`),
  );

const HUNDRED_BYTES = new Uint8Array(100).fill(7);

describe('100 bytes of a member listed at GiB: a typed error, and memory for what arrived, not for the claim', () => {
  test('the whole bundle (a member listed at 3 GiB)', async () => {
    const { index, head } = craftedSite([{ key: 'big.bin', sizeBytes: 3 * GiB }]);
    const server = await serve(index, () => Buffer.concat([head, HUNDRED_BYTES]));
    try {
      const source = await IndexedAssetSource.open({ indexUrl: `${server.origin}/project.index.json`, hashWorkers: 0, neededBytes: false });
      let got = '';
      const rise = await arrayBufferRise(async () => (got = await outcome(source.read('big.bin'))));
      expect(got).toBe('E_BUNDLE_INTEGRITY');
      expect(rise).toBeLessThan(64 * MiB);
      // A damaged bundle is the host's answer: not retried.
      expect(server.requests.filter((request) => request.path.endsWith('.awkb'))).toHaveLength(1);
      source.dispose();
    } finally {
      await server.close();
    }
  });

  test('a range read (rangeReads: true, a member listed at 3 GiB)', async () => {
    const { index } = craftedSite([{ key: 'big.bin', sizeBytes: 3 * GiB }]);
    const server = await serve(index, () => HUNDRED_BYTES);
    try {
      const source = await IndexedAssetSource.open({ indexUrl: `${server.origin}/project.index.json`, hashWorkers: 0, rangeReads: true });
      let got = '';
      const rise = await arrayBufferRise(async () => (got = await outcome(source.read('big.bin'))));
      expect(got).toBe('E_RANGE');
      expect(rise).toBeLessThan(64 * MiB);
      source.dispose();
    } finally {
      await server.close();
    }
  });

  test('the needed ranges of a load (a member listed at 1.5 GiB beside one of 2 GiB)', async () => {
    const { index, offsetOf } = craftedSite([
      { key: 'big.bin', sizeBytes: 1.5 * GiB },
      { key: 'other.bin', sizeBytes: 2 * GiB },
    ]);
    const server = await serve(index, () => HUNDRED_BYTES);
    try {
      const source = await IndexedAssetSource.open({
        indexUrl: `${server.origin}/project.index.json`,
        hashWorkers: 0,
        neededBytes: { roundTripBytes: 1024 },
      });
      let got = '';
      const rise = await arrayBufferRise(async () => (got = await outcome(source.read('big.bin'))));
      // One range, the member's own: not the bundle.
      expect(server.requests.filter((request) => request.path.endsWith('.awkb')).map((request) => request.range)).toEqual([
        `bytes=${offsetOf('big.bin')}-${offsetOf('big.bin') + 1.5 * GiB - 1}`,
      ]);
      expect(got).toBe('E_RANGE');
      expect(rise).toBeLessThan(64 * MiB);
      source.dispose();
    } finally {
      await server.close();
    }
  });
});

describe('a size past what a reader can hold in one buffer: IndexValidationError naming the file, no request but the index', () => {
  const huge = Number.MAX_SAFE_INTEGER; // 2^53 − 1
  const sha = FAKE_SHA('content');
  const bundleSha = FAKE_SHA('bundle');
  const indexes: [string, unknown, RegExp][] = [
    [
      'a loose file (formatVersion 2) listed at 2^53 − 1',
      { formatVersion: 2, rootPath: '/p', files: [{ path: 'huge.bin', sizeBytes: huge, sha256: sha, url: 'files/huge.bin' }] },
      /files\[0\]\.sizeBytes 9007199254740991 \("huge\.bin"\) is more than a reader can hold in one buffer \(4294967296 bytes\)/,
    ],
    [
      'an encoded member decoding to 2^53 − 1 (its stored bytes fit its bundle)',
      {
        formatVersion: 3,
        rootPath: '/p',
        bundles: [{ sha256: bundleSha, sizeBytes: 1000, url: 'b.awkb' }],
        files: [
          { path: 'huge.json', sizeBytes: huge, sha256: sha, bundle: bundleSha, offset: 100, storedBytes: 900, encoding: 'deflate-raw' },
        ],
      },
      /files\[0\]\.sizeBytes 9007199254740991 \("huge\.json"\) is more than a reader can hold/,
    ],
    [
      'a member of a bundle listed at 2^53 − 1',
      {
        formatVersion: 3,
        rootPath: '/p',
        bundles: [{ sha256: bundleSha, sizeBytes: huge, url: 'b.awkb' }],
        files: [{ path: 'huge.bin', sizeBytes: huge - 100, sha256: sha, bundle: bundleSha, offset: 100 }],
      },
      /files\[0\]\.sizeBytes 9007199254740891 \("huge\.bin"\) is more than a reader can hold[\s\S]*bundles\[0\]\.sizeBytes 9007199254740991/,
    ],
  ];

  test.each(indexes)('%s', async (_name, index, problem) => {
    const server = await serve(index, () => HUNDRED_BYTES, 0);
    try {
      const opened = IndexedAssetSource.open({ indexUrl: `${server.origin}/project.index.json`, hashWorkers: 0 });
      const error = await opened.then(
        (source) => source.read('huge.bin').finally(() => source.dispose()),
        (refused: unknown) => refused,
      );
      expect(error).toBeInstanceOf(IndexValidationError);
      expect((error as IndexValidationError).message).toMatch(problem);
      expect(server.requests.map((request) => request.path)).toEqual(['/project.index.json']);
    } finally {
      await server.close();
    }
  });

  test('the bound is 4 GiB: a file listed at exactly that opens, one byte more does not', async () => {
    const at = (sizeBytes: number) => ({
      formatVersion: 2,
      rootPath: '/p',
      files: [{ path: 'big.bin', sizeBytes, sha256: sha, url: 'files/big.bin' }],
    });
    expect(MAX_READ_BYTES).toBe(4 * GiB);
    const source = await IndexedAssetSource.open({ index: at(MAX_READ_BYTES), baseUrl: 'http://127.0.0.1:9/', hashWorkers: 0 });
    source.dispose();
    await expect(
      IndexedAssetSource.open({ index: at(MAX_READ_BYTES + 1), baseUrl: 'http://127.0.0.1:9/', hashWorkers: 0 }),
    ).rejects.toThrow(/files\[0\]\.sizeBytes 4294967297 \("big\.bin"\)/);
  });
});
