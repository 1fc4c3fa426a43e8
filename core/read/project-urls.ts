/**
 * From the URL an engine would request to the project path it has in the index, and back: what
 * every adapter needs to serve an engine's ordinary loads from an index.
 *
 * Engines hand `XMLHttpRequest`/`fetch` URLs relative to the page (Phaser: `baseURL + path +
 * url`; Babylon: `rootUrl + uri` for glTF externals, so a percent-encoded uri stays encoded);
 * the browser resolves them against the document. We do the same, then decode each segment, so
 * `./`, `../`, `%20` and a query string land on the path the publish step wrote (SPEC §1:
 * relative, `/`-separated, no `.`/`..` segments).
 */

/** The URL relative URLs resolve against: the document's base, else the page, else none (Node). */
export function pageBase(): string | undefined {
  const scope = globalThis as { document?: { baseURI?: string }; location?: { href: string } };
  return scope.document?.baseURI ?? scope.location?.href;
}

/** The absolute URL of `url` as the page would request it, or undefined if it is not a URL. */
export function absoluteUrl(url: string, base = pageBase()): URL | undefined {
  try {
    return new URL(url, base);
  } catch {
    return undefined;
  }
}

/** The folder that holds `url` (for an index URL): its query and fragment dropped, ending with `/`. */
export function folderOf(url: URL): URL {
  const folder = new URL(url.href);
  folder.search = '';
  folder.hash = '';
  folder.pathname = folder.pathname.slice(0, folder.pathname.lastIndexOf('/') + 1);
  return folder;
}

/** `url` itself as a folder (for a `root` option): `…/published` and `…/published/` are the same root. */
export function asFolder(url: URL): URL {
  const folder = new URL(url.href);
  folder.search = '';
  folder.hash = '';
  if (!folder.pathname.endsWith('/')) folder.pathname += '/';
  return folder;
}

/**
 * The project path that `url` names below `root` (a folder URL), or undefined when the URL is
 * elsewhere (another origin or scheme, above the root) or does not spell a safe path.
 */
export function projectPathOf(url: URL, root: URL): string | undefined {
  if (url.origin !== root.origin || url.protocol !== root.protocol) return undefined;
  if (!url.pathname.startsWith(root.pathname)) return undefined;
  const encoded = url.pathname.slice(root.pathname.length);
  if (encoded === '') return undefined;
  const segments: string[] = [];
  for (const segment of encoded.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return undefined;
    }
    // An encoded `/` or `\` inside one segment, or an empty segment, cannot be a project path.
    if (decoded === '' || decoded.includes('/') || decoded.includes('\\')) return undefined;
    segments.push(decoded);
  }
  return segments.join('/');
}

/** The URL of a project path below `root`, each segment encoded as the publish step does (SPEC §2). */
export function urlOfPath(path: string, root: URL): string {
  return new URL(path.split('/').map(encodeURIComponent).join('/'), root).href;
}
