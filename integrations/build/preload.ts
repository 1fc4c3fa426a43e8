/**
 * Preload at build: the links the plugins add to the built HTML so that the index
 * request, and the first load's bundle requests, start with the page instead of after the game's
 * JavaScript. `<link rel="preload" as="fetch" crossorigin>` matches the reader's own `fetch` of
 * the same URL (mode `cors`, credentials `same-origin`), so the browser hands it the preloaded
 * response; the reader streams a preloaded bundle on the page for that reason (a worker's fetch
 * would ask again).
 *
 * After the scripts: both plugins put the links at the end of the body, so the browser asks for
 * the page's own scripts first. The index and the bundles are of no use before the game's script
 * has run, and over HTTP/1.1 the requests found first take the connections the browser already
 * has open: links ahead of the script (the head's start, as first done) made a first load's bundle
 * take one of them and the script wait a new connection, one round trip more to the game's first
 * frame (bench/grouping.mjs measured it: BENCHMARKS.md, "Grouping").
 *
 * And a `<meta name="awake-bundle-preload">` in the head, before any script, that says so: a
 * reader opened by a blocking script waits for the page's parse only where that meta is (so that
 * it takes the links' responses rather than fetch their URLs a second time, core/read/open/page-preloads.ts
 * `documentParsed`); on a page without links it asks for its index at once.
 */
import { opaqueId } from '../../core/format/ids.js';
import { EARLY_INDEX_ATTRIBUTE, PRELOAD_MARKER_NAME } from '../../core/read/open/origins.js';
import type { BundledIndex } from '../../core/format/project-index.js';
import type { NamedLoad } from '../../core/publish/loads.js';

/**
 * The hrefs to preload, `prefix` (where the published folder is, as the page reaches it: `/published/`,
 * `./published/`) + the index, then the bundles (and loose files) that the first load of `loads`
 * reads, in the order it first reads them. With no loads, the index alone: which bundles a game
 * needs first is what a loads file says.
 */
export function preloadHrefs(index: BundledIndex, indexFile: string, prefix: string, loads: readonly NamedLoad[] | undefined): string[] {
  const hrefs = [prefix + indexFile];
  const first = loads?.[0];
  if (!first) return hrefs;
  const salt = index.pathIds?.salt;
  const byKey = new Map(index.files.map((file) => [(file.path ?? file.id)!, file]));
  const bundleUrl = new Map(index.bundles.map((bundle) => [bundle.sha256, bundle.url]));
  for (const path of first.paths) {
    const file = byKey.get(salt === undefined ? path : opaqueId(salt, path));
    const url = file?.bundle !== undefined ? bundleUrl.get(file.bundle) : file?.url;
    if (url !== undefined && !hrefs.includes(prefix + url)) hrefs.push(prefix + url);
  }
  return hrefs;
}

/**
 * The attributes of each href's `<link rel="preload" as="fetch" crossorigin>` (`crossorigin`: its
 * value, as the HTML tool spells it). The first href, the index, is marked `data-awkb-index`: the
 * adapters ask for that index as soon as the page is parsed, so that the game's open finds it in
 * and its first bundle requests go out before the engine's first frame (core/read/open/early-index.ts).
 */
export function preloadLinkAttributes(hrefs: readonly string[], crossorigin: string): Record<string, string>[] {
  return hrefs.map((href, i) => ({ rel: 'preload', as: 'fetch', crossorigin, href, ...(i === 0 ? { [EARLY_INDEX_ATTRIBUTE]: '' } : {}) }));
}

/** One `<link rel="preload" as="fetch" crossorigin>` as HTML text; `index`: the index's, marked (see preloadLinkAttributes). */
export function preloadLinkHtml(href: string, { index = false }: { index?: boolean } = {}): string {
  return `<link rel="preload" as="fetch" crossorigin href="${href.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}"${index ? ` ${EARLY_INDEX_ATTRIBUTE}` : ''}>`;
}

/** The head's `<meta>` that tells the reader preload links follow the page's scripts (see the header). */
export const PRELOAD_MARKER = { name: PRELOAD_MARKER_NAME, content: 'links-after-scripts' } as const;
