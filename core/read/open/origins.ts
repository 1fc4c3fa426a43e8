/**
 * Origin policy (SPEC §7 "Tokens"): which URLs a source may fetch, checked at open before any
 * request, and what each origin was found to serve (ranges, several ranges at once), kept per
 * source rather than for the whole page.
 */
import { InvalidOptionError, OriginNotAllowedError, TokenOriginError } from '../../errors.js';
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
 * The `<meta name>` the build plugins put in a page's head when they add preload links at the end
 * of its body (integrations/build/preload.ts): those links follow the page's scripts, and a
 * reader opened before them waits for the parse (page-preloads.ts `documentParsed`).
 */
export const PRELOAD_MARKER_NAME = 'awake-bundle-preload';

/** The attribute the build plugins put on the index's preload link: adapters ask for it early (early-index.ts). */
export const EARLY_INDEX_ATTRIBUTE = 'data-awkb-index';
