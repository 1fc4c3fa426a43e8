/**
 * IndexedAssetSource (SPEC §7): reads a published project through its index, hands out only
 * verified bytes, caches every member and loose file under its own SHA-256, and fetches each
 * bundle once however many of its members are read, at the same time or later.
 */
import type { ContentCache } from '../cache/content-cache.js';
import { AwakeError } from '../errors.js';
import { opaqueId } from '../format/ids.js';
import { entryKey, parseProjectIndex, parseProjectIndexJson, type BundleEntry, type BundledFileEntry, type ProjectIndex } from '../format/project-index.js';
import { sha256Hex } from '../hash.js';
import { Transport, type RetryOptions } from '../net/transport.js';
import { mediaTypeOf } from './media-types.js';
import { PendingMembers } from './pending-members.js';
import { verifyBundle, verifyFileBytes, type ExpectedMember } from './verify.js';

export const DEFAULT_PENDING_BYTES = 64 * 1024 * 1024;

export interface OpenOptions {
  /** Where the index is; bundle and file URLs resolve against it. */
  indexUrl?: string;
  /** An index object (or JSON text) instead of fetching one; give `indexUrl` or `baseUrl` for its URLs. */
  index?: ProjectIndex | unknown;
  /** Base for the index's relative URLs when `index` is given without `indexUrl`. */
  baseUrl?: string;
  /** The fetch to use: a `tokenAuthorizedFetch`, a test server's, … Default the global fetch. */
  fetch?: typeof fetch;
  /** Where verified contents are kept by SHA-256; none by default. */
  cache?: ContentCache | null;
  /** Read one uncached member with an HTTP range request instead of its whole bundle. */
  rangeReads?: boolean;
  /** With no cache: bytes of not-yet-read members kept in memory (default 64 MiB). */
  pendingBytes?: number;
  retry?: RetryOptions;
  /** Per-request timeout in ms (default 30 000; 0 = none). */
  timeoutMs?: number;
  /** Aborts opening, and every request of this source when it fires later. */
  signal?: AbortSignal;
  /** A transport of your own (tests, custom retry policies); `fetch`, `retry`, `timeoutMs` are then ignored. */
  transport?: Transport;
}

export interface ReadOptions {
  signal?: AbortSignal;
}

export interface PrefetchProgress {
  /** Bytes received so far, over every request of this prefetch. */
  loadedBytes: number;
  /** Bytes this prefetch downloads in all (bundles and loose files it does not skip). */
  totalBytes: number;
  /** Requests finished, and to make. */
  requestsDone: number;
  requestsTotal: number;
}

export interface PrefetchOptions extends ReadOptions {
  onProgress?: (progress: PrefetchProgress) => void;
}

/** A path that the index does not list. */
export class AssetNotFoundError extends AwakeError {
  override name = 'AssetNotFoundError';
  constructor(path: string, indexUrl?: string) {
    super('E_NOT_FOUND', `${JSON.stringify(path)} is not in the project index${indexUrl ? ` ${indexUrl}` : ''}`, { path, ...(indexUrl ? { url: indexUrl } : {}) });
  }
}

type Entry = BundledFileEntry;

interface LoadedBundle {
  /** Verified member bytes by SHA-256 (copies, not views into the bundle). */
  byContent: Map<string, Uint8Array>;
}

export class IndexedAssetSource {
  readonly index: ProjectIndex;
  readonly indexUrl: string | undefined;
  private readonly base: string | undefined;
  private readonly transport: Transport;
  private readonly cache: ContentCache | undefined;
  private readonly rangeReads: boolean;
  private readonly pending: PendingMembers;
  private readonly entries = new Map<string, Entry>();
  private readonly bundles = new Map<string, BundleEntry>();
  private readonly membersOf = new Map<string, Entry[]>();
  private readonly inFlight = new Map<string, Promise<LoadedBundle>>();
  private readonly objectUrls = new Map<string, string>();
  private readonly lifetime = new AbortController();
  private readonly salt: string | undefined;

  private constructor(index: ProjectIndex, indexUrl: string | undefined, base: string | undefined, transport: Transport, options: OpenOptions) {
    this.index = index;
    this.indexUrl = indexUrl;
    this.base = base;
    this.transport = transport;
    this.cache = options.cache ?? undefined;
    this.rangeReads = options.rangeReads ?? false;
    this.pending = new PendingMembers(options.pendingBytes ?? DEFAULT_PENDING_BYTES);
    this.salt = index.formatVersion === 3 ? index.pathIds?.salt : undefined;
    for (const entry of index.files as Entry[]) this.entries.set(entryKey(entry), entry);
    if (index.formatVersion === 3) {
      for (const bundle of index.bundles) {
        this.bundles.set(bundle.sha256, bundle);
        this.membersOf.set(bundle.sha256, []);
      }
      for (const entry of index.files) if (entry.bundle !== undefined) this.membersOf.get(entry.bundle)!.push(entry);
    }
    options.signal?.addEventListener('abort', () => this.lifetime.abort(options.signal!.reason), { once: true });
  }

  /** Reads and checks the index (formatVersion 2 or 3; others refused, SPEC §3). */
  static async open(options: OpenOptions): Promise<IndexedAssetSource> {
    const transport = options.transport ?? new Transport({
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.retry ? { retry: options.retry } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
    let index: ProjectIndex;
    const indexUrl = options.indexUrl === undefined ? undefined : absoluteUrl(options.indexUrl);
    if (options.index !== undefined) {
      index = typeof options.index === 'string' ? parseProjectIndexJson(options.index, indexUrl ? { url: indexUrl } : {}) : parseProjectIndex(options.index, indexUrl ? { url: indexUrl } : {});
    } else if (indexUrl !== undefined) {
      const text = await transport.getText(indexUrl, options.signal ? { signal: options.signal } : {});
      index = parseProjectIndexJson(text, { url: indexUrl });
    } else {
      throw new TypeError('IndexedAssetSource.open needs indexUrl or index');
    }
    const base = indexUrl ?? (options.baseUrl === undefined ? undefined : absoluteUrl(options.baseUrl));
    return new IndexedAssetSource(index, indexUrl, base, transport, options);
  }

  /** Whether the index lists `path` (by its id when ids replace paths). */
  has(path: string): boolean {
    return this.entries.has(this.keyOf(path));
  }

  /** The index entry of `path`, if listed. */
  entry(path: string): Readonly<Entry> | undefined {
    return this.entries.get(this.keyOf(path));
  }

  /** Paths listed by the index; empty when opaque ids hide them. */
  paths(): string[] {
    return this.salt === undefined ? [...this.entries.keys()] : [];
  }

  /** The verified bytes of `path`: from the cache, a bundle fetched once, a range, or a loose file. */
  async read(path: string, options: ReadOptions = {}): Promise<Uint8Array> {
    const entry = this.requireEntry(path);
    try {
      return await this.readEntry(path, entry, this.signalFor(options.signal));
    } catch (error) {
      throw naming(error, path, entry.id);
    }
  }

  private async readEntry(path: string, entry: Entry, signal: AbortSignal): Promise<Uint8Array> {
    const cached = await this.fromCache(entry);
    if (cached) return cached;
    if (entry.url !== undefined) return this.fetchLoose(path, entry, signal);
    const waiting = this.pending.take(entry.sha256);
    if (waiting && (await sha256Hex(waiting)) === entry.sha256) return waiting;
    const shared = this.inFlight.get(entry.bundle!);
    if (shared) return this.memberFrom(await shared, entry);
    if (this.rangeReads) return this.readRange(path, entry, signal);
    return this.memberFrom(await this.loadBundle(entry.bundle!, signal), entry);
  }

  /** A `text` read, UTF-8. */
  async readText(path: string, options: ReadOptions = {}): Promise<string> {
    return new TextDecoder().decode(await this.read(path, options));
  }

  /** A JSON read. */
  async readJson<T = unknown>(path: string, options: ReadOptions = {}): Promise<T> {
    return JSON.parse(await this.readText(path, options)) as T;
  }

  /**
   * Downloads the bundles (one request each) and loose files that `paths` need, verifies and
   * stores them, skipping a bundle whose requested files are all cached (SPEC §7 "Prefetch").
   */
  async prefetch(paths: Iterable<string>, options: PrefetchOptions = {}): Promise<void> {
    const signal = this.signalFor(options.signal);
    const bundleNeeds = new Map<string, Entry[]>();
    const looseNeeds = new Map<string, { path: string; entry: Entry }>();
    for (const path of paths) {
      const entry = this.requireEntry(path);
      if (entry.url !== undefined) looseNeeds.set(entry.sha256, { path, entry });
      else {
        const list = bundleNeeds.get(entry.bundle!) ?? [];
        list.push(entry);
        bundleNeeds.set(entry.bundle!, list);
      }
    }
    const bundleJobs: string[] = [];
    for (const [bundle, wanted] of bundleNeeds) {
      if (!(await this.allAvailable(wanted))) bundleJobs.push(bundle);
    }
    const looseJobs: { path: string; entry: Entry }[] = [];
    for (const job of looseNeeds.values()) if (!(await this.allAvailable([job.entry]))) looseJobs.push(job);

    const loaded = new Map<string, number>();
    const progress: PrefetchProgress = {
      loadedBytes: 0,
      totalBytes: bundleJobs.reduce((sum, sha) => sum + this.bundles.get(sha)!.sizeBytes, 0) + looseJobs.reduce((sum, job) => sum + job.entry.sizeBytes, 0),
      requestsDone: 0,
      requestsTotal: bundleJobs.length + looseJobs.length,
    };
    const report = (key: string, bytes: number) => {
      progress.loadedBytes += bytes - (loaded.get(key) ?? 0);
      loaded.set(key, bytes);
      options.onProgress?.({ ...progress });
    };
    const finish = (key: string, size: number) => {
      progress.requestsDone++;
      report(key, size);
    };
    if (progress.requestsTotal === 0) options.onProgress?.({ ...progress });
    await Promise.all([
      ...bundleJobs.map(async (sha) => {
        await (this.inFlight.get(sha) ?? this.loadBundle(sha, signal, (received) => report(sha, received)));
        finish(sha, this.bundles.get(sha)!.sizeBytes);
      }),
      ...looseJobs.map(async ({ path, entry }) => {
        const bytes = await this.fetchLoose(path, entry, signal, (received) => report(entry.sha256, received));
        if (!this.cache) this.pending.put(entry.sha256, bytes);
        finish(entry.sha256, entry.sizeBytes);
      }),
    ]);
  }

  /** Prefetches every file below a folder: `prefix` like `levels/harbor` (plain-path indexes only). */
  async prefetchFolder(prefix: string, options: PrefetchOptions = {}): Promise<string[]> {
    if (this.salt !== undefined) throw new AwakeError('E_NOT_FOUND', 'prefetchFolder needs an index with plain paths; opaque ids hide the folders (list the paths and use prefetch)', this.indexUrl ? { url: this.indexUrl } : {});
    const folder = prefix.replace(/^\/+|\/+$/g, '');
    const paths = [...this.entries.keys()].filter((path) => folder === '' || path.startsWith(`${folder}/`));
    await this.prefetch(paths, options);
    return paths;
  }

  /**
   * An object URL of the verified bytes, for engines that want a URL. The same URL is handed out
   * until `release(path)` or `dispose()` revokes it.
   */
  async url(path: string, options: ReadOptions & { type?: string } = {}): Promise<string> {
    const existing = this.objectUrls.get(path);
    if (existing) return existing;
    const bytes = await this.read(path, options);
    const again = this.objectUrls.get(path);
    if (again) return again;
    const url = URL.createObjectURL(new Blob([bytes as Uint8Array<ArrayBuffer>], { type: options.type ?? mediaTypeOf(path) }));
    this.objectUrls.set(path, url);
    return url;
  }

  /** Revokes the object URL made for `path`, if any. */
  release(path: string): void {
    const url = this.objectUrls.get(path);
    if (url) {
      URL.revokeObjectURL(url);
      this.objectUrls.delete(path);
    }
  }

  /** Aborts requests in flight, revokes every object URL and drops members waiting in memory. */
  dispose(): void {
    this.lifetime.abort(new AwakeError('E_ABORTED', 'the IndexedAssetSource was disposed', this.indexUrl ? { url: this.indexUrl } : {}));
    for (const path of [...this.objectUrls.keys()]) this.release(path);
    this.pending.clear();
  }

  /** Absolute URL of an index-relative URL. */
  resolveUrl(url: string): string {
    return this.base === undefined ? url : new URL(url, this.base).href;
  }

  private keyOf(path: string): string {
    return this.salt === undefined ? path : opaqueId(this.salt, path);
  }

  private requireEntry(path: string): Entry {
    const entry = this.entries.get(this.keyOf(path));
    if (!entry) throw new AssetNotFoundError(path, this.indexUrl);
    return entry;
  }

  private signalFor(signal: AbortSignal | undefined): AbortSignal {
    if (this.lifetime.signal.aborted) throw new AwakeError('E_ABORTED', 'the IndexedAssetSource was disposed');
    return signal ? AbortSignal.any([signal, this.lifetime.signal]) : this.lifetime.signal;
  }

  /** A cached copy that still hashes to its SHA-256; a bad one is dropped (SPEC §7 "Cache"). */
  private async fromCache(entry: Entry): Promise<Uint8Array | undefined> {
    if (!this.cache) return undefined;
    let bytes: Uint8Array | undefined;
    try {
      bytes = await this.cache.get(entry.sha256);
    } catch {
      return undefined; // a store that fails to read is a miss, never a failed load
    }
    if (!bytes) return undefined;
    if (bytes.length === entry.sizeBytes && (await sha256Hex(bytes)) === entry.sha256) return bytes;
    await this.cache.delete?.(entry.sha256).catch(() => undefined);
    return undefined;
  }

  private async allAvailable(entries: Entry[]): Promise<boolean> {
    for (const entry of entries) {
      if (this.pending.has(entry.sha256)) continue;
      if (!this.cache) return false;
      const present = this.cache.has ? await this.cache.has(entry.sha256).catch(() => false) : (await this.fromCache(entry)) !== undefined;
      if (!present) return false;
    }
    return true;
  }

  private async store(sha256: string, bytes: Uint8Array): Promise<void> {
    if (!this.cache) return;
    try {
      await this.cache.put(sha256, bytes);
    } catch {
      // A full or failing store must not fail the load: the bytes are verified and in hand.
    }
  }

  private async fetchLoose(path: string, entry: Entry, signal: AbortSignal, onProgress?: (received: number) => void): Promise<Uint8Array> {
    const url = this.resolveUrl(entry.url!);
    const bytes = await this.transport.getBytes(url, { signal, ...(onProgress ? { onProgress: (received: number) => onProgress(received) } : {}) });
    await verifyFileBytes(bytes, entry, { url, ...this.where(path, entry) });
    await this.store(entry.sha256, bytes);
    return bytes;
  }

  private where(path: string, entry: Entry): { path: string; id?: string } {
    return entry.id !== undefined ? { path, id: entry.id } : { path };
  }

  private async readRange(path: string, entry: Entry, signal: AbortSignal): Promise<Uint8Array> {
    const bundle = this.bundles.get(entry.bundle!)!;
    const url = this.resolveUrl(bundle.url);
    const answer = await this.transport.getRange(url, entry.offset!, entry.sizeBytes, { signal });
    if (answer.kind === 'whole') {
      // A server that ignores ranges sent the whole bundle: check it as one (SPEC §7).
      return this.memberFrom(await this.acceptBundle(bundle, answer.bytes, url), entry);
    }
    await verifyFileBytes(answer.bytes, entry, { url, ...this.where(path, entry) });
    await this.store(entry.sha256, answer.bytes);
    return answer.bytes;
  }

  /** Fetches a bundle once (concurrent callers share the request), verifies and stores it. */
  private loadBundle(sha256: string, signal: AbortSignal, onProgress?: (received: number) => void): Promise<LoadedBundle> {
    const existing = this.inFlight.get(sha256);
    if (existing) return existing;
    const bundle = this.bundles.get(sha256)!;
    const url = this.resolveUrl(bundle.url);
    const job = (async () => {
      const bytes = await this.transport.getBytes(url, { signal, ...(onProgress ? { onProgress: (received: number) => onProgress(received) } : {}) });
      return this.acceptBundle(bundle, bytes, url);
    })();
    this.inFlight.set(sha256, job);
    const forget = () => this.inFlight.delete(sha256);
    job.then(forget, forget);
    return job;
  }

  /** Verifies a whole bundle, then keeps each member: in the cache, or waiting in memory. */
  private async acceptBundle(bundle: BundleEntry, bytes: Uint8Array, url: string): Promise<LoadedBundle> {
    const members: ExpectedMember[] = this.membersOf.get(bundle.sha256)!.map((entry) => ({ key: entryKey(entry), offset: entry.offset!, sizeBytes: entry.sizeBytes, sha256: entry.sha256 }));
    // A bundle that fails is rejected whole (BundleIntegrityError): nothing from it is stored.
    const verified = await verifyBundle(bytes, bundle, members, url);
    const byContent = new Map<string, Uint8Array>();
    const readers = new Map<string, number>();
    for (const member of verified) {
      readers.set(member.sha256, (readers.get(member.sha256) ?? 0) + 1);
      // A copy, so the bundle's buffer can be freed once its members are kept.
      if (!byContent.has(member.sha256)) byContent.set(member.sha256, member.bytes.slice());
    }
    for (const [sha256, memberBytes] of byContent) {
      if (this.cache) await this.store(sha256, memberBytes);
      else this.pending.put(sha256, memberBytes, readers.get(sha256));
    }
    return { byContent };
  }

  private memberFrom(loaded: LoadedBundle, entry: Entry): Uint8Array {
    this.pending.take(entry.sha256); // this caller reads it now
    return loaded.byContent.get(entry.sha256)!;
  }
}

/**
 * Adds the path (and id) a read was for to an error that does not name one yet, such as the
 * HTTP error of the bundle it needed, so every error says what it concerns (SPEC §7 "Errors").
 */
function naming(error: unknown, path: string, id: string | undefined): unknown {
  if (error instanceof AwakeError && error.path === undefined) {
    const target = error as { -readonly [K in 'path' | 'id']?: string };
    target.path = path;
    if (id !== undefined && error.id === undefined) target.id = id;
  }
  return error;
}

function absoluteUrl(url: string): string {
  const location = (globalThis as { location?: { href: string } }).location;
  try {
    return new URL(url, location?.href).href;
  } catch {
    throw new TypeError(`indexUrl ${JSON.stringify(url)} is not an absolute URL (and there is no page to resolve it against)`);
  }
}
