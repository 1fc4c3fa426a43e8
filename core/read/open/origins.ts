/**
 * Origin policy (SPEC §7 "Tokens"): which URLs a source may fetch, checked at open before any
 * request, and what each origin was found to serve (ranges, several ranges at once), kept per
 * source rather than for the whole page.
 */
import { InvalidOptionError, OriginNotAllowedError, RequestAbortedError, TokenOriginError } from '../../errors.js';
import type { BundledFileEntry, ProjectIndex } from '../../format/project-index.js';

export function pageHref(): string | undefined {
  return (globalThis as { location?: { href?: string } }).location?.href;
}

export function originOf(url: string): string {
  return new URL(url, pageHref()).origin;
}

export function absoluteUrl(url: string, name = 'indexUrl'): string {
  try {
    return new URL(url, pageHref()).href;
  } catch {
    throw new InvalidOptionError(
      name,
      `${name} ${JSON.stringify(url)} is not an absolute URL (and there is no page to resolve it against)`,
    );
  }
}

/** `url` when it is http(s); the reader fetches nothing else (SPEC §7 "Tokens"). */
export function httpUrl(url: string, where: string): string {
  const protocol = new URL(url).protocol;
  if (protocol !== 'http:' && protocol !== 'https:')
    throw new OriginNotAllowedError(`${where} ${JSON.stringify(url)} is not an http(s) URL`, { url });
  return url;
}

/** The index's own origin (from `base`) and the caller's `allowOrigins`, checked. */
export function allowedOrigins(base: string | undefined, allowOrigins: readonly string[]): Set<string> {
  const allowed = new Set<string>();
  if (base !== undefined) allowed.add(new URL(base).origin);
  allowOrigins.forEach((origin, i) => {
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new InvalidOptionError(
        `allowOrigins[${i}]`,
        `allowOrigins[${i}] ${JSON.stringify(origin)} is not an http(s) origin such as "https://cdn.example.com"`,
      );
    allowed.add(url.origin);
  });
  return allowed;
}

/** The origin a `tokenAuthorizedFetch` without `origin` is bound to: the index URL's, else the baseUrl's. */
export function tokenOrigin(indexOrBase: string | undefined): string {
  if (indexOrBase === undefined)
    throw new TokenOriginError(
      'IndexedAssetSource.open: a tokenAuthorizedFetch without `origin` needs indexUrl or baseUrl to fix the origin its token goes to; give one of them, or the fetch an `origin`',
    );
  return new URL(indexOrBase).origin;
}

/**
 * Every bundle and file URL the index names must be http(s) on an allowed origin, checked at
 * open, before any of them is fetched: an index cannot send the reader (and its token, SPEC §7
 * "Tokens") elsewhere. Redirects are the fetch's business: `tokenAuthorizedFetch` drops the token
 * at the first hop off its origin.
 */
export function checkIndexUrls(index: ProjectIndex, base: string | undefined, allowed: Set<string>): void {
  const check = (url: string, where: string, file?: { path?: string; id?: string }): void => {
    const named = { ...(file?.path !== undefined ? { path: file.path } : {}), ...(file?.id !== undefined ? { id: file.id } : {}) };
    let resolved: URL;
    try {
      resolved = new URL(url, base ?? pageHref());
    } catch {
      throw new OriginNotAllowedError(
        `${where} ${JSON.stringify(url)} is not an absolute URL, and there is no indexUrl or baseUrl to resolve it against`,
        { url, ...named },
      );
    }
    if (resolved.protocol !== 'http:' && resolved.protocol !== 'https:') {
      throw new OriginNotAllowedError(`${where} ${JSON.stringify(url)} is not an http(s) URL; the reader fetches nothing else`, {
        url: resolved.href,
        ...named,
      });
    }
    if (!allowed.has(resolved.origin)) {
      throw new OriginNotAllowedError(
        `${where} ${JSON.stringify(url)} is on ${resolved.origin}, which is not the index's origin${allowed.size > 0 ? ` (allowed: ${[...allowed].join(', ')})` : ''}; list it in allowOrigins to read from it`,
        { url: resolved.href, ...named },
      );
    }
  };
  if (index.formatVersion === 3) index.bundles.forEach((bundle, i) => check(bundle.url, `bundles[${i}].url`));
  (index.files as BundledFileEntry[]).forEach((file, i) => {
    if (file.url !== undefined) check(file.url, `files[${i}].url`, file);
  });
}

/**
 * What this source learnt of each origin it read from: one that answered a range request with
 * the whole file (200) or refused ranges gets whole bundles from then on, rather than risk a
 * whole body per range; one that did not answer several ranges in one request gets
 * ranges one by one (RFC 9110 §14.6). Per source: another source, or another page, asks afresh.
 */
export class OriginCapabilities {
  readonly #ignoringRanges = new Set<string>();
  readonly #withoutMultipart = new Set<string>();

  servesRanges(url: string): boolean {
    return !this.#ignoringRanges.has(originOf(url));
  }

  servesMultipart(url: string): boolean {
    return !this.#withoutMultipart.has(originOf(url));
  }

  ignoresRanges(url: string): void {
    this.#ignoringRanges.add(originOf(url));
  }

  lacksMultipart(url: string): void {
    this.#withoutMultipart.add(originOf(url));
  }
}

/**
 * The URLs the page preloads for `fetch` (`<link rel="preload" as="fetch" crossorigin href>`, as
 * the build plugins add for the index and the first load's bundles): the browser keeps the
 * preloaded response for a `fetch` from this page with the same URL and mode, so such a URL is
 * fetched on the page, not in a worker (whose fetch would ask again). Empty without a document.
 */
export function preloadedFetchUrls(): Set<string> {
  const document = (globalThis as { document?: { querySelectorAll?(selector: string): ArrayLike<{ href?: string }> } }).document;
  const links = document?.querySelectorAll?.('link[rel~="preload"][as="fetch"]');
  const urls = new Set<string>();
  for (let i = 0; i < (links?.length ?? 0); i++) {
    const href = links![i]!.href;
    if (href) urls.add(href);
  }
  return urls;
}

/**
 * The `<meta name>` the build plugins put in a page's head when they add preload links at the end
 * of its body (integrations/build/preload.ts): those links follow the page's scripts.
 */
export const PRELOAD_MARKER_NAME = 'awake-bundle-preload';

/** The attribute the build plugins put on the index's preload link: adapters ask for it early (early-index.ts). */
export const EARLY_INDEX_ATTRIBUTE = 'data-awkb-index';

/**
 * Resolves once the page's HTML is parsed; `undefined` where it is already (or there is no
 * document: a worker, Node), and where nothing is to be waited for: the page has no preload links
 * to come (no `PRELOAD_MARKER_NAME` meta in it: a page the build plugins did not make, or one
 * made without links), or the link preloading `url` is parsed already. A reader opened by a
 * blocking script runs before the parser reaches the preload links after that script (where the
 * build plugins put them): a fetch made then takes the response the browser's preload scanner
 * fetched early, and the link, parsed next, fetches it again (Chromium: two requests). After the
 * parse, the fetch takes the link's response. A page without links asks for its index at once,
 * rather than after the rest of its HTML and the script's own work (BENCHMARKS.md, "Start and tail").
 *
 * The wait only saves that second request, so it holds no caller back for long: it rejects with
 * `RequestAbortedError` as soon as `signal` aborts, and resolves after `timeoutMs` (0: no limit)
 * whether or not the HTML has ended (a page whose HTML streams for long, or never ends, still opens).
 */
export function documentParsed(url: string, signal?: AbortSignal, timeoutMs = 0): Promise<void> | undefined {
  const document = (
    globalThis as { document?: Pick<Document, 'readyState' | 'addEventListener' | 'removeEventListener' | 'querySelector'> }
  ).document;
  // Links to come: the page says so, and the one preloading `url` is not parsed yet.
  if (document?.readyState !== 'loading' || !document.querySelector?.(`meta[name=${PRELOAD_MARKER_NAME}]`) || preloadedFetchUrls().has(url))
    return undefined;
  return new Promise((resolve, reject) => {
    const end = (error?: RequestAbortedError): void => {
      clearTimeout(timer);
      document.removeEventListener('DOMContentLoaded', parsed);
      signal?.removeEventListener('abort', aborted);
      if (error) reject(error);
      else resolve();
    };
    const parsed = (): void => end();
    const aborted = (): void =>
      end(new RequestAbortedError(`GET ${url}: aborted while waiting for the page to be parsed`, { url, cause: signal!.reason }));
    const timer = timeoutMs > 0 ? setTimeout(parsed, timeoutMs) : undefined;
    if (signal?.aborted) return aborted();
    document.addEventListener('DOMContentLoaded', parsed);
    signal?.addEventListener('abort', aborted);
  });
}
