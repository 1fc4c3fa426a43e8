/**
 * How the transport judges an answer (SPEC §7 "Retries"): a status that is not success, a body
 * not the size asked for or cut short, failures worth another attempt, and an exception of the
 * caller's own progress callback, passed through. Shared by attempts made here and elsewhere
 * (elsewhere.ts).
 */
import { HttpError, NetworkError, RangeResponseError, ResponseSizeError, type AwakeError } from '../errors.js';
import { parseRetryAfter } from './retry-after.js';
import type { RequestOptions } from './requests.js';

/** Failures worth another attempt that a status alone does not show: network failures and timeouts. */
const transientFailures = new WeakSet<AwakeError>();

export function transient<E extends AwakeError>(error: E): E {
  transientFailures.add(error);
  return error;
}

/** An exception thrown by the caller's `onProgress`: passed through unchanged, never retried. */
export class CallbackFailure {
  constructor(readonly error: unknown) {}
}

/** Whether `failure` is worth another attempt though its status does not say so (`transient`). */
export function isTransient(failure: AwakeError): boolean {
  return transientFailures.has(failure);
}

/** A body whose length is not its Content-Length: a network failure (a connection cut mid-body), retried. */
export function cutShort(url: string, received: number, expected: number): NetworkError {
  const how = received < expected ? 'body cut short' : 'body longer than its Content-Length';
  return transient(new NetworkError(`GET ${url}: ${how}: received ${received} of ${expected} bytes`, { url }));
}

/** Throws `HttpError` for anything but a 2xx, after releasing the unread body. */
export function throwIfNotSuccess(
  response: Pick<Response, 'status' | 'statusText' | 'type' | 'headers'> & { body?: ReadableStream | null },
  url: string,
): void {
  if (response.status >= 200 && response.status <= 299) return;
  response.body?.cancel().catch(() => undefined);
  if (response.type === 'opaqueredirect') {
    throw new HttpError(
      0,
      `GET ${url}: the platform hid a redirect (opaque response); a token-authorized fetch in a browser follows redirects only within the page's own origin`,
      { url },
    );
  }
  if (response.status === 0) throw new HttpError(0, `GET ${url}: opaque response (status 0); the body cannot be read`, { url });
  const retryAfterMs =
    response.status === 429 || response.status === 503 ? parseRetryAfter(response.headers.get('retry-after')) : undefined;
  const message = `GET ${url}: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  throw new HttpError(response.status, message, retryAfterMs === undefined ? { url } : { url, retryAfterMs });
}

export function reportProgress(onProgress: RequestOptions['onProgress'], received: number, expected: number | undefined): void {
  if (!onProgress) return;
  try {
    onProgress(received, expected);
  } catch (error) {
    throw new CallbackFailure(error);
  }
}

/**
 * A body that is not the size asked for: for a 206, the range's (`RangeResponseError`); for
 * anything else, the resource's as the caller knows it, or past the caller's `maxBytes`
 * (`ResponseSizeError`). Neither is retried.
 */
export function sizeError(
  url: string,
  status: number,
  limit: number,
  got: { declaredBytes?: number; receivedBytes?: number },
  isMax = false,
): AwakeError {
  const what =
    got.declaredBytes !== undefined
      ? `its Content-Length says ${got.declaredBytes}`
      : `more arrived (${got.receivedBytes} bytes read, reading stopped)`;
  if (status === 206)
    return new RangeResponseError(`GET ${url}: asked for a range of ${limit} bytes, the 206 answer is not: ${what}`, { url });
  const bound = isMax ? `the body is larger than maxBytes (${limit} bytes)` : `expected ${limit} bytes`;
  return new ResponseSizeError(`GET ${url}: ${bound}, ${what}`, { url, expectedBytes: limit, ...got });
}
