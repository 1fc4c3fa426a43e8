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

/**
 * The folder below which `url` would name a path the index lists (`has`), when its root does not
 * (SPEC §1 paths): `…/assets/atlas/emoji.png` with `atlas/emoji.png` listed gives `…/assets/`.
 * The longest listed tail wins (the shallowest folder). Undefined when no tail is listed, or the
 * URL is not http(s).
 */
export function rootThatWouldMatch(url: URL, has: (path: string) => boolean): URL | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  const segments = url.pathname.split('/').slice(1);
  for (let start = 0; start < segments.length; start++) {
    const root = new URL(
      `/${segments
        .slice(0, start)
        .map((segment) => `${segment}/`)
        .join('')}`,
      url,
    );
    const path = projectPathOf(url, root);
    if (path !== undefined && has(path)) return root;
  }
  return undefined;
}

/** `root` as a `root` option would spell it relative to `base` (a folder URL), else as an absolute path on the same origin. */
export function relativeRoot(root: URL, base: URL | undefined): string | undefined {
  if (!base || root.origin !== base.origin) return undefined;
  if (root.href.startsWith(base.href)) return root.href.slice(base.href.length) || './';
  return root.pathname;
}

export interface MisrootedFilesOptions {
  /** The root the index is mounted at now. */
  root: URL;
  /** Whether the index lists a path. */
  has: (path: string) => boolean;
  /** The index URL, to name it in the warning. */
  indexUrl?: string;
  /** What a relative `root` option resolves against (for Phaser: the loader's baseURL and path; for Babylon: the page), to suggest one. */
  relativeTo?: URL;
  /** Default `console.warn`. */
  warn?: (message: string) => void;
  /** When the warning is given, after the first file: default the next macrotask, so one scene's files count together. */
  schedule?: (callback: () => void) => void;
}

/**
 * The silent misconfiguration of a wrong `root` (docs/phaser.md, docs/babylon.md): a game asks for
 * `assets/…` while the index sits in `published/` and lists `atlas/…`, so with the default root
 * every file quietly loads loose. An adapter tells this of every URL that loaded loose; when the
 * tails of such URLs are index paths, one warning names the `root` that would serve them from
 * bundles. Once per index (per Phaser source, per Babylon registration); after it, `notice` costs
 * nothing.
 */
/** Loose URLs looked at before a source stops looking, when none of them would match: a game that loads many files loose on purpose pays for no more. */
const MAX_UNMATCHED_NOTICES = 256;

export class MisrootedFiles {
  readonly #options: MisrootedFilesOptions;
  #unmatched = 0;
  /** Loose URLs whose tails the index lists, by the root that would match them. */
  readonly #byRoot = new Map<string, Set<string>>();
  #done = false;
  #scheduled = false;

  constructor(options: MisrootedFilesOptions) {
    this.#options = options;
  }

  /** A file at `url` loads loose (it maps to no listed path below the root). */
  notice(url: URL): void {
    if (this.#done) return;
    const root = rootThatWouldMatch(url, this.#options.has);
    if (!root || root.href === this.#options.root.href) {
      if (++this.#unmatched >= MAX_UNMATCHED_NOTICES && !this.#scheduled) this.#done = true;
      return;
    }
    let urls = this.#byRoot.get(root.href);
    if (!urls) {
      urls = new Set();
      this.#byRoot.set(root.href, urls);
    }
    urls.add(url.href);
    if (this.#scheduled) return;
    this.#scheduled = true;
    (this.#options.schedule ?? ((callback) => setTimeout(callback, 0)))(() => this.#warn());
  }

  #warn(): void {
    this.#done = true;
    // The root most of the files would match.
    const [root, urls] = [...this.#byRoot].reduce((best, next) => (next[1].size > best[1].size ? next : best));
    this.#byRoot.clear();
    const { indexUrl, relativeTo, warn } = this.#options;
    const relative = relativeRoot(new URL(root), relativeTo);
    const files = urls.size === 1 ? '1 file' : `${urls.size} files`;
    const index = indexUrl === undefined ? 'the index' : `the index ${indexUrl}`;
    const message =
      `awake-bundle: ${files} under ${root} load loose, but ${index} lists ${urls.size === 1 ? 'it' : 'them'} below its root ${this.#options.root.href}; ` +
      `set root: '${root}'${relative !== undefined && relative !== root ? ` (or '${relative}')` : ''} to serve them from bundles`;
    (warn ?? ((text: string) => console.warn(text)))(message);
  }
}
