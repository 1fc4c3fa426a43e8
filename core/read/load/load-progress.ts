/**
 * A load's byte progress (SPEC §7 "Byte progress") and its files': the total is fixed before the
 * first event from what its loads planned, and each event sums what those loads received, each on
 * the scale of its share. Used by `IndexedAssetSource.load` and `prefetch`.
 */
import type { PrefetchOptions } from '../options.js';
import { pushTo, type Entry, type IndexView } from '../open/index-view.js';
import { over, type Load, type LoadRegistry } from './load-registry.js';

/**
 * A prefetch's byte progress (SPEC §7 "Byte progress") and its files': the total is the planned
 * bytes of its loads, fixed before the first event; each event sums what those loads received.
 */
export class PrefetchReport {
  readonly #registry: LoadRegistry;
  readonly #options: PrefetchOptions;
  #total = 0;
  #done = 0;
  #slots: { share: number; load?: Load }[] = [];
  readonly #filesByLoad = new Map<string, { path: string; entry: Entry; last: number }[]>();
  readonly #unwatch: (() => void)[] = [];

  constructor(registry: LoadRegistry, files: { path: string; entry: Entry }[], view: IndexView, options: PrefetchOptions) {
    this.#registry = registry;
    this.#options = options;
    if (options.onFileProgress)
      for (const { path, entry } of files) pushTo(this.#filesByLoad, view.loadKeyOf(entry), { path, entry, last: -1 });
  }

  /** The loads to fetch and their shares of the total are known: the total is fixed, the first event goes out. */
  begin(loadKeys: string[], shares: number[], starting: Promise<Load>[]): void {
    this.#slots = loadKeys.map((_, i) => ({ share: shares[i]! }));
    this.#total = shares.reduce((sum, share) => sum + share, 0);
    starting.forEach(
      (started, i) =>
        void started.then(
          (load) => {
            this.#slots[i]!.load = load;
            this.#unwatch.push(this.#registry.watch(load, () => this.#emit(load)));
          },
          () => undefined,
        ),
    );
    this.#emit();
  }

  finished(load: Load): void {
    this.#done++;
    this.#emit(load);
  }

  /** Every load is over: each file at its end, and the last event with loaded = total. */
  end(): void {
    for (const stop of this.#unwatch) stop();
    for (const files of this.#filesByLoad.values()) for (const file of files) this.#file(file, file.entry.sizeBytes);
    this.#options.onProgress?.({
      loadedBytes: this.#total,
      totalBytes: this.#total,
      requestsDone: this.#slots.length,
      requestsTotal: this.#slots.length,
    });
  }

  #emit(changed?: Load): void {
    if (changed) for (const file of this.#filesByLoad.get(changed.key) ?? []) this.#file(file, fileBytesOf(changed, file.entry));
    if (!this.#options.onProgress) return;
    // Each load counts on the scale of its share, so the total holds whatever it decides.
    let loaded = 0;
    for (const { share, load } of this.#slots)
      if (load) loaded += Math.min(share, Math.floor((load.receivedBytes * share) / Math.max(1, load.fetchBytes)));
    this.#options.onProgress({
      loadedBytes: Math.min(loaded, this.#total),
      totalBytes: this.#total,
      requestsDone: this.#done,
      requestsTotal: this.#slots.length,
    });
  }

  #file(file: { path: string; entry: Entry; last: number }, loaded: number): void {
    if (loaded <= file.last) return;
    file.last = loaded;
    this.#options.onFileProgress!({ path: file.path, loadedBytes: loaded, totalBytes: file.entry.sizeBytes });
  }
}

/**
 * How far a load is with one file's bytes: all of them once its content arrived; for a whole
 * bundle being streamed, the part of the body that holds the member; else the load's share.
 */
export function fileBytesOf(load: Load, entry: Entry): number {
  if (load.arrived.has(entry.sha256)) return entry.sizeBytes;
  if (over(load)) return load.status === 'done' ? entry.sizeBytes : 0;
  const size = entry.sizeBytes;
  if (!load.partial && entry.offset !== undefined && load.key === entry.bundle) {
    const came = load.receivedBytes - entry.offset;
    // An encoded member's stored bytes stand for its decoded size (SPEC §5a), in proportion.
    const share = entry.storedBytes === undefined ? came : Math.floor((size * came) / Math.max(1, entry.storedBytes));
    return Math.max(0, Math.min(size - 1, share));
  }
  return load.fetchBytes > 0 ? Math.max(0, Math.min(size - 1, Math.floor((size * load.receivedBytes) / load.fetchBytes))) : 0;
}
