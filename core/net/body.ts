/**
 * Reading response bodies, once for every place that reads them: the transport on the page or
 * in Node, and the reader's Web Workers (core/read/workers/worker-main.ts), which import this module.
 * Also the contract of a body read elsewhere (`BodyFetcher`, `StreamElsewhere`): the transport
 * owns it, a worker pool implements it. Browser-safe: no `node:` imports, no DOM at import time.
 */
import { CLAIMED_CAPACITY_BYTES, roomFor } from '../bytes.js';

/** Content-Length as the number of body bytes `fetch` will hand over, when that is known. */
export function declaredLength(headers: Headers): number | undefined {
  const encoding = headers.get('content-encoding');
  if (encoding && encoding.trim().toLowerCase() !== 'identity') return undefined;
  const value = headers.get('content-length');
  return value !== null && /^\s*\d+\s*$/.test(value) ? Number(value) : undefined;
}

export function isMultipart(headers: Headers): boolean {
  return /^\s*multipart\/byteranges\s*(;|$)/i.test(headers.get('content-type') ?? '');
}

/** A response's head as it crosses between the page and the reader's workers (structured-cloneable). */
export interface ResponseHead {
  status: number;
  statusText: string;
  type: ResponseType;
  headers: [string, string][];
}

/** `response`'s head, to post to another thread. */
export function responseHead(response: Response): ResponseHead {
  return { status: response.status, statusText: response.statusText, type: response.type, headers: [...response.headers] };
}

/** Chromium (Blink), see `bodyToRead`: the page's or a worker's `navigator` says so; Node's says Node.js. */
function cancelsLoadsOnClose(): boolean {
  return typeof navigator !== 'undefined' && /Chrom(?:e|ium)\//.test(navigator.userAgent ?? '');
}

/**
 * `response.body`, to be read chunk by chunk to its end (by `pumpBody` or `collectBody`).
 *
 * In Chromium, a body stream that closes cancels what it read from (BodyStreamBuffer::Close
 * cancels its consumer); when the last bytes come before the loader has heard the network
 * finish, that cancels the load: the request shows as canceled (`net::ERR_ABORTED`) in DevTools
 * and to the DevTools protocol, though every byte arrived. There a clone is read by
 * `arrayBuffer()`, a consumer that never cancels, so the load ends as the network ends it; it
 * costs a second copy of the body while it arrives. A caller that stops reading before the end
 * must abort the request (its signal), or that copy reads on to the end.
 */
export function bodyToRead(response: Response): ReadableStream<Uint8Array> | null {
  if (response.body && cancelsLoadsOnClose())
    void response
      .clone()
      .arrayBuffer()
      .catch(() => undefined);
  return response.body;
}

export interface PumpOptions {
  signal?: AbortSignal;
  /** The most bytes to read: past it reading stops, the body is cancelled, and `overLimit` says how many had arrived. */
  limit?: number;
  onChunk(chunk: Uint8Array): void;
  /** Bytes so far, after each chunk. */
  onProgress?(received: number): void;
}

/**
 * Reads `body` chunk by chunk into `onChunk` (which may throw to stop, cancelling the body),
 * until it ends, fails, or passes `limit`. Never buffers: what to keep is the caller's business.
 */
export async function pumpBody(body: ReadableStream<Uint8Array>, options: PumpOptions): Promise<{ received: number; overLimit?: number }> {
  const reader = body.getReader();
  const { signal, limit } = options;
  let received = 0;
  let finished = false;
  const cancel = () => {
    if (!finished) reader.cancel(signal?.reason).catch(() => undefined);
  };
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      signal?.throwIfAborted();
      const { done, value } = await reader.read();
      // A cancel on abort ends the read as `done`: that is not the body's end.
      signal?.throwIfAborted();
      if (done) {
        finished = true;
        return { received };
      }
      if (limit !== undefined && received + value.length > limit) return { received, overLimit: received + value.length };
      received += value.length;
      options.onChunk(value);
      options.onProgress?.(received);
    }
  } catch (error) {
    signal?.throwIfAborted();
    throw error;
  } finally {
    signal?.removeEventListener('abort', cancel);
    cancel();
  }
}

/**
 * A whole body in one buffer, grown as bytes arrive (doubling): a declared length (checked
 * against the limit by the caller) sizes it at once only up to `CLAIMED_CAPACITY_BYTES`, and caps
 * its growth, so a body costs what arrives, whatever it claims and however large the limit.
 */
export async function collectBody(
  body: ReadableStream<Uint8Array>,
  options: Omit<PumpOptions, 'onChunk'> & { expectedBytes?: number },
): Promise<{ bytes: Uint8Array; overLimit?: number }> {
  const expected = options.expectedBytes;
  let target: Uint8Array = new Uint8Array(expected === undefined ? 64 * 1024 : Math.min(expected, CLAIMED_CAPACITY_BYTES));
  let length = 0;
  const result = await pumpBody(body, {
    ...options,
    onChunk(chunk) {
      target = roomFor(target, length + chunk.length, Math.max(length + chunk.length, expected ?? Infinity));
      target.set(chunk, length);
      length += chunk.length;
    },
  });
  if (result.overLimit !== undefined) return { bytes: new Uint8Array(0), overLimit: result.overLimit };
  return { bytes: length === target.length ? target : target.slice(0, length) };
}

/** What a body read in a worker gives the transport: the response's head and its whole body. */
export interface FetchedBody {
  status: number;
  statusText: string;
  type: ResponseType;
  headers: Headers;
  /** The whole body (empty for a status outside 2xx, whose body is not read, and with `overLimit`). */
  bytes: Uint8Array;
  /** Set when the worker refused the body for its size (see `FetchBodyInit.expectedBytes`): what it saw. */
  overLimit?: { declaredBytes?: number; receivedBytes?: number };
}

export interface FetchBodyInit {
  headers: Record<string, string>;
  signal: AbortSignal;
  onProgress?: (receivedBytes: number, totalBytes: number | undefined) => void;
  /**
   * The most body bytes to read (a bundle's listed size): a larger `Content-Length`, or more
   * bytes, stop the read there (`overLimit`). Range answers are read on the calling thread
   * (`Transport.streamRanges`), never here.
   */
  expectedBytes?: number;
}

/**
 * A GET whose body is read elsewhere than the calling thread. Rejects with a `TypeError` for a
 * network failure, like `fetch`; resolves `undefined` when it cannot run here at all (no
 * workers), so the caller reads the body itself.
 */
export type BodyFetcher = (url: string, init: FetchBodyInit) => Promise<FetchedBody | undefined>;

/** What one attempt of a body consumed elsewhere (`StreamElsewhere`) came to. */
export interface StreamedAnswer {
  status: number;
  statusText: string;
  type: ResponseType;
  headers: Headers;
  /** Body bytes read (0 for a status outside 2xx, whose body is not read). */
  receivedBytes: number;
  /** The body passed `expectedBytes`: by its Content-Length at the headers, or by what arrived. */
  overLimit?: { declaredBytes?: number; receivedBytes?: number };
  /** The consumer refused the body (a damaged bundle): thrown as it is, not retried. */
  refusal?: Error;
}

/**
 * One attempt of a GET whose whole body is consumed elsewhere (a worker that reads, verifies and
 * cuts a bundle as it arrives). Rejects with a `TypeError` for a network failure, like `fetch`;
 * resolves `undefined` when it cannot run here, so the transport reads the body itself, or
 * `{ here }` with a response it fetched for a worker that then could not take it (the transport
 * reads that one, rather than send the request again).
 */
export type StreamElsewhere = (
  url: string,
  init: { headers: Record<string, string>; signal: AbortSignal; expectedBytes: number; onProgress: (receivedBytes: number) => void },
) => Promise<StreamedAnswer | { here: Response } | undefined>;
