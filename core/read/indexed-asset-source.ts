/**
 * IndexedAssetSource (SPEC §7): reads a published project through its index, hands out only
 * verified bytes, caches every member and loose file under its own SHA-256, and fetches each
 * bundle once however many of its members are read, at the same time or later; a member is
 * handed out as soon as its own bytes have passed ("Streamed members").
 *
 * A thin façade over parts, each a file with one job: the index view (index-view.ts), the origin
 * policy (origins.ts), the load registry (load-registry.ts), the bundle fetcher
 * (bundle-fetcher.ts), the verified cache (verified-cache.ts) and the held members
 * (pending-members.ts). This file decides where each read's bytes come from.
 */
import type { ContentCache } from '../cache/content-cache.js';
import {
  AwakeError,
  BundleIntegrityError,
  IndexTooLargeError,
  IndexValidationError,
  InvalidOptionError,
  RequestAbortedError,
  ResponseSizeError,
} from '../errors.js';
import { entryKey, parseFetchedIndexJson, parseProjectIndex, parseProjectIndexJson, type ProjectIndex } from '../format/project-index.js';
import { mediaTypeOf } from '../format/media-types.js';
import { abortable, linkSignals } from '../net/abort.js';
import { bindTokenOrigin, needsTokenOrigin } from '../net/token-fetch.js';
import { checkedSize, Transport, type RetryOptions } from '../net/transport.js';
import { BundleFetcher, type Accepted, type FetchCallbacks } from './bundle-fetcher.js';
import { deltaReadSettings, type DeltaReadOptions } from './delta-ranges.js';
import { InThreadDigests, sharedDigestPool, WorkerDigestPool, workersAvailable, type DigestPool } from './digest-pool.js';
import { IndexView, pushTo, type Entry } from './index-view.js';
import type { LoadsFile } from '../publish/loads.js';
import { LoadRecorder, loadsEndpointOf, LOADS_ENDPOINT_HEADER } from './load-recorder.js';
import { ByteBudget, LoadRegistry, type Load } from './load-registry.js';
import { fileBytesOf, PrefetchReport } from './load-progress.js';
import {
  absoluteUrl,
  allowedOrigins,
  checkIndexUrls,
  documentParsed,
  httpUrl,
  OriginCapabilities,
  pageHref,
  tokenOrigin,
} from './origins.js';
import { HeldMembers } from './pending-members.js';
import { rangeReadSettings, type RangeReadOptions } from './range-reads.js';
import { VerifiedCache, type CacheErrorDetail } from './verified-cache.js';

export type { CacheErrorDetail } from './verified-cache.js';
export { DEFAULT_LOAD_NAME, LOADS_ENDPOINT_HEADER } from './load-recorder.js';
export { DEFAULT_RANGE_READS, type RangeReadOptions } from './range-reads.js';

export const DEFAULT_PENDING_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_INDEX_BYTES = 64 * 1024 * 1024;
/** `indexTimeoutMs`'s default: 15 s of silence (no headers, then no body bytes) ends an attempt at the index. */
export const DEFAULT_INDEX_TIMEOUT_MS = 15_000;
/** `indexAttempts`'s default: two, so a host that never answers fails `open` in about 30 s. */
export const DEFAULT_INDEX_ATTEMPTS = 2;

export interface OpenOptions {
  /** Where the index is; bundle and file URLs resolve against it. */
  indexUrl?: string;
  /** An index object (or JSON text) instead of fetching one; give `indexUrl` or `baseUrl` for its URLs. */
  index?: ProjectIndex | unknown;
  /** Base for the index's relative URLs when `index` is given without `indexUrl`. */
  baseUrl?: string;
  /**
   * The most bytes of index `open` reads from `indexUrl` (default 64 MiB). Past it, by its
   * Content-Length or by the bytes that arrived, reading stops and `open` fails with
   * `IndexTooLargeError` (`E_INDEX_TOO_LARGE`), not retried. Why a limit: nothing lists the
   * index's size, so without one a broken or hostile server could feed the page an endless body.
   * Why 64 MiB: an entry takes about 300 bytes of JSON, so that is some 200 000 files, well past
   * real projects, while its text and parsed objects still fit a phone's memory; it also stays far
   * below the longest string JavaScript can hold (about 512 MiB), where decoding would fail with a
   * plain `Error`. Raise it for a larger index.
   */
  maxIndexBytes?: number;
  /**
   * The fetch to use: a `tokenAuthorizedFetch`, a test server's, … Default the global fetch. A
   * `tokenAuthorizedFetch` made without `origin` is bound here, before any request, to the index
   * URL's origin, else the `baseUrl`'s (with neither: `TokenOriginError`); see `bindTokenOrigin`.
   */
  fetch?: typeof fetch;
  /**
   * Origins besides the index's (the index URL's, else the `baseUrl`'s, else the page's) that the
   * index may name bundles and files on, such as a CDN: `['https://cdn.example.com']`. Default
   * none. A URL elsewhere, or not http(s) (`file:`, `data:`, `javascript:`…), fails `open` with
   * `OriginNotAllowedError` before any request for it.
   */
  allowOrigins?: readonly string[];
  /**
   * Where verified contents are kept by SHA-256; none by default. A promise (such as
   * `openBrowserCache()` not awaited) is awaited while the index is fetched, so opening the
   * store costs the load no time of its own.
   */
  cache?: ContentCache | null | Promise<ContentCache | null | undefined>;
  /**
   * Read one uncached member with an HTTP range request instead of its whole bundle (SPEC §7
   * "Range reads"), checked alone. `true` or an object tuning it (see `RangeReadOptions`): at most
   * `maxRequestsPerOrigin` range requests in flight per origin (default 6), the other reads
   * waiting; members of one bundle read together and at most `maxGapBytes` apart (default 64 KiB)
   * share one request of at most `maxRequestBytes` (default 4 MiB). Default off.
   */
  rangeReads?: boolean | RangeReadOptions;
  /**
   * Delta downloads (on by default; needs a `cache` with `has` or `hasMany`): when a bundle is needed and the cache
   * already holds some of its members (from an earlier version of the project), fetch only the
   * missing members with `Range` requests, each member verified alone: all of a bundle's ranges
   * in one request (`multipart/byteranges`) where the origin serves that, else one request per
   * range. `false` turns it off; an object tunes it (see `DeltaReadOptions`: `multipartRanges`
   * true, `maxRangesPerRequest` 64, `multipartGapBytes` 512; for one request per range
   * `maxGapBytes` 64 KiB, `maxRangesPerBundle` 4; `maxMissingFraction` 0.5). Whole bundles are
   * fetched when the ranges would bring more than that fraction, and on an origin that answered a
   * single range with the whole file (200).
   */
  deltaReads?: boolean | DeltaReadOptions;
  /**
   * Bytes of fetched contents that no read has asked for yet, kept in memory for the reads to
   * come (default 64 MiB; the oldest leave first). Contents a prefetch asked for are kept until
   * read whatever this says. See docs/reader.md "Memory, prefetch and the cache".
   */
  pendingBytes?: number;
  /**
   * Where bytes are hashed, and bodies read: a number of Web Workers (0: on this thread), or a
   * `DigestPool` of your own. Default: a pool shared by every source on the page, min(4, cores)
   * workers, or this thread where workers cannot run (Node, a CSP without `worker-src blob:`).
   * Bodies are read in the workers only with the platform's fetch (no `fetch` option given).
   */
  hashWorkers?: number | DigestPool;
  /** Told of every cache failure (a full quota, a failing store); the load goes on without the cache. Default: one `console.warn` per source (a broken cache fails every write: the log is not flooded). */
  onCacheError?: (error: unknown, detail: CacheErrorDetail) => void;
  /**
   * Retries of bundle and file requests (SPEC §7 "Retries"): `attempts` (default 4), `baseDelayMs`
   * (250), `maxDelayMs` (30 000), `maxTotalWaitMs` (none). The index has its own `indexAttempts`.
   */
  retry?: RetryOptions;
  /**
   * How long one bundle or file request may go quiet, in ms: no headers, or no body bytes
   * (default 30 000; 0 = none). See `TransportOptions.timeoutMs`. A host that accepts and never
   * answers fails a read after `retry.attempts` × this plus the waits between (by default 4 × 30 s
   * + at most 1.75 s ≈ 122 s). The index has its own `indexTimeoutMs`.
   */
  timeoutMs?: number;
  /**
   * How long one attempt at the index may go quiet, in ms: no headers, then no body bytes
   * (default 15 000; 0 = none). A game's start waits on the index, so it gets a shorter limit
   * than bundles (`timeoutMs`), which may be large and come from a busy CDN.
   */
  indexTimeoutMs?: number;
  /**
   * Attempts at the index, the first included (default 2; at most `retry.attempts`). With the
   * defaults, a host that accepts and never answers fails `open` with `RequestTimeoutError`
   * (`E_TIMEOUT`, `attempts: 2`) after 2 × 15 s plus one wait of at most 250 ms: about 30 s.
   */
  indexAttempts?: number;
  /** Aborts opening, and every request of this source when it fires later. Holds no listener on it (see `dispose`). */
  signal?: AbortSignal;
  /** A transport of your own (tests, custom retry policies); `fetch`, `retry`, `timeoutMs` are then ignored. */
  transport?: Transport;
  /**
   * Record, per load name, the paths this source is asked to read, load or prefetch (default
   * true; a Set per load): `recordedLoads()` gives them as the loads file (`awkb-loads.json`,
   * SPEC §6) that groups each load's files into bundles of their own. `false` records nothing.
   */
  recordLoads?: boolean;
}

/** Byte progress of one file: `loadedBytes` of its own `totalBytes` (its size). */
export interface FileProgress {
  path: string;
  loadedBytes: number;
  totalBytes: number;
}

export interface ReadOptions {
  signal?: AbortSignal;
  /**
   * The load (a scene, level or screen) this read belongs to, for `recordedLoads()`; default
   * `"main"` (`DEFAULT_LOAD_NAME`). The Phaser adapter names each scene's reads by its key, the
   * Babylon adapter by `registration.beginLoad(name)`.
   */
  loadName?: string;
  /**
   * Bytes of this file received so far, and its size, as they arrive (for a member of a bundle
   * being streamed: the part of the bundle's body that holds it). Called at least once, with
   * `loadedBytes === totalBytes`, before the read resolves.
   */
  onProgress?: (loadedBytes: number, totalBytes: number) => void;
}

export interface PrefetchProgress {
  /** Bytes received so far, over every request of this prefetch. */
  loadedBytes: number;
  /**
   * Bytes this prefetch downloads in all (bundles and loose files it does not skip; for a delta
   * load, its ranges): known from the first event, and the same at every event (SPEC §7 "Byte progress").
   */
  totalBytes: number;
  /** Requests finished, and to make. */
  requestsDone: number;
  requestsTotal: number;
}

export interface PrefetchOptions {
  signal?: AbortSignal;
  /** The load these paths belong to, for `recordedLoads()`; default `"main"` (see `ReadOptions.loadName`). */
  loadName?: string;
  /** Byte progress of the whole prefetch, as bytes arrive; the last event has `loadedBytes === totalBytes`. */
  onProgress?: (progress: PrefetchProgress) => void;
  /** Byte progress of each file, as its bytes arrive; every file ends with `loadedBytes === totalBytes`. */
  onFileProgress?: (progress: FileProgress) => void;
  /**
   * Keep what this prefetch brings in memory until each file is read (default true). With a
   * cache, `false` only fills the cache: use it to warm the cache for later without holding
   * memory; the bundles then come a few at a time, within `pendingBytes` of bodies in flight.
   */
  keep?: boolean;
}

/** `load`'s options: those of `prefetch`. */
export type LoadOptions = PrefetchOptions;

/** What a source holds in memory now (see `IndexedAssetSource.stats`). */
export interface SourceStats {
  /** Bytes of verified contents held for reads to come. */
  heldBytes: number;
  /** Of those, bytes a prefetch asked for or a read is waiting for: kept past `pendingBytes` until taken. */
  protectedBytes: number;
  /** Bundle and loose-file requests in flight. */
  loadsInFlight: number;
  /** Their sizes together (a delta load's: its ranges'): the bodies that may be in memory on their way in. */
  loadBytesInFlight: number;
}

export class IndexedAssetSource {
  readonly index: ProjectIndex;
  readonly indexUrl: string | undefined;
  readonly #view: IndexView;
  readonly #cache: VerifiedCache;
  readonly #fetcher: BundleFetcher;
  readonly #registry: LoadRegistry;
  readonly #held: HeldMembers;
  private readonly pool: DigestPool;
  readonly #ownsPool: boolean;
  readonly #rangeReads: boolean;
  readonly #pendingBytes: number;
  /** Keys of files a prefetch asked for that have not been read (or released) since. */
  readonly #asked = new Set<string>();
  readonly #objectUrls = new Map<string, string>();
  /** Aborted by `dispose`. */
  readonly #disposal = new AbortController();
  /** Aborts with the caller's `signal` or `dispose`, whichever comes first; no listener on the caller's signal where `AbortSignal.any` exists. */
  readonly #lifetime: { signal: AbortSignal; release: () => void };
  /** Groups whose source (cache or network) a prefetch is deciding, by load key. */
  readonly #deciding = new Map<string, Promise<void>>();
  readonly #recorder: LoadRecorder;
  /**
   * Where the recorded loads go, when the index came from a development server that asked for
   * them (its `X-Awake-Bundle-Loads` header: the build plugins' `recordLoads` option); else undefined.
   */
  readonly loadsEndpoint: string | undefined;
  readonly #postFetch: typeof fetch;

  private constructor(
    view: IndexView,
    transport: Transport,
    pool: DigestPool,
    inWorkers: boolean,
    options: OpenOptions & { cache: ContentCache | null | undefined; loadsEndpoint: string | undefined },
  ) {
    this.#view = view;
    this.#recorder = new LoadRecorder(options.recordLoads !== false);
    this.loadsEndpoint = options.recordLoads === false ? undefined : options.loadsEndpoint;
    this.#postFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.index = view.index;
    this.indexUrl = view.indexUrl;
    this.pool = pool;
    this.#ownsPool = typeof options.hashWorkers === 'number';
    const ranges = rangeReadSettings(options.rangeReads);
    this.#rangeReads = ranges !== undefined;
    this.#pendingBytes = options.pendingBytes ?? DEFAULT_PENDING_BYTES;
    this.#held = new HeldMembers(this.#pendingBytes);
    this.#cache = new VerifiedCache(options.cache ?? undefined, pool, options.onCacheError, (sha256) => view.contentEntry(sha256));
    // Delta reads only with a cache that can say what it holds without reading it (has, hasMany, or a worker's view).
    const delta = this.#cache.counts ? deltaReadSettings(options.deltaReads) : undefined;
    this.#fetcher = new BundleFetcher(view, transport, pool, this.#cache, new OriginCapabilities(), delta, inWorkers, ranges);
    this.#lifetime = linkSignals([options.signal, this.#disposal.signal]);
    // The workers write the cache once this source's loads are done (see flushStores).
    this.#registry = new LoadRegistry(this.#lifetime.signal, () => {
      if (this.pool instanceof WorkerDigestPool) this.pool.flushStores();
    });
    const store = this.#cache.workerStore();
    if (store) (this.pool as WorkerDigestPool).prepareStore(store);
  }

  /** Reads and checks the index (formatVersion 2 or 3; others refused, SPEC §3). */
  static async open(options: OpenOptions): Promise<IndexedAssetSource> {
    const indexUrl = options.indexUrl === undefined ? undefined : httpUrl(absoluteUrl(options.indexUrl), 'indexUrl');
    const baseUrl = options.baseUrl === undefined ? undefined : httpUrl(absoluteUrl(options.baseUrl, 'baseUrl'), 'baseUrl');
    const allowed = allowedOrigins(indexUrl ?? baseUrl ?? pageHref(), options.allowOrigins ?? []);
    const fetch =
      options.fetch && needsTokenOrigin(options.fetch) ? bindTokenOrigin(options.fetch, tokenOrigin(indexUrl ?? baseUrl)) : options.fetch;
    deltaReadSettings(options.deltaReads); // checked before any request
    rangeReadSettings(options.rangeReads);
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
    const inWorkers = !options.fetch && !options.transport && pool instanceof WorkerDigestPool;
    const warm = () => pool instanceof WorkerDigestPool && pool.warm();
    const transport =
      options.transport ??
      new Transport({
        ...(fetch ? { fetch } : {}),
        ...(options.retry ? { retry: options.retry } : {}),
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        ...(inWorkers ? { bodyFetcher: (pool as WorkerDigestPool).fetchBody } : {}),
      });
    // Opening a persistent store and fetching the index happen together.
    const cache = Promise.resolve(options.cache);
    cache.catch(() => undefined); // awaited below; not an unhandled rejection if the index fails first
    let index: ProjectIndex;
    let loadsEndpoint: string | undefined;
    if (options.index !== undefined) {
      warm();
      index =
        typeof options.index === 'string'
          ? parseProjectIndexJson(options.index, indexUrl ? { url: indexUrl } : {})
          : parseProjectIndex(options.index, indexUrl ? { url: indexUrl } : {});
    } else if (indexUrl !== undefined) {
      // Opened by a blocking script: the page's preload links (after it) are parsed first, so
      // the index and the bundles come from their preloads, each requested once (origins.ts).
      const parsed = documentParsed(indexUrl, options.signal, indexTimeoutMs);
      if (parsed) await parsed;
      const answer = transport
        .getBytesWithHeaders(indexUrl, {
          ...(options.signal ? { signal: options.signal } : {}),
          maxBytes: maxIndexBytes,
          timeoutMs: indexTimeoutMs,
          attempts: indexAttempts,
          // Read in steps, each re-arming the quiet-time limit: a large index on a slow line is not cut at 15 s.
          onProgress: () => undefined,
        })
        .catch((error: unknown) => {
          throw error instanceof ResponseSizeError ? new IndexTooLargeError(indexUrl, maxIndexBytes, error) : error;
        });
      warm();
      const { bytes, headers } = await answer;
      // Strict UTF-8: bytes that are not would become U+FFFD and another, legal path (SPEC preamble);
      // an answer that is a page instead (a single-page app's fallback) is named as such.
      index = parseFetchedIndexJson(await indexText(bytes, indexUrl), { url: indexUrl, contentType: headers.get('content-type') });
      loadsEndpoint = loadsEndpointOf(headers.get(LOADS_ENDPOINT_HEADER), indexUrl);
    } else {
      throw new InvalidOptionError('indexUrl', 'IndexedAssetSource.open needs indexUrl or index');
    }
    const base = indexUrl ?? baseUrl;
    checkIndexUrls(index, base, allowed);
    return new IndexedAssetSource(await IndexView.open(index, indexUrl, base), transport, pool, inWorkers, {
      ...options,
      ...(fetch ? { fetch } : {}),
      cache: await cache,
      loadsEndpoint,
    });
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
    const key = entryKey(entry);
    const { signal, release } = this.#signalFor(options.signal);
    const pinned = this.#asked.delete(key);
    try {
      const bytes = await this.#readEntry(path, entry, pinned, signal, options.onProgress);
      options.onProgress?.(entry.sizeBytes, entry.sizeBytes);
      return bytes;
    } catch (error) {
      if (pinned) this.#held.unpin(entry.sha256);
      throw naming(error, path, entry.id);
    } finally {
      release();
    }
  }

  async #readEntry(
    path: string,
    entry: Entry,
    pinned: boolean,
    signal: AbortSignal,
    onProgress: ReadOptions['onProgress'],
  ): Promise<Uint8Array> {
    const sha256 = entry.sha256;
    const held = this.#held.take(sha256, { pinned });
    if (held) return held;
    const loadKey = this.#view.loadKeyOf(entry);
    // A delta load may not bring this content (the cache had it): then read again, from the cache.
    const again = () => this.#readEntry(path, entry, pinned, signal, onProgress);
    const inFlight = this.#registry.get(loadKey);
    const joins = inFlight && this.#brings(inFlight, sha256, signal);
    if (inFlight && (typeof joins === 'boolean' ? joins : await joins))
      return this.#takeAfter(inFlight, entry, pinned, signal, again, onProgress);
    const deciding = this.#deciding.get(loadKey);
    if (deciding) {
      // A prefetch is finding out where this group comes from: go where it decides.
      // (The prefetch ends its decisions when it settles, disposal included: no listener needed then.)
      await (signal === this.#lifetime.signal ? deciding : abortable(deciding, signal));
      signal.throwIfAborted();
      return again();
    }
    const cached = await this.#cache.read(entry);
    if (cached) {
      if (pinned) this.#held.unpin(sha256);
      return cached;
    }
    // While the cache answered, a load may have brought it or started.
    const arrived = this.#held.take(sha256, { pinned });
    if (arrived) return arrived;
    const started = this.#registry.get(loadKey);
    if (started) return this.#takeAfter(started, entry, pinned, signal, again, onProgress);
    if (entry.url === undefined && this.#rangeReads && this.#fetcher.rangesServed(entry)) {
      if (pinned) this.#held.unpin(sha256);
      const bytes = await this.#fetcher.range(entry, path, signal, (accepted, contents) =>
        this.#keepWhole(entry.bundle!, accepted, contents),
      );
      // Refused (403, 416, 501): that origin now gets whole bundles; read again, through a load.
      return bytes ?? again();
    }
    // The cache just missed this content: a delta load brings it whatever the cache says now.
    return this.#takeAfter(this.#startLoad(loadKey, { need: sha256 }), entry, pinned, signal, again, onProgress);
  }

  /**
   * Whether `load` brings `sha256`: a delta load brings only what the cache lacked. Answered at
   * once when the load has decided (so a read joins a load in flight before it can finish, as
   * without delta reads), else when it decides, which comes before any of its requests.
   */
  #brings(load: Load, sha256: string, signal: AbortSignal): boolean | Promise<boolean> {
    const answer = () => load.brings === undefined || load.brings.has(sha256);
    if (load.decided) return answer();
    return (signal === this.#lifetime.signal ? load.planned : abortable(load.planned, signal)).then(answer);
  }

  /**
   * Waits until `load` has brought this entry's content (SPEC §7 "Streamed members": as soon as
   * it passed, not when the whole bundle has), then takes the read's own bytes; `again` when a
   * delta load did not bring them (the cache holds them).
   */
  async #takeAfter(
    load: Load,
    entry: Entry,
    pinned: boolean,
    signal: AbortSignal,
    again: () => Promise<Uint8Array>,
    onProgress: ReadOptions['onProgress'],
  ): Promise<Uint8Array> {
    const { sha256 } = entry;
    this.#held.expect(sha256);
    const stop = onProgress && this.#registry.watch(load, () => onProgress(fileBytesOf(load, entry), entry.sizeBytes));
    try {
      await this.#registry.arrival(load, sha256, signal);
    } catch (error) {
      this.#held.unexpect(sha256);
      throw error;
    } finally {
      stop?.();
    }
    const bytes = this.#held.take(sha256, { waited: true, pinned });
    if (bytes) return bytes;
    if (load.partial) return again();
    if (load.arrived.has(sha256)) {
      // It arrived but was not kept for this read (it came before the read asked, and left under
      // the memory budget): read it again once the load is over (from the cache, or a new load).
      await this.#registry.join(load, signal).catch(() => undefined);
      signal.throwIfAborted();
      return again();
    }
    throw new BundleIntegrityError('members', `content ${sha256} was not in the bundle that the index names for it`, [sha256]);
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
   * their reads (`keep`, default true) and written to the cache; each read of one of them gets its
   * bytes as soon as they passed, without waiting for the rest.
   */
  async load(items: Iterable<string>, options: LoadOptions = {}): Promise<string[]> {
    const paths = this.#view.expand(items);
    await this.prefetch(paths, options);
    return paths;
  }

  /**
   * Brings what `paths` need: from the cache, else their bundles (one request each) and loose
   * files, verified (SPEC §7 "Prefetch"). Resolves once they are verified, held for their reads
   * (unless `keep: false`) and written to the cache; reads do not wait for that: a read started
   * during a prefetch joins its requests and gets its bytes as soon as they are verified.
   */
  async prefetch(paths: Iterable<string>, options: PrefetchOptions = {}): Promise<void> {
    const files = [...paths].map((path) => ({ path, entry: this.#view.require(path) }));
    this.#recorder.record(
      options.loadName,
      files.map((file) => file.path),
    );
    const { signal, release } = this.#signalFor(options.signal);
    try {
      await this.#prefetchEntries(files, options, signal);
    } finally {
      release();
    }
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
    if (!this.#cache.enabled) return 0;
    const { signal, release } = this.#signalFor(options.signal);
    try {
      // Keys are paths, or ids (the same path keeps its id while the salt stays the same).
      const before = new Map((previous.files as Entry[]).map((file) => [entryKey(file), file.sha256] as const));
      const changed = [...this.#view.entries()].filter((entry) => (before.get(entryKey(entry)) ?? entry.sha256) !== entry.sha256);
      if (changed.length === 0) return 0;
      const present = await this.#cache.contains([...new Set(changed.flatMap((entry) => [entry.sha256, before.get(entryKey(entry))!]))]);
      if (!present) return 0;
      const wanted = changed.filter((entry) => present.has(before.get(entryKey(entry))!) && !present.has(entry.sha256));
      if (wanted.length > 0)
        await this.#prefetchEntries(
          wanted.map((entry) => ({ path: entry.path ?? entry.id!, entry })),
          { ...options, keep: false },
          signal,
        );
      return wanted.length;
    } finally {
      release();
    }
  }

  async #prefetchEntries(files: { path: string; entry: Entry }[], options: PrefetchOptions, signal: AbortSignal): Promise<void> {
    const keep = options.keep !== false || !this.#cache.enabled;
    const groups = new Map<string, Entry[]>();
    for (const { entry } of files) pushTo(groups, this.#view.loadKeyOf(entry), entry);
    if (keep) {
      for (const { entry } of files) {
        const key = entryKey(entry);
        if (this.#asked.has(key)) continue;
        this.#asked.add(key);
        this.#held.pin(entry.sha256);
      }
    }
    // Reads of these groups wait for this prefetch's decision rather than ask the cache themselves.
    const decided = this.#beginDeciding(groups.keys());
    try {
      await this.#prefetchGroups(groups, files, keep, signal, decided, options);
    } finally {
      for (const loadKey of groups.keys()) decided(loadKey);
    }
  }

  async #prefetchGroups(
    groups: Map<string, Entry[]>,
    files: { path: string; entry: Entry }[],
    keep: boolean,
    signal: AbortSignal,
    decided: (loadKey: string) => void,
    options: PrefetchOptions,
  ): Promise<void> {
    // What the cache holds (one call), then the network for the rest at once, while the groups
    // the cache holds whole are read from it (one batch each) when this prefetch keeps them.
    const { complete: cached, present } = await this.#cachedGroups(groups);
    const jobs = [...groups.keys()].filter((loadKey) => !cached.has(loadKey));
    const fromCache = [...cached].map(async (loadKey) => {
      if (!keep || (await this.#holdFromCache(groups.get(loadKey)!))) return decided(loadKey);
      const load = this.#registry.get(loadKey) ?? this.#startLoad(loadKey);
      decided(loadKey);
      await this.#registry.join(load, signal);
    });
    // Without keeping, bodies come a few at a time: within `pendingBytes` in flight (at least one).
    const budget = keep ? undefined : new ByteBudget(this.#pendingBytes);
    const loads = new Map<string, Load>();
    const starting = jobs.map(async (loadKey) => {
      const size = this.#view.sizeOfLoad(loadKey);
      if (budget) await budget.take(size, signal);
      const load = this.#registry.get(loadKey) ?? this.#startLoad(loadKey, { ...(present ? { present } : {}), hold: keep });
      decided(loadKey);
      loads.set(loadKey, load);
      if (budget)
        void load.done
          .then(
            () => load.stored,
            () => undefined,
          )
          .then(() => budget.give(size));
      return load;
    });
    // The total is what the loads will download, known once each has decided (before its requests).
    // With a budget, loads start in turns: their shares are their listed sizes, whatever they decide.
    let shares = jobs.map((loadKey) => this.#view.sizeOfLoad(loadKey));
    if (!budget) shares = await Promise.all(starting.map(async (started) => (await started).planned));
    const report = new PrefetchReport(this.#registry, files, this.#view, options);
    report.begin(jobs, shares, starting);
    await Promise.all(
      starting
        .map(async (started) => {
          const load = await started;
          await this.#registry.join(load, signal);
          report.finished(load);
          await load.stored;
          // What a delta load did not bring, the cache holds: read it for this prefetch's reads that
          // have not happened yet (a read that comes while this is read unpins what it finds held).
          if (keep && load.partial) await this.#holdFromCache(groups.get(load.key)!.filter((entry) => this.#asked.has(entryKey(entry))));
        })
        .concat(fromCache),
    );
    report.end();
  }

  /** Marks groups as being decided by a prefetch; returns the function that ends one group's wait. */
  #beginDeciding(loadKeys: Iterable<string>): (loadKey: string) => void {
    const ends = new Map<string, () => void>();
    for (const loadKey of loadKeys) {
      if (this.#deciding.has(loadKey)) continue;
      let end!: () => void;
      const decision = new Promise<void>((resolve) => (end = resolve));
      this.#deciding.set(loadKey, decision);
      ends.set(loadKey, () => {
        if (this.#deciding.get(loadKey) === decision) this.#deciding.delete(loadKey);
        end();
      });
    }
    return (loadKey) => ends.get(loadKey)?.();
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
    if (entry && this.#asked.delete(entryKey(entry))) this.#held.unpin(entry.sha256);
  }

  /** Aborts requests in flight, revokes every object URL and drops members held in memory. */
  dispose(): void {
    this.#disposal.abort(new RequestAbortedError('the IndexedAssetSource was disposed', this.indexUrl ? { url: this.indexUrl } : {}));
    this.#lifetime.release();
    for (const path of [...this.#objectUrls.keys()]) this.release(path);
    this.#asked.clear();
    this.#held.clear();
    if (this.pool instanceof WorkerDigestPool) this.pool.flushStores();
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
      heldBytes: this.#held.sizeBytes,
      protectedBytes: this.#held.protectedBytes,
      loadsInFlight: this.#registry.size,
      loadBytesInFlight: this.#registry.bytesInFlight(),
    };
  }

  /**
   * Resolves when every cache write of what was read or fetched so far has settled (written, or
   * reported to `onCacheError`), the loads in flight included: a bundle's members are cached once
   * it has passed whole, after the reads that got them early (SPEC §7 "Streamed members"). Reads
   * never wait for the cache; call this before a page may go away right after a load, or in tests.
   */
  async whenStored(): Promise<void> {
    await this.#registry.settled();
    await this.#cache.whenStored();
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

  // -------------------------------------------------------------------------------------------
  // Loads: one request per bundle (or loose file), shared; contents held as they arrive

  /**
   * Starts fetching a bundle or loose file; each verified content goes to `held` (for the reads
   * that will need it) as soon as it passed, and the whole load's to the cache once all passed.
   * With delta reads, a bundle some of whose members the cache holds (`present`, else asked
   * here) is fetched as ranges of the missing ones; `need` is missing whatever the cache says.
   */
  #startLoad(loadKey: string, options: { present?: Set<string>; need?: string; hold?: boolean } = {}): Load {
    return this.#registry.start(loadKey, this.#view.sizeOfLoad(loadKey), async (load, decide) => {
      const callbacks: FetchCallbacks = {
        signal: load.controller.signal,
        onProgress: (received, total) => this.#registry.progress(load, received, total),
        onContent: (sha256, bytes) => this.#arrive(load, sha256, bytes, options.hold ?? true),
      };
      try {
        const bundle = this.#view.bundle(loadKey);
        let accepted: Accepted;
        if (!bundle) {
          decide(load.fetchBytes);
          accepted = await this.#fetcher.loose(this.#view.looseEntry(loadKey)!, callbacks);
        } else {
          const delta = await this.#fetcher.deltaPlan(bundle, (sha256) => this.#held.has(sha256), options.present, options.need);
          if (delta) {
            load.partial = true;
            load.brings = new Set(delta.missing.map((entry) => entry.sha256));
          }
          decide(delta ? delta.ranges.reduce((sum, range) => sum + range.length, 0) : load.fetchBytes);
          accepted = delta ? await this.#fetcher.delta(bundle, delta, callbacks) : await this.#fetcher.whole(bundle, callbacks);
        }
        load.stored = this.#cache.store(accepted.forCache, accepted.stored);
        // The load stays in flight until the cache holds what it brought, so that a read coming
        // meanwhile joins it (or finds the cache filled) rather than fetch the bundle again. Not a
        // worker's write: workers write once the loads are over (see flushStores).
        if (!accepted.stored) await load.stored;
      } catch (error) {
        // SPEC §7: a bundle that fails is rejected whole; what arrived and no read took yet goes too.
        for (const sha256 of load.arrived) this.#held.forget(sha256);
        throw error;
      }
    });
  }

  /**
   * A content passed: held for the files of the load that will read it (those a prefetch asked
   * for stay until read). A load that only fills the cache (`hold` false) keeps it only for the
   * reads already waiting for it.
   */
  #arrive(load: Load, sha256: string, bytes: Uint8Array, hold: boolean): void {
    if (load.arrived.has(sha256)) return; // again, from a retry
    let reads = 0;
    let pins = 0;
    for (const file of hold ? this.#view.filesWith(load.key, sha256) : []) {
      reads++;
      if (this.#asked.has(entryKey(file))) pins++;
    }
    this.#held.put(sha256, bytes, reads, pins);
    this.#registry.arrive(load, sha256);
  }

  /** A whole bundle that came for a range read: its members held and cached as a load's. */
  #keepWhole(bundleSha: string, accepted: Accepted, contents: Map<string, Uint8Array>): void {
    void this.#cache.store(accepted.forCache, accepted.stored);
    for (const [sha256, bytes] of contents) {
      const files = this.#view.filesWith(bundleSha, sha256);
      this.#held.put(sha256, bytes, files.length, files.filter((file) => this.#asked.has(entryKey(file))).length);
    }
  }

  // -------------------------------------------------------------------------------------------
  // The cache, for prefetches

  /**
   * What the cache holds of each prefetch group, in one `hasMany` call for all of them (counts,
   * no bytes): per load key, whether every content the group needs and `held` lacks is there.
   */
  async #cachedGroups(groups: Map<string, Entry[]>): Promise<{ complete: Set<string>; present?: Set<string> }> {
    const complete = new Set<string>();
    const wanted = new Map<string, Entry[]>();
    for (const [loadKey, group] of groups) {
      const missing = [...new Map(group.filter((entry) => !this.#held.has(entry.sha256)).map((entry) => [entry.sha256, entry])).values()];
      if (missing.length === 0) complete.add(loadKey);
      else wanted.set(loadKey, missing);
    }
    if (!this.#cache.enabled || wanted.size === 0) return { complete };
    // The same call asks for every member of the bundles that may be fetched (for delta reads).
    const others = [...wanted.keys()].flatMap((loadKey) => this.#view.membersOf(loadKey));
    const shas = [
      ...new Set(
        [...wanted.values()]
          .flat()
          .concat(others)
          .map((entry) => entry.sha256),
      ),
    ];
    const present = await this.#cache.contains(shas);
    if (!present) return { complete };
    for (const [loadKey, missing] of wanted) if (missing.every((entry) => present.has(entry.sha256))) complete.add(loadKey);
    return { complete, present };
  }

  /**
   * Reads a group that the cache holds whole into `held` for the prefetch's reads (one batch,
   * checked in a worker where there is one); false when an entry was gone or bad after all.
   */
  async #holdFromCache(group: Entry[]): Promise<boolean> {
    const wanted = [...new Map(group.filter((entry) => !this.#held.has(entry.sha256)).map((entry) => [entry.sha256, entry])).values()];
    if (wanted.length === 0) return true;
    const found = await this.#cache.getVerified(wanted);
    for (const [sha256, bytes] of found) {
      const reads = group.filter((file) => file.sha256 === sha256).length;
      this.#held.put(sha256, bytes, reads, reads);
    }
    return found.size === wanted.length;
  }
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
    const { decodeIndexText } = await import('../format/index-text.js').catch(() => ({
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
