/**
 * The index as the reader looks things up in it: entries by path (or opaque id), bundles and
 * their members, loose files by content, and what one load (a bundle, or a loose file) brings.
 * Nothing here fetches or holds bytes.
 */
import { AssetNotFoundError, UnsupportedOperationError } from '../../errors.js';
import { entryKey, type BundleEntry, type BundledFileEntry, type ProjectIndex } from '../../format/project-index.js';
import { bundleStreamPlan, type BundleStreamPlan } from '../verify/stream-check.js';
import type { ExpectedMember } from '../verify/verify.js';

export type Entry = BundledFileEntry;

const LOOSE_PREFIX = 'file:';

function saltOf(index: ProjectIndex): string | undefined {
  return index.formatVersion === 3 ? index.pathIds?.salt : undefined;
}

export class IndexView {
  readonly index: ProjectIndex;
  readonly indexUrl: string | undefined;
  /** What the index's relative URLs resolve against. */
  readonly base: string | undefined;
  /** The salt of opaque ids, when ids replace paths. */
  readonly salt: string | undefined;
  readonly #entries = new Map<string, Entry>();
  readonly #bundles = new Map<string, BundleEntry>();
  readonly #membersOf = new Map<string, Entry[]>();
  readonly #looseBySha = new Map<string, Entry[]>();
  readonly #bySha = new Map<string, Entry>();
  readonly #plans = new Map<string, BundleStreamPlan | undefined>();
  /** Per bundle, one entry per distinct content, where the index lists copies of a content (else its members are that). */
  readonly #contents = new Map<string, Entry[]>();
  /** Whether the index lists a content more than once (copies share one place in a bundle, SPEC §5). */
  readonly #copies: boolean;
  readonly #filesBySha = new Map<string, Map<string, Entry[]>>();
  readonly #resolved = new Map<string, string>();
  readonly #idOf: ((path: string) => string) | undefined;

  /**
   * The view of `index`. Opaque ids are HMAC-SHA256 computed at each lookup, synchronously
   * (noble); its code is imported here only for an index that has them, so an index of plain
   * paths costs a game's bundle none of it.
   */
  static async open(index: ProjectIndex, indexUrl: string | undefined, base: string | undefined): Promise<IndexView> {
    const salt = saltOf(index);
    if (salt === undefined) return new IndexView(index, indexUrl, base);
    const { opaqueId } = await import('../../format/ids.js');
    return new IndexView(index, indexUrl, base, (path) => opaqueId(salt, path));
  }

  private constructor(index: ProjectIndex, indexUrl: string | undefined, base: string | undefined, idOf?: (path: string) => string) {
    this.index = index;
    this.indexUrl = indexUrl;
    this.base = base;
    this.salt = saltOf(index);
    this.#idOf = idOf;
    for (const entry of index.files as Entry[]) {
      this.#entries.set(entryKey(entry), entry);
      this.#bySha.set(entry.sha256, entry);
      if (entry.url !== undefined) pushTo(this.#looseBySha, entry.sha256, entry);
    }
    this.#copies = this.#bySha.size !== index.files.length;
    if (index.formatVersion === 3) {
      for (const bundle of index.bundles) {
        this.#bundles.set(bundle.sha256, bundle);
        this.#membersOf.set(bundle.sha256, []);
      }
      for (const entry of index.files) if (entry.bundle !== undefined) this.#membersOf.get(entry.bundle)!.push(entry);
    }
  }

  keyOf(path: string): string {
    return this.#idOf ? this.#idOf(path) : path;
  }

  entry(path: string): Entry | undefined {
    return this.#entries.get(this.keyOf(path));
  }

  require(path: string): Entry {
    const entry = this.entry(path);
    if (!entry) throw new AssetNotFoundError(path, this.indexUrl);
    return entry;
  }

  /** Every entry, keyed by path (or id). */
  entries(): IterableIterator<Entry> {
    return this.#entries.values();
  }

  /** Paths listed by the index; empty when opaque ids hide them. */
  paths(): string[] {
    return this.salt === undefined ? [...this.#entries.keys()] : [];
  }

  /** The paths below a folder (`levels/harbor`, `models/`; `''` for all), plain-path indexes only. */
  pathsBelow(prefix: string): string[] {
    if (this.salt !== undefined)
      throw new UnsupportedOperationError(
        'folders need an index with plain paths; opaque ids hide the folders (list the paths instead)',
        this.indexUrl ? { url: this.indexUrl } : {},
      );
    const folder = prefix.replace(/^\/+|\/+$/g, '');
    return [...this.#entries.keys()].filter((path) => folder === '' || path.startsWith(`${folder}/`));
  }

  /**
   * `items` as paths: each a listed path, else a folder of listed paths; an item that is neither
   * fails with `AssetNotFoundError` naming it.
   */
  expand(items: Iterable<string>): string[] {
    return this.files(items).map((file) => file.path);
  }

  /**
   * `expand`, each path with its entry (looked up once: a load of many paths costs one lookup
   * each), into `files`; the paths in `seen` (those `files` has already) are left out.
   */
  files(items: Iterable<string>, files: { path: string; entry: Entry }[] = [], seen = new Set<string>()): { path: string; entry: Entry }[] {
    const add = (path: string, entry: Entry) => {
      if (seen.has(path)) return;
      seen.add(path);
      files.push({ path, entry });
    };
    for (const item of items) {
      const entry = this.entry(item);
      if (entry) {
        add(item, entry);
        continue;
      }
      const below = this.salt === undefined ? this.pathsBelow(item) : [];
      if (below.length === 0)
        throw new AssetNotFoundError(
          item,
          this.indexUrl,
          `${JSON.stringify(item)} is neither a path nor a folder in the project index${this.indexUrl ? ` ${this.indexUrl}` : ''}`,
        );
      for (const path of below) add(path, this.#entries.get(path)!);
    }
    return files;
  }

  bundle(sha256: string): BundleEntry | undefined {
    return this.#bundles.get(sha256);
  }

  membersOf(bundleSha: string): Entry[] {
    return this.#membersOf.get(bundleSha) ?? [];
  }

  /** The members of a bundle, one per distinct content (the first listed), in the index's order; made once. */
  contentsOf(bundleSha: string): readonly Entry[] {
    if (!this.#copies) return this.membersOf(bundleSha);
    let contents = this.#contents.get(bundleSha);
    if (!contents) {
      const seen = new Set<string>();
      contents = this.membersOf(bundleSha).filter((entry) => !seen.has(entry.sha256) && seen.add(entry.sha256));
      this.#contents.set(bundleSha, contents);
    }
    return contents;
  }

  /** An entry with this content (for its size). */
  contentEntry(sha256: string): Entry {
    return this.#bySha.get(sha256)!;
  }

  /** What a load is keyed by: its bundle's SHA-256, or `file:` + a loose file's. */
  loadKeyOf(entry: Entry): string {
    return entry.url !== undefined ? LOOSE_PREFIX + entry.sha256 : entry.bundle!;
  }

  /** The loose file a loose load brings. */
  looseEntry(loadKey: string): Entry | undefined {
    return loadKey.startsWith(LOOSE_PREFIX) ? this.#looseBySha.get(loadKey.slice(LOOSE_PREFIX.length))?.[0] : undefined;
  }

  /** The files a load brings contents for. */
  filesOf(loadKey: string): Entry[] {
    return this.#bundles.has(loadKey) ? this.membersOf(loadKey) : (this.#looseBySha.get(loadKey.slice(LOOSE_PREFIX.length)) ?? []);
  }

  /** The files of a load that hold `sha256` (indexed once per load: a load's contents arrive one by one). */
  filesWith(loadKey: string, sha256: string): readonly Entry[] {
    let bySha = this.#filesBySha.get(loadKey);
    if (!bySha) {
      bySha = new Map();
      for (const file of this.filesOf(loadKey)) pushTo(bySha, file.sha256, file);
      this.#filesBySha.set(loadKey, bySha);
    }
    return bySha.get(sha256) ?? [];
  }

  /** The bytes one load downloads whole: its bundle's listed size, or its loose file's. */
  sizeOfLoad(loadKey: string): number {
    return this.#bundles.get(loadKey)?.sizeBytes ?? this.looseEntry(loadKey)!.sizeBytes;
  }

  /** What the index says of each member of a bundle, as the checks want it. */
  expectedMembers(bundleSha: string): ExpectedMember[] {
    return this.membersOf(bundleSha).map((entry) => ({
      key: entryKey(entry),
      offset: entry.offset!,
      sizeBytes: entry.sizeBytes,
      sha256: entry.sha256,
      ...(entry.encoding === undefined ? {} : { storedBytes: entry.storedBytes!, encoding: entry.encoding }),
    }));
  }

  /** Whether the streaming plan of a bundle is made already. */
  hasStreamPlan(bundle: BundleEntry): boolean {
    return this.#plans.has(bundle.sha256);
  }

  /** The streaming plan of a bundle (made once), or `undefined` when its layout is not canonical. */
  streamPlan(bundle: BundleEntry): BundleStreamPlan | undefined {
    if (!this.#plans.has(bundle.sha256)) this.#plans.set(bundle.sha256, bundleStreamPlan(bundle, this.expectedMembers(bundle.sha256)));
    return this.#plans.get(bundle.sha256);
  }

  /** Absolute URL of an index-relative URL (each resolved once: every read asks for its bundle's). */
  resolveUrl(url: string): string {
    if (this.base === undefined) return url;
    let resolved = this.#resolved.get(url);
    if (resolved === undefined) this.#resolved.set(url, (resolved = new URL(url, this.base).href));
    return resolved;
  }

  /** The path (or id) to name an entry by in errors. */
  where(path: string | undefined, entry: Entry): { path?: string; id?: string } {
    const named = path ?? entry.path;
    return { ...(named !== undefined ? { path: named } : {}), ...(entry.id !== undefined ? { id: entry.id } : {}) };
  }
}

export function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
