/**
 * Which version of the index the service worker serves. At start the index kept from
 * an earlier run serves at once while the index is fetched again (stale-while-revalidate, as
 * workbox's strategy of that name): a stalled host no longer holds the game's requests. Every
 * read of the index is numbered when it starts, and the newest one read wins: an older read that
 * finishes late (a slow refresh) neither serves, nor is announced, nor is kept.
 */
import { parseProjectIndexJson, type ProjectIndex } from '../../core/format/project-index.js';
import type { IndexedAssetSource } from '../../core/read/indexed-asset-source.js';

/** Index JSON kept by index URL (see `AwkbFetchHandlerOptions.indexStore`). */
export interface IndexStore {
  get(indexUrl: string): Promise<string | undefined>;
  put(indexUrl: string, json: string): Promise<void>;
}

/** What `onIndexUpdate` is told besides the new reader. */
export interface IndexUpdate {
  /** The index before: the one announced or kept last (when the worker started, the one kept from an earlier run). */
  previous: ProjectIndex;
  /** Files whose new contents were fetched ahead of their reads (`prefetchOnUpdate`). */
  prefetchedFiles: number;
  /** Why that prefetch stopped early, when it did (a damaged bundle, the network): those files load on their reads. */
  prefetchError?: string;
}

export interface IndexVersionsOptions {
  indexUrl: string;
  /** Reads and checks the index from the network. */
  fetchIndex: () => Promise<IndexedAssetSource>;
  /** Reads and checks kept index JSON. */
  openKept: (json: string) => Promise<IndexedAssetSource>;
  indexStore: IndexStore | undefined;
  prefetchOnUpdate: boolean;
  onIndexUpdate: ((source: IndexedAssetSource, update: IndexUpdate) => void) | undefined;
}

/** An index read and checked, as JSON to compare and keep. */
interface Opened {
  source: IndexedAssetSource;
  json: string;
  /** Read from the store: already kept, and the version the next one is compared with. */
  kept: boolean;
}

export class IndexVersions {
  readonly #options: IndexVersionsOptions;
  /** Reads of the index started so far: each is numbered, and a lower number never replaces a higher one. */
  #opens = 0;
  /** The number of the read whose index serves. */
  #servingNumber = 0;
  #serving: IndexedAssetSource | undefined;
  #ready: Promise<IndexedAssetSource>;
  #failed = false;
  /** The version announced or kept last: what a new one is compared with. */
  #baseline: Promise<{ json: string; index: ProjectIndex | undefined } | undefined>;
  /** Announcements and writes of the store, one at a time, in the order versions began to serve. */
  #updating: Promise<void> = Promise.resolve();
  /** Stops the prefetch of a version that a newer one replaced before it was announced. */
  #updateAbort: AbortController | undefined;
  /** Reads of the index in flight: `whenUpdated` waits for them too. */
  readonly #reading = new Set<Promise<unknown>>();

  constructor(options: IndexVersionsOptions) {
    this.#options = options;
    const kept = options.indexStore ? options.indexStore.get(options.indexUrl).catch(() => undefined) : Promise.resolve(undefined);
    this.#baseline = kept.then((json) => (json === undefined ? undefined : { json, index: parseOrUndefined(json) }));
    // The kept index and the network's are read together; the kept one is numbered first, so
    // the network's replaces it whenever it comes, and it never replaces the network's.
    const keptNumber = ++this.#opens;
    const fromStore = this.#track(kept.then((json) => (json === undefined ? undefined : this.#openKept(json)))).then(
      (opened) => opened && this.#serve(opened, keptNumber),
    );
    const networkNumber = ++this.#opens;
    const fromNetwork = this.#track(this.#fetch()).then((opened) => this.#serve(opened, networkNumber));
    this.#ready = new Promise<IndexedAssetSource>((resolve, reject) => {
      void fromStore.then((source) => source && resolve(source));
      fromNetwork.then(resolve, async (error: unknown) => {
        // Offline, the host down, a broken index: the kept one serves on; with none, requests go to the network.
        if (!(await fromStore)) reject(error);
      });
    });
    this.#ready.catch(() => {
      if (!this.#serving) this.#failed = true;
    });
  }

  /** The reader serving now, if any. */
  get serving(): IndexedAssetSource | undefined {
    return this.#serving;
  }

  /** The reader serving: settles once an index (kept or fetched) has been read and checked; rejects when neither could be. */
  get ready(): Promise<IndexedAssetSource> {
    return this.#ready;
  }

  /** No index could be read at start, none was kept, and none has been read since. */
  get failed(): boolean {
    return this.#failed;
  }

  /** Reads the index again; resolves with the reader serving once this read's update is done. */
  async refresh(): Promise<IndexedAssetSource> {
    const number = ++this.#opens;
    this.#serve(await this.#track(this.#fetch()), number);
    await this.#updating;
    return this.#serving!;
  }

  /** Settles when no read of the index, prefetch, announcement or store write is in progress. */
  async whenUpdated(): Promise<void> {
    for (;;) {
      const updating = this.#updating;
      await Promise.allSettled([...this.#reading, updating]);
      if (this.#reading.size === 0 && updating === this.#updating) return;
    }
  }

  async #fetch(): Promise<Opened> {
    const source = await this.#options.fetchIndex();
    return { source, json: JSON.stringify(source.index), kept: false };
  }

  async #openKept(json: string): Promise<Opened | undefined> {
    try {
      return { source: await this.#options.openKept(json), json, kept: true };
    } catch {
      return undefined; // a kept index this version cannot read: as if none was kept
    }
  }

  #track<T>(reading: Promise<T>): Promise<T> {
    this.#reading.add(reading);
    const done = () => void this.#reading.delete(reading);
    reading.then(done, done);
    return reading;
  }

  /**
   * Serves `opened` from now on unless a newer read already serves (then it is dropped, and the
   * reader serving is returned); a new version's changed files are brought, then it is announced
   * and kept. The reader it replaces is not disposed: reads in flight finish from it.
   */
  #serve(opened: Opened, number: number): IndexedAssetSource {
    if (number < this.#servingNumber) {
      opened.source.dispose(); // never served: nothing reads from it
      return this.#serving!;
    }
    this.#servingNumber = number;
    this.#serving = opened.source;
    this.#failed = false;
    this.#ready = Promise.resolve(opened.source);
    this.#updateAbort?.abort();
    const abort = (this.#updateAbort = new AbortController());
    this.#updating = this.#updating.then(() => this.#update(opened, number, abort.signal)).catch(() => undefined);
    return opened.source;
  }

  /** Announces and keeps `opened` if it still serves once its turn comes (and after its prefetch). */
  async #update({ source, json, kept }: Opened, number: number, signal: AbortSignal): Promise<void> {
    const { indexStore, indexUrl, onIndexUpdate, prefetchOnUpdate } = this.#options;
    if (kept || number !== this.#servingNumber) return; // kept already; or a newer one serves, whose own turn comes
    const before = await this.#baseline;
    if (before?.index && before.json !== json) {
      const update: IndexUpdate = { previous: before.index, prefetchedFiles: 0 };
      if (prefetchOnUpdate) {
        try {
          update.prefetchedFiles = await source.prefetchChanged(before.index, { signal });
        } catch (error) {
          update.prefetchError = error instanceof Error ? error.message : String(error);
        }
      }
      // Replaced during its prefetch: the newer one is announced instead, from the same version before.
      if (number !== this.#servingNumber) return;
      onIndexUpdate?.(source, update);
    }
    this.#baseline = Promise.resolve({ json, index: source.index });
    // Kept after the prefetch: a worker stopped during it sees the new version again when it starts.
    await indexStore?.put(indexUrl, json);
  }
}

function parseOrUndefined(json: string): ProjectIndex | undefined {
  try {
    return parseProjectIndexJson(json);
  } catch {
    return undefined; // a kept index this version cannot read: announce nothing, fetch on reads
  }
}
