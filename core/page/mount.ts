/**
 * A source mounted on a page at a root URL: what every adapter does with the source it serves an
 * engine's loads from. The URL an engine asks for maps to the project path below the root (and
 * back); files that load loose although the index lists their URLs' tails are told of once, with
 * the root that would serve them (`MisrootedFiles`); the page's own downloads of files a bundle
 * holds are told of (`watchDoubleDownloads`); and a source the adapter opened is disposed with the
 * mount. `openMountedSource` opens one with the adapters' default cache. (Back from a path to its
 * URL is `urlOfPath`, project-urls.ts, for the adapters that need it.)
 */
import { openBrowserCache } from '../cache/open-browser-cache.js';
import type { ContentCache } from '../cache/content-cache.js';
import { IndexedAssetSource } from '../read/indexed-asset-source.js';
import type { OpenOptions } from '../read/options.js';
import { watchDoubleDownloads } from './double-downloads.js';
import { NearMisses } from './near-misses.js';
import { MisrootedFiles, projectPathOf } from './project-urls.js';

/**
 * Opens a source for an adapter: `cache` undefined means the persistent browser cache
 * (`openBrowserCache()`), opened a microtask later, once the index request is out (open sends it
 * at once; the reader awaits the store while it fetches the index); `null` means none.
 */
export function openMountedSource(
  options: OpenOptions & { cache?: ContentCache | null | Promise<ContentCache | null | undefined> },
): Promise<IndexedAssetSource> {
  const { cache } = options;
  return IndexedAssetSource.open({ ...options, cache: cache === undefined ? Promise.resolve().then(() => openBrowserCache()) : cache });
}

export interface MountOptions {
  /** The folder URL that maps to the project root. */
  root: URL;
  /** Disposed with the mount (the adapter opened it), or left to its owner. */
  owned: boolean;
  /** What a relative `root` in the wrong-root warning is relative to (the loader's path, the page). */
  relativeTo?: URL;
  /** Warn of loose files below the root whose paths are near listed ones (`NearMisses`); default true. */
  warnNearMisses?: boolean | undefined;
}

export class MountedSource {
  readonly source: IndexedAssetSource;
  /** The folder URL that maps to the project root. */
  readonly root: URL;
  /** Disposed with the mount. */
  readonly owned: boolean;
  /** Warns once when loose files' URLs would be index paths below another root. */
  readonly misrooted: MisrootedFiles;
  /** Warns once per path of a loose file below the root whose path is a slip from a listed one. */
  readonly #nearMisses: NearMisses | undefined;
  readonly #stopWatching: () => void;

  constructor(source: IndexedAssetSource, { root, owned, relativeTo, warnNearMisses }: MountOptions) {
    this.source = source;
    this.root = root;
    this.owned = owned;
    this.misrooted = new MisrootedFiles({
      root,
      has: (path) => source.has(path),
      ...(source.indexUrl ? { indexUrl: source.indexUrl } : {}),
      ...(relativeTo ? { relativeTo } : {}),
    });
    this.#nearMisses =
      warnNearMisses === false
        ? undefined
        : new NearMisses({
            root,
            has: (path) => source.has(path),
            paths: () => source.paths(),
            ...(source.indexUrl ? { indexUrl: source.indexUrl } : {}),
          });
    this.#stopWatching = watchDoubleDownloads({ root, inBundle: (path) => source.entry(path)?.bundle !== undefined });
  }

  /** The listed project path that `url` maps to below the root, if any. */
  pathOf(url: URL): string | undefined {
    const path = projectPathOf(url, this.root);
    return path !== undefined && this.source.has(path) ? path : undefined;
  }

  /**
   * A file at `url` loads loose: warns (once) of a root that would serve it from bundles, or (once
   * per path) of the listed path a path below the root is a slip from.
   */
  noticeLoose(url: URL): void {
    this.misrooted.notice(url);
    this.#nearMisses?.notice(url);
  }

  /** Stops watching the page's downloads; disposes the source when the adapter opened it. */
  unmount(): void {
    this.#stopWatching();
    if (this.owned) this.source.dispose();
  }
}
