/**
 * `registerAwkb()`: opens (or adopts) an `IndexedAssetSource`, maps the URLs below its root to
 * project paths, and switches Babylon's request hooks on while at least one registration lives.
 * Everything that reads, verifies, caches or retries is the core reader's (SPEC §7); this file
 * only decides which URL is which path.
 */
import { AssetNotFoundError, InvalidOptionError, RequestAbortedError } from '../../core/errors.js';
import type { IndexedAssetSource, OpenOptions, PrefetchProgress } from '../../core/read/indexed-asset-source.js';
import { linkSignals } from '../../core/net/abort.js';
import { MountedSource, openMountedSource } from '../../core/page/mount.js';
import { importFirstLoadParts } from '../../core/read/open/open-source.js';
import { markAdapterCall } from '../../core/page/user-timing.js';
import { installHooks, removeHooks } from './hooks.js';
import {
  addLiveRegistration,
  anyRegistration,
  removeLiveRegistration,
  type AwkbReadOptions,
  type LiveRegistration,
} from './live-registrations.js';
import { absoluteUrl, asFolder, folderOf, pageBase, urlOfPath } from '../../core/page/project-urls.js';

export interface AwkbOptions extends Omit<OpenOptions, 'index' | 'baseUrl'> {
  /** Where verified contents are kept: `openBrowserCache()` (persistent) by default, as in the Phaser adapter; `null` for none. */
  cache?: OpenOptions['cache'];
  /** Where the project index is; with `source` instead, the source's own index. */
  indexUrl?: string;
  /** An open reader to serve from instead of opening one (the registration never disposes it). */
  source?: IndexedAssetSource;
  /** The URL that maps to the project root: `<root>/models/crate.glb` is `models/crate.glb`. Default: the folder that holds the index. */
  root?: string;
  /**
   * Paths or folders (`models/`, `levels/harbor`) to fetch and verify as one load, started as
   * `registerAwkb` resolves: the scene's own loads of them join its requests and take each file
   * as soon as it passed (so the engine parses the first model while the rest arrives, as it would
   * loose files). `registration.prefetched` settles when all of them are verified and held (their
   * cache write goes on after); `waitForPrefetch: true` makes `registerAwkb` wait for that instead.
   */
  prefetch?: Iterable<string>;
  /** Byte progress of that prefetch. */
  onPrefetchProgress?: (progress: PrefetchProgress) => void;
  /** Resolve `registerAwkb` only once the prefetch is verified and held (a loading screen that waits for every byte); default false. */
  waitForPrefetch?: boolean;
  /**
   * Warn (once per path) when a URL below `root` that the index does not list loads loose while a
   * listed path is a slip away (`CesiumMilkTruk.gltf` for `CesiumMilkTruck.gltf`, another letter
   * case, the same name in another folder), naming it. Default true; `false` for none.
   */
  warnNearMisses?: boolean;
}

/** A URL's place in one registration's index. */
export interface AwkbTarget {
  registration: AwkbRegistration;
  path: string;
  /** The absolute URL this path has below the root. */
  url: string;
}

// As the adapter is imported, while the game boots: the reader's lazily imported parts, and the
// index the built page preloads, are asked for now (open-source.ts).
// Asked for only as `registerAwkb` opened its source, the range reads' module came ~100 ms after
// the call on the example's page, and every bundle its first load took by ranges waited for it
// (traced).
importFirstLoadParts();

/** Registrations being opened or open, by what they serve, so registering twice gives the same one. */
const byKey = new Map<unknown, Promise<AwkbRegistration>>();

/** How long reads stay settled before the recorded loads are posted: a glTF's buffers follow its JSON within moments. */
const POST_AFTER_QUIET_MS = 200;

export class AwkbRegistration implements LiveRegistration {
  readonly source: IndexedAssetSource;
  /** The folder URL that maps to the project root. */
  readonly root: string;
  readonly #ownsSource: boolean;
  readonly #lifetime = new AbortController();
  /** Paths this registration made object URLs for (streaming sounds), to release. */
  readonly #objectUrls = new Map<string, string>();
  readonly #key: unknown;
  #disposed = false;
  /** The load reads are recorded under (`beginLoad`); undefined: the source's default, `"main"`. */
  #loadName: string | undefined;
  /** Reads in flight, and the timer that posts the recorded loads once they have settled. */
  #reading = 0;
  #postTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * Settles when the `prefetch` option's files are verified and held (at once without one);
   * rejects as that load failed. The engine's reads of those files do not wait for it: each
   * takes its file as soon as it passed, and one that failed is read again on its own.
   */
  prefetched: Promise<void> = Promise.resolve();
  /** @internal the source at its root (core/page/mount.ts): paths ↔ URLs, the wrong-root warning, the double-download watch */
  readonly mounted: MountedSource;

  /** @internal use `registerAwkb` */
  constructor(source: IndexedAssetSource, root: URL, ownsSource: boolean, key: unknown, warnNearMisses?: boolean) {
    this.source = source;
    this.root = root.href;
    this.#ownsSource = ownsSource;
    this.#key = key;
    const page = pageBase();
    const relativeTo = page === undefined ? undefined : absoluteUrl('./', page);
    this.mounted = new MountedSource(source, { root, owned: ownsSource, warnNearMisses, ...(relativeTo ? { relativeTo } : {}) });
  }

  /** @internal a URL loaded loose: the wrong-root and near-miss warnings (core/page/mount.ts) */
  noticeLoose(url: URL): void {
    this.mounted.noticeLoose(url);
  }

  /**
   * Names the load the reads from now on belong to (a level, a screen), until the next
   * `beginLoad`, for `source.recordedLoads()`; before any, reads go to `"main"`. When a
   * development server asked for the recorded loads, what was recorded so far is posted now.
   */
  beginLoad(name: string): void {
    if (typeof name !== 'string' || name === '')
      throw new InvalidOptionError('name', `beginLoad: the load's name must be a non-empty string, got ${JSON.stringify(name)}`);
    this.#loadName = name;
    void this.flushRecordedLoads();
  }

  /**
   * Posts the recorded loads now, when a development server asked for them (docs/build-plugins.md "Record
   * loads"); they are also posted once reads have settled for a moment, and on `beginLoad`.
   * Resolves with whether anything was posted.
   */
  flushRecordedLoads(): Promise<boolean> {
    if (this.#postTimer !== undefined) clearTimeout(this.#postTimer);
    this.#postTimer = undefined;
    return this.source.postRecordedLoads();
  }

  /** The project path that `url` (absolute, or relative to the page) maps to, when this index lists it. */
  pathOf(url: string): string | undefined {
    const absolute = absoluteUrl(url);
    return absolute && this.mounted.pathOf(absolute);
  }

  /** The URL that maps to a project path. */
  urlOf(path: string): string {
    return urlOfPath(path, this.mounted.root);
  }

  /**
   * The verified bytes of `path`, owned by the caller, with byte progress as its bytes arrive
   * (SPEC §7 "Streamed members"): one read, which joins its bundle's one request.
   */
  async read(path: string, options: AwkbReadOptions = {}): Promise<Uint8Array> {
    // linkSignals: AbortSignal.any where the browser has it (Safari 17.4+), listeners released otherwise.
    const { signal, release } = linkSignals([options.signal, this.#lifetime.signal]);
    this.#reading++;
    try {
      return await this.source.read(path, { signal, ...this.#named(), ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
    } catch (error) {
      throw this.#disposedWhileLoading(path, error, options.signal);
    } finally {
      release();
      this.#settled();
    }
  }

  /** An object URL of `path`'s verified bytes (for `<audio>` elements), kept until `dispose()`. */
  async objectUrl(path: string): Promise<string> {
    this.#reading++;
    try {
      const url = await this.source.url(path, { signal: this.#lifetime.signal, ...this.#named() });
      this.#objectUrls.set(path, url);
      return url;
    } catch (error) {
      throw this.#disposedWhileLoading(path, error);
    } finally {
      this.#settled();
    }
  }

  /**
   * A load that `dispose()` cut off fails with an error that says so, naming the file, and is
   * logged once: Babylon answers a failed texture with its fallback (a checkerboard) and logs
   * nothing, so a `dispose()` right after `new Texture(url)` would otherwise fail in silence.
   * Any other failure, and an abort by the load's own signal, is passed on as it is.
   */
  #disposedWhileLoading(path: string, error: unknown, signal?: AbortSignal): unknown {
    const aborted = error instanceof RequestAbortedError || (error as Error | undefined)?.name === 'AbortError';
    if (!aborted || !this.#lifetime.signal.aborted || signal?.aborted) return error;
    const index = this.source.indexUrl ?? this.root;
    const disposed = new RequestAbortedError(
      `${path}: the awkb registration of ${index} was disposed while it loaded; call dispose() once the loads that need it have finished`,
      { path, ...(this.source.indexUrl ? { url: this.source.indexUrl } : {}), cause: error },
    );
    console.error(`awake-bundle: ${disposed.message}`);
    return disposed;
  }

  #named(): { loadName?: string } {
    return this.#loadName === undefined ? {} : { loadName: this.#loadName };
  }

  /** A read settled: once none is in flight for a moment, the recorded loads are posted (when asked for). */
  #settled(): void {
    if (--this.#reading > 0 || this.source.loadsEndpoint === undefined || this.#disposed) return;
    if (this.#postTimer !== undefined) clearTimeout(this.#postTimer);
    this.#postTimer = setTimeout(() => {
      this.#postTimer = undefined;
      if (this.#reading === 0) void this.source.postRecordedLoads();
    }, POST_AFTER_QUIET_MS);
  }

  /** The object URL made for `path` already, if any: what a synchronous hook can hand out. */
  objectUrlInHand(path: string): string | undefined {
    return this.#objectUrls.get(path);
  }

  /** Aborts this registration's loads, revokes its object URLs, and removes Babylon hooks no registration needs any more. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    void this.flushRecordedLoads();
    this.#lifetime.abort(
      new RequestAbortedError(
        `the awkb registration of ${this.source.indexUrl ?? this.root} was disposed`,
        this.source.indexUrl ? { url: this.source.indexUrl } : {},
      ),
    );
    removeLiveRegistration(this);
    if (byKey.get(this.#key) !== undefined) byKey.delete(this.#key);
    if (!this.#ownsSource) for (const path of this.#objectUrls.keys()) this.source.release(path);
    this.mounted.unmount();
    this.#objectUrls.clear();
    if (!anyRegistration()) removeHooks();
  }
}

/**
 * Serves Babylon's loads of every URL below `root` from the index's verified bundles (SPEC §7),
 * and registers the `awkb` scene-loader plugin (`pluginExtension: '.awkb'`). Registering the same
 * index (or source) and root again while it is live resolves to the same registration.
 */
export async function registerAwkb(options: AwkbOptions): Promise<AwkbRegistration> {
  markAdapterCall('registerAwkb');
  const indexUrl = options.source
    ? options.source.indexUrl
    : options.indexUrl === undefined
      ? undefined
      : absoluteUrl(options.indexUrl)?.href;
  if (!options.source && indexUrl === undefined)
    throw new InvalidOptionError('indexUrl', 'registerAwkb needs indexUrl (an absolute URL, or one relative to the page) or source');
  const root = rootOf(options, indexUrl);
  const key = options.source ? options.source : `${indexUrl} ${root.href}`;
  const existing = byKey.get(key);
  if (existing) return existing;
  const opening = open(options, root, key);
  byKey.set(key, opening);
  opening.catch(() => {
    if (byKey.get(key) === opening) byKey.delete(key);
  });
  return opening;
}

async function open(options: AwkbOptions, root: URL, key: unknown): Promise<AwkbRegistration> {
  const { source: given, root: _root, prefetch, onPrefetchProgress, waitForPrefetch, cache, warnNearMisses, ...openOptions } = options;
  // The store opens while the reader fetches the index (a promise is awaited there).
  // The store opens a microtask later, once the index request is out (open sends it at once).
  const source = given ?? (await openMountedSource({ ...openOptions, ...(cache !== undefined ? { cache } : {}) }));
  const registration = new AwkbRegistration(source, root, !given, key, warnNearMisses);
  try {
    if (prefetch) {
      // A path the index does not list is the caller's mistake: refused before anything is fetched.
      const paths = prefetchPaths(source, [...prefetch]);
      // One load (SPEC §7 "Byte progress"); it claims its bundles as it is called, so the engine's
      // reads from now on join it. Settled once verified and held: not the cache write (a first visit's creates the store).
      registration.prefetched = source
        .load(paths, { waitForCache: false, ...(onPrefetchProgress ? { onProgress: onPrefetchProgress } : {}) })
        .then(() => undefined);
      // Looked at by whoever awaits it; a read of a file whose bundle failed meets the failure itself.
      registration.prefetched.catch(() => undefined);
      if (waitForPrefetch === true) await registration.prefetched;
    }
  } catch (error) {
    registration.dispose();
    throw error;
  }
  addLiveRegistration(registration);
  installHooks();
  return registration;
}

/** `prefetch` items as listed paths: each a listed path, else a folder of listed paths. */
function prefetchPaths(source: IndexedAssetSource, items: string[]): string[] {
  try {
    return source.expand(items);
  } catch (error) {
    if (error instanceof AssetNotFoundError) throw new AssetNotFoundError(error.path ?? '', source.indexUrl, `prefetch: ${error.message}`);
    throw error;
  }
}

function rootOf(options: AwkbOptions, indexUrl: string | undefined): URL {
  if (options.root !== undefined) {
    const root = absoluteUrl(options.root);
    if (!root)
      throw new InvalidOptionError(
        'root',
        `registerAwkb: root ${JSON.stringify(options.root)} is not a URL (and there is no page to resolve it against)`,
      );
    return asFolder(root);
  }
  const base = indexUrl ?? options.source?.resolveUrl('./');
  const absolute = base === undefined || base === './' ? undefined : absoluteUrl(base);
  if (!absolute)
    throw new InvalidOptionError(
      'root',
      'registerAwkb: give root, the URL that maps to the project root (the source has no index URL to take it from)',
    );
  return folderOf(absolute);
}
