/**
 * What a page's preload links mean to a source: the URLs the page preloads, the wait for the
 * page's parse before the index is asked for, and the index an adapter asked for early
 * (early-index.ts). All of it reads the page's `document`: without one (a worker, Node) there is
 * nothing preloaded, nothing to wait for and nothing asked early. Apart from origins.ts, which
 * every source needs, so that the service worker's build can leave it out
 * (adapters/service-worker/no-page-preloads.ts).
 */
import { RequestAbortedError, ResponseSizeError } from '../../errors.js';
import { abortable } from '../../net/abort.js';
import { takeEarlyIndex } from './early-index.js';
import { PRELOAD_MARKER_NAME } from './origins.js';

/**
 * The URLs the page preloads for `fetch` (`<link rel="preload" as="fetch" crossorigin href>`, as
 * the build plugins add for the index and the first load's bundles): the browser keeps the
 * preloaded response for a `fetch` from this page with the same URL and mode, so such a URL is
 * fetched on the page, not in a worker (whose fetch would ask again). Empty without a document.
 */
export function preloadedFetchUrls(): Set<string> {
  const document = (globalThis as { document?: { querySelectorAll?(selector: string): ArrayLike<{ href?: string }> } }).document;
  const links = document?.querySelectorAll?.('link[rel~="preload"][as="fetch"]');
  const urls = new Set<string>();
  for (let i = 0; i < (links?.length ?? 0); i++) {
    const href = links![i]!.href;
    if (href) urls.add(href);
  }
  return urls;
}

/**
 * Resolves once the page's HTML is parsed; `undefined` where it is already (or there is no
 * document: a worker, Node), and where nothing is to be waited for: the page has no preload links
 * to come (no `PRELOAD_MARKER_NAME` meta in it: a page the build plugins did not make, or one
 * made without links), or the link preloading `url` is parsed already. A reader opened by a
 * blocking script runs before the parser reaches the preload links after that script (where the
 * build plugins put them): a fetch made then takes the response the browser's preload scanner
 * fetched early, and the link, parsed next, fetches it again (Chromium: two requests). After the
 * parse, the fetch takes the link's response. A page without links asks for its index at once,
 * rather than after the rest of its HTML and the script's own work (BENCHMARKS.md, "Start and tail").
 *
 * The wait only saves that second request, so it holds no caller back for long: it rejects with
 * `RequestAbortedError` as soon as `signal` aborts, and resolves after `timeoutMs` (0: no limit)
 * whether or not the HTML has ended (a page whose HTML streams for long, or never ends, still opens).
 */
export function documentParsed(url: string, signal?: AbortSignal, timeoutMs = 0): Promise<void> | undefined {
  const document = (
    globalThis as { document?: Pick<Document, 'readyState' | 'addEventListener' | 'removeEventListener' | 'querySelector'> }
  ).document;
  // Links to come: the page says so, and the one preloading `url` is not parsed yet.
  if (document?.readyState !== 'loading' || !document.querySelector?.(`meta[name=${PRELOAD_MARKER_NAME}]`) || preloadedFetchUrls().has(url))
    return undefined;
  return new Promise((resolve, reject) => {
    const end = (error?: RequestAbortedError): void => {
      clearTimeout(timer);
      document.removeEventListener('DOMContentLoaded', parsed);
      signal?.removeEventListener('abort', aborted);
      if (error) reject(error);
      else resolve();
    };
    const parsed = (): void => end();
    const aborted = (): void =>
      end(new RequestAbortedError(`GET ${url}: aborted while waiting for the page to be parsed`, { url, cause: signal!.reason }));
    const timer = timeoutMs > 0 ? setTimeout(parsed, timeoutMs) : undefined;
    if (signal?.aborted) return aborted();
    document.addEventListener('DOMContentLoaded', parsed);
    signal?.addEventListener('abort', aborted);
  });
}

/** The index's answer the page had before the open asked (early-index.ts), with its line's times (`nowMs`). */
export interface PageIndexAnswer {
  /**
   * Its bytes and headers, as `Transport.getBytesWithHeaders` gives them; over the open's
   * `maxIndexBytes`, a `ResponseSizeError`. Made when called, for the caller to catch.
   */
  answer(): Promise<{ bytes: Uint8Array; headers: Headers }>;
  askedMs: number;
  answeredMs: number | undefined;
}

/**
 * What an open of the index at `url` does on a page before it asks for it (open-source.ts):
 * waits for the page's parse where that saves a second request (`documentParsed`), then takes the
 * index an adapter asked for as the page was parsed (early-index.ts), if the open asks as that
 * request did (`platformFetch`: no `fetch` or `transport` option) and it was answered. An early
 * request that failed is left to the open, which asks again with its own attempts; an abort of
 * `signal` meanwhile rejects. `undefined` at once where there is nothing to wait for and nothing
 * was asked early (always so without a document: a worker, Node); then the open asks at once.
 */
export function indexFromPage(
  url: string,
  signal: AbortSignal | undefined,
  timeoutMs: number,
  maxBytes: number,
  platformFetch: boolean,
): Promise<PageIndexAnswer | undefined> | undefined {
  const take = (): Promise<PageIndexAnswer | undefined> | undefined => {
    const early = platformFetch ? takeEarlyIndex(url) : undefined;
    return early
      ? abortable(early.answer, signal).then(
          (got) => ({
            askedMs: early.askedMs,
            answeredMs: early.answeredMs,
            answer: async () => {
              const received = got.bytes.length;
              if (received > maxBytes)
                throw new ResponseSizeError(`GET ${url}: over maxBytes ${maxBytes}, ${received} bytes read`, {
                  url,
                  expectedBytes: maxBytes,
                  receivedBytes: received,
                });
              return got;
            },
          }),
          (error: unknown) => {
            if (signal?.aborted) throw error;
            return undefined;
          },
        )
      : undefined;
  };
  const parsed = documentParsed(url, signal, timeoutMs);
  return parsed ? parsed.then(take) : take();
}
