/**
 * A mistyped path below the root: a game asks for `…/backgrond-1.png` below the root where the
 * index lists `…/background-1.png`, so the file loads loose, and the host's answer (a development
 * server's `index.html`, a 404) fails in the engine's own words ("Failed to process file",
 * "Unable to load from …"), which never say why. An adapter tells this of every URL below its
 * root that loaded loose; when a listed path is near it (a few letters apart, the same name but
 * for case, or the same file name in another folder), one warning per path names it. A URL with
 * no listed path near it is taken to be loose on purpose: nothing is said.
 */
import type { ListedPaths } from './nearest-path.js';
import { projectPathOf } from './project-urls.js';

export interface NearMissOptions {
  /** The root the index is mounted at. */
  root: URL;
  /** Whether the index lists a path. */
  has: (path: string) => boolean;
  /** The paths the index lists (none when opaque ids hide them). */
  paths: () => readonly string[];
  /** The index URL, to name it in the warning. */
  indexUrl?: string;
  /** Default `console.warn`. */
  warn?: (message: string) => void;
  /** When the nearest path is looked for: default the next macrotask, off the engine's request. */
  schedule?: (callback: () => Promise<void>) => void;
}

/** Paths looked into per mount: a game that loads many files loose below the root on purpose pays for no more. */
const MAX_LOOKED_INTO = 64;

export class NearMisses {
  readonly #options: NearMissOptions;
  /** Paths looked into already: each is told of once. */
  readonly #seen = new Set<string>();
  /** The index's paths, arranged for the search once one is needed. */
  #listed: ListedPaths | undefined;

  constructor(options: NearMissOptions) {
    this.#options = options;
  }

  /** A file at `url` loads loose. */
  notice(url: URL): void {
    if (this.#seen.size >= MAX_LOOKED_INTO) return;
    const path = projectPathOf(url, this.#options.root);
    if (path === undefined || path === '' || this.#seen.has(path) || this.#options.has(path)) return;
    this.#seen.add(path);
    (this.#options.schedule ?? ((callback) => setTimeout(callback, 0)))(() => this.#tell(path));
  }

  async #tell(path: string): Promise<void> {
    // The search is a chunk of its own, fetched only now; should it fail to load, nothing is said.
    const search = await import('./nearest-path.js').catch(() => undefined);
    if (!search) return;
    this.#listed ??= new search.ListedPaths(this.#options.paths());
    const near = this.#listed.nearest(path);
    if (near === undefined) return;
    const { indexUrl, root, warn } = this.#options;
    const index = indexUrl === undefined ? 'the index' : `the index ${indexUrl}`;
    (warn ?? ((text: string) => console.warn(text)))(
      `awake-bundle: ${path} is below the root ${root.href} but not in ${index}; did you mean ${near}? Loading it loose`,
    );
  }
}
