/**
 * The network layer (SPEC §7 "Retries", "Range reads", "Tokens") against real local HTTP
 * servers: node:http on 127.0.0.1, and Debian's nginx for ranges. No fetch mocks; waits between
 * attempts go through an injected `sleep` that records them, except in one test of the default
 * timer, which runs on Jest's fake setTimeout.
 */
import { getRanges } from './helpers/get-ranges.js';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  AwakeError,
  HttpError,
  NetworkError,
  RangeResponseError,
  RequestAbortedError,
  RequestTimeoutError,
  ResponseSizeError,
  InvalidOptionError,
  Transport,
  parseRetryAfter,
  tokenAuthorizedFetch,
  type RangeResult,
  type RetryEvent,
} from '../core/internal.js';
import type { BodyFetcher } from '../core/read/workers/digest-pool.js';
import { startNginx, type RunningNginx } from './helpers/nginx.js';

// ---- a tiny real server per test -------------------------------------------------------------

interface TestServer {
  origin: string;
  /** Requests received so far. */
  hits: number;
  /** Each request's path and headers, in order. */
  requests: { path: string; headers: IncomingHttpHeaders }[];
}

type Handler = (request: IncomingMessage, response: ServerResponse, hit: number) => void;

const openServers: ReturnType<typeof createServer>[] = [];

async function startServer(handle: Handler): Promise<TestServer> {
  const state: TestServer = { origin: '', hits: 0, requests: [] };
  const server = createServer((request, response) => {
    state.hits += 1;
    state.requests.push({ path: request.url ?? '', headers: request.headers });
    handle(request, response, state.hits);
  });
  openServers.push(server);
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  state.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

afterEach(async () => {
  const servers = openServers.splice(0);
  for (const server of servers) server.closeAllConnections();
  await Promise.all(servers.map((server) => new Promise((closed) => server.close(closed))));
});

/** Fakes setTimeout and clearTimeout alone: timers run on the test's clock, sockets stay real. */
function fakeSetTimeoutOnly(): void {
  jest.useFakeTimers({
    doNotFake: [
      'Date',
      'hrtime',
      'nextTick',
      'performance',
      'queueMicrotask',
      'setImmediate',
      'clearImmediate',
      'setInterval',
      'clearInterval',
    ],
  });
}

/** A `sleep` that records each wait and returns at once, so retry tests take no time. */
function recordingSleep(): { waits: number[]; sleep: (ms: number) => Promise<void> } {
  const waits: number[] = [];
  return { waits, sleep: async (ms) => void waits.push(ms) };
}

function send(response: ServerResponse, status: number, body = '', headers: Record<string, string | number> = {}): void {
  response.writeHead(status, { 'Content-Length': Buffer.byteLength(body), ...headers });
  response.end(body);
}

/** The bytes of a range read's answer; a refusal fails the test. */
function bytesOf(result: RangeResult): Uint8Array {
  if (result.kind === 'refused') throw new Error(`expected bytes, got a refusal: ${result.reason}`);
  return result.bytes;
}

async function failure(promise: Promise<unknown>): Promise<AwakeError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(AwakeError);
    return error as AwakeError;
  }
  throw new Error('expected the request to fail');
}

// ---- retries ---------------------------------------------------------------------------------

describe('Transport retries (SPEC §7 "Retries")', () => {
  test('a 429 waits as long as Retry-After says, then sends again', async () => {
    const server = await startServer((_, response, hit) =>
      hit === 1 ? send(response, 429, 'slow down', { 'Retry-After': '2' }) : send(response, 200, 'hello'),
    );
    const { waits, sleep } = recordingSleep();
    const transport = new Transport({ sleep });
    expect(await transport.getText(`${server.origin}/index.json`)).toBe('hello');
    expect(waits).toEqual([2000]);
    expect(server.hits).toBe(2);
  });

  test('a 503 with Retry-After in seconds waits that long', async () => {
    const server = await startServer((_, response, hit) =>
      hit === 1 ? send(response, 503, '', { 'Retry-After': '3' }) : send(response, 200, 'up'),
    );
    const { waits, sleep } = recordingSleep();
    expect(await new Transport({ sleep }).getText(`${server.origin}/a`)).toBe('up');
    expect(waits).toEqual([3000]);
  });

  test('a 503 with Retry-After as an HTTP date waits until then', async () => {
    const server = await startServer((_, response, hit) =>
      hit === 1 ? send(response, 503, '', { 'Retry-After': new Date(Date.now() + 5000).toUTCString() }) : send(response, 200, 'up'),
    );
    const { waits, sleep } = recordingSleep();
    expect(await new Transport({ sleep }).getText(`${server.origin}/a`)).toBe('up');
    // An HTTP date has whole seconds, so the wait is a little under five seconds.
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(3000);
    expect(waits[0]).toBeLessThanOrEqual(5000);
  });

  test('parseRetryAfter reads both forms and refuses anything else', () => {
    const now = Date.parse('Wed, 21 Oct 2015 07:28:00 GMT');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('1.5', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  test('a 503 without Retry-After and other 5xx back off exponentially, with jitter', async () => {
    const statuses = [503, 500, 502];
    const server = await startServer((_, response, hit) =>
      send(response, statuses[hit - 1] ?? 200, hit > statuses.length ? 'finally' : 'oops'),
    );
    const { waits, sleep } = recordingSleep();
    const transport = new Transport({ sleep, retry: { attempts: 4, baseDelayMs: 100 } });
    expect(await transport.getText(`${server.origin}/a`)).toBe('finally');
    expect(server.hits).toBe(4);
    // Each wait is between half and all of 100 · 2^(attempt − 1).
    expect(waits).toHaveLength(3);
    [100, 200, 400].forEach((ceiling, index) => {
      expect(waits[index]).toBeGreaterThanOrEqual(ceiling / 2);
      expect(waits[index]).toBeLessThanOrEqual(ceiling);
    });
  });

  test('a Retry-After longer than maxDelayMs is capped', async () => {
    const server = await startServer((_, response, hit) =>
      hit === 1 ? send(response, 429, '', { 'Retry-After': '3600' }) : send(response, 200, 'ok'),
    );
    const { waits, sleep } = recordingSleep();
    expect(await new Transport({ sleep, retry: { maxDelayMs: 1500 } }).getText(`${server.origin}/a`)).toBe('ok');
    expect(waits).toEqual([1500]);
  });

  test('a 404 fails at once with an HttpError, not retried', async () => {
    const server = await startServer((_, response) => send(response, 404, 'no such file'));
    const { waits, sleep } = recordingSleep();
    const error = await failure(new Transport({ sleep }).getBytes(`${server.origin}/missing.awkb`));
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ name: 'HttpError', code: 'E_HTTP', status: 404, attempts: 1, url: `${server.origin}/missing.awkb` });
    expect(server.hits).toBe(1);
    expect(waits).toEqual([]);
  });

  test('when the attempts run out, the last error is thrown, saying so, with the failure as cause', async () => {
    const server = await startServer((_, response) => send(response, 500, 'broken'));
    const { waits, sleep } = recordingSleep();
    const error = await failure(new Transport({ sleep, retry: { attempts: 3 } }).getBytes(`${server.origin}/b.awkb`));
    expect(error).toMatchObject({ code: 'E_HTTP', status: 500, attempts: 3, url: `${server.origin}/b.awkb` });
    expect(error.message).toMatch(/HTTP 500.*gave up after 3 attempts/);
    expect(error.cause).toBeInstanceOf(HttpError);
    expect(server.hits).toBe(3);
    expect(waits).toHaveLength(2);
  });

  test('onRetry hears each failure and the wait that follows it', async () => {
    const server = await startServer((_, response, hit) =>
      hit === 1 ? send(response, 503, '', { 'Retry-After': '1' }) : send(response, 200, 'ok'),
    );
    const events: RetryEvent[] = [];
    const transport = new Transport({ sleep: recordingSleep().sleep, onRetry: (event) => events.push(event) });
    await transport.getText(`${server.origin}/a`);
    expect(events).toEqual([{ url: `${server.origin}/a`, attempt: 1, error: expect.any(HttpError), waitMs: 1000 }]);
  });

  test('with the default timer, Retry-After: 1 waits 1000 ms of timer time, not less', async () => {
    const server = await startServer((_, response, hit) =>
      hit === 1 ? send(response, 503, '', { 'Retry-After': '1' }) : send(response, 200, 'ok'),
    );
    // Only setTimeout is faked: the clock is the test's, the sockets stay real. No wall clock is read.
    fakeSetTimeoutOnly();
    try {
      let retrying!: () => void;
      const retried = new Promise<void>((resolve) => (retrying = resolve));
      let settled = false;
      const text = new Transport({ onRetry: () => retrying() }).getText(`${server.origin}/a`).finally(() => (settled = true));
      await retried; // the wait's timer is set by now (onRetry is heard just before it starts)
      await jest.advanceTimersByTimeAsync(999);
      expect(settled).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      expect(await text).toBe('ok');
      expect(server.hits).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });
});

// ---- network failures, timeouts, aborts --------------------------------------------------------

describe('Transport network failures', () => {
  test('a body cut short of its Content-Length is retried like a network failure', async () => {
    const body = 'x'.repeat(100);
    const server = await startServer((_, response, hit) => {
      if (hit > 1) return send(response, 200, body);
      response.writeHead(200, { 'Content-Length': 100 });
      response.write(body.slice(0, 40), () => response.socket?.end());
    });
    const events: RetryEvent[] = [];
    const transport = new Transport({ sleep: recordingSleep().sleep, onRetry: (event) => events.push(event) });
    expect(new TextDecoder().decode(await transport.getBytes(`${server.origin}/cut`))).toBe(body);
    expect(server.hits).toBe(2);
    expect(events[0]!.error).toBeInstanceOf(NetworkError);
    expect(events[0]!.error.code).toBe('E_NETWORK');
  });

  test('a connection reset is retried', async () => {
    const server = await startServer((request, response, hit) =>
      hit === 1 ? request.socket.destroy() : send(response, 200, 'after reset'),
    );
    const events: RetryEvent[] = [];
    const transport = new Transport({ sleep: recordingSleep().sleep, onRetry: (event) => events.push(event) });
    expect(await transport.getText(`${server.origin}/reset`)).toBe('after reset');
    expect(server.hits).toBe(2);
    expect(events[0]!.error).toMatchObject({ code: 'E_NETWORK', url: `${server.origin}/reset` });
  });

  test('network failures that never stop end in an E_NETWORK error with the cause', async () => {
    const server = await startServer((request) => request.socket.destroy());
    const error = await failure(new Transport({ sleep: recordingSleep().sleep, retry: { attempts: 2 } }).getBytes(`${server.origin}/down`));
    expect(error).toMatchObject({ name: 'NetworkError', code: 'E_NETWORK', attempts: 2, url: `${server.origin}/down` });
    expect(error.cause).toBeInstanceOf(NetworkError);
    expect(server.hits).toBe(2);
  });

  test('an attempt that takes longer than timeoutMs times out and is retried; the final error says timeout', async () => {
    const server = await startServer((_, response, hit) => {
      if (hit === 2) send(response, 200, 'in time');
      // Otherwise never answer.
    });
    const events: RetryEvent[] = [];
    const transport = new Transport({ timeoutMs: 100, sleep: recordingSleep().sleep, onRetry: (event) => events.push(event) });
    expect(await transport.getText(`${server.origin}/slow`)).toBe('in time');
    expect(events[0]!.error).toBeInstanceOf(RequestTimeoutError);

    const error = await failure(
      new Transport({ timeoutMs: 100, sleep: recordingSleep().sleep, retry: { attempts: 2 } }).getText(`${server.origin}/slower`),
    );
    expect(error).toMatchObject({ name: 'RequestTimeoutError', code: 'E_TIMEOUT', timeoutMs: 100, url: `${server.origin}/slower` });
    expect(error.message).toMatch(/timed out: no answer or no bytes for 100 ms.*gave up after 2 attempts/);
  });

  test('timeoutMs limits quiet time, not the whole body: a body that keeps arriving slowly is read', async () => {
    const chunks = 20;
    let answer!: (response: ServerResponse) => void;
    const answering = new Promise<ServerResponse>((resolve) => (answer = resolve));
    const server = await startServer((_, response) => {
      response.writeHead(200, { 'Content-Length': chunks });
      answer(response);
    });
    // The limit's timer runs on the test's clock: 300 ms pass between bytes, 6 s in all, while
    // the limit is 400 ms. Each byte is sent once the reader has the one before.
    fakeSetTimeoutOnly();
    try {
      const transport = new Transport({ timeoutMs: 400, retry: { attempts: 1 } });
      let received = 0;
      let heard: (() => void) | undefined;
      const reading = transport.getBytes(`${server.origin}/trickle`, {
        onProgress: (bytes) => {
          received = bytes;
          heard?.();
        },
      });
      const response = await answering;
      for (let sent = 1; sent <= chunks; sent++) {
        const arrived = new Promise<void>((resolve) => (heard = () => received >= sent && resolve()));
        if (sent === chunks) response.end('x');
        else response.write('x');
        await Promise.race([arrived, reading]); // a timeout fails here at once
        if (sent < chunks) await jest.advanceTimersByTimeAsync(300);
      }
      expect(new TextDecoder().decode(await reading)).toBe('x'.repeat(chunks));
    } finally {
      jest.useRealTimers();
    }
  });

  test('a timeout also covers a body that stalls after the headers', async () => {
    const server = await startServer((_, response) => {
      response.writeHead(200, { 'Content-Length': 10 });
      response.write('12345');
    });
    const error = await failure(new Transport({ timeoutMs: 100, retry: { attempts: 1 } }).getBytes(`${server.origin}/stall`));
    expect(error.code).toBe('E_TIMEOUT');
  });

  test('an AbortSignal stops a request in flight at once with E_ABORTED', async () => {
    const controller = new AbortController();
    const server = await startServer(() => controller.abort());
    const error = await failure(new Transport({ timeoutMs: 0 }).getBytes(`${server.origin}/hangs`, { signal: controller.signal }));
    expect(error).toBeInstanceOf(RequestAbortedError);
    expect(error).toMatchObject({ code: 'E_ABORTED', url: `${server.origin}/hangs` });
    expect(server.hits).toBe(1);
  });

  test('an AbortSignal stops a Retry-After wait at once (real timer)', async () => {
    const server = await startServer((_, response) => send(response, 503, '', { 'Retry-After': '25' }));
    const controller = new AbortController();
    // Abort once the 25 s wait has begun (onRetry is heard just before it starts): no fixed delay.
    const transport = new Transport({ onRetry: () => queueMicrotask(() => controller.abort()) });
    const error = await failure(transport.getBytes(`${server.origin}/busy`, { signal: controller.signal }));
    expect(error).toMatchObject({ code: 'E_ABORTED', url: `${server.origin}/busy` });
    // Said while waiting, with one request sent: the abort ended the wait, not the wait's end.
    expect(error.message).toMatch(/while waiting to retry/);
    expect(server.hits).toBe(1);
  });

  test('a signal already aborted sends nothing', async () => {
    const server = await startServer((_, response) => send(response, 200, 'x'));
    const error = await failure(new Transport().getBytes(`${server.origin}/x`, { signal: AbortSignal.abort() }));
    expect(error.code).toBe('E_ABORTED');
    expect(server.hits).toBe(0);
  });

  test('onProgress reports bytes as they arrive, against the Content-Length', async () => {
    const chunk = 'y'.repeat(64 * 1024);
    const server = await startServer((request, response) => {
      const chunked = request.url === '/chunked';
      response.writeHead(200, chunked ? {} : { 'Content-Length': chunk.length * 3 });
      response.write(chunk, () => response.write(chunk, () => response.end(chunk)));
    });
    const transport = new Transport();
    const progress: [number, number | undefined][] = [];
    const bytes = await transport.getBytes(`${server.origin}/sized`, { onProgress: (received, total) => progress.push([received, total]) });
    expect(bytes.length).toBe(chunk.length * 3);
    expect(progress.at(-1)).toEqual([chunk.length * 3, chunk.length * 3]);
    expect(progress.map(([received]) => received)).toEqual([...progress.map(([received]) => received)].sort((a, b) => a - b));

    const unsized: (number | undefined)[] = [];
    await transport.getBytes(`${server.origin}/chunked`, { onProgress: (_, total) => unsized.push(total) });
    expect(unsized.length).toBeGreaterThan(0);
    expect(unsized.every((total) => total === undefined)).toBe(true);
  });
});

// ---- body bounds -------------------------------------------------------------------------------

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** Writes 64 KiB chunks for as long as the client reads them (a body that never ends); counts them in `written.bytes`. */
function streamEndlessly(response: ServerResponse, written: { bytes: number }): void {
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const pump = (): void => {
    while (!response.destroyed) {
      written.bytes += chunk.length;
      if (!response.write(chunk)) return void response.once('drain', pump);
    }
  };
  pump();
}

describe('Transport body bounds (maxBytes, expectedBytes)', () => {
  test('maxBytes: a Content-Length past it fails at the headers with ResponseSizeError, not retried', async () => {
    const written = { bytes: 0 };
    const server = await startServer((_, response) => {
      response.writeHead(200, { 'Content-Length': 600_000_000 });
      streamEndlessly(response, written);
    });
    const error = await failure(
      new Transport({ sleep: recordingSleep().sleep }).getText(`${server.origin}/project.index.json`, { maxBytes: MiB }),
    );
    expect(error).toBeInstanceOf(ResponseSizeError);
    expect(error).toMatchObject({
      code: 'E_RESPONSE_SIZE',
      url: `${server.origin}/project.index.json`,
      expectedBytes: MiB,
      declaredBytes: 600_000_000,
    });
    expect(error.message).toMatch(/maxBytes/);
    expect(server.hits).toBe(1);
    expect(written.bytes).toBeLessThan(24 * MiB);
  });

  test('maxBytes: a chunked body stops as soon as more than maxBytes arrived, holding no more than that', async () => {
    const written = { bytes: 0 };
    const server = await startServer((_, response) => {
      response.writeHead(200, {});
      streamEndlessly(response, written);
    });
    const error = await failure(new Transport({ sleep: recordingSleep().sleep }).getBytes(`${server.origin}/endless`, { maxBytes: MiB }));
    expect(error).toMatchObject({ name: 'ResponseSizeError', code: 'E_RESPONSE_SIZE', expectedBytes: MiB });
    expect((error as ResponseSizeError).receivedBytes).toBeGreaterThan(MiB);
    expect((error as ResponseSizeError).receivedBytes).toBeLessThanOrEqual(2 * MiB);
    expect(server.hits).toBe(1);
    expect(written.bytes).toBeLessThan(24 * MiB);
  });

  test('maxBytes: a body of at most maxBytes passes, sized or chunked; with expectedBytes the smaller bound holds', async () => {
    const server = await startServer((request, response) => {
      if (request.url === '/sized') return send(response, 200, 'hello');
      response.writeHead(200, {});
      response.write('hel', () => response.end('lo'));
    });
    const transport = new Transport({ sleep: recordingSleep().sleep, retry: { attempts: 1 } });
    for (const path of ['/sized', '/chunked']) {
      expect(await transport.getText(`${server.origin}${path}`, { maxBytes: 5 })).toBe('hello');
      expect(await transport.getText(`${server.origin}${path}`, { maxBytes: 5, onProgress: () => undefined })).toBe('hello');
      await expect(transport.getText(`${server.origin}${path}`, { maxBytes: 4 })).rejects.toMatchObject({
        code: 'E_RESPONSE_SIZE',
        expectedBytes: 4,
      });
      await expect(transport.getBytes(`${server.origin}${path}`, { maxBytes: 100, expectedBytes: 4 })).rejects.toMatchObject({
        code: 'E_RESPONSE_SIZE',
        expectedBytes: 4,
      });
      await expect(transport.getBytes(`${server.origin}${path}`, { maxBytes: 4, expectedBytes: 100 })).rejects.toMatchObject({
        code: 'E_RESPONSE_SIZE',
        expectedBytes: 4,
      });
    }
  });

  test('maxBytes must be a safe integer ≥ 0', async () => {
    const error = await failure(new Transport().getBytes('http://127.0.0.1:9/x', { maxBytes: -1 }));
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error).toMatchObject({ option: 'maxBytes' });
  });

  test('a body bounded by maxBytes alone is read on this thread, not by the bodyFetcher (whose worker allocates its whole limit for a chunked body)', async () => {
    const server = await startServer((_, response) => send(response, 200, 'hello'));
    const asked: string[] = [];
    // A fetcher that cannot run here: the transport then reads the body itself.
    const bodyFetcher: BodyFetcher = async (url) => void asked.push(url);
    const transport = new Transport({ bodyFetcher });
    expect(await transport.getText(`${server.origin}/project.index.json`, { maxBytes: 100 })).toBe('hello');
    expect(asked).toEqual([]);
    expect(await transport.getText(`${server.origin}/b.awkb`, { expectedBytes: 5 })).toBe('hello');
    expect(asked).toEqual([`${server.origin}/b.awkb`]);
  });

  test('a chunked body for a request whose expectedBytes is 3 GiB allocates what arrives, not 3 GiB', async () => {
    const chunk = 'z'.repeat(10_000);
    const server = await startServer((_, response) => {
      response.writeHead(200, {}); // no Content-Length: chunked
      response.write(chunk, () => response.write(chunk, () => response.end(chunk)));
    });
    const transport = new Transport({ retry: { attempts: 1 } });
    const before = process.memoryUsage().arrayBuffers;
    const url = `${server.origin}/b.awkb`;
    const answers = [
      await transport.getBytes(url, { expectedBytes: 3 * GiB }),
      await transport.getBytes(url, { expectedBytes: 3 * GiB, onProgress: () => undefined }),
      bytesOf(await transport.getRange(url, 0, 10, { expectedBytes: 3 * GiB })), // a 200: the whole resource
    ];
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * MiB);
    for (const bytes of answers) {
      expect(bytes.length).toBe(3 * chunk.length);
      expect(bytes.buffer.byteLength).toBeLessThan(MiB);
    }
  });
});

// ---- ranges ------------------------------------------------------------------------------------

describe('Transport range reads (SPEC §7 "Range reads")', () => {
  const resource = Buffer.from(Array.from({ length: 100 }, (_, index) => index));

  test('a server that ignores Range answers 200 with the whole resource', async () => {
    const server = await startServer((_, response) => {
      response.writeHead(200, { 'Content-Length': resource.length });
      response.end(resource);
    });
    const result = await new Transport().getRange(`${server.origin}/b.awkb`, 10, 10);
    expect(result.kind).toBe('whole');
    expect(Buffer.from(bytesOf(result)).equals(resource)).toBe(true);
    expect(server.requests[0]!.headers.range).toBe('bytes=10-19');
  });

  test('a 206 of the wrong length is refused with E_RANGE, not retried', async () => {
    const server = await startServer((_, response) => {
      response.writeHead(206, { 'Content-Range': 'bytes 10-19/100', 'Content-Length': 5 });
      response.end(resource.subarray(10, 15));
    });
    const error = await failure(new Transport().getRange(`${server.origin}/b.awkb`, 10, 10));
    expect(error).toBeInstanceOf(RangeResponseError);
    expect(error).toMatchObject({ code: 'E_RANGE', url: `${server.origin}/b.awkb` });
    expect(server.hits).toBe(1);
  });

  test('a 206 for another range is refused with E_RANGE', async () => {
    const server = await startServer((_, response) => {
      response.writeHead(206, { 'Content-Range': 'bytes 0-9/100', 'Content-Length': 10 });
      response.end(resource.subarray(0, 10));
    });
    const error = await failure(new Transport().getRange(`${server.origin}/b.awkb`, 10, 10));
    expect(error.code).toBe('E_RANGE');
    expect(error.message).toContain('Content-Range: bytes 0-9/100');
  });

  test('a size of 0 sends no request', async () => {
    const server = await startServer((_, response) => send(response, 200, 'x'));
    expect(await new Transport().getRange(`${server.origin}/b.awkb`, 5, 0)).toEqual({ kind: 'range', bytes: new Uint8Array(0) });
    expect(server.hits).toBe(0);
  });

  test.each([403, 416, 501])('a %i to a request with a Range header is `refused`: not retried, its body not read', async (status) => {
    const server = await startServer((request, response) => {
      if (request.headers.range === undefined) return send(response, status, 'no');
      response.writeHead(status, {}); // a body that never ends: reading it would time out
      response.write('ranges are not served here');
    });
    const transport = new Transport({ sleep: recordingSleep().sleep, timeoutMs: 1000 });
    expect(await transport.getRange(`${server.origin}/b.awkb`, 10, 10, { expectedBytes: 100 })).toEqual({
      kind: 'refused',
      status,
      reason: expect.stringContaining(`HTTP ${status}`),
    });
    expect(
      await getRanges(
        transport,
        `${server.origin}/b.awkb`,
        [
          { offset: 0, length: 5 },
          { offset: 50, length: 5 },
        ],
        { expectedBytes: 100 },
      ),
    ).toEqual({ kind: 'refused', status, reason: expect.stringContaining(`HTTP ${status}`) });
    expect(server.hits).toBe(2);
    // Without a Range header the status is an HttpError as before (a 501 retried like any 5xx).
    const error = await failure(
      new Transport({ sleep: recordingSleep().sleep, retry: { attempts: 2 } }).getBytes(`${server.origin}/b.awkb`),
    );
    expect(error).toMatchObject({ name: 'HttpError', status });
    expect(server.hits).toBe(status === 501 ? 4 : 3);
  });

  describe('against nginx', () => {
    const folder = join(__dirname, 'fixtures/conformance/damaged');
    let nginx: RunningNginx | undefined;

    beforeAll(async () => {
      nginx = await startNginx(folder);
    });

    afterAll(async () => {
      await nginx?.stop();
    });

    test('getRange returns the exact bytes of a member of good.awkb', async () => {
      const expected = JSON.parse(await readFile(join(folder, 'expected.json'), 'utf8')) as {
        members: { key: string; offset: number; sizeBytes: number }[];
      };
      const whole = await readFile(join(folder, 'good.awkb'));
      const transport = new Transport();
      for (const member of expected.members) {
        const result = await transport.getRange(`${nginx!.origin}/good.awkb`, member.offset, member.sizeBytes);
        expect(result.kind).toBe('range');
        expect(Buffer.from(bytesOf(result)).equals(whole.subarray(member.offset, member.offset + member.sizeBytes))).toBe(true);
      }
      expect(Buffer.from(await transport.getBytes(`${nginx!.origin}/good.awkb`)).equals(whole)).toBe(true);
    });
  });
});

// ---- token-authorized fetch ----------------------------------------------------------------------

describe('tokenAuthorizedFetch (SPEC §7 "Tokens")', () => {
  test("sends the token to its origin only, never to another origin's server", async () => {
    const content = await startServer((_, response) => send(response, 200, 'index'));
    const elsewhere = await startServer((_, response) => send(response, 200, 'other'));
    // The token's origin is fixed up front (here by `origin`; IndexedAssetSource.open binds one made without it).
    const transport = new Transport({ fetch: tokenAuthorizedFetch({ token: 'secret', origin: content.origin }) });
    expect(await transport.getText(`${content.origin}/index.json`)).toBe('index');
    expect(await transport.getText(`${elsewhere.origin}/b.awkb`)).toBe('other');
    expect(await transport.getText(`${content.origin}/b.awkb`)).toBe('index');
    expect(content.requests.map((request) => request.headers.authorization)).toEqual(['Bearer secret', 'Bearer secret']);
    expect(elsewhere.requests[0]!.headers.authorization).toBeUndefined();
  });

  test('keeps the token across redirects within its origin, drops it for good at a redirect to another origin', async () => {
    const elsewhere = await startServer((request, response) =>
      request.url === '/bounce' ? send(response, 302, '', { Location: `${content.origin}/back` }) : send(response, 200, 'cdn'),
    );
    const content = await startServer((request, response) => {
      if (request.url === '/moved') return send(response, 307, '', { Location: '/here' });
      if (request.url === '/away') return send(response, 302, '', { Location: `${elsewhere.origin}/b.awkb` });
      if (request.url === '/away-and-back') return send(response, 302, '', { Location: `${elsewhere.origin}/bounce` });
      send(response, 200, `content ${request.url}`);
    });
    const authorizedFetch = tokenAuthorizedFetch({ token: 'secret', scheme: 'Token', origin: content.origin });
    const transport = new Transport({ fetch: authorizedFetch });

    expect(await transport.getText(`${content.origin}/moved`)).toBe('content /here');
    expect(await transport.getText(`${content.origin}/away`)).toBe('cdn');
    expect(await transport.getText(`${content.origin}/away-and-back`)).toBe('content /back');

    const seenBy = (server: TestServer) => server.requests.map(({ path, headers }) => [path, headers.authorization]);
    expect(seenBy(content)).toEqual([
      ['/moved', 'Token secret'],
      ['/here', 'Token secret'],
      ['/away', 'Token secret'],
      ['/away-and-back', 'Token secret'],
      ['/back', undefined],
    ]);
    expect(seenBy(elsewhere)).toEqual([
      ['/b.awkb', undefined],
      ['/bounce', undefined],
    ]);
  });

  test('too many redirects fail with E_NETWORK, not retried', async () => {
    const content = await startServer((_, response) => send(response, 302, '', { Location: '/again' }));
    const error = await failure(
      new Transport({ fetch: tokenAuthorizedFetch({ token: 't', maxRedirects: 3, origin: content.origin }) }).getBytes(
        `${content.origin}/loop`,
      ),
    );
    expect(error).toMatchObject({ code: 'E_NETWORK', url: `${content.origin}/loop` });
    expect(content.hits).toBe(4);
  });

  test('a 401 asks refreshToken once for a fresh token and resends once', async () => {
    const content = await startServer((request, response) =>
      request.headers.authorization === 'Bearer fresh' ? send(response, 200, 'welcome') : send(response, 401, 'expired'),
    );
    let refreshes = 0;
    const authorizedFetch = tokenAuthorizedFetch({
      token: 'stale',
      refreshToken: async () => (refreshes++, 'fresh'),
      origin: content.origin,
    });
    const transport = new Transport({ fetch: authorizedFetch });
    expect(await transport.getText(`${content.origin}/index.json`)).toBe('welcome');
    expect(refreshes).toBe(1);
    // Later requests use the fresh token straight away.
    expect(await transport.getText(`${content.origin}/b.awkb`)).toBe('welcome');
    expect(content.requests.map((request) => request.headers.authorization)).toEqual(['Bearer stale', 'Bearer fresh', 'Bearer fresh']);
  });

  test('a token function is called again after a 401', async () => {
    const content = await startServer((request, response) =>
      request.headers.authorization === 'Bearer second' ? send(response, 200, 'welcome') : send(response, 401),
    );
    const issued = ['first', 'second'];
    const transport = new Transport({ fetch: tokenAuthorizedFetch({ token: () => issued.shift()!, origin: content.origin }) });
    expect(await transport.getText(`${content.origin}/index.json`)).toBe('welcome');
    expect(issued).toEqual([]);
  });

  test('a second 401 is returned as is, and becomes an HttpError 401', async () => {
    const content = await startServer((_, response) => send(response, 401, 'no'));
    let refreshes = 0;
    const transport = new Transport({
      fetch: tokenAuthorizedFetch({ token: 'a', refreshToken: () => (refreshes++, 'b'), origin: content.origin }),
    });
    const error = await failure(transport.getBytes(`${content.origin}/index.json`));
    expect(error).toMatchObject({ code: 'E_HTTP', status: 401, url: `${content.origin}/index.json` });
    expect(refreshes).toBe(1);
    expect(content.hits).toBe(2);
  });

  describe('where the platform hides redirects (browsers)', () => {
    /** Node's real fetch, made to answer `redirect: 'manual'` as a browser does: an opaque redirect. */
    function browserLikeFetch(sent: RequestInit[]): typeof fetch {
      return async (input, init = {}) => {
        sent.push(init);
        const { mode: _mode, ...nodeInit } = init;
        const response = await fetch(input, nodeInit);
        if (init.redirect !== 'manual' || response.status < 300 || response.status > 399) return response;
        await response.body?.cancel();
        return {
          type: 'opaqueredirect',
          status: 0,
          statusText: '',
          ok: false,
          headers: new Headers(),
          body: null,
          url: '',
        } as unknown as Response;
      };
    }

    test("a request to the page's own origin is sent again with redirect 'follow' and mode 'same-origin'", async () => {
      const content = await startServer((request, response) =>
        request.url === '/moved' ? send(response, 302, '', { Location: '/here' }) : send(response, 200, 'here'),
      );
      const sent: RequestInit[] = [];
      const authorizedFetch = tokenAuthorizedFetch({
        token: 't',
        fetch: browserLikeFetch(sent),
        pageOrigin: content.origin,
        origin: content.origin,
      });
      expect(await new Transport({ fetch: authorizedFetch }).getText(`${content.origin}/moved`)).toBe('here');
      expect(sent.map(({ redirect, mode }) => [redirect, mode])).toEqual([
        ['manual', undefined],
        ['follow', 'same-origin'],
      ]);
    });

    test('for another origin than the page, the hidden redirect is an HttpError with status 0', async () => {
      const content = await startServer((_, response) => send(response, 302, '', { Location: '/here' }));
      const authorizedFetch = tokenAuthorizedFetch({
        token: 't',
        fetch: browserLikeFetch([]),
        pageOrigin: 'https://game.example',
        origin: content.origin,
      });
      const error = await failure(new Transport({ fetch: authorizedFetch }).getBytes(`${content.origin}/moved`));
      expect(error).toMatchObject({ code: 'E_HTTP', status: 0 });
      expect(error.message).toMatch(/hid a redirect/);
    });
  });
});
