/**
 * Attempts of the transport run elsewhere (SPEC §7): a body read by a `BodyFetcher`, a bundle
 * streamed by a `StreamElsewhere` (the reader's workers, core/read/workers/digest-pool.ts), with
 * the same checks as an attempt run here. A service worker has no workers to run them in: its
 * build leaves this module out (adapters/service-worker/no-elsewhere.ts).
 */
import { abortable } from './abort.js';
import { declaredLength, type BodyFetcher, type StreamElsewhere } from './body.js';
import { CallbackFailure, cutShort, reportProgress, sizeError, throwIfNotSuccess } from './answer-checks.js';
import type { BodyBound, Fetched, RequestOptions } from './requests.js';

/**
 * One attempt through the body fetcher: the same checks as a plain attempt. `undefined` when
 * the fetcher cannot run here, so the caller fetches itself.
 */
export async function fetchElsewhereAttempt(
  fetcher: BodyFetcher,
  url: string,
  headers: Record<string, string>,
  controller: AbortController,
  onProgress: RequestOptions['onProgress'],
  bound: BodyBound,
): Promise<Fetched | undefined> {
  let callbackFailure: CallbackFailure | undefined;
  const progress = onProgress
    ? {
        onProgress: (received: number, total: number | undefined) => {
          try {
            reportProgress(onProgress, received, total);
          } catch (error) {
            callbackFailure ??= error as CallbackFailure;
            controller.abort(error);
          }
        },
      }
    : {};
  let fetched;
  try {
    const limits = bound.whole !== undefined ? { expectedBytes: bound.whole } : {};
    fetched = await abortable(fetcher(url, { headers, signal: controller.signal, ...progress, ...limits }), controller.signal);
  } catch (error) {
    throw callbackFailure ?? error;
  }
  if (fetched === undefined) return undefined;
  throwIfNotSuccess(fetched, url);
  const limit = bound.whole;
  // The worker stopped at the limit (or at a Content-Length past it), as readBody does here.
  if (fetched.overLimit && limit !== undefined) throw sizeError(url, fetched.status, limit, fetched.overLimit, bound.wholeIsMax);
  if (limit !== undefined && fetched.bytes.length > limit)
    throw sizeError(url, fetched.status, limit, { receivedBytes: fetched.bytes.length }, bound.wholeIsMax);
  const expected = declaredLength(fetched.headers);
  if (expected !== undefined && fetched.bytes.length !== expected) throw cutShort(url, fetched.bytes.length, expected);
  if (onProgress) reportProgress(onProgress, fetched.bytes.length, expected);
  return { status: fetched.status, headers: fetched.headers, bytes: fetched.bytes };
}

/**
 * One attempt of `Transport.stream` run elsewhere (a worker): the same checks as one run here.
 * `undefined` when it cannot run there, so the caller reads the body itself.
 */
export async function streamElsewhereAttempt(
  elsewhere: StreamElsewhere,
  url: string,
  headers: Record<string, string>,
  controller: AbortController,
  progress: (received: number, total: number | undefined) => void,
  limit: number,
): Promise<true | { here: Response } | undefined> {
  let callbackFailure: CallbackFailure | undefined;
  const onProgress = (received: number) => {
    try {
      reportProgress(progress, received, undefined);
    } catch (error) {
      if (!callbackFailure) {
        callbackFailure = error as CallbackFailure;
        controller.abort(error);
      }
    }
  };
  let answer;
  try {
    answer = await abortable(elsewhere(url, { headers, signal: controller.signal, expectedBytes: limit, onProgress }), controller.signal);
  } catch (error) {
    throw callbackFailure ?? error;
  }
  if (answer === undefined || 'here' in answer) return answer;
  throwIfNotSuccess(answer, url);
  if (answer.overLimit) throw sizeError(url, answer.status, limit, answer.overLimit);
  // A refusal may come before the body's end (a head that is not the canonical one).
  if (answer.refusal) throw answer.refusal;
  const declared = declaredLength(answer.headers);
  if (declared !== undefined && answer.receivedBytes !== declared) throw cutShort(url, answer.receivedBytes, declared);
  return true;
}
