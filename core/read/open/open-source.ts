/**
 * Opening a source (SPEC §3, §7): the options checked before any request, the index fetched (or
 * taken as given) and checked, its URLs held to the allowed origins, the transport and hashing
 * pool made, and the cache opened meanwhile. What `IndexedAssetSource.open` builds a source from.
 */
import type { ContentCache } from '../../cache/content-cache.js';
import { IndexTooLargeError, IndexValidationError, InvalidOptionError, ResponseSizeError } from '../../errors.js';
import {
  MAX_READ_BYTES,
  parseFetchedIndexJson,
  parseProjectIndex,
  parseProjectIndexJson,
  type ProjectIndex,
} from '../../format/project-index.js';
import { bindTokenOrigin, needsTokenOrigin } from '../../net/token-fetch.js';
import { checkedSize, Transport } from '../../net/transport.js';
import { deltaReadSettings } from '../plan/delta-ranges.js';
import { InThreadDigests, sharedDigestPool, WorkerDigestPool, workersAvailable, type DigestPool } from '../workers/digest-pool.js';
import { readMarkedIndexes } from './early-index.js';
import { IndexView } from './index-view.js';
import { loadsEndpointOf, LOADS_ENDPOINT_HEADER } from '../load/load-names.js';
import { networkWaitMs, neededBytesSettings, nowMs, type LineSample } from '../plan/needed-bytes.js';
import { DEFAULT_INDEX_ATTEMPTS, DEFAULT_INDEX_TIMEOUT_MS, DEFAULT_MAX_INDEX_BYTES, type OpenOptions } from '../options.js';
import { absoluteUrl, allowedOrigins, checkIndexUrls, httpUrl, pageHref, tokenOrigin } from './origins.js';
import { indexFromPage } from './page-preloads.js';
import { rangeReadSettings } from '../plan/range-reads.js';

/** A source's makings, once its index is read and checked. */
export interface Opened {
  view: IndexView;
  transport: Transport;
  pool: DigestPool;
  /** Bodies are read in the pool's workers (the platform's own fetch). */
  inWorkers: boolean;
  options: OpenOptions & { cache: ContentCache | null | undefined; loadsEndpoint: string | undefined };
  /** The index's fetch as its line saw it (its round trip, for needed bytes: needed-bytes.ts). */
  indexLine?: { url: string; sample: LineSample };
}

/**
 * What an adapter calls as it is imported: on a page whose build preloads its index with a marked
 * link, asks for that index as soon as the page is parsed (early-index.ts), so a source's first
 * load is planned as soon as it opens. The parts a first load uses (the range requests with their
 * rule, the reference reader) are in the entry: no chunk of this package stands in front of a
 * first visit's first request.
 */
export function importFirstLoadParts(): void {
  readMarkedIndexes();
}

/** Reads and checks the index (formatVersion 2 or 3; others refused, SPEC §3). */
export async function openSource(options: OpenOptions): Promise<Opened> {
  const indexUrl = options.indexUrl === undefined ? undefined : httpUrl(absoluteUrl(options.indexUrl), 'indexUrl');
  const baseUrl = options.baseUrl === undefined ? undefined : httpUrl(absoluteUrl(options.baseUrl, 'baseUrl'), 'baseUrl');
  const allowed = allowedOrigins(indexUrl ?? baseUrl ?? pageHref(), options.allowOrigins ?? []);
  const fetch =
    options.fetch && needsTokenOrigin(options.fetch) ? bindTokenOrigin(options.fetch, tokenOrigin(indexUrl ?? baseUrl)) : options.fetch;
  // Checked before any request.
  const deltaSettings = deltaReadSettings(options.deltaReads);
  rangeReadSettings(options.rangeReads);
  neededBytesSettings(options.neededBytes);
  // Needed bytes fetch by the ranges `deltaReads` tunes: `deltaReads: false` turns them off, which
  // is an error where they were asked for by name, not a silence.
  if (!deltaSettings && options.neededBytes !== undefined && options.neededBytes !== false)
    throw new InvalidOptionError(
      'neededBytes',
      'neededBytes fetches by the ranges deltaReads tunes, and deltaReads is false: leave deltaReads out (or tune it), or set neededBytes: false',
    );
  const maxIndexBytes = checkedSize(options.maxIndexBytes ?? DEFAULT_MAX_INDEX_BYTES, 'maxIndexBytes');
  const indexTimeoutMs = options.indexTimeoutMs ?? DEFAULT_INDEX_TIMEOUT_MS;
  if (!(indexTimeoutMs >= 0)) throw new InvalidOptionError('indexTimeoutMs', `indexTimeoutMs must be ≥ 0, got ${indexTimeoutMs}`);
  const indexAttempts = options.indexAttempts ?? DEFAULT_INDEX_ATTEMPTS;
  if (!Number.isInteger(indexAttempts) || indexAttempts < 1)
    throw new InvalidOptionError('indexAttempts', `indexAttempts must be an integer ≥ 1, got ${indexAttempts}`);
  const pool = poolFor(options.hashWorkers);
  // With the platform's own fetch, bodies are read (and bundles streamed) in the pool's workers,
  // which start while the index is fetched (its request waits for none of them). Starting them
  // costs this thread a few ms, so they start once the index request is out.
  const bodyFetcher = !options.fetch && !options.transport ? pool.fetchBody : undefined;
  const warm = () => pool.warm?.();
  const transport =
    options.transport ??
    new Transport({
      ...(fetch ? { fetch } : {}),
      ...(options.retry ? { retry: options.retry } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(bodyFetcher ? { bodyFetcher } : {}),
    });
  // Opening a persistent store and fetching the index happen together.
  const cache = Promise.resolve(options.cache);
  cache.catch(() => undefined); // awaited below; not an unhandled rejection if the index fails first
  let index: ProjectIndex;
  let loadsEndpoint: string | undefined;
  let indexLine: Opened['indexLine'];
  // Every file and bundle within what one buffer holds: a read hands each file over whole.
  const limits = { maxReadBytes: MAX_READ_BYTES };
  if (options.index !== undefined) {
    warm();
    index =
      typeof options.index === 'string'
        ? parseProjectIndexJson(options.index, { ...limits, ...(indexUrl ? { url: indexUrl } : {}) })
        : parseProjectIndex(options.index, { ...limits, ...(indexUrl ? { url: indexUrl } : {}) });
  } else if (indexUrl !== undefined) {
    // Opened by a blocking script: the page's preload links (after it) are parsed first, so
    // the index and the bundles come from their preloads, each requested once. The index the
    // page preloads, asked for by an adapter as the page was parsed (early-index.ts), is taken
    // if this open asks as that request did; one that failed is asked for again below
    // (page-preloads.ts, `undefined` at once where there is no page).
    const fromPage = indexFromPage(indexUrl, options.signal, indexTimeoutMs, maxIndexBytes, !options.fetch && !options.transport);
    const early = fromPage && (await fromPage);
    const asked = early ? early.askedMs : nowMs();
    let answered = early ? early.answeredMs : undefined;
    const answer = (
      early
        ? early.answer()
        : transport.getBytesWithHeaders(indexUrl, {
            ...(options.signal ? { signal: options.signal } : {}),
            maxBytes: maxIndexBytes,
            timeoutMs: indexTimeoutMs,
            attempts: indexAttempts,
            // Read in steps, each re-arming the quiet-time limit: a large index on a slow line is not cut at 15 s.
            onProgress: (received) => {
              if (received > 0) answered ??= nowMs();
            },
          })
    ).catch((error: unknown) => {
      throw error instanceof ResponseSizeError ? new IndexTooLargeError(indexUrl, maxIndexBytes, error) : error;
    });
    warm();
    const { bytes, headers } = await answer;
    // The network's wait where Resource Timing has it: a preloaded index was answered long before it was read.
    const waited = (answered ?? nowMs()) - asked;
    indexLine = { url: indexUrl, sample: { waitedMs: Math.min(waited, networkWaitMs(indexUrl) ?? waited) } };
    // Strict UTF-8: bytes that are not would become U+FFFD and another, legal path (SPEC preamble);
    // an answer that is a page instead (a single-page app's fallback) is named as such.
    index = parseFetchedIndexJson(await indexText(bytes, indexUrl), {
      url: indexUrl,
      contentType: headers.get('content-type'),
      ...limits,
    });
    loadsEndpoint = loadsEndpointOf(headers.get(LOADS_ENDPOINT_HEADER), indexUrl);
  } else {
    throw new InvalidOptionError('indexUrl', 'IndexedAssetSource.open needs indexUrl or index');
  }
  const base = indexUrl ?? baseUrl;
  checkIndexUrls(index, base, allowed);
  return {
    view: await IndexView.open(index, indexUrl, base),
    transport,
    pool,
    inWorkers: bodyFetcher !== undefined,
    options: { ...options, ...(fetch ? { fetch } : {}), cache: await cache, loadsEndpoint },
    ...(indexLine ? { indexLine } : {}),
  };
}

const strictUtf8 = /* @__PURE__ */ new TextDecoder('utf-8', { fatal: true });

/**
 * The index's text, as `decodeIndexText` (format/index-text.ts) decodes it: strict UTF-8. What
 * names the fields that hold bytes that are not UTF-8 is imported only for such an index; should
 * that import fail, the index is refused all the same, without the names.
 */
async function indexText(bytes: Uint8Array, url: string): Promise<string> {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    const { decodeIndexText } = await import('../../format/index-text.js').catch(() => ({
      decodeIndexText: (): never => {
        throw new IndexValidationError(['is not UTF-8'], { url });
      },
    }));
    return decodeIndexText(bytes, { url });
  }
}

function poolFor(workers: OpenOptions['hashWorkers']): DigestPool {
  if (workers === undefined) return sharedDigestPool();
  if (typeof workers !== 'number') return workers;
  return workers > 0 && workersAvailable() ? new WorkerDigestPool({ size: workers }) : new InThreadDigests();
}
