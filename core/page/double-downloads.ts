/**
 * Files a page downloads twice: code outside the engine's loader (three.js's `TextureLoader` or
 * `GLTFLoader` inside a Phaser game, a plain `fetch`, an `<img>`) that requests a URL the index
 * serves from a bundle downloads the file on its own, and the bundle brings it again. With the
 * service worker (`awake-bundle/sw`) installed such requests are answered from bundles; without
 * it, the adapters watch the page's requests (Resource Timing) and say so once per URL, at debug
 * level, naming the URL and its path. Browsers only: where `PerformanceObserver` cannot observe
 * `resource` entries, watching does nothing.
 */
import { absoluteUrl, projectPathOf } from './project-urls.js';

export interface DoubleDownloadsOptions {
  /** The folder URL that maps to the project root. */
  root: URL;
  /** Whether the index serves `path` from a bundle (a loose entry is one download either way). */
  inBundle: (path: string) => boolean;
  /** Where the line goes; default `console.debug`. */
  log?: (message: string) => void;
}

/** Starts watching the page's requests (those made before too); returns the function that stops. */
export function watchDoubleDownloads(options: DoubleDownloadsOptions): () => void {
  if (typeof PerformanceObserver === 'undefined' || !PerformanceObserver.supportedEntryTypes?.includes('resource')) return () => undefined;
  const told = new Set<string>();
  const log = options.log ?? ((message: string) => console.debug(message));
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries() as PerformanceResourceTiming[]) {
      const path = downloadedPath(entry, options);
      if (path === undefined || told.has(entry.name)) continue;
      told.add(entry.name);
      log(
        `awake-bundle: ${entry.name} was downloaded on its own, and its bundle holds it too (${path}): it downloads twice. ` +
          `Load it through the engine's loader or the source (source.url('${path}'), source.read), or install the service worker (awake-bundle/sw), which answers such requests from bundles`,
      );
    }
  });
  observer.observe({ type: 'resource', buffered: true });
  return () => observer.disconnect();
}

/** The index path a finished request downloaded from the network, when the index serves it from a bundle. */
function downloadedPath(entry: PerformanceResourceTiming, options: DoubleDownloadsOptions): string | undefined {
  // A service worker had the request (workerStart): awake-bundle's answers it from bundles.
  if (entry.workerStart > 0) return undefined;
  // Not downloaded: an error answer (where the browser says; 0 when it may not).
  const status = (entry as { responseStatus?: number }).responseStatus;
  if (status !== undefined && status >= 400) return undefined;
  const url = absoluteUrl(entry.name);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return undefined;
  const path = projectPathOf(url, options.root);
  return path !== undefined && options.inBundle(path) ? path : undefined;
}
