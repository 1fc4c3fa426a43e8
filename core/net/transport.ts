/**
 * The HTTP layer under the verified reader (SPEC §7 "Retries", "Range reads"): whole bodies,
 * ranges, bounded retries that honour `Retry-After`, per-attempt timeouts, and an `AbortSignal`
 * that stops a request or a wait at once. Browser-safe: no `node:` imports, only the platform
 * `fetch` (or an injected one), `AbortController`, `TextDecoder` and timers.
 */
import { AwakeError, HttpError, InvalidOptionError, NetworkError, RequestAbortedError, RequestTimeoutError } from '../errors.js';
import { bodyToRead, collectBody, declaredLength, pumpBody, type BodyFetcher, type StreamElsewhere } from './body.js';
import { abortable, linkSignals, sleep as timerSleep } from './abort.js';
import { CallbackFailure, cutShort, isTransient, reportProgress, sizeError, throwIfNotSuccess, transient } from './answer-checks.js';
import { fetchElsewhereAttempt, streamElsewhereAttempt } from './elsewhere.js';
import { roomFor } from '../bytes.js';
import { rangesHeader, streamRangesAnswer } from './transport-ranges.js';
import {
  checkedSize,
  RANGE_REFUSALS,
  type BodyBound,
  type Fetched,
  type RangeResult,
  type RangeSink,
  type RequestOptions,
  type StreamedRanges,
} from './requests.js';

// Exported from here as before (the reader and the tests import them from transport.js); they live in
// requests.ts, which the range requests (transport-ranges.ts, multipart.ts) import without importing this module.
export {
  checkedSize,
  MAX_PART_HEADER_BYTES,
  MULTIPART_BODY_ALLOWANCE,
  MULTIPART_PART_ALLOWANCE,
  RANGE_REFUSALS,
  type BodyBound,
  type Fetched,
  type RangeRefusal,
  type RangeResult,
  type RangeSink,
  type RequestOptions,
  type StreamedRanges,
} from './requests.js';

export interface RetryOptions {
  /** Total attempts including the first; default 4. */
  attempts?: number;
  /** Base of the exponential backoff (with jitter) for 5xx and network failures; default 250 ms. */
  baseDelayMs?: number;
  /** Cap on any single wait, `Retry-After` included; default 30 000 ms. */
  maxDelayMs?: number;
  /**
   * Cap on all the waits of one request together: when the next wait would pass it, the request
   * fails with its last error at once (a storm of 429/503 with `Retry-After` cannot hold a read
   * for long). Default: none beyond `attempts` and `maxDelayMs`.
   */
  maxTotalWaitMs?: number;
}

/** What `onRetry` hears before each wait between attempts. */
export interface RetryEvent {
  url: string;
  /** The attempt that just failed, from 1. */
  attempt: number;
  error: AwakeError;
  /** How long the transport now waits before the next attempt. */
  waitMs: number;
}

export interface TransportOptions {
  /** Injected `fetch`; default the global `fetch`, looked up at each request. */
  fetch?: typeof fetch;
  retry?: RetryOptions;
  /**
   * Limit on one attempt going quiet: the wait for the response headers, then for the body's
   * next bytes (each progress step re-arms it, so a big body on a slow line is fine while bytes
   * flow). A body read in one piece (no progress asked for, on this thread) is one step.
   * Default 30 000 ms; 0 means none.
   */
  timeoutMs?: number;
  /** Injectable timer for the waits between attempts, so tests need not wait. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Called before each wait between attempts (logging, metrics, tests). */
  onRetry?: (event: RetryEvent) => void;
  /**
   * Reads bodies off the calling thread (the reader passes its worker pool's `fetchBody` when
   * no `fetch` of your own is given). Retries, timeouts and checks stay here either way.
   */
  bodyFetcher?: BodyFetcher;
}

/** Options of a whole-body read (`getBytes`, `getText`). */
export interface BodyRequestOptions extends RequestOptions {
  /**
   * The most body bytes accepted when the caller cannot know the size (an index): a larger
   * `Content-Length` fails at the headers, and reading stops as soon as more bytes arrive, holding
   * no more than this: `ResponseSizeError`, not retried. With `expectedBytes` too, the smaller holds.
   */
  maxBytes?: number;
}

/** What `Transport.stream` feeds a body into, one per attempt. */
export interface BodyConsumer {
  /** The next bytes of the body; throws (an `AwakeError`, not retried) to refuse the body. */
  push(chunk: Uint8Array): void;
  /** The body ended at its expected length: resolves when the consumer accepts it, or rejects. */
  finish(): Promise<void>;
}

const DEFAULT_ATTEMPTS = 4;
const DEFAULT_BASE_DELAY_MS = 250;
const DEFAULT_MAX_DELAY_MS = 30_000;
const DEFAULT_TIMEOUT_MS = 30_000;

export class Transport {
  readonly #fetch: typeof fetch;
  readonly #attempts: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #maxTotalWaitMs: number;
  readonly #timeoutMs: number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #onRetry?: (event: RetryEvent) => void;
  readonly #bodyFetcher?: BodyFetcher;

  constructor(options: TransportOptions = {}) {
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#attempts = options.retry?.attempts ?? DEFAULT_ATTEMPTS;
    this.#baseDelayMs = options.retry?.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    this.#maxDelayMs = options.retry?.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
    this.#maxTotalWaitMs = options.retry?.maxTotalWaitMs ?? Infinity;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#sleep = options.sleep ?? timerSleep;
    if (options.onRetry) this.#onRetry = options.onRetry;
    if (options.bodyFetcher) this.#bodyFetcher = options.bodyFetcher;
    if (!Number.isInteger(this.#attempts) || this.#attempts < 1)
      throw new InvalidOptionError('retry.attempts', `retry.attempts must be an integer ≥ 1, got ${this.#attempts}`);
    for (const [name, value] of [
      ['retry.baseDelayMs', this.#baseDelayMs],
      ['retry.maxDelayMs', this.#maxDelayMs],
      ['retry.maxTotalWaitMs', this.#maxTotalWaitMs],
      ['timeoutMs', this.#timeoutMs],
    ] as const) {
      if (!(value >= 0)) throw new InvalidOptionError(name, `${name} must be ≥ 0, got ${value}`);
    }
  }

  /**
   * The whole body. A body shorter than its Content-Length is a network failure, and retried; one
   * past `expectedBytes` or `maxBytes` is a `ResponseSizeError`, not retried.
   */
  async getBytes(url: string, options: BodyRequestOptions = {}): Promise<Uint8Array> {
    return (await this.#whole(url, options)).bytes;
  }

  /** The whole body as UTF-8 text (bounded as `getBytes`). */
  async getText(url: string, options: BodyRequestOptions = {}): Promise<string> {
    return (await this.getTextWithHeaders(url, options)).text;
  }

  /** The whole body as UTF-8 text, with the answer's headers (an index's may ask something of the reader). */
  async getTextWithHeaders(url: string, options: BodyRequestOptions = {}): Promise<{ text: string; headers: Headers }> {
    const { bytes, headers } = await this.getBytesWithHeaders(url, options);
    return { text: new TextDecoder().decode(bytes), headers };
  }

  /** The whole body (bounded as `getBytes`), with the answer's headers. */
  async getBytesWithHeaders(url: string, options: BodyRequestOptions = {}): Promise<{ bytes: Uint8Array; headers: Headers }> {
    const { bytes, headers } = await this.#whole(url, options);
    return { bytes, headers };
  }

  async #whole(url: string, options: BodyRequestOptions): Promise<Fetched> {
    const expected = options.expectedBytes === undefined ? undefined : checkedSize(options.expectedBytes, 'expectedBytes');
    const max = options.maxBytes === undefined ? undefined : checkedSize(options.maxBytes, 'maxBytes');
    const bound: BodyBound =
      max !== undefined && (expected === undefined || max < expected)
        ? { whole: max, wholeIsMax: true }
        : expected === undefined
          ? {}
          : { whole: expected };
    return this.#request(url, options.headers ?? {}, options, bound);
  }

  /**
   * `size` bytes from `offset` (SPEC §7 "Range reads"): a 206 must hold exactly that range, else
   * `RangeResponseError`; a 200 is the whole resource, for the caller to check and cut; a 403,
   * 416 or 501 is `refused` (not read, not retried), for the caller to fetch the whole resource.
   */
  async getRange(url: string, offset: number, size: number, options: RequestOptions = {}): Promise<RangeResult> {
    // Offset and size are checked with the Range header (transport-ranges.ts `rangesHeader`).
    if (size === 0) return { kind: 'range', bytes: new Uint8Array(0) };
    // The range into one buffer as it arrives, grown with the bytes rather than allocated at the
    // size asked for (an index's claim, which 100 bytes may answer); `streamRanges` bounds it to
    // exactly `size` bytes. One buffer per attempt: a retry starts afresh.
    let bytes: Uint8Array | undefined;
    const answer = await this.streamRanges(
      url,
      [{ offset, length: size }],
      { ...options, expectedBytes: options.expectedBytes ?? Number.MAX_SAFE_INTEGER },
      () => {
        bytes = undefined;
        return {
          data: (at, chunk) => (bytes = roomFor(bytes, at - offset + chunk.length, size)).set(chunk, at - offset),
          finish: () => Promise.resolve(),
        };
      },
    );
    // `unsupported` is for several ranges only: one gets a 206, the whole resource, or a refusal.
    return answer.kind === 'streamed' || answer.kind === 'unsupported' ? { kind: 'range', bytes: bytes! } : answer;
  }

  /**
   * Ranges of a resource in one request, their bytes given to a sink as they arrive (SPEC §7
   * "Needed bytes": each member is checked as soon as its bytes are in), under the same retries
   * and timeouts as `getRange` (which it serves); each attempt gets a new sink. One range or
   * several (multipart/byteranges, or one 206 range covering them). A 200 to one range is the
   * whole resource, read within `expectedBytes` and handed back (`whole`), the sink unused; a 200
   * to several is `unsupported`, unread; a 403, 416 or 501 is `refused`, unread and not retried.
   */
  async streamRanges(
    url: string,
    ranges: readonly { offset: number; length: number }[],
    options: RequestOptions & { expectedBytes: number },
    sink: () => RangeSink,
  ): Promise<StreamedRanges> {
    const headers = { ...options.headers, Range: rangesHeader(ranges) };
    const limit = checkedSize(options.expectedBytes, 'expectedBytes');
    return this.#retrying(url, options, (request) =>
      this.#attempt(url, request, async (controller, progress, arm): Promise<StreamedRanges> => {
        // Past the browser's HTTP cache: Chromium's cache, holding other ranges of the same bundle
        // (an immutable one), sent an identical second request for a member's range (the bench's
        // gallery: each truck's JPEG twice). The reader caches what a range brings itself.
        const init: RequestInit = { method: 'GET', headers, signal: controller.signal, cache: 'no-store' };
        const response = await abortable(this.#fetch(url, init), controller.signal);
        if (RANGE_REFUSALS.has(response.status)) {
          response.body?.cancel().catch(() => undefined);
          return {
            kind: 'refused',
            status: response.status,
            reason: `GET ${url}: the server refused the Range request with HTTP ${response.status}`,
          };
        }
        throwIfNotSuccess(response, url);
        const declared = declaredLength(response.headers);
        // An answer left unread stops its request, not only its body: whatever its headers claim,
        // nothing more of it arrives.
        const unread = (answer: StreamedRanges): StreamedRanges => {
          response.body?.cancel().catch(() => undefined);
          controller.abort();
          return answer;
        };
        if (response.status === 206) {
          const answer = await streamRangesAnswer(
            response,
            url,
            ranges,
            controller.signal,
            arm,
            (received) => reportProgress(progress, received, declared),
            sink,
            { cutShort },
          );
          return answer.kind === 'unsupported' ? unread(answer) : answer;
        }
        if (ranges.length > 1)
          return unread({ kind: 'unsupported', reason: `the server answered several ranges with HTTP ${response.status}` });
        if (declared !== undefined && declared > limit) {
          response.body?.cancel().catch(() => undefined);
          throw sizeError(url, response.status, limit, { declaredBytes: declared });
        }
        arm();
        const overLimit = (received: number) => sizeError(url, response.status, limit, { receivedBytes: received });
        return {
          kind: 'whole',
          bytes: await readBody(response, url, controller.signal, request.onProgress ? progress : undefined, limit, overLimit),
        };
      }),
    );
  }

  /**
   * A GET whose 2xx body goes, as it arrives, into a consumer made afresh for each attempt (SPEC
   * §7 "Streamed members"), under the same retries, timeouts and bound as `getBytes`: the body
   * must be `expectedBytes` long, and one cut short is retried. A consumer that throws an
   * `AwakeError` (a damaged bundle) ends the request with it, not retried. With `elsewhere`, each
   * attempt runs there (a worker that reads and consumes the body itself) when it can.
   */
  async stream(
    url: string,
    options: RequestOptions & { expectedBytes: number },
    consumer: () => BodyConsumer,
    elsewhere?: StreamElsewhere,
  ): Promise<void> {
    const limit = checkedSize(options.expectedBytes, 'expectedBytes');
    const headers = options.headers ?? {};
    await this.#retrying(url, options, (request) =>
      this.#attempt(url, request, async (controller, progress, arm) => {
        const remote = elsewhere ? await streamElsewhereAttempt(elsewhere, url, headers, controller, progress, limit) : undefined;
        if (remote === true) return;
        const response =
          remote?.here ?? (await abortable(this.#fetch(url, { method: 'GET', headers, signal: controller.signal }), controller.signal));
        throwIfNotSuccess(response, url);
        const declared = declaredLength(response.headers);
        if (declared !== undefined && declared > limit) {
          response.body?.cancel().catch(() => undefined);
          throw sizeError(url, response.status, limit, { declaredBytes: declared });
        }
        arm();
        const sink = consumer();
        const body = bodyToRead(response);
        const read = body
          ? await pumpBody(body, {
              signal: controller.signal,
              limit,
              onChunk: (chunk) => sink.push(chunk),
              onProgress: (received) => reportProgress(progress, received, declared),
            })
          : { received: 0 };
        if (read.overLimit !== undefined) throw sizeError(url, response.status, limit, { receivedBytes: read.overLimit });
        if (declared !== undefined && read.received !== declared) throw cutShort(url, read.received, declared);
        await sink.finish();
      }),
    );
  }

  /** Attempts until one succeeds, a failure is not worth retrying, or the attempts run out. */
  async #request(url: string, headers: Record<string, string>, options: RequestOptions, bound: BodyBound): Promise<Fetched> {
    return this.#retrying(url, options, (request) =>
      this.#attempt(url, request, (controller, progress, arm) => this.#fetchWhole(url, headers, request, bound, controller, progress, arm)),
    );
  }

  /** Runs `attempt` until it succeeds, a failure is not worth retrying, or the attempts run out. */
  async #retrying<T>(url: string, options: RequestOptions, attemptOnce: (request: RequestOptions) => Promise<T>): Promise<T> {
    if (options.timeoutMs !== undefined && !(options.timeoutMs >= 0))
      throw new InvalidOptionError('timeoutMs', `timeoutMs must be ≥ 0, got ${options.timeoutMs}`);
    // One signal per request: the caller's (an app's, a source's lifetime) gains no listener per attempt or wait.
    const link = options.signal ? linkSignals([options.signal]) : undefined;
    const request = link ? { ...options, signal: link.signal } : options;
    let waitedMs = 0;
    try {
      for (let attempt = 1; ; attempt++) {
        let failure: AwakeError;
        try {
          return await attemptOnce(request);
        } catch (error) {
          if (!(error instanceof AwakeError)) throw error;
          failure = error;
        }
        const waitMs = this.#waitBeforeRetry(failure, attempt);
        if (waitMs === undefined) throw failure;
        if (attempt >= Math.min(this.#attempts, options.attempts ?? Infinity)) throw givenUp(failure, attempt);
        if (waitedMs + waitMs > this.#maxTotalWaitMs)
          throw givenUp(failure, attempt, `waiting ${waitMs} ms more would pass retry.maxTotalWaitMs (${this.#maxTotalWaitMs} ms)`);
        waitedMs += waitMs;
        this.#onRetry?.({ url, attempt, error: failure, waitMs });
        await this.#wait(waitMs, url, request.signal);
      }
    } finally {
      link?.release();
    }
  }

  /** SPEC §7 "Retries": how long to wait before retrying `failure`, or `undefined` not to retry. */
  #waitBeforeRetry(failure: AwakeError, attempt: number): number | undefined {
    if (failure instanceof HttpError) {
      const { status, retryAfterMs } = failure;
      if ((status === 429 || status === 503) && retryAfterMs !== undefined) return Math.min(retryAfterMs, this.#maxDelayMs);
      if (status === 429 || (status >= 500 && status <= 599)) return this.#backoff(attempt);
      return undefined;
    }
    return isTransient(failure) ? this.#backoff(attempt) : undefined;
  }

  /** Exponential backoff with "equal jitter": between half and all of base·2^(attempt−1), capped. */
  #backoff(attempt: number): number {
    const ceiling = Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** (attempt - 1));
    return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
  }

  async #wait(ms: number, url: string, signal: AbortSignal | undefined): Promise<void> {
    try {
      if (signal?.aborted) throw signal.reason;
      await abortable(this.#sleep(ms, signal), signal);
    } catch (error) {
      if (signal?.aborted) throw abortedError(url, signal, 'while waiting to retry');
      throw error;
    }
  }

  /**
   * One attempt within the per-attempt timeout: `run` makes the request under `controller` and
   * calls `progress` as body bytes arrive (each call re-arms the timeout); failures become the
   * transport's errors (aborted, timed out, network).
   */
  async #attempt<T>(
    url: string,
    options: RequestOptions,
    run: (controller: AbortController, progress: (received: number, total: number | undefined) => void, arm: () => void) => Promise<T>,
  ): Promise<T> {
    const callerSignal = options.signal;
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    if (callerSignal?.aborted) throw abortedError(url, callerSignal);
    const controller = new AbortController();
    const stop = (): void => controller.abort(callerSignal?.reason);
    callerSignal?.addEventListener('abort', stop, { once: true });
    let timedOut = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    /** (Re)starts the quiet-time limit: at the start and whenever body bytes arrive. */
    const arm = (): void => {
      if (timeoutMs <= 0 || controller.signal.aborted) return;
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        // Only an abort reason: the catch below sees `timedOut` and throws RequestTimeoutError.
        controller.abort(new Error(`no answer or no bytes for ${timeoutMs} ms`));
      }, timeoutMs);
    };
    arm();
    const onProgress = options.onProgress;
    const progress = (received: number, total: number | undefined): void => {
      arm();
      onProgress?.(received, total);
    };
    try {
      return await run(controller, progress, arm);
    } catch (error) {
      // A body not read to its end stops here (see net/body.ts `bodyToRead`).
      controller.abort(error);
      if (error instanceof CallbackFailure) throw error.error;
      if (callerSignal?.aborted) throw abortedError(url, callerSignal);
      if (timedOut)
        throw transient(
          new RequestTimeoutError(timeoutMs, `GET ${url}: timed out: no answer or no bytes for ${timeoutMs} ms`, { url, cause: error }),
        );
      if (error instanceof AwakeError) throw error;
      throw transient(new NetworkError(`GET ${url}: network failure: ${describe(error)}`, { url, cause: error }));
    } finally {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', stop);
    }
  }

  /** One plain GET attempt: status checked, body read in full within `bound`. */
  async #fetchWhole(
    url: string,
    headers: Record<string, string>,
    options: RequestOptions,
    bound: BodyBound,
    controller: AbortController,
    progress: (received: number, total: number | undefined) => void,
    arm: () => void,
  ): Promise<Fetched> {
    // The worker always reports progress (cheaply, off this thread), so its bytes re-arm the limit.
    // Not a body bounded by `maxBytes` alone (an index): it is parsed on this thread anyway, and
    // its request then waits for no worker to start.
    const elsewhere =
      this.#bodyFetcher && !bound.wholeIsMax
        ? await fetchElsewhereAttempt(this.#bodyFetcher, url, headers, controller, progress, bound)
        : undefined;
    if (elsewhere) return elsewhere;
    const response = await abortable(this.#fetch(url, { method: 'GET', headers, signal: controller.signal }), controller.signal);
    throwIfNotSuccess(response, url);
    const limit = bound.whole;
    const declared = declaredLength(response.headers);
    if (limit !== undefined && declared !== undefined && declared > limit) {
      response.body?.cancel().catch(() => undefined);
      throw sizeError(url, response.status, limit, { declaredBytes: declared }, bound.wholeIsMax);
    }
    arm();
    const overLimit =
      limit === undefined
        ? undefined
        : (received: number) => sizeError(url, response.status, limit, { receivedBytes: received }, bound.wholeIsMax);
    const bytes = await readBody(response, url, controller.signal, options.onProgress ? progress : undefined, limit, overLimit);
    return { status: response.status, headers: response.headers, bytes };
  }
}

function abortedError(url: string, signal: AbortSignal, when = ''): RequestAbortedError {
  return new RequestAbortedError(`GET ${url}: aborted${when ? ` ${when}` : ''}`, { url, cause: signal.reason });
}

/** The error thrown when the attempts run out: the last failure's kind, saying so, with it as `cause`. */
function givenUp(last: AwakeError, attempts: number, why?: string): AwakeError {
  const message = `${last.message} (gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}${why ? `: ${why}` : ''})`;
  const url = last.url ?? '';
  const details = { url, attempts, cause: last };
  if (last instanceof HttpError)
    return new HttpError(last.status, message, last.retryAfterMs === undefined ? details : { ...details, retryAfterMs: last.retryAfterMs });
  if (last instanceof RequestTimeoutError) return new RequestTimeoutError(last.timeoutMs, message, details);
  return new NetworkError(message, details);
}

/**
 * The whole body, copied as little as the platform allows: `arrayBuffer()` (no JavaScript on the
 * way) when no progress is asked for; otherwise chunk by chunk into one buffer of the declared
 * Content-Length, joining chunks only when the length is unknown. Past `limit`, `overLimit` says why.
 */
async function readBody(
  response: Response,
  url: string,
  signal: AbortSignal,
  onProgress: RequestOptions['onProgress'],
  limit: number | undefined,
  overLimit: ((received: number) => AwakeError) | undefined,
): Promise<Uint8Array> {
  const expected = declaredLength(response.headers);
  let bytes: Uint8Array;
  if (!response.body) bytes = new Uint8Array(0);
  // With a Content-Length within the limit (checked before), the platform reads no more than that.
  else if (!onProgress && (limit === undefined || (expected !== undefined && expected <= limit)))
    bytes = new Uint8Array(await abortable(response.arrayBuffer(), signal));
  // Only a declared length is allocated up front: a limit is the most a body may be (a bundle
  // listed at 3 GiB, an index's maxBytes), not what a chunked one will be (net/body.ts, the one
  // body reader, which the reader's workers use too).
  else {
    const read = await collectBody(bodyToRead(response)!, {
      signal,
      ...(limit !== undefined ? { limit } : {}),
      ...(expected !== undefined ? { expectedBytes: expected } : {}),
      ...(onProgress ? { onProgress: (received: number) => reportProgress(onProgress, received, expected) } : {}),
    });
    if (read.overLimit !== undefined) throw overLimit!(read.overLimit);
    bytes = read.bytes;
  }
  if (expected !== undefined && bytes.length !== expected) throw cutShort(url, bytes.length, expected);
  return bytes;
}

/** A failure's message with its cause's, since `fetch failed` alone says little. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return cause && cause !== error.message ? `${error.message} (${cause})` : error.message;
}
