/**
 * Choosing a browser cache (SPEC §7 "Cache"): `openBrowserCache()` opens the first backend that
 * works here, behind a `FallbackCache`. IndexedDB's class is in browser.ts; the other backends
 * (browser-stores.ts) are imported only when IndexedDB is not the one.
 */
import { FallbackCache, IndexedDBCache, type BrowserCacheBackend, type BrowserCacheOptions, type FallbackCacheOptions } from './browser.js';
import type { BrowserStorageCache } from './browser-stores.js';
import { MemoryCache } from './memory.js';

export type { BrowserStorageCache } from './browser-stores.js';

export interface OpenBrowserCacheOptions extends BrowserCacheOptions {
  /** Backends to try, in order; the first that opens is used. `BROWSER_CACHE_PREFERENCE` unless given. */
  backends?: readonly BrowserCacheBackend[];
  /** The in-memory fallback's size; 64 MiB unless given. */
  memoryMaxBytes?: number;
  onError?: FallbackCacheOptions<BrowserStorageCache>['onError'];
}

/**
 * Fastest first, as measured in Chromium by `npm run bench:browser-cache` (BENCHMARKS.md,
 * "Browser cache"). On 200 MB of 4 KB–4 MB entries the three are within ~20% of each other and
 * trade places between runs, IndexedDB reading fastest; on 4–64 KB entries IndexedDB does about
 * twice the puts and gets per second of Cache Storage and three times those of OPFS.
 */
export const BROWSER_CACHE_PREFERENCE: readonly BrowserCacheBackend[] = ['indexeddb', 'cache-storage', 'opfs'];

/**
 * The persistent cache to use here: the first backend in `backends` that opens, behind a
 * `FallbackCache` (so a full quota never fails a load). Where none opens (an old browser, a
 * locked-down private mode) the cache lives in memory only; `cache.primary` is then undefined.
 * IndexedDB on a first visit is used before it has opened (`IndexedDBCache.start`); if its open
 * then fails, the next backends are tried as here, and the writes made meanwhile go to the one
 * that opens (`FallbackCacheOptions.choosing`).
 */
export async function openBrowserCache(options: OpenBrowserCacheOptions = {}): Promise<FallbackCache<BrowserStorageCache>> {
  const memory = new MemoryCache(options.memoryMaxBytes === undefined ? {} : { maxBytes: options.memoryMaxBytes });
  return new FallbackCache({
    memory,
    onError: options.onError,
    ...(await firstOpening(options.backends ?? BROWSER_CACHE_PREFERENCE, options)),
  });
}

/** The first of `backends` that opens, or is opening (IndexedDB on a first visit: then `choosing` is the one to use once that open settles). */
async function firstOpening(
  backends: readonly BrowserCacheBackend[],
  options: OpenBrowserCacheOptions,
): Promise<{ primary?: BrowserStorageCache; choosing?: Promise<BrowserStorageCache | undefined> }> {
  for (const [i, backend] of backends.entries()) {
    try {
      // The other backends are imported only when IndexedDB is not the one: most pages never need them.
      const primary =
        backend === 'indexeddb' ? new IndexedDBCache(options) : (await import('./browser-stores.js')).createBrowserCache(backend, options);
      const started = await (primary instanceof IndexedDBCache ? primary.start() : primary.open().then(() => undefined));
      const choosing = started?.opening.then(
        () => primary,
        async (error: unknown) => {
          options.onError?.(error, 'open');
          const next = await firstOpening(backends.slice(i + 1), options);
          return next.choosing ?? next.primary;
        },
      );
      return { primary, ...(choosing ? { choosing } : {}) };
    } catch (error) {
      options.onError?.(error, 'open');
    }
  }
  return {};
}
