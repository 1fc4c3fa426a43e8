/**
 * awake-bundle: what a game's code uses to read a published project (SPEC §7). The reader and
 * its options, the caches, token-authorized fetch, and the errors it may throw. The AWKB format,
 * index and publish helpers are `awake-bundle/format`; Node's publishing, server and cache are
 * `awake-bundle/node`. test/public-api.test.ts pins this list.
 */
export { IndexedAssetSource } from './read/indexed-asset-source.js';
export type {
  OpenOptions,
  ReadOptions,
  LoadOptions,
  PrefetchOptions,
  PrefetchProgress,
  FileProgress,
  SourceStats,
} from './read/options.js';
export type { RangeReadOptions } from './read/plan/range-reads.js';
export type { DeltaReadOptions } from './read/plan/delta-ranges.js';
export type { NeededBytesOptions } from './read/plan/needed-bytes.js';
export type { ReadState } from './read/load/file-read.js';
export type { CacheErrorDetail } from './read/state/verified-cache.js';
export type { RetryOptions, RetryEvent, TransportOptions } from './net/transport.js';
export { tokenAuthorizedFetch, bindTokenOrigin, type TokenAuthorizedFetchOptions } from './net/token-fetch.js';
export { watchDoubleDownloads, type DoubleDownloadsOptions } from './page/double-downloads.js';
export { sha256Hex } from './hash.js';

// Caches (SPEC §7 "Cache"): contents kept by SHA-256.
export type { ContentCache } from './cache/content-cache.js';
export { MemoryCache, type MemoryCacheOptions } from './cache/memory.js';
export {
  IndexedDBCache,
  FallbackCache,
  DEFAULT_BROWSER_CACHE_NAME,
  type BrowserCacheOptions,
  type BrowserCacheBackend,
  type ClearableContentCache,
  type FallbackCacheOptions,
} from './cache/browser.js';
export { CacheStorageCache, OpfsCache, createBrowserCache, type BrowserStorageCache } from './cache/browser-stores.js';
export { openBrowserCache, type OpenBrowserCacheOptions } from './cache/open-browser-cache.js';

// The project index as the reader gives it (`source.index`).
export type { ProjectIndex, BundledIndex, LooseIndex, BundleEntry, BundledFileEntry, LooseFileEntry } from './format/project-index.js';

// Errors (SPEC §7 "Errors"): typed, with a stable `code`.
export {
  AwakeError,
  isAwakeError,
  AssetNotFoundError,
  BundleFormatError,
  BundleIntegrityError,
  FileIntegrityError,
  MemberDecodeError,
  HttpError,
  NetworkError,
  RequestAbortedError,
  RequestTimeoutError,
  ResponseSizeError,
  RangeResponseError,
  ReadStalledError,
  IndexValidationError,
  IndexTooLargeError,
  UnsupportedIndexVersionError,
  UnsupportedOperationError,
  InvalidOptionError,
  OriginNotAllowedError,
  TokenOriginError,
  UnsafePathError,
  type AnyAwakeError,
  type AwakeErrorCode,
  type AwakeErrorDetails,
  type BundlePart,
  type MemberDecodeProblem,
} from './errors.js';
