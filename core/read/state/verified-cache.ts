/**
 * The cache as the reader uses it (SPEC §7 "Cache"): reads batched per microtask and re-checked
 * (in a worker where the store lets one read it), entries that fail dropped, writes made off the
 * critical path and counted for `whenStored`, and every failure reported to `onCacheError`
 * rather than failing a load. With no cache, every question answers "nothing".
 */
import type { WorkerStoreAccess } from '../../cache/idb-store.js';
import type { ContentCache } from '../../cache/content-cache.js';
import type { DigestPool } from '../workers/digest-pool.js';
import { pushTo, type Entry } from '../open/index-view.js';
import { checkMember } from '../verify/check-member.js';

/** What `onCacheError` hears besides the error. */
export interface CacheErrorDetail {
  operation: 'get' | 'put' | 'has' | 'delete';
  sha256s: string[];
}

/** What the cache said of one content: verified bytes the caller owns, or nothing. */
type CacheWaiter = (bytes: Uint8Array | undefined) => void;

export class VerifiedCache {
  readonly #cache: ContentCache | undefined;
  readonly #pool: DigestPool;
  readonly #onCacheError: (error: unknown, detail: CacheErrorDetail) => void;
  readonly #entryOf: (sha256: string) => Entry;
  /** Cache writes not settled yet. */
  readonly #writes = new Set<Promise<void>>();
  /** Cache reads asked for in the current microtask, answered together by one `getMany`. */
  #batch: Map<string, CacheWaiter[]> | undefined;
  /**
   * Contents a read found missing or bad, though the cache may still count them (another tab
   * cleared it between a `has` and a `get`): not cached, whatever `contains` hears, until this
   * source writes them again. A plan that trusted the count would leave them out of every load.
   */
  readonly #gone = new Set<string>();
  /** When each content was last given to `store`, counted in stores: a read that began before does not mark it gone. */
  readonly #storedAt = new Map<string, number>();
  #stores = 0;

  constructor(
    cache: ContentCache | undefined,
    pool: DigestPool,
    onCacheError: ((error: unknown, detail: CacheErrorDetail) => void) | undefined,
    entryOf: (sha256: string) => Entry,
  ) {
    this.#cache = cache;
    this.#pool = pool;
    this.#onCacheError = onCacheError ?? warnCacheErrorOnce();
    this.#entryOf = entryOf;
  }

  get enabled(): boolean {
    return this.#cache !== undefined;
  }

  /** Whether the cache can say what it holds without reading it (delta reads need that). */
  get counts(): boolean {
    const cache = this.#cache;
    return Boolean(cache && (cache.hasMany || cache.has || cache.workerAccess));
  }

  /** The IndexedDB store the pool's workers may write and read themselves, when there is one. */
  workerStore(): WorkerStoreAccess | undefined {
    return this.#pool.readStored && this.#pool.usingWorkers !== false ? this.#cache?.workerAccess : undefined;
  }

  /** The verified cached bytes of one entry, asked together with the other reads of this microtask. */
  read(entry: Entry): Promise<Uint8Array | undefined> {
    if (!this.#cache || this.#cache.holdsNothing === true) return Promise.resolve(undefined);
    return new Promise<Uint8Array | undefined>((resolve) => {
      if (!this.#batch) {
        this.#batch = new Map();
        queueMicrotask(() => void this.#answerBatch());
      }
      pushTo(this.#batch, entry.sha256, resolve);
    });
  }

  async #answerBatch(): Promise<void> {
    const batch = this.#batch!;
    this.#batch = undefined;
    const wanted = [...batch.keys()].map((sha256) => this.#entryOf(sha256));
    const found = await this.getVerified(wanted, { waitForWorkers: false }).catch(() => new Map<string, Uint8Array>());
    for (const [sha256, waiters] of batch) {
      const bytes = found.get(sha256);
      // Every waiter owns its bytes: copies first, the last one takes the buffer.
      waiters.forEach((resolve, i) => resolve(bytes === undefined ? undefined : i === waiters.length - 1 ? bytes : bytes.slice()));
    }
  }

  /** Which of `shas` the cache holds (counts, no bytes; one call); `undefined` when it failed or there is no cache. */
  async contains(shas: string[]): Promise<Set<string> | undefined> {
    const cache = this.#cache;
    if (!cache) return undefined;
    // A store known to be empty (being created on a first visit) is not asked, nor waited for.
    if (cache.holdsNothing === true) return new Set();
    const store = this.workerStore();
    const here = () => (cache.hasMany ? cache.hasMany(shas) : Promise.all(shas.map((sha256) => hasOne(cache, sha256))));
    // Asked in a worker where one can see the store: the page then touches no store at all. Until
    // a worker has answered (a cold page), on this thread: one key-only transaction, so that the
    // first bundle requests wait for no worker to start.
    const pool = this.#pool;
    const ask = store && pool.hasStored && pool.usingWorkers === true ? async () => (await pool.hasStored!(store, shas)) ?? here() : here;
    const answers = await this.#call('has', shas, ask);
    return answers ? new Set(shas.filter((sha256, i) => answers[i] && !this.#gone.has(sha256))) : undefined;
  }

  /**
   * Cached contents that still match their entries, by SHA-256; a bad entry is dropped (SPEC §7
   * "Cache"). With `waitForWorkers: false` (reads), a page whose workers have not answered yet
   * reads and checks the entries on this thread instead of waiting for one.
   */
  async getVerified(wanted: Entry[], options: { waitForWorkers?: boolean } = {}): Promise<Map<string, Uint8Array>> {
    if (!this.#cache || wanted.length === 0 || this.#cache.holdsNothing === true) return new Map();
    const began = this.#stores;
    const found = await this.#getVerified(this.#cache, wanted, options);
    for (const { sha256 } of wanted) if (!found.has(sha256) && !((this.#storedAt.get(sha256) ?? 0) > began)) this.#gone.add(sha256);
    return found;
  }

  async #getVerified(cache: ContentCache, wanted: Entry[], options: { waitForWorkers?: boolean }): Promise<Map<string, Uint8Array>> {
    const store = this.workerStore();
    const now = options.waitForWorkers === false;
    // A read on a cold page waits for no worker: one read transaction on this thread says at once
    // that an uncached file is not there (its bundle request then goes out, streamed on this
    // thread until a worker answers), and brings a cached one's bytes, hashed here (SPEC §7
    // "Cache": re-checked when read). Unlike a load, which asks for keys only (`contains`) and
    // reads what it holds later in a worker, a read wants the bytes now: one transaction, not two.
    // A prefetch's bulk reads still wait for a worker: they keep copying and hashing off this thread.
    if (store && !(now && this.#pool.usingWorkers !== true)) {
      // Read and checked in a worker.
      const answer = await this.#call(
        'get',
        wanted.map((entry) => entry.sha256),
        () => this.#pool.readStored!(store, wanted),
      );
      // The store is the whole cache when it offers worker access (see ContentCache.workerAccess).
      if (answer) {
        await this.#dropBad(answer.bad);
        return answer.found;
      }
    }
    return this.#getVerifiedHere(cache, wanted, now);
  }

  async #getVerifiedHere(cache: ContentCache, wanted: Entry[], now: boolean): Promise<Map<string, Uint8Array>> {
    const shas = wanted.map((entry) => entry.sha256);
    const answers = await this.#call('get', shas, () =>
      cache.getMany ? cache.getMany(shas) : Promise.all(shas.map((sha256) => cache.get(sha256))),
    );
    const found = new Map<string, Uint8Array>();
    if (!answers) return found;
    const candidates: { entry: Entry; bytes: Uint8Array }[] = [];
    const bad: string[] = [];
    wanted.forEach((entry, i) => {
      const bytes = answers[i];
      if (bytes === undefined) return;
      // A wrong size is known without hashing; the rest are checked below once hashed (`checkMember`).
      if (bytes.length !== entry.sizeBytes) bad.push(entry.sha256);
      // Bytes a cache may still hold are copied before they are ours to give away.
      else candidates.push({ entry, bytes: cache.copiesBytes ? bytes : bytes.slice() });
    });
    if (candidates.length > 0) {
      const { inputs, digests } = await this.#pool.digest({
        inputs: candidates.map((c) => c.bytes),
        transfer: true,
        ...(now ? { now } : {}),
      });
      candidates.forEach(({ entry }, i) => {
        if (checkMember(entry, inputs[i], digests[i]) === undefined) found.set(entry.sha256, inputs[i]!);
        else bad.push(entry.sha256);
      });
    }
    await this.#dropBad(bad);
    return found;
  }

  /** Deletes cache entries that failed their check; awaited, so a delete cannot land after the good copy that replaces it. */
  async #dropBad(bad: readonly string[]): Promise<void> {
    const cache = this.#cache!;
    await Promise.all(bad.map((sha256) => this.#call('delete', [sha256], async () => cache.delete?.(sha256))));
  }

  /**
   * Writes verified contents in one batch, or follows the write a worker already makes of them
   * (`byWorker`); failures go to `onCacheError`, never to a read. The bytes given must be the
   * cache's to keep (copies of what callers get), or the cache must copy (`copiesBytes`).
   */
  store(contents: [string, Uint8Array][], byWorker?: Promise<void>): Promise<void> {
    const cache = this.#cache;
    if (!cache || (contents.length === 0 && !byWorker)) return Promise.resolve();
    cache.expectWrites?.(); // before a worker's write too: from now on the cache is asked
    const shas = contents.map(([sha256]) => sha256);
    this.#stores++;
    for (const sha256 of shas) {
      this.#gone.delete(sha256);
      this.#storedAt.set(sha256, this.#stores);
    }
    if (byWorker) return this.#track(this.#call('put', shas, () => byWorker).then(() => undefined));
    const put = async (): Promise<void> => {
      if (cache.putMany) await cache.putMany(contents);
      else await Promise.all(contents.map(([sha256, bytes]) => cache.put(sha256, bytes)));
    };
    return this.#track(this.#call('put', shas, put).then(() => undefined));
  }

  /** Whether bytes handed to `store` must be copies no caller holds: the cache keeps what it is given. */
  get needsCopies(): boolean {
    return this.#cache !== undefined && !this.#cache.copiesBytes;
  }

  /** Resolves when every cache write started so far has settled. */
  async whenStored(): Promise<void> {
    while (this.#writes.size > 0) await Promise.all(this.#writes);
  }

  #track(write: Promise<void>): Promise<void> {
    this.#writes.add(write);
    void write.then(() => this.#writes.delete(write));
    return write;
  }

  /** Runs one cache operation; a failure (a thrown error or a rejection) is reported and answers `undefined`. */
  async #call<T>(operation: CacheErrorDetail['operation'], sha256s: string[], run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (error) {
      try {
        this.#onCacheError(error, { operation, sha256s });
      } catch {
        // A failing listener must not fail the load either.
      }
      return undefined;
    }
  }
}

async function hasOne(cache: ContentCache, sha256: string): Promise<boolean> {
  return cache.has ? cache.has(sha256) : (await cache.get(sha256)) !== undefined;
}

/** The default `onCacheError`: one console warning per source, not one per failure of a cache that stays broken. */
function warnCacheErrorOnce(): (error: unknown, detail: CacheErrorDetail) => void {
  let warned = false;
  return (error, detail) => {
    if (warned) return;
    warned = true;
    console.warn(
      `awake-bundle: the cache failed to ${detail.operation} ${detail.sha256s.length} entr${detail.sha256s.length === 1 ? 'y' : 'ies'}; loads go on without it, keeping contents in memory within pendingBytes (further cache failures of this source are not logged; pass onCacheError to see them)`,
      error,
    );
  };
}
