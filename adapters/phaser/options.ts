import type { ContentCache, IndexedAssetSource } from '../../core/internal.js';

/** Options of `this.load.awkbIndex(key, url, options)`, also the fields of its config-object and pack-file forms. */
export interface AwkbIndexOptions {
  /**
   * The URL that maps to the project root: a file URL below it reads the index path under it.
   * Resolved like any loader URL (the loader's `baseURL` and `path` apply). Default: the folder
   * that holds the index.
   */
  root?: string;
  /**
   * Paths, or folders (`levels/harbor`), to fetch with the index: the index file completes once
   * they are verified (their cache write goes on after), and their bytes count in the load's `awkbprogress`.
   * They stay held in memory until read (or `source.release(path)`).
   */
  prefetch?: string[];
  /** Where verified contents are kept: the persistent browser cache by default, `null` for none. */
  cache?: ContentCache | null;
  /**
   * Each file reads its own member with an HTTP range request instead of its whole bundle (no
   * byte progress then; the `prefetch` option still fetches whole bundles). With `source`, say
   * here whether that source reads ranges.
   */
  rangeReads?: boolean;
  /**
   * Needed bytes (on by default, see `OpenOptions.neededBytes`): each loader tick's files fetch only
   * their own members of a bundle, as ranges, where that costs less than the whole bundle. `false`
   * fetches whole bundles.
   */
  neededBytes?: boolean;
  /** The fetch for the index and bundles, e.g. `tokenAuthorizedFetch({ token })` (its token goes to the index's origin only). */
  fetch?: typeof fetch;
  /** Origins besides the index's that its bundles and files may be on, e.g. a CDN (see `OpenOptions.allowOrigins`). */
  allowOrigins?: readonly string[];
  /**
   * Added before the game's first frame (a first scene's `preload`), the index holds that frame
   * until it has opened and the files it serves have sent their requests, at most 500 ms, so that
   * the bundles are asked for before the engine's first render rather than after it (measured: a
   * 170–240 ms task in Chromium). A number: the most ms to hold it. `false`: the first frame runs
   * at once, as without the adapter. Default true (500 ms at most); a load later in the game never
   * holds a frame.
   */
  holdFirstFrame?: boolean | number;
  /** An already open source: no index request, and the game does not dispose it. */
  source?: IndexedAssetSource;
  /**
   * Warn (once per path) when a file below `root` that the index does not list loads loose while a
   * listed path is a slip away (`backgrond.png` for `background.png`, another letter case, the
   * same name in another folder), naming it. Default true; `false` for none.
   */
  warnNearMisses?: boolean;
}

export interface AwkbIndexFileConfig extends AwkbIndexOptions {
  key: string;
  url?: string;
}
