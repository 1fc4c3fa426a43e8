/**
 * A service worker's fetch handler that answers the page's requests for indexed URLs from
 * verified bundles (SPEC §7), whatever engine or tag made them: `<img>`, CSS, `fetch`, XHR,
 * `<audio>` with ranges. Everything that reads, verifies, caches or retries is the core reader's;
 * this file decides which URL is which path and turns bytes into HTTP responses; which version of
 * the index serves is index-versions.ts's.
 *
 *   // your own worker (built with webpack, target webworker):
 *   import { installAwkbServiceWorker } from 'awake-bundle/sw';
 *   installAwkbServiceWorker(self, { indexUrl: 'project.index.json' });
 *
 * A GET or HEAD URL maps into the index when it lies below the root (the folder holding the index unless
 * `root` says otherwise), its path decodes to a project path (`projectPathOf`), and the index
 * lists that path. Other requests are not touched: `handleFetch` returns false without calling
 * `respondWith`, so the browser fetches them as if there were no worker.
 */
import { openBrowserCache } from '../../core/cache/open-browser-cache.js';
import { AwakeError, BundleIntegrityError, FileIntegrityError, InvalidOptionError } from '../../core/errors.js';
import { decodeIndexText } from '../../core/format/index-text.js';
import { contentTypeOf } from '../../core/format/media-types.js';
import { requestedRange } from '../../core/format/range-header.js';
import { sleep } from '../../core/net/abort.js';
import { IndexedAssetSource, type OpenOptions } from '../../core/read/indexed-asset-source.js';
import { asFolder, folderOf, projectPathOf } from '../../core/page/project-urls.js';
import { IndexVersions, type IndexStore, type IndexUpdate } from './index-versions.js';

export interface AwkbFetchHandlerOptions extends Omit<OpenOptions, 'index' | 'baseUrl' | 'indexUrl' | 'signal' | 'readAhead'> {
  /** Where the project index is: absolute, or relative to the worker script's URL. */
  indexUrl: string;
  /** The folder URL that maps to the project root (default: the folder holding the index). */
  root?: string;
  /** Where verified contents are kept: `openBrowserCache()` (IndexedDB, persistent) by default; `null` for none. */
  cache?: OpenOptions['cache'];
  /**
   * Where bytes are hashed. Default 0 (this thread): a service worker cannot start Web Workers in
   * every browser (Chromium has no `Worker` in a service worker), and it has no page to keep
   * responsive.
   */
  hashWorkers?: OpenOptions['hashWorkers'];
  /**
   * Where the last verified index is kept. A worker that starts serves from it at once, while it
   * reads the index again (stale-while-revalidate): a slow, stalled or unreachable host holds no
   * request, and the fetched index replaces it once checked. Default: Cache Storage
   * (`awake-bundle-index`) where it exists; `null` to keep none.
   */
  indexStore?: IndexStore | null;
  /**
   * With no kept index, how long requests below the root wait for the index when the worker
   * starts, in ms (default 3 000, as workbox's usual network timeout); then, and for requests
   * that come later while it is still being read, the browser fetches them from the network.
   * Once it is read, requests are answered from it. 0: never wait.
   */
  indexWaitMs?: number;
  /** The timer for `indexWaitMs`, injectable so tests need not wait. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * On a new version of the index, first bring the new contents of the files that changed and
   * whose earlier contents the cache holds: what this player downloaded before (default true; see
   * `IndexedAssetSource.prefetchChanged`). Fetched as the reader fetches, so only what changed
   * (delta ranges). Files new in the version, and files never loaded, wait for their first read.
   */
  prefetchOnUpdate?: boolean;
  /**
   * Told when the index read differs from the one before it (the one kept from an earlier run,
   * or announced last), once the new version serves and its changed files were brought
   * (`prefetchOnUpdate`). Never told of an index older than one serving: when reads of the index
   * overlap, the one started last wins. `installAwkbServiceWorker` posts
   * `{ type: 'awkb:updated', indexUrl, prefetchedFiles }` to the pages for it.
   */
  onIndexUpdate?: (source: IndexedAssetSource, update: IndexUpdate) => void;
}

export type { IndexStore, IndexUpdate } from './index-versions.js';

/** `indexWaitMs`'s default. */
export const DEFAULT_INDEX_WAIT_MS = 3_000;

/** What `handleFetch` needs of a `FetchEvent` (the WebWorker lib's type fits). */
export interface FetchEventLike {
  readonly request: Request;
  respondWith(response: Response | PromiseLike<Response>): void;
  /** Keeps the worker alive until the cache writes of what the answer read have landed. */
  waitUntil?(promise: Promise<unknown>): void;
}

export interface AwkbFetchHandler {
  /** Answers `event` from the index when its URL maps into it (true), else leaves it alone (false). */
  handleFetch(event: FetchEventLike): boolean;
  /** The reader serving now: settles once an index (the kept one, or the one fetched) has been read and checked. */
  readonly ready: Promise<IndexedAssetSource>;
  /**
   * Fetches the index again (`no-cache`) and serves from it once checked; the old index serves
   * until then, and on failure. Resolves with the reader serving once done: when refreshes
   * overlap, the index of the one started last.
   */
  refreshIndex(): Promise<IndexedAssetSource>;
  /** Settles when no read of the index, nor an update (prefetch, `onIndexUpdate`, the index kept), is in progress. */
  whenUpdated(): Promise<void>;
  /** The folder URL that maps to the project root. */
  readonly root: string;
}

/** The URL relative URLs resolve against in a worker: its own script URL. */
function workerHref(): string | undefined {
  return (globalThis as { location?: { href: string } }).location?.href;
}

export function createAwkbFetchHandler(options: AwkbFetchHandlerOptions): AwkbFetchHandler {
  const indexUrl = new URL(options.indexUrl, workerHref()).href;
  const root = options.root === undefined ? folderOf(new URL(indexUrl)) : asFolder(new URL(options.root, indexUrl));
  const indexWaitMs = options.indexWaitMs ?? DEFAULT_INDEX_WAIT_MS;
  if (!(indexWaitMs >= 0)) throw new InvalidOptionError('indexWaitMs', `indexWaitMs must be ≥ 0, got ${indexWaitMs}`);
  // One store for every version of the index, so a new version reads what the old one cached.
  const cache = options.cache === undefined ? openBrowserCache() : options.cache;
  const baseFetch = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => fetch(input, init));
  // The index is asked for past the HTTP cache, so a new version is seen; bundles are immutable (named by SHA-256).
  const readerFetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    return baseFetch(input, url === indexUrl ? { ...init, cache: 'no-cache' } : init);
  }) as typeof fetch;
  const {
    root: _root,
    indexUrl: _indexUrl,
    indexStore: _indexStore,
    onIndexUpdate: _onIndexUpdate,
    prefetchOnUpdate: _prefetchOnUpdate,
    indexWaitMs: _indexWaitMs,
    sleep: _sleep,
    ...openOptions
  } = options;
  // No read-ahead here: the worker is built without the reference reader (static-imports-loader.cjs).
  const settings = { ...openOptions, indexUrl, cache, fetch: readerFetch, hashWorkers: options.hashWorkers ?? 0, readAhead: false };
  const versions = new IndexVersions({
    indexUrl,
    fetchIndex: () => IndexedAssetSource.open(settings),
    openKept: (json) => IndexedAssetSource.open({ ...settings, index: json }),
    indexStore: options.indexStore === undefined ? cacheStorageIndexStore() : (options.indexStore ?? undefined),
    prefetchOnUpdate: options.prefetchOnUpdate !== false,
    onIndexUpdate: options.onIndexUpdate,
  });
  const waitForIndex = indexWait(versions.ready, indexWaitMs, options.sleep ?? sleep);
  /** Keeps the worker alive for what `response` read reaching the cache, and for an index being read or an update in progress. */
  const answer = (event: FetchEventLike, source: Promise<IndexedAssetSource>, response: Promise<Response>): void => {
    event.respondWith(response);
    event.waitUntil?.(
      Promise.all([source.then((reader) => response.then(() => reader.whenStored())), versions.whenUpdated()]).catch(() => undefined),
    );
  };

  return {
    root: root.href,
    get ready() {
      return versions.ready;
    },
    refreshIndex: () => versions.refresh(),
    whenUpdated: () => versions.whenUpdated(),
    handleFetch(event) {
      const request = event.request;
      if (request.method !== 'GET' && request.method !== 'HEAD') return false;
      const url = new URL(request.url);
      if (sameResource(url, indexUrl)) return false;
      const path = pathOf(url, root);
      if (path === undefined) return false;
      const serving = versions.serving;
      if (serving) {
        if (!serving.has(path)) return false;
        answer(event, Promise.resolve(serving), respond(serving, path, request));
        return true;
      }
      // No index yet (none kept): wait for it below the root, for `indexWaitMs` at most; past
      // that, or with none at all, the network answers.
      if (versions.failed || waitForIndex.over) return false;
      const opening = versions.ready;
      answer(
        event,
        opening,
        waitForIndex.until(opening).then((source) => (source?.has(path) ? respond(source, path, request) : fetch(request))),
      );
      return true;
    },
  };
}

/**
 * The wait for the first index when none was kept: `until(opening)` resolves with the reader if
 * it comes within `ms` of the worker's start, else `undefined` (for the network); `over` once
 * that time has passed without one. The timer stops when the index settles.
 */
function indexWait(ready: Promise<IndexedAssetSource>, ms: number, timer: (ms: number, signal?: AbortSignal) => Promise<void>) {
  const stop = new AbortController();
  const state = { over: false };
  // Stopped: never resolves, so it cannot win a race against the index that stopped it.
  const elapsed = timer(ms, stop.signal).then(
    () => void (state.over = true),
    () => new Promise<void>(() => undefined),
  );
  ready.then(
    () => stop.abort(),
    () => stop.abort(),
  );
  return {
    get over() {
      return state.over;
    },
    until: (opening: Promise<IndexedAssetSource>): Promise<IndexedAssetSource | undefined> =>
      Promise.race([opening.catch(() => undefined), elapsed.then(() => undefined)]),
  };
}

/**
 * The project path a URL below the root stands for: the path it names, or for a folder URL
 * (`…/`, the root itself included) its `index.html`, as static hosts answer them, so a page
 * published in the index (`/game/` for `game/index.html`) is served offline too.
 */
function pathOf(url: URL, root: URL): string | undefined {
  if (!url.pathname.endsWith('/')) return projectPathOf(url, root);
  const page = new URL(url.href);
  page.pathname += 'index.html';
  return projectPathOf(page, root);
}

/** The default `indexStore`: Cache Storage, where the worker has it. */
function cacheStorageIndexStore(): IndexStore | undefined {
  const storage = (globalThis as { caches?: CacheStorage }).caches;
  if (!storage) return undefined;
  const name = 'awake-bundle-index';
  return {
    async get(indexUrl) {
      const kept = await (await storage.open(name)).match(indexUrl);
      // Strict UTF-8, as a fetched index (SPEC preamble); a kept copy that is not is as if none was kept.
      return kept ? decodeIndexText(new Uint8Array(await kept.arrayBuffer()), { url: indexUrl }) : undefined;
    },
    async put(indexUrl, json) {
      await (await storage.open(name)).put(indexUrl, new Response(json, { headers: { 'Content-Type': 'application/json' } }));
    },
  };
}

function sameResource(url: URL, other: string): boolean {
  const a = new URL(url.href);
  a.hash = '';
  const b = new URL(other);
  b.hash = '';
  return a.href === b.href;
}

/** The verified bytes of `path` as an HTTP response: whole (200), one range (206), or 416; 502 when they cannot be had verified. */
export async function respond(source: IndexedAssetSource, path: string, request: Request): Promise<Response> {
  // HEAD: the index knows the size; no bytes are handed out, so none need fetching.
  if (request.method === 'HEAD') return headResponse(source.entry(path)!.sizeBytes, path);
  let bytes: Uint8Array;
  try {
    bytes = await source.read(path);
  } catch (error) {
    return failure(path, error);
  }
  return bytesResponse(bytes, path, request.headers.get('range'));
}

/** A response of `bytes` for a request with this `Range` header (RFC 9110 §14): several ranges get the whole file (§14.2 allows it). */
export function bytesResponse(bytes: Uint8Array, path: string, rangeHeader: string | null): Response {
  const size = bytes.length;
  const headers: Record<string, string> = { 'Content-Type': contentTypeOf(path), 'Accept-Ranges': 'bytes' };
  const range = requestedRange(rangeHeader ?? undefined, size);
  if (range === 'unsatisfiable') {
    return new Response(null, { status: 416, headers: { ...headers, 'Content-Range': `bytes */${size}`, 'Content-Length': '0' } });
  }
  if (range === undefined) {
    return new Response(bytes as Uint8Array<ArrayBuffer>, { status: 200, headers: { ...headers, 'Content-Length': String(size) } });
  }
  const body = bytes.subarray(range.start, range.end + 1);
  return new Response(body as Uint8Array<ArrayBuffer>, {
    status: 206,
    headers: { ...headers, 'Content-Length': String(body.length), 'Content-Range': `bytes ${range.start}-${range.end}/${size}` },
  });
}

/** The answer to a HEAD request: a GET's headers without its body. */
export function headResponse(size: number, path: string): Response {
  return new Response(null, {
    status: 200,
    headers: { 'Content-Type': contentTypeOf(path), 'Accept-Ranges': 'bytes', 'Content-Length': String(size) },
  });
}

/**
 * 502: the bytes could not be had verified. The body names the damaged members (SPEC §7
 * "Verified"), so a developer looking at the network panel sees which file and why.
 */
export function failure(path: string, error: unknown): Response {
  const lines = [`awake-bundle: ${path} cannot be served verified`];
  if (error instanceof BundleIntegrityError) {
    lines.push(`damaged: ${error.damaged.length > 0 ? error.damaged.join(', ') : error.part}`);
  } else if (error instanceof FileIntegrityError) {
    lines.push(`damaged: ${path}`);
  }
  lines.push(error instanceof Error ? error.message : String(error));
  const code = error instanceof AwakeError ? error.code : 'E_UNKNOWN';
  return new Response(`${lines.join('\n')}\n`, {
    status: 502,
    headers: { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', 'X-Awkb-Error': code },
  });
}

/** What `installAwkbServiceWorker` needs of the worker's global scope (`self`). */
export interface ServiceWorkerScopeLike {
  skipWaiting(): Promise<void>;
  readonly clients: {
    claim(): Promise<void>;
    matchAll(options?: {
      includeUncontrolled?: boolean;
      type?: 'window' | 'all';
    }): Promise<readonly { postMessage(message: unknown): void }[]>;
  };
  addEventListener(type: string, listener: (event: any) => void): void;
}

/** The message a page posts to the worker to make it read the index again: `{ type: 'awkb:refresh' }`. */
export const REFRESH_MESSAGE = 'awkb:refresh';

/**
 * The message a page posts to the worker to hear when what it read so far is in the persistent
 * cache (before telling a player the game now works offline): `{ type: 'awkb:stored' }`, answered
 * on `ports[0]` with the same.
 */
export const STORED_MESSAGE = 'awkb:stored';

/** The message the worker posts to its pages when it serves a new version of the index. */
export const UPDATED_MESSAGE = 'awkb:updated';

/**
 * Wires a handler into a service worker: `install` skips waiting, `activate` claims the open
 * pages (so the first visit is served once the worker is active, without a reload), `fetch`
 * goes to `handleFetch`, and a `{ type: 'awkb:refresh' }` message reads the index again (the
 * answer goes to `event.ports[0]` when the page sent a port: `{ type: 'awkb:refreshed' }` or
 * `{ type: 'awkb:refresh-failed', message }`); `{ type: 'awkb:stored' }` is answered once what
 * was read so far is in the cache. When the index read differs from the one before,
 * every page of the worker gets `{ type: 'awkb:updated', indexUrl, prefetchedFiles }` once the
 * changed files it had loaded were brought (`prefetchOnUpdate`).
 */
export function installAwkbServiceWorker(scope: ServiceWorkerScopeLike, options: AwkbFetchHandlerOptions): AwkbFetchHandler {
  const handler = createAwkbFetchHandler({
    ...options,
    onIndexUpdate(source, update) {
      options.onIndexUpdate?.(source, update);
      const message = {
        type: UPDATED_MESSAGE,
        indexUrl: source.indexUrl,
        prefetchedFiles: update.prefetchedFiles,
        ...(update.prefetchError === undefined ? {} : { prefetchError: update.prefetchError }),
      };
      void scope.clients.matchAll({ includeUncontrolled: true, type: 'window' }).then((pages) => {
        for (const page of pages) page.postMessage(message);
      });
    },
  });
  scope.addEventListener('install', (event: { waitUntil(promise: Promise<unknown>): void }) => event.waitUntil(scope.skipWaiting()));
  scope.addEventListener('activate', (event: { waitUntil(promise: Promise<unknown>): void }) => event.waitUntil(scope.clients.claim()));
  scope.addEventListener('fetch', (event: FetchEventLike) => void handler.handleFetch(event));
  scope.addEventListener(
    'message',
    (event: { data: unknown; ports?: readonly MessagePort[]; waitUntil(promise: Promise<unknown>): void }) => {
      const data = event.data as { type?: unknown } | string | null;
      const type = typeof data === 'string' ? data : data?.type;
      // Each request is answered on the port the page sent, if any: done, or failed with the reason.
      const reply = (work: Promise<unknown>, done: string, failed: string) => {
        const port = event.ports?.[0];
        event.waitUntil(
          work.then(
            () => port?.postMessage({ type: done }),
            (error: unknown) => port?.postMessage({ type: failed, message: error instanceof Error ? error.message : String(error) }),
          ),
        );
      };
      if (type === STORED_MESSAGE)
        reply(
          handler.ready.then((source) => source.whenStored()),
          STORED_MESSAGE,
          'awkb:stored-failed',
        );
      else if (type === REFRESH_MESSAGE) reply(handler.refreshIndex(), 'awkb:refreshed', 'awkb:refresh-failed');
    },
  );
  return handler;
}
