/**
 * The service worker's stand-in for the page's early index (core/read/open/early-index.ts): a
 * service worker has no document, so no preload link to ask for early; its sources ask for their
 * index when they open. webpack.config.cjs puts it in place of that module.
 */
import type { EarlyIndex } from '../../core/read/open/early-index.js';

/** No document: nothing to read. */
export function readMarkedIndexes(): void {}

/** Nothing was asked for early. */
export function takeEarlyIndex(): EarlyIndex | undefined {
  return undefined;
}
