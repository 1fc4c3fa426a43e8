/**
 * A range answer is read no further than its request could legally bring back (SPEC §7 "Needed
 * bytes", docs/reader.md "Delta downloads"): a 206 from the first byte asked for to the last (a
 * host may merge ranges and the gaps between them), plus part headers for a multipart answer; a
 * 200 up to the bundle's listed size. Whatever its Content-Range says, with no Content-Length: a
 * longer body is a typed error naming the bundle and what was asked, its connection is closed,
 * and nothing of it is held. The answers a host may legally give still read. A real node:http
 * server on 127.0.0.1 writes each answer and counts what it sent before the reader closed it.
 */
import type { ServerResponse } from 'node:http';
import { AwakeError, IndexedAssetSource, MemoryCache } from '../core/internal.js';
import { MULTIPART_BODY_ALLOWANCE, MULTIPART_PART_ALLOWANCE } from '../core/net/transport.js';
import { publishSite, type PublishedSite } from './helpers/scripted-site.js';
import {
  endless,
  ENDLESS_CAP_BYTES,
  multipartBody,
  sendBody,
  startRangeAnswerServer,
  type AnsweredRequest,
  type BundleAnswer,
} from './helpers/range-answer-server.js';
import { sha256Hex } from './helpers/trees.js';

const KiB = 1024;
const MiB = 1024 * KiB;
/**
 * What a server may have handed to the socket beyond what the reader took before it closed the
 * connection: the loopback's send and receive buffers (a few MiB on Linux) and the client's own.
 */
const SOCKET_SLACK_BYTES = 16 * MiB;
/** Two members far apart in one bundle of eight (200 KiB): one multi-range request of two ranges. */
const READ = ['f0/file1.bin', 'f0/file5.bin'];
/** Content-Range's largest claim in the probe: a terabyte, from the bundle's first byte, total unknown. */
const TERABYTE_CLAIM = 'bytes 0-1099511627775/*';

let site: PublishedSite;

beforeAll(async () => {
  site = await publishSite(1, 8, () => 25 * KiB);
});

const bundleBytes = () => [...site.resources].find(([path]) => path.endsWith('.awkb'))![1];

/** What a 206 to `request` may hold: the span of its ranges, plus part headers for several. */
function boundOf(request: AnsweredRequest): number {
  const span = request.ranges.at(-1)!.last - request.ranges[0]!.first + 1;
  return request.ranges.length === 1 ? span : span + MULTIPART_PART_ALLOWANCE * request.ranges.length + MULTIPART_BODY_ALLOWANCE;
}

const outcomeOf = (error: unknown) => (error instanceof AwakeError ? `${error.code}: ${error.message}` : `untyped ${String(error)}`);

/**
 * Reads `READ` in one load from a server answering bundles with `answer`: each read's outcome,
 * the load's, and how each bundle answer ended.
 */
async function readThrough(answer: BundleAnswer, options: Partial<Parameters<typeof IndexedAssetSource.open>[0]> = {}) {
  const server = await startRangeAnswerServer(site.resources, answer);
  try {
    const source = await IndexedAssetSource.open({
      indexUrl: `${server.origin}/project.index.json`,
      cache: new MemoryCache(),
      hashWorkers: 0,
      neededBytes: { roundTripBytes: 1024 },
      retry: { attempts: 2, baseDelayMs: 1 },
      ...options,
    });
    // The reads join the load started in the same task; it settles once its requests have.
    const loaded = source.load(READ).then(() => 'loaded', outcomeOf);
    const outcomes = await Promise.all(
      READ.map((path) =>
        source
          .read(path)
          .then((bytes) => (sha256Hex(bytes) === sha256Hex(site.files.get(path)!) ? 'bytes' : `WRONG BYTES for ${path}`), outcomeOf),
      ),
    );
    const load = await loaded;
    source.dispose();
    // Each answer ended, by its end or by the reader closing the connection (an endless one ends
    // by itself only after ENDLESS_CAP_BYTES); a request the load stopped as it went out may reach
    // the server after the load settled.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const ended = await Promise.all(server.bundleRequests().map((request) => request.ended));
    return { outcomes, load, ended, requests: server.bundleRequests() };
  } finally {
    await server.close();
  }
}

/** A 206 with `headers`, no Content-Length. */
const partial = (response: ServerResponse, headers: Record<string, string>) => response.writeHead(206, headers);

describe('a 206 is read no further than the span of the ranges asked for', () => {
  test('one 206 claiming a terabyte from byte 0 to a multi-range request: refused, its connection closed at once', async () => {
    const { outcomes, load, ended, requests } = await readThrough((request, response, bundle) => {
      partial(response, { 'Content-Type': 'application/octet-stream', 'Content-Range': TERABYTE_CLAIM });
      endless(response, request, bundle);
    });
    expect(requests[0]!.ranges).toHaveLength(2);
    expect(ended[0]).toBe('closed by the client');
    expect(requests[0]!.sent).toBeLessThan(boundOf(requests[0]!) + SOCKET_SLACK_BYTES);
    // Refused at its headers: nothing of it handed over; the error names the bundle and what was asked.
    for (const outcome of [...outcomes, load]) expect(outcome).toMatch(/^E_RANGE: GET .*\/bundles\/[0-9a-f]{64}\.awkb: asked for 2 ranges/);
    expect(load).toContain(`bytes ${requests[0]!.ranges[0]!.first}-${requests[0]!.ranges[1]!.last}`);
    expect(load).toContain(TERABYTE_CLAIM);
  });

  test('one 206 of the merged span whose body runs on past it: refused at the span, its connection closed', async () => {
    const { outcomes, ended, requests } = await readThrough((request, response, bundle) => {
      const { first } = request.ranges[0]!;
      const { last } = request.ranges.at(-1)!;
      partial(response, { 'Content-Range': `bytes ${first}-${last}/${bundle.length}` });
      endless(response, request, bundle.subarray(first, last + 1));
    });
    // The members came before the body passed the span: handed over; the load still fails.
    for (const outcome of outcomes) expect(outcome).toMatch(/^bytes$|^E_RANGE: /);
    expect(ended[0]).toBe('closed by the client');
    expect(requests[0]!.sent).toBeLessThan(boundOf(requests[0]!) + SOCKET_SLACK_BYTES);
  });

  test('a multipart answer whose last part claims a terabyte, endless: refused past the span and part headers, closed', async () => {
    const { outcomes, ended, requests } = await readThrough((request, response, bundle) => {
      partial(response, { 'Content-Type': 'multipart/byteranges; boundary=b' });
      const [first, second] = request.ranges;
      const head = Buffer.from(multipartBody(bundle, [first!], 'b')).subarray(0, -'--b--\r\n'.length);
      endless(
        response,
        request,
        Buffer.concat([
          head,
          Buffer.from(`--b\r\nContent-Range: bytes ${second!.first}-1099511627775/*\r\n\r\n`),
          bundle.subarray(second!.first),
        ]),
      );
    });
    expect(ended[0]).toBe('closed by the client');
    expect(requests[0]!.sent).toBeLessThan(boundOf(requests[0]!) + SOCKET_SLACK_BYTES);
    // The first member came whole before the bound was passed: handed over; the second never came.
    expect(outcomes[1]).toMatch(
      /^E_RANGE: GET .*\.awkb: asked for a range of \d+ bytes \(2 ranges within bytes \d+-\d+; at most \d+ with part headers\)/,
    );
  });

  test('a multipart answer whose epilogue never ends: refused past the parts and their headers, closed', async () => {
    const { outcomes, ended, requests } = await readThrough((request, response, bundle) => {
      partial(response, { 'Content-Type': 'multipart/byteranges; boundary=b' });
      endless(response, request, multipartBody(bundle, request.ranges, 'b'));
    });
    for (const outcome of outcomes) expect(outcome).toMatch(/^bytes$|^E_RANGE: /);
    expect(ended[0]).toBe('closed by the client');
    expect(requests[0]!.sent).toBeLessThan(boundOf(requests[0]!) + SOCKET_SLACK_BYTES);
  });

  test('one range of a single-range request, endless: refused at its length, closed', async () => {
    const { outcomes, ended, requests } = await readThrough(
      (request, response, bundle) => {
        const { first, last } = request.ranges[0]!;
        partial(response, { 'Content-Range': `bytes ${first}-${last}/${bundle.length}` });
        endless(response, request, bundle.subarray(first, last + 1));
      },
      { deltaReads: { multipartRanges: false } },
    );
    expect(requests).toHaveLength(2);
    for (const outcome of outcomes) expect(outcome).toMatch(/^bytes$|^E_RANGE: |^E_BUNDLE_INTEGRITY: /);
    for (const [i, request] of requests.entries()) {
      expect(ended[i]).toBe('closed by the client');
      expect(request.sent).toBeLessThan(boundOf(request) + SOCKET_SLACK_BYTES);
    }
  });
});

describe('a 200 to a range request is read no further than the listed size', () => {
  test('a 200 to one range whose body runs on past the bundle: refused at its listed size, closed', async () => {
    const { outcomes, ended, requests } = await readThrough((request, response, bundle) => {
      response.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      // Several ranges answered with 200: not read (the source then asks one range at a time).
      if (request.ranges.length > 1) return endless(response, request, bundle);
      endless(response, request, bundle);
    });
    for (const outcome of outcomes) expect(outcome).toMatch(/^E_BUNDLE_INTEGRITY: |^E_RESPONSE_SIZE: /);
    for (const [i, request] of requests.entries()) {
      expect(ended[i]).toBe('closed by the client');
      expect(request.sent).toBeLessThan(bundleBytes().length + SOCKET_SLACK_BYTES);
    }
  });

  test('a first-range-only 206 to several ranges, endless: not read, closed; the ranges then come one by one', async () => {
    const { outcomes, ended, requests } = await readThrough((request, response, bundle) => {
      const { first, last } = request.ranges[0]!;
      partial(response, { 'Content-Range': `bytes ${first}-${last}/${bundle.length}` });
      if (request.ranges.length > 1) return endless(response, request, bundle.subarray(first, last + 1));
      sendBody(response, request, bundle.subarray(first, last + 1));
    });
    expect(outcomes).toEqual(['bytes', 'bytes']);
    expect(requests.map((request) => request.ranges.length)).toEqual([2, 1, 1]);
    expect(ended[0]).toBe('closed by the client');
    expect(requests[0]!.sent).toBeLessThan(SOCKET_SLACK_BYTES);
  });
});

describe('the answers a host may legally give still read', () => {
  const legal: [string, BundleAnswer][] = [
    [
      'one multipart part per range',
      (request, response, bundle) => {
        partial(response, { 'Content-Type': 'multipart/byteranges; boundary=b' });
        sendBody(response, request, multipartBody(bundle, request.ranges, 'b'));
      },
    ],
    [
      'the parts in reverse order',
      (request, response, bundle) => {
        partial(response, { 'Content-Type': 'multipart/byteranges; boundary=b' });
        sendBody(response, request, multipartBody(bundle, [...request.ranges].reverse(), 'b'));
      },
    ],
    [
      'the ranges merged into one 206 (no Content-Length)',
      (request, response, bundle) => {
        const { first } = request.ranges[0]!;
        const { last } = request.ranges.at(-1)!;
        partial(response, { 'Content-Range': `bytes ${first}-${last}/${bundle.length}` });
        sendBody(response, request, bundle.subarray(first, last + 1));
      },
    ],
    [
      'the whole bundle with 200, every time',
      (request, response, bundle) => {
        response.writeHead(200, { 'Content-Length': bundle.length });
        sendBody(response, request, bundle);
      },
    ],
  ];

  test.each(legal)('%s', async (_name, answer) => {
    const { outcomes, ended } = await readThrough(answer);
    expect(outcomes).toEqual(['bytes', 'bytes']);
    expect(ended.every((how) => how === 'finished' || how === 'closed by the client')).toBe(true);
  });
});

test('an endless body ends by itself only well past every bound here (the cap the tests rely on)', () => {
  expect(ENDLESS_CAP_BYTES).toBeGreaterThan(site ? bundleBytes().length + 4 * SOCKET_SLACK_BYTES : 0);
});
