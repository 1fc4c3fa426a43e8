/**
 * The service worker's stand-in for a page's preload links (core/read/open/page-preloads.ts): a
 * service worker has no document, so no links preloaded for `fetch` (the bundle fetcher's set is
 * empty, as the module's own is without a document), no parse to wait for before its index is
 * asked for, and no index asked for early (early-index.ts): its sources ask for their index when
 * they open, at once. webpack.config.cjs puts it in place of that module.
 */
import type { PageIndexAnswer } from '../../core/read/open/page-preloads.js';

/** No document: no preload links. */
export function preloadedFetchUrls(): Set<string> {
  return new Set();
}

/** No document: nothing to wait for, nothing asked early; the open asks for its index at once. */
export function indexFromPage(): Promise<PageIndexAnswer | undefined> | undefined {
  return undefined;
}
