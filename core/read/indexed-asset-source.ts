/**
 * IndexedAssetSource (SPEC §7): reads a published project through its index, hands out only
 * verified bytes, caches every member and loose file under its own SHA-256, and fetches each
 * bundle once however many of its members are read, at the same time or later.
 */
import type { ContentCache } from '../cache/content-cache.js';
import { AssetNotFoundError, AwakeError, BundleIntegrityError, FileIntegrityError, IndexTooLargeError, InvalidOptionError, NetworkError, OriginNotAllowedError, RangeResponseError, RequestAbortedError, ResponseSizeError, TokenOriginError, UnsupportedOperationError } from '../errors.js';
import { opaqueId } from '../format/ids.js';
import { entryKey, parseProjectIndex, parseProjectIndexJson, type BundleEntry, type BundledFileEntry, type ProjectIndex } from '../format/project-index.js';
import { abortable, linkSignals } from '../net/abort.js';
import { bindTokenOrigin, needsTokenOrigin } from '../net/token-fetch.js';
import { checkedSize, Transport, type RetryOptions } from '../net/transport.js';
import { InThreadDigests, sharedDigestPool, WorkerDigestPool, workersAvailable, type DigestPool, type WorkerStoreAccess } from './digest-pool.js';
import { mediaTypeOf } from '../format/media-types.js';
import { HeldMembers } from './pending-members.js';
import { deltaRangesFor, deltaReadSettings, type ByteRange, type DeltaReadOptions } from './delta-ranges.js';
import { acceptBundle, checkFileDigest, checkFileSize, type AcceptedBundle, type ExpectedMember } from './verify.js';

export const DEFAULT_PENDING_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_INDEX_BYTES = 64 * 1024 * 1024;

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
  /** Read one uncached member with an HTTP range request instead of its whole bundle. */
  rangeReads?: boolean;
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
   * read whatever this says. See README "Memory, prefetch and the cache".
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
  retry?: RetryOptions;
  /** How long one request may go quiet, in ms: no headers, or no body bytes (default 30 000; 0 = none). See `TransportOptions.timeoutMs`. */
  timeoutMs?: number;
  /** Aborts opening, and every request of this source when it fires later. Holds no listener on it (see `dispose`). */
  signal?: AbortSignal;
  /** A transport of your own (tests, custom retry policies); `fetch`, `retry`, `timeoutMs` are then ignored. */
  transport?: Transport;
}

export interface ReadOptions {
  signal?: AbortSignal;
}

export interface PrefetchProgress {
  /** Bytes received so far, over every request of this prefetch. */
  loadedBytes: number;
  /** Bytes this prefetch downloads in all (bundles and loose files it does not skip; for a delta load, its ranges). */
  totalBytes: number;
  /** Requests finished, and to make. */
  requestsDone: number;
  requestsTotal: number;
}

export interface PrefetchOptions extends ReadOptions {
  onProgress?: (progress: PrefetchProgress) => void;
  /**
   * Keep what this prefetch brings in memory until each file is read (default true). With a
   * cache, `false` only fills the cache: use it to warm the cache for later without holding memory.
   */
  keep?: boolean;
}

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

/** What `onCacheError` hears besides the error. */
export interface CacheErrorDetail {
  operation: 'get' | 'put' | 'has' | 'delete';
  sha256s: string[];
}

type Entry = BundledFileEntry;

/** What a delta load fetches: ranges of a bundle, and the distinct contents (one entry each) they must bring. */
interface DeltaPlan {
  ranges: ByteRange[];
  missing: Entry[];
  /** The ranges are planned for one multi-range request (`multipart/byteranges`). */
  multipart: boolean;
}

/** What the cache said of one content: verified bytes the caller owns, or nothing. */
type CacheWaiter = (bytes: Uint8Array | undefined) => void;

/** One request for a bundle or a loose file, shared by every read and prefetch that needs it. */
interface Load {
  done: Promise<void>;
  /** Aborted when every party waiting for the load has given up, or the source is disposed. */
  controller: AbortController;
  interest: number;
  /** Cache writes of what the load brought, settled (never rejects). */
  stored: Promise<void>;
  /** Reads that have resumed after the load, to hand their bytes out a slice per task. */
  resumed: number;
  /** `turns[k]` settles k tasks after the load: when the k-th slice of its reads takes its bytes. */
  turns: Promise<void>[];
  /** Bytes the load downloads: the bundle's size, or its delta ranges' once decided. */
  fetchBytes: number;
  /** Settles with `fetchBytes` once the load has decided between the whole bundle and ranges. */
  planned: Promise<number>;
  /** A delta load: it brings only the members the cache lacked; the others are read from the cache. */
  partial: boolean;
  /** A delta load's contents, once decided; `undefined` for a load that brings every member. */
  brings?: Set<string>;
  /** Whether `planned` has settled. */
  decided: boolean;
}

/**
 * Origins that answered a range request with the whole file (200), or refused it (403, 416,
 * 501): this page (or process) asks them for whole bundles from then on, rather than risk a whole
 * body, or a refusal, per range (issue 11).
 */
const originsIgnoringRanges = new Set<string>();

/**
 * Origins that did not answer several ranges in one request (a 200, one range of several, a
 * malformed multipart body): they get ranges one by one from then on (RFC 9110 §14.6).
 */
const originsWithoutMultipart = new Set<string>();

/**
 * Reads of one load that take their bytes in one task. A bundle of 150 members would otherwise
 * resolve 150 reads, and run what awaits each of them, in one long task on the page.
 */
const READS_PER_TASK = 48;

export class IndexedAssetSource {
  readonly index: ProjectIndex;
  readonly indexUrl: string | undefined;
  private readonly base: string | undefined;
  private readonly transport: Transport;
  private readonly cache: ContentCache | undefined;
  private readonly rangeReads: boolean;
  private readonly delta: Required<DeltaReadOptions> | undefined;
  private readonly held: HeldMembers;
  private readonly pool: DigestPool;
  private readonly ownsPool: boolean;
  private readonly onCacheError: (error: unknown, detail: CacheErrorDetail) => void;
  private readonly entries = new Map<string, Entry>();
  private readonly bundles = new Map<string, BundleEntry>();
  private readonly membersOf = new Map<string, Entry[]>();
  private readonly looseBySha = new Map<string, Entry[]>();
  private readonly bySha = new Map<string, Entry>();
  private readonly loads = new Map<string, Load>();
  /** Keys of files a prefetch asked for that have not been read (or released) since. */
  private readonly asked = new Set<string>();
  private readonly objectUrls = new Map<string, string>();
  /** Aborted by `dispose`. */
  private readonly disposal = new AbortController();
  /** Aborts with the caller's `signal` or `dispose`, whichever comes first; no listener on the caller's signal where `AbortSignal.any` exists. */
  private readonly lifetime: { signal: AbortSignal; release: () => void };
  private readonly salt: string | undefined;
  /** Groups whose source (cache or network) a prefetch is deciding, by load key. */
  private readonly deciding = new Map<string, Promise<void>>();
  /** Cache writes not settled yet. */
  private readonly writes = new Set<Promise<void>>();
  /** Cache reads asked for in the current microtask, answered together by one `getMany`. */
  private cacheBatch: Map<string, CacheWaiter[]> | undefined;

  private constructor(index: ProjectIndex, indexUrl: string | undefined, base: string | undefined, transport: Transport, pool: DigestPool, options: OpenOptions & { cache: ContentCache | null | undefined }) {
    this.index = index;
    this.indexUrl = indexUrl;
    this.base = base;
    this.transport = transport;
    this.cache = options.cache ?? undefined;
    this.rangeReads = options.rangeReads ?? false;
    // Only with a cache that can say what it holds without reading it (has, hasMany, or a worker's view).
    const counts = this.cache && (this.cache.hasMany || this.cache.has || this.cache.workerAccess);
    this.delta = counts ? deltaReadSettings(options.deltaReads) : undefined;
    this.held = new HeldMembers(options.pendingBytes ?? DEFAULT_PENDING_BYTES);
    this.pool = pool;
    this.ownsPool = typeof options.hashWorkers === 'number';
    this.onCacheError = options.onCacheError ?? warnCacheErrorOnce();
    this.lifetime = linkSignals([options.signal, this.disposal.signal]);
    this.salt = index.formatVersion === 3 ? index.pathIds?.salt : undefined;
    for (const entry of index.files as Entry[]) {
      this.entries.set(entryKey(entry), entry);
      this.bySha.set(entry.sha256, entry);
      if (entry.url !== undefined) pushTo(this.looseBySha, entry.sha256, entry);
    }
    if (index.formatVersion === 3) {
      for (const bundle of index.bundles) {
        this.bundles.set(bundle.sha256, bundle);
        this.membersOf.set(bundle.sha256, []);
      }
      for (const entry of index.files) if (entry.bundle !== undefined) this.membersOf.get(entry.bundle)!.push(entry);
    }
    const store = this.workerStore();
    if (store) (this.pool as WorkerDigestPool).prepareStore(store);
    this.lifetime.signal.addEventListener('abort', () => {
      for (const load of this.loads.values()) load.controller.abort(this.lifetime.signal.reason);
    }, { once: true });
  }

  /** Reads and checks the index (formatVersion 2 or 3; others refused, SPEC §3). */
  static async open(options: OpenOptions): Promise<IndexedAssetSource> {
    const indexUrl = options.indexUrl === undefined ? undefined : httpUrl(absoluteUrl(options.indexUrl), 'indexUrl');
    const baseUrl = options.baseUrl === undefined ? undefined : httpUrl(absoluteUrl(options.baseUrl, 'baseUrl'), 'baseUrl');
    const allowed = allowedOrigins(indexUrl ?? baseUrl ?? pageHref(), options.allowOrigins ?? []);
    const fetch = options.fetch && needsTokenOrigin(options.fetch) ? bindTokenOrigin(options.fetch, tokenOrigin(indexUrl ?? baseUrl)) : options.fetch;
    deltaReadSettings(options.deltaReads); // checked before any request
    const maxIndexBytes = checkedSize(options.maxIndexBytes ?? DEFAULT_MAX_INDEX_BYTES, 'maxIndexBytes');
    const pool = poolFor(options.hashWorkers);
    const transport = options.transport ?? new Transport({
      ...(fetch ? { fetch } : {}),
      ...(options.retry ? { retry: options.retry } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      // With the platform's own fetch, bodies are read in the pool's workers too.
      ...(!options.fetch && pool instanceof WorkerDigestPool ? { bodyFetcher: pool.fetchBody } : {}),
    });
    // Opening a persistent store and fetching the index happen together.
    const cache = Promise.resolve(options.cache);
    cache.catch(() => undefined); // awaited below; not an unhandled rejection if the index fails first
    let index: ProjectIndex;
    if (options.index !== undefined) {
      index = typeof options.index === 'string' ? parseProjectIndexJson(options.index, indexUrl ? { url: indexUrl } : {}) : parseProjectIndex(options.index, indexUrl ? { url: indexUrl } : {});
    } else if (indexUrl !== undefined) {
      const text = await transport.getText(indexUrl, { ...(options.signal ? { signal: options.signal } : {}), maxBytes: maxIndexBytes }).catch((error: unknown) => {
        throw error instanceof ResponseSizeError ? new IndexTooLargeError(indexUrl, maxIndexBytes, error) : error;
      });
      index = parseProjectIndexJson(text, { url: indexUrl });
    } else {
      throw new InvalidOptionError('indexUrl', 'IndexedAssetSource.open needs indexUrl or index');
    }
    const base = indexUrl ?? baseUrl;
    checkIndexUrls(index, base, allowed);
    return new IndexedAssetSource(index, indexUrl, base, transport, pool, { ...options, cache: await cache });
  }

  /** Whether the index lists `path` (by its id when ids replace paths). */
  has(path: string): boolean {
    return this.entries.has(this.keyOf(path));
  }

  /** The index entry of `path`, if listed. */
  entry(path: string): Readonly<Entry> | undefined {
    return this.entries.get(this.keyOf(path));
  }

  /** Paths listed by the index; empty when opaque ids hide them. */
  paths(): string[] {
    return this.salt === undefined ? [...this.entries.keys()] : [];
  }

  /**
   * The verified bytes of `path`: held from a fetch or prefetch of this source, from the cache,
   * from its bundle (fetched once however many reads need it), a range, or a loose file.
   *
   * The caller owns what it gets: a buffer no one else holds (`bytes.buffer` may be transferred,
   * detached or written), so two reads of one path never share bytes.
   */
  async read(path: string, options: ReadOptions = {}): Promise<Uint8Array> {
    const entry = this.requireEntry(path);
    const key = entryKey(entry);
    const { signal, release } = this.signalFor(options.signal);
    const pinned = this.asked.delete(key);
    try {
      return await this.readEntry(path, entry, pinned, signal);
    } catch (error) {
      if (pinned) this.held.unpin(entry.sha256);
      throw naming(error, path, entry.id);
    } finally {
      release();
    }
  }

  private async readEntry(path: string, entry: Entry, pinned: boolean, signal: AbortSignal): Promise<Uint8Array> {
    const sha256 = entry.sha256;
    const held = this.held.take(sha256, { pinned });
    if (held) return held;
    const loadKey = loadKeyOf(entry);
    // A delta load may not bring this content (the cache had it): then read again, from the cache.
    const again = () => this.readEntry(path, entry, pinned, signal);
    const inFlight = this.loads.get(loadKey);
    const joins = inFlight && this.brings(inFlight, sha256, signal);
    if (inFlight && (typeof joins === 'boolean' ? joins : await joins)) return this.takeAfter(inFlight, sha256, pinned, signal, again);
    const deciding = this.deciding.get(loadKey);
    if (deciding) {
      // A prefetch is finding out where this group comes from: go where it decides.
      // (The prefetch ends its decisions when it settles, disposal included: no listener needed then.)
      await (signal === this.lifetime.signal ? deciding : abortable(deciding, signal));
      signal.throwIfAborted();
      return this.readEntry(path, entry, pinned, signal);
    }
    const cached = await this.readCache(entry);
    if (cached) {
      if (pinned) this.held.unpin(sha256);
      return cached;
    }
    // While the cache answered, a load may have brought it or started.
    const arrived = this.held.take(sha256, { pinned });
    if (arrived) return arrived;
    const started = this.loads.get(loadKey);
    if (started) return this.takeAfter(started, sha256, pinned, signal, again);
    if (entry.url === undefined && this.rangeReads && !originsIgnoringRanges.has(originOf(this.resolveUrl(this.bundles.get(loadKey)!.url)))) {
      if (pinned) this.held.unpin(sha256);
      return this.readRange(path, entry, signal);
    }
    // The cache just missed this content: a delta load brings it whatever the cache says now.
    return this.takeAfter(this.startLoad(loadKey, { need: sha256 }), sha256, pinned, signal, again);
  }

  /**
   * Whether `load` brings `sha256`: a delta load brings only what the cache lacked. Answered at
   * once when the load has decided (so a read joins a load in flight before it can finish, as
   * without delta reads), else when it decides, which comes before any of its requests.
   */
  private brings(load: Load, sha256: string, signal: AbortSignal): boolean | Promise<boolean> {
    const answer = () => load.brings === undefined || load.brings.has(sha256);
    if (!this.delta || load.decided) return answer();
    return (signal === this.lifetime.signal ? load.planned : abortable(load.planned, signal)).then(answer);
  }

  /**
   * Waits for `load` (which keeps the content for this read), then takes the read's own bytes;
   * `again` when a delta load did not bring them (the cache holds them).
   */
  private async takeAfter(load: Load, sha256: string, pinned: boolean, signal: AbortSignal, again: () => Promise<Uint8Array>): Promise<Uint8Array> {
    this.held.expect(sha256);
    try {
      await this.join(load, signal);
    } catch (error) {
      this.held.unexpect(sha256);
      throw error;
    }
    // The reads of a load resume a slice per task (held entries wait for them: they are expected).
    const slice = Math.floor(load.resumed++ / READS_PER_TASK);
    if (slice > 0) {
      await turnOf(load, slice);
      signal.throwIfAborted(); // disposed meanwhile: say so, rather than miss the held bytes
    }
    const bytes = this.held.take(sha256, { waited: true, pinned });
    if (!bytes && load.partial) return again();
    if (!bytes) throw new BundleIntegrityError('members', `content ${sha256} was not in the bundle that the index names for it`, [sha256]);
    return bytes;
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
   * Brings what `paths` need: from the cache, else their bundles (one request each) and loose
   * files, verified (SPEC §7 "Prefetch"). Resolves once they are verified, held for their reads
   * (unless `keep: false`) and written to the cache; reads do not wait for that: a read started
   * during a prefetch joins its requests and gets its bytes as soon as they are verified.
   */
  async prefetch(paths: Iterable<string>, options: PrefetchOptions = {}): Promise<void> {
    const { signal, release } = this.signalFor(options.signal);
    try {
      await this.prefetchPaths(paths, options, signal);
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
    if (!this.cache) return 0;
    const { signal, release } = this.signalFor(options.signal);
    try {
      // Keys are paths, or ids (the same path keeps its id while the salt stays the same).
      const before = new Map((previous.files as Entry[]).map((file) => [entryKey(file), file.sha256] as const));
      const changed = [...this.entries.values()].filter((entry) => (before.get(entryKey(entry)) ?? entry.sha256) !== entry.sha256);
      if (changed.length === 0) return 0;
      const present = await this.cachedContents([...new Set(changed.flatMap((entry) => [entry.sha256, before.get(entryKey(entry))!]))]);
      if (!present) return 0;
      const wanted = changed.filter((entry) => present.has(before.get(entryKey(entry))!) && !present.has(entry.sha256));
      if (wanted.length > 0) await this.prefetchEntries(wanted, { ...options, keep: false }, signal);
      return wanted.length;
    } finally {
      release();
    }
  }

  private async prefetchPaths(paths: Iterable<string>, options: PrefetchOptions, signal: AbortSignal): Promise<void> {
    await this.prefetchEntries([...paths].map((path) => this.requireEntry(path)), options, signal);
  }

  private async prefetchEntries(entries: Iterable<Entry>, options: PrefetchOptions, signal: AbortSignal): Promise<void> {
    const keep = options.keep !== false || !this.cache;
    const groups = new Map<string, Entry[]>();
    for (const entry of entries) pushTo(groups, loadKeyOf(entry), entry);
    if (keep) {
      for (const group of groups.values()) {
        for (const entry of group) {
          const key = entryKey(entry);
          if (this.asked.has(key)) continue;
          this.asked.add(key);
          this.held.pin(entry.sha256);
        }
      }
    }
    // Reads of these groups wait for this prefetch's decision rather than ask the cache themselves.
    const decided = this.beginDeciding(groups.keys());
    try {
      await this.prefetchGroups(groups, keep, signal, decided, options.onProgress);
    } finally {
      for (const loadKey of groups.keys()) decided(loadKey);
    }
  }

  private async prefetchGroups(groups: Map<string, Entry[]>, keep: boolean, signal: AbortSignal, decided: (loadKey: string) => void, onProgress: PrefetchOptions['onProgress']): Promise<void> {
    // What the cache holds (one call), then the network for the rest at once, while the groups
    // the cache holds whole are read from it (one batch each) when this prefetch keeps them.
    const { complete: cached, present } = await this.cachedGroups(groups);
    const jobs = [...groups.keys()].filter((loadKey) => !cached.has(loadKey));
    const fromCache = [...cached].map(async (loadKey) => {
      if (!keep || (await this.holdFromCache(groups.get(loadKey)!))) return decided(loadKey);
      const load = this.loads.get(loadKey) ?? this.startLoad(loadKey);
      decided(loadKey);
      await this.join(load, signal);
    });

    const loaded = new Map<string, number>();
    const progress: PrefetchProgress = { loadedBytes: 0, totalBytes: 0, requestsDone: 0, requestsTotal: jobs.length };
    const report = (loadKey: string, bytes: number) => {
      progress.loadedBytes += bytes - (loaded.get(loadKey) ?? 0);
      loaded.set(loadKey, bytes);
      onProgress?.({ ...progress });
    };
    // Progress counts what is downloaded: a delta load's ranges, not its bundle (issue 11).
    let reporting = false;
    const loads = new Map(jobs.map((loadKey) => {
      const load = this.loads.get(loadKey) ?? this.startLoad(loadKey, { ...(present ? { present } : {}), ...(onProgress ? { onProgress: (received: number) => reporting && report(loadKey, received) } : {}) });
      decided(loadKey);
      return [loadKey, load] as const;
    }));
    const sizes = new Map(await Promise.all([...loads].map(async ([loadKey, load]) => [loadKey, await load.planned] as const)));
    progress.totalBytes = [...sizes.values()].reduce((sum, size) => sum + size, 0);
    reporting = true;
    if (jobs.length === 0) onProgress?.({ ...progress });
    await Promise.all([...loads].map(async ([loadKey, load]) => {
      await this.join(load, signal);
      progress.requestsDone++;
      report(loadKey, sizes.get(loadKey)!);
      await load.stored;
      // What a delta load did not bring, the cache holds: read it for this prefetch's reads that
      // have not happened yet (a read that comes while this is read unpins what it finds held).
      if (keep && load.partial) await this.holdFromCache(groups.get(loadKey)!.filter((entry) => this.asked.has(entryKey(entry))));
    }).concat(fromCache));
  }

  /** Marks groups as being decided by a prefetch; returns the function that ends one group's wait. */
  private beginDeciding(loadKeys: Iterable<string>): (loadKey: string) => void {
    const ends = new Map<string, () => void>();
    for (const loadKey of loadKeys) {
      if (this.deciding.has(loadKey)) continue;
      let end!: () => void;
      const decision = new Promise<void>((resolve) => (end = resolve));
      this.deciding.set(loadKey, decision);
      ends.set(loadKey, () => {
        if (this.deciding.get(loadKey) === decision) this.deciding.delete(loadKey);
        end();
      });
    }
    return (loadKey) => ends.get(loadKey)?.();
  }

  /** Prefetches every file below a folder: `prefix` like `levels/harbor` (plain-path indexes only). */
  async prefetchFolder(prefix: string, options: PrefetchOptions = {}): Promise<string[]> {
    if (this.salt !== undefined) throw new UnsupportedOperationError('prefetchFolder needs an index with plain paths; opaque ids hide the folders (list the paths and use prefetch)', this.indexUrl ? { url: this.indexUrl } : {});
    const folder = prefix.replace(/^\/+|\/+$/g, '');
    const paths = [...this.entries.keys()].filter((path) => folder === '' || path.startsWith(`${folder}/`));
    await this.prefetch(paths, options);
    return paths;
  }

  /**
   * An object URL of the verified bytes, for engines that want a URL. The same URL is handed out
   * until `release(path)` or `dispose()` revokes it; its Blob holds a copy of its own, so nothing
   * a caller does to the bytes of a read changes what the URL serves.
   */
  async url(path: string, options: ReadOptions & { type?: string } = {}): Promise<string> {
    const existing = this.objectUrls.get(path);
    if (existing) return existing;
    const bytes = await this.read(path, options);
    const again = this.objectUrls.get(path);
    if (again) return again;
    const url = URL.createObjectURL(new Blob([bytes as Uint8Array<ArrayBuffer>], { type: options.type ?? mediaTypeOf(path) }));
    this.objectUrls.set(path, url);
    return url;
  }

  /** Revokes the object URL made for `path`, if any, and lets go of bytes a prefetch held for it unread. */
  release(path: string): void {
    const url = this.objectUrls.get(path);
    if (url) {
      URL.revokeObjectURL(url);
      this.objectUrls.delete(path);
    }
    const entry = this.entries.get(this.keyOf(path));
    if (entry && this.asked.delete(entryKey(entry))) this.held.unpin(entry.sha256);
  }

  /** Aborts requests in flight, revokes every object URL and drops members held in memory. */
  dispose(): void {
    this.disposal.abort(new RequestAbortedError('the IndexedAssetSource was disposed', this.indexUrl ? { url: this.indexUrl } : {}));
    this.lifetime.release();
    for (const path of [...this.objectUrls.keys()]) this.release(path);
    this.asked.clear();
    this.held.clear();
    if (this.pool instanceof WorkerDigestPool) this.pool.flushStores();
    if (this.ownsPool) this.pool.terminate();
  }

  /** What this source holds in memory now: for monitoring, and for tests that check memory stays bounded. */
  stats(): SourceStats {
    let loadBytesInFlight = 0;
    for (const load of this.loads.values()) loadBytesInFlight += load.fetchBytes;
    return { heldBytes: this.held.sizeBytes, protectedBytes: this.held.protectedBytes, loadsInFlight: this.loads.size, loadBytesInFlight };
  }

  /**
   * Resolves when every cache write started so far has settled (written, or reported to
   * `onCacheError`). Reads never wait for the cache; call this before a page may go away
   * right after a load, or in tests.
   */
  async whenStored(): Promise<void> {
    while (this.writes.size > 0) await Promise.all(this.writes);
  }

  /** Absolute URL of an index-relative URL. */
  resolveUrl(url: string): string {
    return this.base === undefined ? url : new URL(url, this.base).href;
  }

  private keyOf(path: string): string {
    return this.salt === undefined ? path : opaqueId(this.salt, path);
  }

  private requireEntry(path: string): Entry {
    const entry = this.entries.get(this.keyOf(path));
    if (!entry) throw new AssetNotFoundError(path, this.indexUrl);
    return entry;
  }

  /** A read's or prefetch's signal: its own and the source's lifetime; `release` when it settles. */
  private signalFor(signal: AbortSignal | undefined): { signal: AbortSignal; release: () => void } {
    if (this.lifetime.signal.aborted) throw new RequestAbortedError('the IndexedAssetSource was disposed', this.indexUrl ? { url: this.indexUrl } : {});
    return signal ? linkSignals([signal, this.lifetime.signal]) : { signal: this.lifetime.signal, release: () => undefined };
  }

  private where(path: string | undefined, entry: Entry): { path?: string; id?: string } {
    const named = path ?? entry.path;
    return { ...(named !== undefined ? { path: named } : {}), ...(entry.id !== undefined ? { id: entry.id } : {}) };
  }

  // -------------------------------------------------------------------------------------------
  // Loads: one request per bundle (or loose file), shared

  /** Waits for a load on behalf of one party; the load stops only when every party gave up. */
  private async join(load: Load, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    load.interest++;
    try {
      // The source's own signal aborts the load itself (see the constructor): no listener per read.
      await (signal === this.lifetime.signal ? load.done : abortable(load.done, signal));
    } finally {
      if (--load.interest === 0 && signal.aborted) load.controller.abort(signal.reason);
    }
  }

  /**
   * Starts fetching a bundle or loose file; its verified contents go to `held` and the cache.
   * With delta reads, a bundle some of whose members the cache holds (`present`, else asked
   * here) is fetched as ranges of the missing ones; `need` is missing whatever the cache says.
   */
  private startLoad(loadKey: string, options: { onProgress?: (received: number) => void; present?: Set<string>; need?: string } = {}): Load {
    const controller = new AbortController();
    if (this.lifetime.signal.aborted) controller.abort(this.lifetime.signal.reason);
    const { onProgress } = options;
    const progress = onProgress ? { onProgress: (received: number) => onProgress(received) } : {};
    let storing = Promise.resolve();
    let decide!: (bytes: number) => void;
    const load: Load = {
      controller, interest: 0, done: Promise.resolve(), stored: Promise.resolve(), resumed: 0, turns: [Promise.resolve()],
      fetchBytes: this.sizeOfLoad(loadKey), partial: false, decided: false,
      planned: new Promise<number>((resolve) => (decide = (bytes) => {
        load.decided = true;
        resolve(bytes);
      })),
    };
    const done = (async () => {
      const bundle = this.bundles.get(loadKey);
      let accepted: AcceptedBundle;
      if (!bundle) {
        decide(load.fetchBytes);
        accepted = await this.fetchLoose(this.looseBySha.get(loadKey.slice(LOOSE_PREFIX.length))![0]!, controller.signal, progress);
      } else {
        const delta = await this.deltaPlan(bundle, options.present, options.need);
        if (delta) {
          load.partial = true;
          load.brings = new Set(delta.missing.map((entry) => entry.sha256));
          load.fetchBytes = delta.ranges.reduce((sum, range) => sum + range.length, 0);
        }
        decide(load.fetchBytes);
        accepted = delta ? await this.fetchDelta(bundle, delta, controller.signal, onProgress) : await this.fetchBundle(bundle, controller.signal, progress);
      }
      storing = this.keepContents(loadKey, accepted);
    })();
    load.done = done;
    load.stored = done.then(() => storing, () => undefined);
    done.catch(() => decide(load.fetchBytes));
    this.loads.set(loadKey, load);
    const finish = () => {
      this.loads.delete(loadKey);
      // The workers write the cache once this source's loads are done (see flushStores).
      if (this.loads.size === 0 && this.pool instanceof WorkerDigestPool) this.pool.flushStores();
    };
    load.done.then(finish, finish);
    load.done.catch(() => undefined); // a load nobody waits for any more must not be an unhandled rejection
    return load;
  }

  private async fetchBundle(bundle: BundleEntry, signal: AbortSignal, progress: { onProgress?: (received: number) => void }): Promise<AcceptedBundle> {
    const url = this.resolveUrl(bundle.url);
    const bytes = await this.transport.getBytes(url, { signal, ...progress, expectedBytes: bundle.sizeBytes }).catch((error: unknown) => {
      throw bundleSizeError(error, bundle, url);
    });
    return this.verifyBundleBytes(bundle, bytes, url);
  }

  /**
   * Delta reads (issue 11): the ranges of `bundle` that hold the contents neither the cache
   * (`present`, else asked now) nor `held` has, plus `need`; `undefined` for the whole bundle:
   * delta reads off, an origin that ignores ranges, a cache that holds none of it or cannot
   * say, or ranges that would bring more than `maxMissingFraction` of it.
   */
  private async deltaPlan(bundle: BundleEntry, present: Set<string> | undefined, need: string | undefined): Promise<DeltaPlan | undefined> {
    if (!this.delta || originsIgnoringRanges.has(originOf(this.resolveUrl(bundle.url)))) return undefined;
    const contents = new Map<string, Entry>();
    for (const entry of this.membersOf.get(bundle.sha256)!) if (!contents.has(entry.sha256)) contents.set(entry.sha256, entry);
    const unknown = [...contents.keys()].filter((sha256) => !this.held.has(sha256) && !present?.has(sha256));
    const cached = present ?? (unknown.length === 0 ? new Set<string>() : await this.cachedContents(unknown));
    if (!cached) return undefined;
    const missing = [...contents.values()].filter((entry) => entry.sha256 === need || (!cached.has(entry.sha256) && !this.held.has(entry.sha256)));
    if (missing.length === contents.size) return undefined;
    const multipart = this.delta.multipartRanges && !originsWithoutMultipart.has(originOf(this.resolveUrl(bundle.url)));
    const ranges = this.rangesOf(bundle, missing, multipart);
    return ranges && { ranges, missing, multipart: multipart && ranges.length > 1 };
  }

  private rangesOf(bundle: BundleEntry, missing: Entry[], multipart: boolean): ByteRange[] | undefined {
    return deltaRangesFor(missing.map((entry) => ({ offset: entry.offset!, sizeBytes: entry.sizeBytes, sha256: entry.sha256 })), bundle.sizeBytes, this.delta!, multipart);
  }

  /**
   * Fetches a delta plan's ranges and verifies each member they bring on its own (SPEC §7
   * "Verified"); one damaged member rejects them all, nothing cached. A multipart plan is one
   * request for every range; an origin that does not answer it with them all (a 200, unread; one
   * range of several) is asked again one range per request (the plan for that), and so from then
   * on, as after a malformed answer (a `RangeResponseError` for this load). One range per request:
   * at once; a 200 answer is the whole bundle (a server that ignores ranges): it is checked as
   * one, the other requests are stopped, and its origin gets whole bundles from then on. A
   * refusal (403, 416, 501) of either kind: the whole bundle instead (`wholeAfterRangesRefused`).
   */
  private async fetchDelta(bundle: BundleEntry, plan: DeltaPlan, signal: AbortSignal, onProgress?: (received: number) => void): Promise<AcceptedBundle> {
    const url = this.resolveUrl(bundle.url);
    const { missing } = plan;
    let { ranges } = plan;
    let inputs: Uint8Array[];
    /** Where each range starts: its input, and its offset there. */
    let places: { input: number; at: number }[];
    let answered: Awaited<ReturnType<Transport['getRanges']>> | undefined;
    // Progress never goes back (a fallback starts again from 0) nor past the plan (multipart part headers).
    const planned = ranges.reduce((sum, range) => sum + range.length, 0);
    let reported = 0;
    const report = onProgress && ((bytes: number) => onProgress((reported = Math.min(planned, Math.max(reported, bytes)))));
    if (plan.multipart) {
      // One request for every range (multipart/byteranges); a server that cannot is asked one range at a time.
      // Several ranges are not a CORS-safelisted Range: a page on another origin sends a preflight
      // first, which a CDN may refuse (a network failure to the page). One attempt there, then ranges one by one.
      const page = pageHref();
      const crossOrigin = page !== undefined && originOf(page) !== originOf(url);
      try {
        answered = await this.transport.getRanges(url, ranges, { signal, expectedBytes: bundle.sizeBytes, ...(report ? { onProgress: report } : {}), ...(crossOrigin ? { attempts: 1 } : {}) });
      } catch (error) {
        if (error instanceof RangeResponseError) originsWithoutMultipart.add(originOf(url));
        if (!(error instanceof NetworkError) || signal.aborted) throw error;
        answered = { kind: 'unsupported', reason: error.message };
        originsWithoutMultipart.add(originOf(url));
      }
      if (answered.kind === 'refused') return this.wholeAfterRangesRefused(url, () => this.fetchBundle(bundle, signal, report ? { onProgress: report } : {}));
      if (answered.kind === 'unsupported') {
        originsWithoutMultipart.add(originOf(url));
        ranges = this.rangesOf(bundle, missing, false)!;
      }
    }
    if (answered?.kind === 'ranges') {
      inputs = [answered.body];
      places = answered.at.map((at) => ({ input: 0, at }));
    } else {
      const bodies = await this.fetchRanges(url, bundle, ranges, signal, report);
      if ('refused' in bodies) return this.wholeAfterRangesRefused(url, () => this.fetchBundle(bundle, signal, report ? { onProgress: report } : {}));
      if (!Array.isArray(bodies)) {
        originsIgnoringRanges.add(originOf(url));
        return this.verifyBundleBytes(bundle, bodies.whole, url);
      }
      inputs = bodies.length > 0 ? bodies : [new Uint8Array(0)];
      places = bodies.map((_, input) => ({ input, at: 0 }));
    }
    const parts = missing.map((entry) => {
      // Empty contents lie in no range: an empty view of the first input.
      if (entry.sizeBytes === 0) return { input: 0, offset: 0, length: 0 };
      const k = ranges.findIndex((range) => range.offset <= entry.offset! && entry.offset! + entry.sizeBytes <= range.offset + range.length);
      return { input: places[k]!.input, offset: places[k]!.at + entry.offset! - ranges[k]!.offset, length: entry.sizeBytes };
    });
    const store = this.workerStore();
    // One job for every member: the worker stores them all or, with one damaged, none (SPEC §7).
    const { digests, parts: owned, stored } = await this.pool.digest({
      inputs, ranges: parts, split: true, transfer: true,
      ...(store ? { store: { ...store, keys: missing.map((entry) => entry.sha256) } } : {}),
    });
    const damaged = missing.filter((entry, i) => digests[i] !== entry.sha256).map((entry) => entry.sha256);
    if (damaged.length > 0) {
      const keys = this.membersOf.get(bundle.sha256)!.filter((entry) => damaged.includes(entry.sha256)).map(entryKey);
      throw new BundleIntegrityError('members', `bundle ${bundle.sha256} (${url}): damaged member${keys.length > 1 ? 's' : ''} ${keys.map((key) => JSON.stringify(key)).join(', ')} in the ranges of a delta read`, keys, { url });
    }
    return { contents: new Map(missing.map((entry, i) => [entry.sha256, owned![i]!])), ...(stored ? { stored } : {}) };
  }

  /**
   * The bodies of `ranges` in order, or `{ whole }` when an answer was the whole bundle, or
   * `{ refused }` when the host refused a range (403, 416, 501); the other requests then stop.
   */
  private async fetchRanges(url: string, bundle: BundleEntry, ranges: ByteRange[], signal: AbortSignal, onProgress?: (received: number) => void): Promise<Uint8Array[] | { whole: Uint8Array } | { refused: true }> {
    const siblings = new AbortController();
    const link = linkSignals([signal, siblings.signal]);
    const received = ranges.map(() => 0);
    let whole: Uint8Array | undefined;
    let refused = false;
    let failure: { error: unknown } | undefined;
    try {
      const answers = await Promise.allSettled(ranges.map(async (range, i) => {
        try {
          const answer = await this.transport.getRange(url, range.offset, range.length, {
            signal: link.signal, expectedBytes: bundle.sizeBytes,
            ...(onProgress ? { onProgress: (bytes: number) => {
              received[i] = bytes;
              onProgress(received.reduce((sum, each) => sum + each, 0));
            } } : {}),
          });
          if (answer.kind === 'refused') {
            refused = true;
            siblings.abort(new RequestAbortedError(`GET ${url}: not needed, the server refused a range (HTTP ${answer.status}): the bundle is fetched whole`, { url }));
            return new Uint8Array(0);
          }
          if (answer.kind === 'whole') {
            whole ??= answer.bytes;
            siblings.abort(new RequestAbortedError(`GET ${url}: not needed, the server ignores ranges and sent the whole bundle`, { url }));
          }
          return answer.bytes;
        } catch (error) {
          if (!siblings.signal.aborted) {
            failure = { error };
            siblings.abort(error);
          }
          throw error;
        }
      }));
      if (whole) return { whole };
      if (refused) return { refused };
      if (failure) throw bundleSizeError(failure.error, bundle, url);
      return answers.map((answer) => (answer as PromiseFulfilledResult<Uint8Array>).value);
    } finally {
      link.release();
    }
  }

  /** SPEC §7 "Verified": a bundle that fails is rejected whole, and nothing from it is kept or cached. */
  private async verifyBundleBytes(bundle: BundleEntry, bytes: Uint8Array, url: string): Promise<AcceptedBundle> {
    const members: ExpectedMember[] = this.membersOf.get(bundle.sha256)!.map((entry) => ({ key: entryKey(entry), offset: entry.offset!, sizeBytes: entry.sizeBytes, sha256: entry.sha256 }));
    return acceptBundle(bytes, bundle, members, this.pool, url, this.workerStore());
  }

  private async fetchLoose(entry: Entry, signal: AbortSignal, progress: { onProgress?: (received: number) => void }): Promise<AcceptedBundle> {
    const url = this.resolveUrl(entry.url!);
    const bytes = await this.transport.getBytes(url, { signal, ...progress, expectedBytes: entry.sizeBytes }).catch((error: unknown) => {
      if (!(error instanceof ResponseSizeError)) throw error;
      throw new FileIntegrityError(`${this.where(undefined, entry).path ?? entry.id} (${url}): listed at ${entry.sizeBytes} bytes, the response is not: ${error.message}`, { url, ...this.where(undefined, entry), cause: error });
    });
    const { bytes: verified, stored } = await this.verifyOwned(bytes, entry, { url, ...this.where(undefined, entry) });
    return { contents: new Map([[entry.sha256, verified]]), ...(stored ? { stored } : {}) };
  }

  /** Checks bytes this source owns (fetched) against an entry, hashing (and storing, when a worker can) in the pool. */
  private async verifyOwned(bytes: Uint8Array, entry: Entry, where: { url?: string; path?: string; id?: string }): Promise<{ bytes: Uint8Array; stored?: Promise<void> }> {
    checkFileSize(bytes.length, entry, where);
    const store = this.workerStore();
    const { inputs, digests, stored } = await this.pool.digest({ inputs: [bytes], transfer: true, ...(store ? { store: { ...store, keys: [entry.sha256] } } : {}) });
    checkFileDigest(digests[0]!, entry, where);
    return { bytes: inputs[0]!, ...(stored ? { stored } : {}) };
  }

  /** The IndexedDB store the pool's workers may write and read themselves, when there is one. */
  private workerStore(): WorkerStoreAccess | undefined {
    return this.pool instanceof WorkerDigestPool && this.pool.usingWorkers !== false ? this.cache?.workerAccess : undefined;
  }

  /**
   * Stores a load's verified contents in the cache (in the background, one batch) and holds
   * them for the reads that will need them. Resolves when the cache writes have settled.
   */
  private keepContents(loadKey: string, { contents, stored }: AcceptedBundle): Promise<void> {
    // Written by a worker already, or handed to the cache now, before any read can take the
    // bytes: a cache that copies does so at once.
    const storing = this.storeInCache([...contents], stored);
    const files = this.bundles.has(loadKey) ? this.membersOf.get(loadKey)! : this.looseBySha.get(loadKey.slice(LOOSE_PREFIX.length))!;
    const reads = new Map<string, number>();
    const pins = new Map<string, number>();
    for (const file of files) {
      reads.set(file.sha256, (reads.get(file.sha256) ?? 0) + 1);
      if (this.asked.has(entryKey(file))) pins.set(file.sha256, (pins.get(file.sha256) ?? 0) + 1);
    }
    for (const [sha256, bytes] of contents) this.held.put(sha256, bytes, reads.get(sha256) ?? 0, pins.get(sha256) ?? 0);
    return storing;
  }

  private sizeOfLoad(loadKey: string): number {
    const bundle = this.bundles.get(loadKey);
    return bundle ? bundle.sizeBytes : this.looseBySha.get(loadKey.slice(LOOSE_PREFIX.length))![0]!.sizeBytes;
  }

  private async readRange(path: string, entry: Entry, signal: AbortSignal): Promise<Uint8Array> {
    const bundle = this.bundles.get(entry.bundle!)!;
    const url = this.resolveUrl(bundle.url);
    const answer = await this.transport.getRange(url, entry.offset!, entry.sizeBytes, { signal, expectedBytes: bundle.sizeBytes }).catch((error: unknown) => {
      throw bundleSizeError(error, bundle, url);
    });
    // Read again: the origin now ignores ranges, so readEntry loads the whole bundle (shared, checked as one).
    if (answer.kind === 'refused') return this.wholeAfterRangesRefused(url, () => this.readEntry(path, entry, false, signal));
    if (answer.kind === 'whole') {
      // A server that ignores ranges sent the whole bundle: check it as one (SPEC §7), keep its members.
      const accepted = await this.verifyBundleBytes(bundle, answer.bytes, url);
      void this.keepContents(bundle.sha256, accepted);
      return this.held.take(entry.sha256) ?? accepted.contents.get(entry.sha256)!.slice();
    }
    const { bytes, stored } = await this.verifyOwned(answer.bytes, entry, { url, ...this.where(path, entry) });
    // The cache gets a copy of its own where it needs one (storeInCache): these bytes are the caller's.
    void this.storeInCache([[entry.sha256, bytes]], stored);
    return bytes;
  }

  /**
   * A host that refused a Range request to `url` (403, 416 or 501; the transport's `refused`):
   * this load fetches the whole bundle instead (`whole`: the whole-bundle path, checked as one,
   * SPEC §7 "Verified"), and later loads from that origin go whole at once, as for a host that
   * answers ranges with 200 (`originsIgnoringRanges`; with `rangeReads`, readEntry checks it).
   */
  private wholeAfterRangesRefused<T>(url: string, whole: () => Promise<T>): Promise<T> {
    originsIgnoringRanges.add(originOf(url));
    return whole();
  }

  // -------------------------------------------------------------------------------------------
  // The cache (SPEC §7 "Cache"): batched, re-checked on read, written off the critical path

  /**
   * What the cache holds of each prefetch group, in one `hasMany` call for all of them (counts,
   * no bytes): per load key, whether every content the group needs and `held` lacks is there.
   */
  private async cachedGroups(groups: Map<string, Entry[]>): Promise<{ complete: Set<string>; present?: Set<string> }> {
    const complete = new Set<string>();
    const wanted = new Map<string, Entry[]>();
    for (const [loadKey, group] of groups) {
      const missing = [...new Map(group.filter((entry) => !this.held.has(entry.sha256)).map((entry) => [entry.sha256, entry])).values()];
      if (missing.length === 0) complete.add(loadKey);
      else wanted.set(loadKey, missing);
    }
    if (!this.cache || wanted.size === 0) return { complete };
    // With delta reads, the same call asks for every member of the bundles that may be fetched.
    const others = this.delta ? [...wanted.keys()].flatMap((loadKey) => this.membersOf.get(loadKey) ?? []) : [];
    const shas = [...new Set([...wanted.values()].flat().concat(others).map((entry) => entry.sha256))];
    const present = await this.cachedContents(shas);
    if (!present) return { complete };
    for (const [loadKey, missing] of wanted) if (missing.every((entry) => present.has(entry.sha256))) complete.add(loadKey);
    return { complete, present };
  }

  /** Which of `shas` the cache holds (counts, no bytes; one call); `undefined` when it failed. */
  private async cachedContents(shas: string[]): Promise<Set<string> | undefined> {
    const cache = this.cache!;
    const store = this.workerStore();
    const here = () => (cache.hasMany ? cache.hasMany(shas) : Promise.all(shas.map((sha256) => hasOne(cache, sha256))));
    // Asked in a worker where one can see the store: the page then touches no store at all.
    const ask = store ? async () => (await (this.pool as WorkerDigestPool).hasStored(store, shas)) ?? here() : here;
    const answers = await this.cacheCall('has', shas, ask);
    return answers ? new Set(shas.filter((_, i) => answers[i])) : undefined;
  }

  /**
   * Reads a group that the cache holds whole into `held` for the prefetch's reads (one batch,
   * checked in a worker where there is one); false when an entry was gone or bad after all.
   */
  private async holdFromCache(group: Entry[]): Promise<boolean> {
    const wanted = [...new Map(group.filter((entry) => !this.held.has(entry.sha256)).map((entry) => [entry.sha256, entry])).values()];
    if (wanted.length === 0) return true;
    const found = await this.getVerified(wanted);
    for (const [sha256, bytes] of found) {
      const reads = group.filter((file) => file.sha256 === sha256).length;
      this.held.put(sha256, bytes, reads, reads);
    }
    return found.size === wanted.length;
  }

  /** The verified cached bytes of one entry, asked together with the other reads of this microtask. */
  private readCache(entry: Entry): Promise<Uint8Array | undefined> {
    if (!this.cache) return Promise.resolve(undefined);
    return new Promise<Uint8Array | undefined>((resolve) => {
      if (!this.cacheBatch) {
        this.cacheBatch = new Map();
        queueMicrotask(() => void this.answerCacheBatch());
      }
      pushTo(this.cacheBatch, entry.sha256, resolve);
    });
  }

  private async answerCacheBatch(): Promise<void> {
    const batch = this.cacheBatch!;
    this.cacheBatch = undefined;
    const wanted = [...batch.keys()].map((sha256) => this.contentEntry(sha256));
    const found = await this.getVerified(wanted).catch(() => new Map<string, Uint8Array>());
    for (const [sha256, waiters] of batch) {
      const bytes = found.get(sha256);
      // Every waiter owns its bytes: copies first, the last one takes the buffer.
      waiters.forEach((resolve, i) => resolve(bytes === undefined ? undefined : i === waiters.length - 1 ? bytes : bytes.slice()));
    }
  }

  /** Cached contents that still match their entries, by SHA-256; a bad entry is dropped (SPEC §7 "Cache"). */
  private async getVerified(wanted: Entry[]): Promise<Map<string, Uint8Array>> {
    const store = this.workerStore();
    if (store) {
      // Read and checked in a worker.
      const answer = await this.cacheCall('get', wanted.map((entry) => entry.sha256), () => (this.pool as WorkerDigestPool).readStored(store, wanted));
      // The store is the whole cache when it offers worker access (see ContentCache.workerAccess).
      if (answer) {
        await this.dropBad(answer.bad);
        return answer.found;
      }
    }
    return this.getVerifiedHere(wanted);
  }

  /** `getVerified` through the cache's own methods on this thread. */
  private async getVerifiedHere(wanted: Entry[]): Promise<Map<string, Uint8Array>> {
    const shas = wanted.map((entry) => entry.sha256);
    const answers = await this.cacheCall('get', shas, () => (this.cache!.getMany ? this.cache!.getMany(shas) : Promise.all(shas.map((sha256) => this.cache!.get(sha256)))));
    const found = new Map<string, Uint8Array>();
    if (!answers) return found;
    const candidates: { entry: Entry; bytes: Uint8Array }[] = [];
    const bad: string[] = [];
    wanted.forEach((entry, i) => {
      const bytes = answers[i];
      if (bytes === undefined) return;
      if (bytes.length !== entry.sizeBytes) bad.push(entry.sha256);
      // Bytes a cache may still hold are copied before they are ours to give away.
      else candidates.push({ entry, bytes: this.cache!.copiesBytes ? bytes : bytes.slice() });
    });
    if (candidates.length > 0) {
      const { inputs, digests } = await this.pool.digest({ inputs: candidates.map((c) => c.bytes), transfer: true });
      candidates.forEach(({ entry }, i) => {
        if (digests[i] === entry.sha256) found.set(entry.sha256, inputs[i]!);
        else bad.push(entry.sha256);
      });
    }
    await this.dropBad(bad);
    return found;
  }

  /** Deletes cache entries that failed their check; awaited, so a delete cannot land after the good copy that replaces it. */
  private async dropBad(bad: readonly string[]): Promise<void> {
    await Promise.all(bad.map((sha256) => this.cacheCall('delete', [sha256], async () => this.cache!.delete?.(sha256))));
  }

  /**
   * Writes verified contents in one batch, or follows the write a worker already makes of them
   * (`byWorker`); failures go to `onCacheError`, never to a read.
   */
  private storeInCache(contents: [string, Uint8Array][], byWorker?: Promise<void>): Promise<void> {
    if (!this.cache || contents.length === 0) return Promise.resolve();
    if (byWorker) return this.trackWrite(this.cacheCall('put', contents.map(([sha256]) => sha256), () => byWorker).then(() => undefined));
    const cache = this.cache;
    // A cache that does not promise to copy gets copies: the originals go to callers.
    const entries = cache.copiesBytes ? contents : contents.map(([sha256, bytes]) => [sha256, bytes.slice()] as [string, Uint8Array]);
    const shas = entries.map(([sha256]) => sha256);
    const put = async (): Promise<void> => {
      if (cache.putMany) await cache.putMany(entries);
      else await Promise.all(entries.map(([sha256, bytes]) => cache.put(sha256, bytes)));
    };
    return this.trackWrite(this.cacheCall('put', shas, put).then(() => undefined));
  }

  /** Counts a cache write for `whenStored`. */
  private trackWrite(write: Promise<void>): Promise<void> {
    this.writes.add(write);
    void write.then(() => this.writes.delete(write));
    return write;
  }

  /** Runs one cache operation; a failure (a thrown error or a rejection) is reported and answers `undefined`. */
  private async cacheCall<T>(operation: CacheErrorDetail['operation'], sha256s: string[], run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (error) {
      try {
        this.onCacheError(error, { operation, sha256s });
      } catch {
        // A failing listener must not fail the load either.
      }
      return undefined;
    }
  }

  /** An entry with this content (for its size). */
  private contentEntry(sha256: string): Entry {
    return this.bySha.get(sha256)!;
  }
}

const LOOSE_PREFIX = 'file:';

/** A promise that settles `slice` tasks after the load's first reads resumed. */
function turnOf(load: Load, slice: number): Promise<void> {
  for (let k = load.turns.length; k <= slice; k++) load.turns.push(load.turns[k - 1]!.then(nextTask));
  return load.turns[slice]!;
}

/** Settles in a new task (a message to ourselves: no timer clamping, as setTimeout has when nested). */
function nextTask(): Promise<void> {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      channel.port2.close();
      resolve();
    };
    channel.port2.postMessage(undefined);
  });
}

function poolFor(workers: OpenOptions['hashWorkers']): DigestPool {
  if (workers === undefined) return sharedDigestPool();
  if (typeof workers !== 'number') return workers;
  return workers > 0 && workersAvailable() ? new WorkerDigestPool({ size: workers }) : new InThreadDigests();
}

/** What a load is keyed by: its bundle's SHA-256, or `file:` + a loose file's. */
function loadKeyOf(entry: Entry): string {
  return entry.url !== undefined ? LOOSE_PREFIX + entry.sha256 : entry.bundle!;
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

async function hasOne(cache: ContentCache, sha256: string): Promise<boolean> {
  return cache.has ? cache.has(sha256) : (await cache.get(sha256)) !== undefined;
}

/** The default `onCacheError`: one console warning per source, not one per failure of a cache that stays broken. */
function warnCacheErrorOnce(): (error: unknown, detail: CacheErrorDetail) => void {
  let warned = false;
  return (error, detail) => {
    if (warned) return;
    warned = true;
    console.warn(`awake-bundle: the cache failed to ${detail.operation} ${detail.sha256s.length} entr${detail.sha256s.length === 1 ? 'y' : 'ies'}; loads go on without it, keeping contents in memory within pendingBytes (further cache failures of this source are not logged; pass onCacheError to see them)`, error);
  };
}

/** A bundle body of the wrong size, as the bundle's integrity error (SPEC §7 "Verified"), naming it and its URL. */
function bundleSizeError(error: unknown, bundle: BundleEntry, url: string): unknown {
  if (!(error instanceof ResponseSizeError)) return error;
  return new BundleIntegrityError('bundle', `bundle ${bundle.sha256} (${url}) is listed at ${bundle.sizeBytes} bytes; ${error.message}`, [], { url, cause: error });
}

function originOf(url: string): string {
  return new URL(url, pageHref()).origin;
}

function pageHref(): string | undefined {
  return (globalThis as { location?: { href?: string } }).location?.href;
}

/** `url` when it is http(s); the reader fetches nothing else (SPEC §7 "Tokens"). */
function httpUrl(url: string, where: string): string {
  const protocol = new URL(url).protocol;
  if (protocol !== 'http:' && protocol !== 'https:') throw new OriginNotAllowedError(`${where} ${JSON.stringify(url)} is not an http(s) URL`, { url });
  return url;
}

/** The index's own origin (from `base`) and the caller's `allowOrigins`, checked. */
function allowedOrigins(base: string | undefined, allowOrigins: readonly string[]): Set<string> {
  const allowed = new Set<string>();
  if (base !== undefined) allowed.add(new URL(base).origin);
  allowOrigins.forEach((origin, i) => {
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new InvalidOptionError(`allowOrigins[${i}]`, `allowOrigins[${i}] ${JSON.stringify(origin)} is not an http(s) origin such as "https://cdn.example.com"`);
    allowed.add(url.origin);
  });
  return allowed;
}

/** The origin a `tokenAuthorizedFetch` without `origin` is bound to: the index URL's, else the baseUrl's. */
function tokenOrigin(indexOrBase: string | undefined): string {
  if (indexOrBase === undefined) throw new TokenOriginError('IndexedAssetSource.open: a tokenAuthorizedFetch without `origin` needs indexUrl or baseUrl to fix the origin its token goes to; give one of them, or the fetch an `origin`');
  return new URL(indexOrBase).origin;
}

/**
 * Every bundle and file URL the index names must be http(s) on an allowed origin, checked at
 * open, before any of them is fetched: an index cannot send the reader (and its token, SPEC §7
 * "Tokens") elsewhere. Redirects are the fetch's business: `tokenAuthorizedFetch` drops the token
 * at the first hop off its origin.
 */
function checkIndexUrls(index: ProjectIndex, base: string | undefined, allowed: Set<string>): void {
  const check = (url: string, where: string, file?: { path?: string; id?: string }): void => {
    const named = { ...(file?.path !== undefined ? { path: file.path } : {}), ...(file?.id !== undefined ? { id: file.id } : {}) };
    let resolved: URL;
    try {
      resolved = new URL(url, base ?? pageHref());
    } catch {
      throw new OriginNotAllowedError(`${where} ${JSON.stringify(url)} is not an absolute URL, and there is no indexUrl or baseUrl to resolve it against`, { url, ...named });
    }
    if (resolved.protocol !== 'http:' && resolved.protocol !== 'https:') {
      throw new OriginNotAllowedError(`${where} ${JSON.stringify(url)} is not an http(s) URL; the reader fetches nothing else`, { url: resolved.href, ...named });
    }
    if (!allowed.has(resolved.origin)) {
      throw new OriginNotAllowedError(`${where} ${JSON.stringify(url)} is on ${resolved.origin}, which is not the index's origin${allowed.size > 0 ? ` (allowed: ${[...allowed].join(', ')})` : ''}; list it in allowOrigins to read from it`, { url: resolved.href, ...named });
    }
  };
  if (index.formatVersion === 3) index.bundles.forEach((bundle, i) => check(bundle.url, `bundles[${i}].url`));
  (index.files as Entry[]).forEach((file, i) => {
    if (file.url !== undefined) check(file.url, `files[${i}].url`, file);
  });
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

function absoluteUrl(url: string, name = 'indexUrl'): string {
  try {
    return new URL(url, pageHref()).href;
  } catch {
    throw new InvalidOptionError(name, `${name} ${JSON.stringify(url)} is not an absolute URL (and there is no page to resolve it against)`);
  }
}
