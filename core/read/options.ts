/**
 * What `IndexedAssetSource` takes and tells (SPEC §7): its options, progress and stats, in a
 * module of their own so that the read path's parts import them downward, never the façade.
 */
import type { ContentCache } from '../cache/content-cache.js';
import type { ProjectIndex } from '../format/project-index.js';
import type { RetryOptions, Transport } from '../net/transport.js';
import type { DeltaReadOptions } from './plan/delta-ranges.js';
import type { NeededBytesOptions } from './plan/needed-bytes.js';
import type { DigestPool } from './workers/digest-pool.js';
import type { RangeReadOptions } from './plan/range-reads.js';
import type { CacheErrorDetail } from './state/verified-cache.js';

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
   * Needed bytes (SPEC §7 "Needed bytes"; on by default): a load (`load`, `prefetch`, an
   * adapter's queue, the reads an engine starts together) fetches, per bundle, only the members it
   * needs that are not cached, as ranges, unless the whole bundle adds at most one round trip's
   * bytes at the line's rate (measured per origin: docs/FORMAT.md "Needed bytes"). Ranges go as
   * `deltaReads` says (one multi-range request where the host answers it, else single ranges); a
   * host that refuses or ignores ranges gets whole bundles from then on. `false` fetches whole
   * bundles, as before; `{ roundTripBytes }` fixes the price of a request instead of measuring
   * it. Off too with `deltaReads: false` (given with `neededBytes` other than `false`, an
   * `InvalidOptionError`: the two together ask for ranges tuned by nothing).
   */
  neededBytes?: boolean | NeededBytesOptions;
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
   * than bundles (`timeoutMs`), which may be large and come from a busy CDN. It also bounds the
   * wait for the page's parse when a blocking script opens the source (page-preloads.ts `documentParsed`).
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
   * Read ahead of references (default true): when a file that names others is handed out (a
   * glTF's buffers and images, a .glb's, an atlas's or bitmap font's pages, a Tiled map's
   * tilesets and images), start the loads of the files it names that the index lists, before the
   * engine has parsed it and asked: a model then costs one round trip, not two. Not for Phaser
   * packs (a scene picks its sections). `false` reads only what is asked for.
   */
  readAhead?: boolean;
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

/** `load`'s options: those of `prefetch`, and whether to wait for the cache. */
export interface LoadOptions extends PrefetchOptions {
  /**
   * Resolve once the cache holds what the load brought too (default true). `false`: resolve as
   * soon as every file is verified and held for its reads, while the cache write goes on (a first
   * visit's write to a store still being created takes tens of ms, work a game's start need not
   * wait for; `whenStored()` waits for it). A bundle that fails after this load's files in it
   * passed is let go whole all the same (SPEC §7): their reads then fetch it again.
   */
  waitForCache?: boolean;
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
