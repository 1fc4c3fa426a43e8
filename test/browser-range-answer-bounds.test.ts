/**
 * A range answer is read no further than its request could legally bring back, in Chromium and
 * Firefox ESR through the page's reader (SPEC §7 "Needed bytes"; range-answer-bounds.test.ts has
 * the same in Node): a 206 claiming a terabyte from byte 0 to a multi-range request, with no
 * Content-Length and a body that never ends, is refused with a typed error at its headers, and
 * the request is stopped, so the server sees its connection closed after at most the socket's
 * buffers. In Chromium the body is read through a clone too (net/body.ts `bodyToRead`), which
 * reads on to the end unless the request itself is aborted. A legal answer (the ranges merged
 * into one 206) still reads.
 */
import type { Page } from 'puppeteer-core';
import type { ServerResponse } from 'node:http';
import { launchBrowser, REPO_ROOT, TESTED_BROWSERS, type LaunchedBrowser } from './helpers/browser';
import { publishSite, type PublishedSite } from './helpers/scripted-site';
import {
  endless,
  packageMounts,
  sendBody,
  startRangeAnswerServer,
  type AnsweredRequest,
  type BundleAnswer,
  type RangeAnswerServer,
} from './helpers/range-answer-server';
import { sha256Hex } from './helpers/trees';

const KiB = 1024;
const MiB = 1024 * KiB;
/** The socket's buffers and the browser's own (its network service reads ahead of the page). */
const SLACK_BYTES = 16 * MiB;
const READ = ['f0/file1.bin', 'f0/file5.bin'];
const PAGE = `<!doctype html><meta charset="utf-8"><script type="importmap">${JSON.stringify({
  imports: { 'awake-bundle': '/dist/core/internal.js', '@noble/hashes/': '/node_modules/@noble/hashes/' },
})}</script><title>range answer bounds</title>`;

let site: PublishedSite;
let server: RangeAnswerServer;
let answer: BundleAnswer;

beforeAll(async () => {
  site = await publishSite(1, 8, () => 25 * KiB);
  server = await startRangeAnswerServer(site.resources, (...args) => answer(...args), packageMounts(REPO_ROOT), PAGE);
});

afterAll(async () => {
  await server?.close();
});

const partial = (response: ServerResponse, headers: Record<string, string>) => response.writeHead(206, headers);

/** The span of a request's ranges: what one 206 to it may hold. */
const spanOf = (request: AnsweredRequest) => request.ranges.at(-1)!.last - request.ranges[0]!.first + 1;

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  let browser: LaunchedBrowser;
  let page: Page;

  beforeAll(async () => {
    browser = await launchBrowser({ kind });
    page = await browser.browser.newPage();
    await page.goto(`${server.origin}/index.html`);
  });

  afterAll(async () => {
    await browser?.close();
  });

  /** `READ` in one load through the page's reader (its workers on): each read's outcome, then the load's. */
  async function readInPage(): Promise<{ reads: string[]; load: string; requests: AnsweredRequest[] }> {
    const before = server.bundleRequests().length;
    const result = (await page.evaluate(`(async () => {
      const core = await import('awake-bundle');
      const source = await core.IndexedAssetSource.open({
        indexUrl: '/project.index.json',
        cache: new core.MemoryCache(),
        neededBytes: { roundTripBytes: 1024 },
        retry: { attempts: 2, baseDelayMs: 1 },
      });
      const describe = (error) => (core.isAwakeError(error) ? error.code + ': ' + error.message : 'untyped ' + String(error));
      const loaded = source.load(${JSON.stringify(READ)}).then(() => 'loaded', describe);
      const reads = await Promise.all(
        ${JSON.stringify(READ)}.map((path) => source.read(path).then((bytes) => core.sha256Hex(bytes), describe)),
      );
      const load = await loaded;
      source.dispose();
      return { reads, load };
    })()`)) as { reads: string[]; load: string };
    // A request the load stopped as it went out may reach the server after the load settled.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const requests = server.bundleRequests().slice(before);
    await Promise.all(requests.map((request) => request.ended));
    const reads = result.reads.map((outcome, i) => (outcome === sha256Hex(site.files.get(READ[i]!)!) ? 'bytes' : outcome));
    return { reads, load: result.load, requests };
  }

  test('a 206 claiming a terabyte from byte 0 to a multi-range request, endless: refused at its headers, the request stopped', async () => {
    answer = (request, response, bundle) => {
      partial(response, { 'Content-Type': 'application/octet-stream', 'Content-Range': 'bytes 0-1099511627775/*' });
      endless(response, request, bundle);
    };
    const { reads, load, requests } = await readInPage();
    expect(requests).toHaveLength(1);
    expect(requests[0]!.ranges).toHaveLength(2);
    expect(await requests[0]!.ended).toBe('closed by the client');
    expect(requests[0]!.sent).toBeLessThan(spanOf(requests[0]!) + SLACK_BYTES);
    for (const outcome of [...reads, load])
      expect(outcome).toMatch(
        /^E_RANGE: GET .*\/bundles\/[0-9a-f]{64}\.awkb: asked for 2 ranges within bytes \d+-\d+, .*Content-Range: bytes 0-1099511627775\/\*/,
      );
  });

  test('the ranges merged into one 206 of their span, endless past it: read to the span, then the request stopped', async () => {
    answer = (request, response, bundle) => {
      const { first } = request.ranges[0]!;
      const { last } = request.ranges.at(-1)!;
      partial(response, { 'Content-Range': `bytes ${first}-${last}/${bundle.length}` });
      endless(response, request, bundle.subarray(first, last + 1));
    };
    const { reads, load, requests } = await readInPage();
    expect(await requests[0]!.ended).toBe('closed by the client');
    expect(requests[0]!.sent).toBeLessThan(spanOf(requests[0]!) + SLACK_BYTES);
    // The members came before the body passed the span: handed over; the load fails.
    for (const outcome of reads) expect(outcome).toMatch(/^bytes$|^E_RANGE: /);
    expect(load).toMatch(
      /^E_RANGE: .*asked for a range of \d+ bytes \(2 ranges within bytes \d+-\d+\), the 206 answer is not: more arrived/,
    );
  });

  test('the ranges merged into one 206 of their span (a legal answer): read', async () => {
    answer = (request, response, bundle) => {
      const { first } = request.ranges[0]!;
      const { last } = request.ranges.at(-1)!;
      partial(response, { 'Content-Range': `bytes ${first}-${last}/${bundle.length}` });
      sendBody(response, request, bundle.subarray(first, last + 1));
    };
    const { reads, load, requests } = await readInPage();
    expect({ reads, load, requests: requests.length }).toEqual({ reads: ['bytes', 'bytes'], load: 'loaded', requests: 1 });
  });
});
