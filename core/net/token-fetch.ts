/**
 * A `fetch` that adds a read token to requests for the content's own origin only, and asks for
 * a fresh token once on a 401 (SPEC §7 "Tokens").
 *
 * Redirects: a token must not follow a redirect to another origin, so requests to the token's
 * origin are sent with `redirect: 'manual'` and their redirects followed here (at most
 * `maxRedirects`); once a redirect leaves the origin, the `Authorization` header is dropped for
 * good and the platform follows the rest. Node's fetch shows the 3xx answer and its `Location`.
 * Browsers answer `redirect: 'manual'` with an opaque response that hides `Location`; there,
 * a request to the page's own origin is sent again with `redirect: 'follow'` and
 * `mode: 'same-origin'`, so the browser itself refuses any hop off the origin, and for a token
 * origin that is not the page's, the opaque response is returned as is (the `Transport` reports it
 * as an `HttpError` with status 0). Serve token-protected content without redirects, or from
 * the page's origin, to read it in a browser.
 *
 * The token's origin is fixed before any request: the `origin` option, else the origin that
 * `IndexedAssetSource.open` binds (the index URL's, else the `baseUrl`'s) through
 * `bindTokenOrigin`. An unbound one never guesses from the first URL it sees (that might be a
 * bundle on a CDN the index names): it fails with `TokenOriginError` and sends nothing.
 */
import { NetworkError, TokenOriginError } from '../errors.js';

export interface TokenAuthorizedFetchOptions {
  /** The token, or a function that supplies it; a function is asked once, then again after a 401. */
  token: string | (() => string | Promise<string>);
  /** Asked for a fresh token after a 401; default: call `token` again when it is a function. */
  refreshToken?: () => string | Promise<string>;
  /**
   * The only origin that gets the token. Without it, the fetch must be bound before use:
   * `IndexedAssetSource.open` binds it to the index URL's origin (else the `baseUrl`'s), or call
   * `bindTokenOrigin(fetch, origin)`; a request through an unbound one fails with `TokenOriginError`.
   */
  origin?: string;
  fetch?: typeof fetch;
  /** The authorization scheme; default `Bearer`. */
  scheme?: string;
  /** Redirects followed for one request before failing with `E_NETWORK`; default 10. */
  maxRedirects?: number;
  /** The page's origin, for the browser fallback above; default `globalThis.location.origin` when there is one. */
  pageOrigin?: string;
}

type FetchInit = RequestInit & { headers: Headers };

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const REQUEST_BODY_HEADERS = ['content-encoding', 'content-language', 'content-location', 'content-type', 'content-length'];

/** Where an unbound token fetch keeps the function that binds it (see `bindTokenOrigin`). */
const bindOrigin = Symbol('awake-bundle.bindTokenOrigin');
type Bindable = typeof fetch & { [bindOrigin]?: (origin: string) => typeof fetch };

/**
 * `fetch` bound to `origin` when it is a `tokenAuthorizedFetch` made without `origin`: a new
 * fetch sending the token to that origin only, sharing the token (and its refreshes). Any other
 * fetch comes back unchanged, so callers can pass whatever fetch they were given.
 */
export function bindTokenOrigin(given: typeof fetch, origin: string): typeof fetch {
  const bind = (given as Bindable)[bindOrigin];
  return bind ? bind(origin) : given;
}

/** Whether `fetch` is a `tokenAuthorizedFetch` that still needs `bindTokenOrigin`. */
export function needsTokenOrigin(given: typeof fetch | undefined): boolean {
  return given !== undefined && (given as Bindable)[bindOrigin] !== undefined;
}

export function tokenAuthorizedFetch(options: TokenAuthorizedFetchOptions): typeof fetch {
  const tokens = new TokenSupply(options.token, options.refreshToken);
  if (options.origin !== undefined) return authorizedFetchFor(originOf(options.origin, 'origin'), tokens, options);
  const unbound: Bindable = async (input) => {
    const url = requestUrl(input);
    throw new TokenOriginError(
      `tokenAuthorizedFetch has no origin to send its token to (request for ${url}): give it \`origin\`, or pass it to IndexedAssetSource.open, which binds it to the index's origin`,
      { url },
    );
  };
  unbound[bindOrigin] = (origin) => authorizedFetchFor(originOf(origin, 'the origin to bind'), tokens, options);
  return unbound;
}

function originOf(value: string, what: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch (error) {
    throw new TokenOriginError(`tokenAuthorizedFetch: ${what} ${JSON.stringify(value)} is not an absolute URL`, { cause: error });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new TokenOriginError(`tokenAuthorizedFetch: ${what} ${JSON.stringify(value)} is not an http(s) origin`, { url: url.href });
  return url.origin;
}

function requestUrl(input: RequestInfo | URL): string {
  return input instanceof URL ? input.href : typeof input === 'string' ? input : input.url;
}

/** The fetch that sends the token to `tokenOrigin` only. */
function authorizedFetchFor(tokenOrigin: string, tokens: TokenSupply, options: TokenAuthorizedFetchOptions): typeof fetch {
  const baseFetch: typeof fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const scheme = options.scheme ?? 'Bearer';
  const maxRedirects = options.maxRedirects ?? 10;
  const pageOrigin = options.pageOrigin ?? pageLocation()?.origin;
  let redirectsHidden = false;

  /** One hop with the token; on a 401, once per request, again with a fresh token. */
  async function sendWithToken(url: URL, init: FetchInit, state: { refreshed: boolean }): Promise<Response> {
    const used = tokens.current();
    const response = await baseFetch(url.href, authorized(init, scheme, await used));
    if (response.status !== 401 || state.refreshed || !replayable(init.body)) return response;
    state.refreshed = true;
    const fresh = tokens.refresh(used);
    if (!fresh) return response;
    const freshToken = await fresh;
    await response.body?.cancel().catch(() => undefined);
    return baseFetch(url.href, authorized(init, scheme, freshToken));
  }

  async function followWithToken(start: URL, firstInit: FetchInit): Promise<Response> {
    const state = { refreshed: false };
    const sameOriginAsPage = start.origin === pageOrigin;
    if (redirectsHidden && sameOriginAsPage) return sendWithToken(start, { ...firstInit, redirect: 'follow', mode: 'same-origin' }, state);
    let url = start;
    let init: FetchInit = { ...firstInit, redirect: 'manual' };
    for (let redirects = 0; ; redirects++) {
      const response = await sendWithToken(url, init, state);
      if (response.type === 'opaqueredirect') {
        redirectsHidden = true;
        if (!sameOriginAsPage) return response;
        await response.body?.cancel().catch(() => undefined);
        return sendWithToken(url, { ...init, redirect: 'follow', mode: 'same-origin' }, state);
      }
      const location = REDIRECT_STATUSES.has(response.status) ? response.headers.get('location') : null;
      if (location === null) return response;
      await response.body?.cancel().catch(() => undefined);
      if (redirects >= maxRedirects)
        throw new NetworkError(`${init.method ?? 'GET'} ${start.href}: more than ${maxRedirects} redirects`, { url: start.href });
      const next = new URL(location, url);
      init = redirectedInit(init, response.status);
      if (next.origin !== tokenOrigin) {
        // Off the token's origin: drop the header for good (also a caller's own, as the Fetch standard does) and let the platform follow the rest.
        init.headers.delete('authorization');
        return baseFetch(next.href, { ...init, redirect: 'follow' });
      }
      url = next;
    }
  }

  return async function authorizedFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
    const url = new URL(requestUrl(input), pageLocation()?.href);
    if (url.origin !== tokenOrigin) return baseFetch(input, init);
    const merged = await mergedInit(input, init);
    const redirect = merged.redirect ?? 'follow';
    if (redirect !== 'follow') return sendWithToken(url, merged, { refreshed: false });
    return followWithToken(url, merged);
  };
}

/** The current token, shared by concurrent requests; one refresh serves every request that saw the same stale token. */
class TokenSupply {
  #current: Promise<string> | undefined;

  constructor(
    private readonly token: string | (() => string | Promise<string>),
    private readonly refreshToken: (() => string | Promise<string>) | undefined,
  ) {}

  current(): Promise<string> {
    const token = this.token;
    return (this.#current ??= this.#ask(typeof token === 'function' ? token : () => token));
  }

  /** A fresh token after a 401 with `used`, or `undefined` when there is no way to get one. */
  refresh(used: Promise<string>): Promise<string> | undefined {
    if (this.#current !== undefined && this.#current !== used) return this.#current;
    const ask = this.refreshToken ?? (typeof this.token === 'function' ? this.token : undefined);
    if (!ask) return undefined;
    return (this.#current = this.#ask(ask));
  }

  #ask(supplier: () => string | Promise<string>): Promise<string> {
    const promise = Promise.resolve().then(supplier);
    // A failed supplier is asked again by the next request rather than failing every one after it.
    promise.catch(() => {
      if (this.#current === promise) this.#current = undefined;
    });
    return promise;
  }
}

function pageLocation(): { href: string; origin: string } | undefined {
  const location = (globalThis as { location?: { href?: unknown; origin?: unknown } }).location;
  return typeof location?.href === 'string' && typeof location.origin === 'string'
    ? { href: location.href, origin: location.origin }
    : undefined;
}

function authorized(init: FetchInit, scheme: string, token: string): RequestInit {
  const headers = new Headers(init.headers);
  headers.set('authorization', `${scheme} ${token}`);
  return { ...init, headers };
}

/** A stream body can be sent only once, so a request with one is not resent after a 401. */
function replayable(body: RequestInit['body']): boolean {
  return body == null || !(typeof ReadableStream !== 'undefined' && body instanceof ReadableStream);
}

/** The caller's `Request` and `init` as one `init`, with `Headers` this module can edit. */
async function mergedInit(input: RequestInfo | URL, init: RequestInit | undefined): Promise<FetchInit> {
  if (typeof Request === 'undefined' || !(input instanceof Request)) return { ...init, headers: new Headers(init?.headers) };
  const fromRequest: RequestInit = {
    method: input.method,
    headers: input.headers,
    signal: input.signal,
    redirect: input.redirect,
    credentials: input.credentials,
    cache: input.cache,
    integrity: input.integrity,
    keepalive: input.keepalive,
    referrer: input.referrer,
    referrerPolicy: input.referrerPolicy,
  };
  if (input.method !== 'GET' && input.method !== 'HEAD' && input.body !== null) fromRequest.body = await input.clone().arrayBuffer();
  return { ...fromRequest, ...init, headers: new Headers(init?.headers ?? input.headers) };
}

/** The next hop's request, as the Fetch standard's HTTP-redirect fetch changes it. */
function redirectedInit(init: FetchInit, status: number): FetchInit {
  const method = (init.method ?? 'GET').toUpperCase();
  const becomesGet = (status === 303 && method !== 'GET' && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST');
  if (!becomesGet) return { ...init, headers: new Headers(init.headers) };
  const headers = new Headers(init.headers);
  for (const name of REQUEST_BODY_HEADERS) headers.delete(name);
  const { body: _dropped, ...rest } = init;
  return { ...rest, method: 'GET', headers };
}
