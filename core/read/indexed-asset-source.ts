/**
 * IndexedAssetSource (SPEC §7): reads a published project through its index, hands out only
 * verified bytes, caches every member and loose file under its own SHA-256, and fetches each
 * bundle once however many of its members are read, at the same time or later; a member is
 * handed out as soon as its own bytes have passed ("Streamed members").
 *
 * A thin façade over parts, each a file with one job (shared/STYLE.md, after query-core): the
 * index view (index-view.ts), opening (open-source.ts), the origin policy (origins.ts), one read
 * as a bounded machine (file-read.ts, its steps in read-steps.ts), the load planner
 * (load-planner.ts), the loads (loads.ts) in their registry (load-registry.ts), the fetchers
 * (bundle-fetcher.ts, bundle-ranges.ts), prefetches (prefetch.ts), the verified cache
 * (verified-cache.ts) and the held members (pending-members.ts).
 */
import { AwakeError, RequestAbortedError } from '../errors.js';
import { entryKey, type ProjectIndex } from '../format/project-index.js';
import { mediaTypeOf } from '../format/media-types.js';
import { linkSignals } from '../net/abort.js';
import type { LoadsFile } from '../publish/loads.js';
import { BundleFetcher, importRangesModule } from './fetch/bundle-fetcher.js';
import { deltaReadSettings } from './plan/delta-ranges.js';
import type { DigestPool } from './workers/digest-pool.js';
import { runRead, typedAbort } from './load/file-read.js';
import type { Entry, IndexView } from './open/index-view.js';
import { LoadPlanner } from './plan/load-planner.js';
import { nextTurn } from './turns.js';
import { LoadRecorder } from './load/load-recorder.js';
import { LoadRegistry } from './load/load-registry.js';
import { hadAlready, LoadRunner } from './load/loads.js';
import { CacheLookups, LineEstimates, neededBytesSettings } from './plan/needed-bytes.js';
import { openSource, type Opened } from './open/open-source.js';
import {
  DEFAULT_PENDING_BYTES,
  type FileProgress,
  type LoadOptions,
  type OpenOptions,
  type PrefetchOptions,
  type ReadOptions,
  type SourceStats,
} from './options.js';
import { OriginCapabilities } from './open/origins.js';
import { ContentLedger } from './state/content-ledger.js';
import { Prefetcher, type PrefetchFile } from './load/prefetch.js';
import { ReadAhead } from './load/read-ahead.js';
import { rangeReadSettings } from './plan/range-reads.js';
import { readSteps } from './load/read-steps.js';
import type { SourceParts } from './state/source-parts.js';
import { VerifiedCache } from './state/verified-cache.js';

export * from './options.js';
export type { CacheErrorDetail } from './state/verified-cache.js';
export { DEFAULT_LOAD_NAME, LOADS_ENDPOINT_HEADER } from './load/load-names.js';
export { DEFAULT_RANGE_READS, type RangeReadOptions } from './plan/range-reads.js';
export { MAX_READ_RESTARTS, type ReadState } from './load/file-read.js';

/** How long the workers' cache writes wait at most for the page to be idle once its loads are over. */
const IDLE_WRITE_WAIT_MS = 1000;

/** How many of a load's items are looked up in one task (about 5 ms of a 100,000-file index's lookups). */
const ITEMS_PER_TURN = 8192;

export class IndexedAssetSource {
  readonly index: ProjectIndex;
  readonly indexUrl: string | undefined;
  readonly #view: IndexView;
  readonly #parts: SourceParts;
  readonly #loads: LoadRunner;
  readonly #prefetcher: Prefetcher;
  readonly #readAhead: ReadAhead | undefined;
  private readonly pool: DigestPool;
  readonly #ownsPool: boolean;
  readonly #objectUrls = new Map<string, string>();
  /** Aborted by `dispose`. */
  readonly #disposal = new AbortController();
  /** Aborts with the caller's `signal` or `dispose`, whichever comes first; no listener on the caller's signal where `AbortSignal.any` exists. */
  readonly #lifetime: { signal: AbortSignal; release: () => void };
  readonly #recorder: LoadRecorder;
  /**
   * Where the recorded loads go, when the index came from a development server that asked for
   * them (its `X-Awake-Bundle-Loads` header: the build plugins' `recordLoads` option); else undefined.
   */
  readonly loadsEndpoint: string | undefined;
  readonly #postFetch: typeof fetch;

  private constructor({ view, transport, pool, inWorkers, options, indexLine }: Opened) {
    this.#view = view;
    this.#recorder = new LoadRecorder(options.recordLoads !== false);
    this.loadsEndpoint = options.recordLoads === false ? undefined : options.loadsEndpoint;
    this.#postFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.index = view.index;
    this.indexUrl = view.indexUrl;
    this.pool = pool;
    this.#ownsPool = typeof options.hashWorkers === 'number';
    const rangeReads = rangeReadSettings(options.rangeReads);
    const pendingBytes = options.pendingBytes ?? DEFAULT_PENDING_BYTES;
    const cache = new VerifiedCache(options.cache ?? undefined, pool, options.onCacheError, (sha256) => view.contentEntry(sha256));
    // Delta reads only with a cache that can say what it holds without reading it (has, hasMany, or a worker's view).
    // How ranges of a bundle go (one multi-range request or one per range, the gaps): delta reads
    // and needed bytes both fetch by them.
    const deltaSettings = deltaReadSettings(options.deltaReads);
    const delta = cache.counts ? deltaSettings : undefined;
    // Needed bytes (SPEC §7) need no cache that counts: the load's own reads say what is needed.
    // They go by the ranges `deltaReads` tunes: `deltaReads: false` turns them off too (open-source.ts
    // refuses the two together where needed bytes were asked for by name).
    const needed = deltaSettings && neededBytesSettings(options.neededBytes);
    const lines = needed && new LineEstimates(needed);
    if (lines && indexLine) lines.observe(indexLine.url, indexLine.sample);
    const origins = new OriginCapabilities();
    const fetcher = new BundleFetcher(view, transport, pool, cache, origins, inWorkers, rangeReads, (bundleSha, sha256) =>
      hadAlready(this.#parts, bundleSha, sha256),
    );
    this.#lifetime = linkSignals([options.signal, this.#disposal.signal]);
    this.#parts = {
      view,
      cache,
      fetcher,
      planner: new LoadPlanner(view, cache, origins, { delta, ranges: deltaSettings }, rangeReads !== undefined, importRangesModule, lines),
      // The workers write the cache once this source's loads are done and the page is idle (the
      // engine then decodes and builds what the loads brought: the writes would compete with it
      // for the cores), or at once where a read waits for a write.
      registry: new LoadRegistry(
        this.#lifetime.signal,
        () => this.#flushWhenIdle(),
        () => this.#parts.flushWrites(),
      ),
      ledger: new ContentLedger(pendingBytes),
      lifetime: this.#lifetime.signal,
      pendingBytes,
      lookups: new CacheLookups(),
      lines,
      flushWhenIdle: () => this.#flushWhenIdle(),
      flushWrites: () => {
        this.pool.flushStores?.();
      },
    };
    this.#loads = new LoadRunner(this.#parts);
    this.#prefetcher = new Prefetcher(this.#parts, this.#loads);
    const prefetcher = this.#prefetcher;
    const readAhead = options.readAhead === false ? undefined : new ReadAhead(view, (paths) => void start(paths));
    const start = (paths: string[]) =>
      prefetcher
        .ahead(
          paths.map((path) => ({ path, entry: view.entry(path)! })),
          (path) => readAhead!.wanted(path),
        )
        .catch(() => undefined);
    this.#readAhead = readAhead;
    const store = cache.workerStore();
    if (store) this.pool.prepareStore?.(store);
  }

  /** A flush of the workers' cache writes asked for once the page is idle (at most `IDLE_WRITE_WAIT_MS` later). */
  #idleFlush = false;

  /**
   * Asks the workers for their cache writes once the page is idle: the last load ended, so the
   * engine is now decoding and building what came (a first scene); IndexedDB's work waits for that.
   */
  #flushWhenIdle(): void {
    if (!this.pool.flushStores || this.#idleFlush) return;
    this.#idleFlush = true;
    const flush = () => {
      this.#idleFlush = false;
      this.#parts.flushWrites();
    };
    if (typeof requestIdleCallback === 'function') requestIdleCallback(flush, { timeout: IDLE_WRITE_WAIT_MS });
    else setTimeout(flush, 0);
  }

  /** Reads and checks the index (formatVersion 2 or 3; others refused, SPEC §3). */
  static async open(options: OpenOptions): Promise<IndexedAssetSource> {
    return new IndexedAssetSource(await openSource(options));
  }

  /** Whether the index lists `path` (by its id when ids replace paths). */
  has(path: string): boolean {
    return this.#view.entry(path) !== undefined;
  }

  /** The index entry of `path`, if listed. */
  entry(path: string): Readonly<Entry> | undefined {
    return this.#view.entry(path);
  }

  /** Paths listed by the index; empty when opaque ids hide them. */
  paths(): string[] {
    return this.#view.paths();
  }

  /**
   * `items` as the paths `load` would bring: each a listed path, else a folder of listed paths;
   * an item that is neither throws `AssetNotFoundError` naming it.
   */
  expand(items: Iterable<string>): string[] {
    return this.#view.expand(items);
  }

  /**
   * The verified bytes of `path`: held from a fetch or prefetch of this source, from the cache,
   * from its bundle (fetched once however many reads need it, and handed out as soon as this
   * member's own bytes have passed), a range, or a loose file.
   *
   * The caller owns what it gets: a buffer no one else holds (`bytes.buffer` may be transferred,
   * detached or written), so two reads of one path never share bytes.
   */
  async read(path: string, options: ReadOptions = {}): Promise<Uint8Array> {
    const entry = this.#view.require(path);
    this.#recorder.record(options.loadName, [path]);
    this.#readAhead?.asking(path);
    const { signal, release } = this.#signalFor(options.signal);
    const steps = readSteps(this.#parts, this.#loads, {
      path,
      entry,
      pinned: this.#parts.ledger.asked.delete(entryKey(entry)),
      onProgress: options.onProgress,
    });
    try {
      const bytes = await runRead(steps, { path, id: entry.id }, signal);
      this.#readAhead?.handingOut(path, bytes);
      options.onProgress?.(entry.sizeBytes, entry.sizeBytes);
      return bytes;
    } catch (error) {
      steps.releasePin();
      throw naming(error, path, entry.id);
    } finally {
      steps.doneAsking();
      release();
    }
  }

  /** A `text` read, UTF-8. */
  async readText(path: string, options: ReadOptions = {}): Promise<string> {
    return new TextDecoder().decode(await this.read(path, options));
  }

  /** A JSON read. */
  async readJson<T = unknown>(path: string, options: ReadOptions = {}): Promise<T> {
    return JSON.parse(await this.readText(path, options)) as T;
  }

  /**
   * Brings what `items` need, as one load with byte progress (SPEC §7 "Byte progress"): each
   * item a path, or a folder (`levels/harbor`, `models/`) of paths, in a plain-path index. The
   * byte total is known at the first `onProgress` event and never changes; `onFileProgress` says
   * how far each file is. Resolves with the paths, once all of them are verified and held for
   * their reads (`keep`, default true) and written to the cache (with `waitForCache: false`, without
   * waiting for the write); each read of one of them gets its bytes as soon as they passed, without
   * waiting for the rest.
   */
  async load(items: Iterable<string>, options: LoadOptions = {}): Promise<string[]> {
    // A load of many paths looks them up in slices, each a task of its own, so that the event loop
    // (the game's frames, its input) is not held while a large index is gone through.
    const list = [...items];
    const files: PrefetchFile[] = [];
    const seen = new Set<string>();
    for (let at = 0; at < list.length; at += ITEMS_PER_TURN) {
      if (at > 0) await nextTurn();
      this.#view.files(list.slice(at, at + ITEMS_PER_TURN), files, seen);
    }
    const paths = files.map((file) => file.path);
    // The record keeps the array it is given: the caller gets a copy.
    if (options.waitForCache !== false) {
      await this.#bring(files, paths, options);
      return paths.slice();
    }
    // A file's progress reaches its size once its content arrived, verified and held (load-progress.ts
    // `fileBytesOf`). Past that, a failure is its reads' to meet (what the bundle brought is let go, SPEC §7).
    const waiting = new Set(paths);
    await new Promise<void>((resolve, reject) => {
      if (waiting.size === 0) resolve();
      const onFileProgress = (progress: FileProgress) => {
        options.onFileProgress?.(progress);
        if (progress.loadedBytes === progress.totalBytes && waiting.delete(progress.path) && waiting.size === 0) resolve();
      };
      this.#bring(files, paths, { ...options, onFileProgress }).then(resolve, reject);
    });
    return paths.slice();
  }

  /**
   * Brings what `paths` need: from the cache, else their bundles (one request each) and loose
   * files, verified (SPEC §7 "Prefetch"). Resolves once they are verified, held for their reads
   * (unless `keep: false`) and written to the cache; reads do not wait for that: a read started
   * during a prefetch joins its requests and gets its bytes as soon as they are verified.
   */
  async prefetch(paths: Iterable<string>, options: PrefetchOptions = {}): Promise<void> {
    const files = [...paths].map((path) => ({ path, entry: this.#view.require(path) }));
    await this.#bring(
      files,
      files.map((file) => file.path),
      options,
    );
  }

  /** A prefetch of `files` (their `paths`, which the record keeps), recorded under its load name. */
  async #bring(files: PrefetchFile[], paths: string[], options: PrefetchOptions): Promise<void> {
    this.#recorder.record(options.loadName, paths);
    await this.#prefetching(files, options, options.signal);
  }

  /**
   * After an update: brings the new contents of the files that changed since `previous` (an
   * earlier version of this project's index) and whose earlier contents the cache holds, so that
   * what a returning player downloaded before is ready, offline too. Files new in this version and
   * files never loaded wait for their first read, as do changed files whose new contents are
   * cached already. Fetched as any prefetch is (one request per bundle, delta ranges) into the
   * cache, not held in memory. Resolves with the number of files brought; without a cache, or
   * when the cache cannot say what it holds, none.
   */
  async prefetchChanged(previous: ProjectIndex, options: Omit<PrefetchOptions, 'keep'> = {}): Promise<number> {
    if (!this.#parts.cache.enabled) return 0;
    const wanted = await this.#prefetcher.changedSince(previous);
    if (wanted.length > 0) await this.#prefetching(wanted, { ...options, keep: false }, options.signal);
    return wanted.length;
  }

  /** A prefetch under its signal and the source's lifetime; an abort by the caller is `RequestAbortedError`. */
  async #prefetching(files: PrefetchFile[], options: PrefetchOptions, callerSignal: AbortSignal | undefined): Promise<void> {
    const { signal, release } = this.#signalFor(callerSignal);
    try {
      await this.#prefetcher.prefetch(files, options, signal);
    } catch (error) {
      throw typedAbort(error, signal, { path: files[0]?.path ?? '(prefetch)' });
    } finally {
      release();
    }
  }

  /** Prefetches every file below a folder: `prefix` like `levels/harbor` (plain-path indexes only). */
  async prefetchFolder(prefix: string, options: PrefetchOptions = {}): Promise<string[]> {
    const paths = this.#view.pathsBelow(prefix);
    await this.prefetch(paths, options);
    return paths;
  }

  /**
   * An object URL of the verified bytes, for engines that want a URL. The same URL is handed out
   * until `release(path)` or `dispose()` revokes it; its Blob holds a copy of its own, so nothing
   * a caller does to the bytes of a read changes what the URL serves.
   */
  async url(path: string, options: ReadOptions & { type?: string } = {}): Promise<string> {
    const existing = this.#objectUrls.get(path);
    if (existing) return existing;
    const bytes = await this.read(path, options);
    const again = this.#objectUrls.get(path);
    if (again) return again;
    const url = URL.createObjectURL(new Blob([bytes as Uint8Array<ArrayBuffer>], { type: options.type ?? mediaTypeOf(path) }));
    this.#objectUrls.set(path, url);
    return url;
  }

  /** Revokes the object URL made for `path`, if any, and lets go of bytes a prefetch held for it unread. */
  release(path: string): void {
    const url = this.#objectUrls.get(path);
    if (url) {
      URL.revokeObjectURL(url);
      this.#objectUrls.delete(path);
    }
    const entry = this.#view.entry(path);
    if (entry && this.#parts.ledger.asked.delete(entryKey(entry))) this.#parts.ledger.held.unpin(entry.sha256);
  }

  /** Aborts requests in flight, revokes every object URL and drops members held in memory. */
  dispose(): void {
    this.#disposal.abort(new RequestAbortedError('the IndexedAssetSource was disposed', this.indexUrl ? { url: this.indexUrl } : {}));
    this.#lifetime.release();
    for (const path of [...this.#objectUrls.keys()]) this.release(path);
    this.#parts.ledger.clear();
    this.pool.flushStores?.();
    if (this.#ownsPool) this.pool.terminate();
  }

  /**
   * The loads this source was asked for, as the loads file's JSON (`awkb-loads.json`, SPEC §6):
   * each load name (`loadName` of a read, load or prefetch; `"main"` without one) with the paths
   * it asked for, loads and paths in order of first use. Empty with `recordLoads: false`.
   */
  recordedLoads(): LoadsFile {
    return this.#recorder.loadsFile();
  }

  /**
   * Posts `recordedLoads()` to the development server that asked for them (`loadsEndpoint`), when
   * something was recorded since the last post: `fetch(…, { method: 'POST', keepalive: true })`.
   * Resolves with whether it posted; without an ask (a published index) it does nothing. A failed
   * post is one console warning, never an exception. The adapters call it after each load.
   */
  postRecordedLoads(): Promise<boolean> {
    return this.loadsEndpoint === undefined ? Promise.resolve(false) : this.#recorder.post(this.loadsEndpoint, this.#postFetch);
  }

  /** What this source holds in memory now: for monitoring, and for tests that check memory stays bounded. */
  stats(): SourceStats {
    return {
      heldBytes: this.#parts.ledger.held.sizeBytes,
      protectedBytes: this.#parts.ledger.held.protectedBytes,
      loadsInFlight: this.#parts.registry.size,
      loadBytesInFlight: this.#parts.registry.bytesInFlight(),
    };
  }

  /**
   * Resolves when every cache write of what was read or fetched so far has settled (written, or
   * reported to `onCacheError`), the loads in flight included: a bundle's members are cached once
   * it has passed whole, after the reads that got them early (SPEC §7 "Streamed members"). Reads
   * never wait for the cache; call this before a page may go away right after a load, or in tests.
   */
  async whenStored(): Promise<void> {
    await this.#parts.registry.settled();
    // Asked for: the writes go now, not when the page is next idle.
    this.#parts.flushWrites();
    await this.#parts.cache.whenStored();
  }

  /** Absolute URL of an index-relative URL. */
  resolveUrl(url: string): string {
    return this.#view.resolveUrl(url);
  }

  /** A read's or prefetch's signal: its own and the source's lifetime; `release` when it settles. */
  #signalFor(signal: AbortSignal | undefined): { signal: AbortSignal; release: () => void } {
    if (this.#lifetime.signal.aborted)
      throw new RequestAbortedError('the IndexedAssetSource was disposed', this.indexUrl ? { url: this.indexUrl } : {});
    return signal ? linkSignals([signal, this.#lifetime.signal]) : { signal: this.#lifetime.signal, release: () => undefined };
  }
}

/**
 * Adds the path (and id) a read was for to an error that does not name one yet, such as the
 * HTTP error of the bundle it needed, so every error says what it concerns (SPEC §7 "Errors").
 */
function naming(error: unknown, path: string, id: string | undefined): unknown {
  if (error instanceof AwakeError && error.path === undefined) {
    const target = error as { -readonly [K in 'path' | 'id']?: string };
    target.path = path;
    if (id !== undefined && error.id === undefined) target.id = id;
  }
  return error;
}
