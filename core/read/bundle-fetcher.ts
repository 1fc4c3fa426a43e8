/**
 * Fetching what a load brings, verified (SPEC §7): a whole bundle, streamed so that each member
 * is handed over as soon as it passes ("Streamed members"); a loose file; one member by range
 * ("Range reads"); or only the members a cache lacks, by ranges (delta reads, issue 11). Every
 * content goes to `onContent` once it passed, as bytes the receiver owns; what the cache should
 * keep comes back once the whole load passed, never before (nothing of a failed bundle is cached).
 */
import { BundleIntegrityError, FileIntegrityError, ResponseSizeError } from '../errors.js';
import type { BundleEntry } from '../format/project-index.js';
import { sha256Hex } from '../hash.js';
import type { BodyConsumer, Transport } from '../net/transport.js';
import type { BundleRanges } from './bundle-ranges.js';
import { BundleStreamChecker, deferredJudge, judgedError, refusalError, StreamRefusal, type BundleStreamPlan } from './stream-check.js';
import type { ByteRange, DeltaReadOptions } from './delta-ranges.js';
import { WorkerDigestPool, type DigestPool } from './digest-pool.js';
import type { Entry, IndexView } from './index-view.js';
import { preloadedFetchUrls, type OriginCapabilities } from './origins.js';
import { DEFAULT_RANGE_READS, type RangeReadOptions } from './range-reads.js';
import { checkFileDigest, checkFileSize } from './verify.js';
import type { VerifiedCache } from './verified-cache.js';

/** What the reader does with a whole bundle that came for a range read (a server that ignores ranges): hold and cache its members. */
export type WholeHandler = (accepted: Accepted, contents: Map<string, Uint8Array>) => void;

/** What a fetch is told as it goes. */
export interface FetchCallbacks {
  signal: AbortSignal;
  /** Bytes of the current attempt so far, of `total` (what this fetch downloads now). */
  onProgress?: (received: number, total: number) => void;
  /** A content passed its check: bytes the receiver owns. May come more than once for one content (a retry): ignore repeats. */
  onContent: (sha256: string, bytes: Uint8Array) => void;
}

/** A load that passed: what the cache should keep (copies no caller holds), or the write a worker makes itself. */
export interface Accepted {
  forCache: [string, Uint8Array][];
  stored?: Promise<void>;
}

/** What a delta load fetches: ranges of a bundle, and the distinct contents (one entry each) they must bring. */
export interface DeltaPlan {
  ranges: ByteRange[];
  missing: Entry[];
  /** The ranges are planned for one multi-range request (`multipart/byteranges`). */
  multipart: boolean;
}

export class BundleFetcher {
  readonly #view: IndexView;
  readonly #transport: Transport;
  readonly #pool: DigestPool;
  readonly #cache: VerifiedCache;
  readonly #origins: OriginCapabilities;
  readonly #delta: Required<DeltaReadOptions> | undefined;
  /** Bodies are read in the pool's workers (the platform's own fetch, no `fetch` option). */
  readonly #inWorkers: boolean;
  /** URLs the page preloads (`<link rel="preload" as="fetch">`), read when the source opened. */
  readonly #preloaded: Set<string>;
  readonly #rangeReads: Required<RangeReadOptions>;
  /** Range and delta reads (bundle-ranges.ts), imported the first time one is needed. */
  #ranges: Promise<BundleRanges> | undefined;

  constructor(
    view: IndexView,
    transport: Transport,
    pool: DigestPool,
    cache: VerifiedCache,
    origins: OriginCapabilities,
    delta: Required<DeltaReadOptions> | undefined,
    inWorkers: boolean,
    ranges: Required<RangeReadOptions> = DEFAULT_RANGE_READS,
  ) {
    this.#view = view;
    this.#transport = transport;
    this.#pool = pool;
    this.#cache = cache;
    this.#origins = origins;
    this.#delta = delta;
    this.#inWorkers = inWorkers;
    this.#preloaded = inWorkers ? preloadedFetchUrls() : new Set();
    this.#rangeReads = ranges;
  }

  /**
   * The range and delta reads, imported once, with the transport's range requests
   * (net/transport-ranges.ts, which `Transport.getRange` and `getRanges` import) at the same time
   * rather than after. An import that fails (a chunk gone after a deploy, a network error) is tried
   * again next time; meanwhile a delta load fetches the whole bundle and a range read fails with
   * that error, as it would with the network's.
   */
  #bundleRanges(): Promise<BundleRanges> {
    this.#ranges ??= Promise.all([import('./bundle-ranges.js'), import('../net/transport-ranges.js')]).then(
      ([{ BundleRanges }]) =>
        new BundleRanges({
          view: this.#view,
          transport: this.#transport,
          pool: this.#pool,
          cache: this.#cache,
          origins: this.#origins,
          delta: this.#delta,
          ranges: this.#rangeReads,
          whole: (bundle, callbacks) => this.whole(bundle, callbacks),
          handOver: (accepted, callbacks) => this.#handOver(accepted, callbacks),
          forCache: (accepted) => this.#forCache(accepted),
        }),
      (error: unknown) => {
        this.#ranges = undefined;
        throw error;
      },
    );
    return this.#ranges;
  }

  /**
   * A whole bundle, streamed (SPEC §7 "Streamed members"): in a worker that fetches, checks,
   * cuts and stores it where there is one, else here from `response.body`. A bundle whose index
   * offsets are not the canonical layout is read whole and judged the slow way.
   */
  async whole(bundle: BundleEntry, callbacks: FetchCallbacks): Promise<Accepted> {
    const url = this.#view.resolveUrl(bundle.url);
    const plan = this.#view.streamPlan(bundle);
    if (!plan) return this.#wholeUnstreamed(bundle, url, callbacks);
    const store = this.#cache.workerStore();
    const kept = new Map<string, Uint8Array>();
    /** Hands a content over; the cache gets its own copy first, before the receiver may change or transfer the bytes. */
    const deliver = (keep: boolean) => (index: number, bytes: Uint8Array) => {
      const { sha256 } = plan.contents[index]!;
      if (keep && !kept.has(sha256)) kept.set(sha256, bytes.slice());
      callbacks.onContent(sha256, bytes);
    };
    // A worker that writes the store itself keeps its own copies; any other cache gets them here.
    // A bundle the page preloads is streamed here, where the preloaded response is.
    const inWorker = this.#inWorkers && this.#pool instanceof WorkerDigestPool && !this.#preloaded.has(url);
    const remote = inWorker
      ? (this.#pool as WorkerDigestPool).streamBundle(plan, deliver(this.#cache.enabled && !store), store)
      : undefined;
    const consumer = (): BodyConsumer => streamConsumer(plan, url, deliver(this.#cache.enabled));
    await this.#transport
      .stream(
        url,
        {
          signal: callbacks.signal,
          expectedBytes: bundle.sizeBytes,
          ...(callbacks.onProgress ? { onProgress: (received: number) => callbacks.onProgress!(received, bundle.sizeBytes) } : {}),
        },
        consumer,
        remote?.attempt,
      )
      .catch(async (error: unknown) => {
        // A refused head is judged now (stream-check.ts `judgedError`), where it was refused it was only compared.
        throw await judgedError(bundleSizeError(error, bundle, url), plan);
      });
    const byWorker = remote?.stored();
    if (byWorker) return { forCache: [], stored: byWorker };
    // The copies kept as members passed (each content once, whatever attempt brought it).
    return { forCache: [...kept] };
  }

  /** A bundle read whole, then checked (a layout other than the canonical one). */
  async #wholeUnstreamed(bundle: BundleEntry, url: string, callbacks: FetchCallbacks): Promise<Accepted> {
    // The whole-bundle check (accept.ts) is imported with the bundle's request, not after its body.
    const accepting = import('./accept.js');
    accepting.catch(() => undefined); // awaited below; not an unhandled rejection if the request fails first
    const bytes = await this.#transport
      .getBytes(url, {
        signal: callbacks.signal,
        expectedBytes: bundle.sizeBytes,
        ...(callbacks.onProgress ? { onProgress: (received: number) => callbacks.onProgress!(received, bundle.sizeBytes) } : {}),
      })
      .catch((error: unknown) => {
        throw bundleSizeError(error, bundle, url);
      });
    const { acceptBundle } = await accepting;
    return this.#handOver(
      await acceptBundle(bytes, bundle, this.#view.expectedMembers(bundle.sha256), this.#pool, url, this.#cache.workerStore()),
      callbacks,
    );
  }

  async loose(entry: Entry, callbacks: FetchCallbacks): Promise<Accepted> {
    const url = this.#view.resolveUrl(entry.url!);
    const where = { url, ...this.#view.where(undefined, entry) };
    const bytes = await this.#transport
      .getBytes(url, {
        signal: callbacks.signal,
        expectedBytes: entry.sizeBytes,
        ...(callbacks.onProgress ? { onProgress: (received: number) => callbacks.onProgress!(received, entry.sizeBytes) } : {}),
      })
      .catch((error: unknown) => {
        if (!(error instanceof ResponseSizeError)) throw error;
        throw new FileIntegrityError(
          `${where.path ?? entry.id} (${url}): listed at ${entry.sizeBytes} bytes, the response is not: ${error.message}`,
          { ...where, cause: error },
        );
      });
    const { bytes: verified, stored } = await this.#verifyOwned(bytes, entry, where);
    return this.#handOver({ contents: new Map([[entry.sha256, verified]]), ...(stored ? { stored } : {}) }, callbacks);
  }

  /** Whether the origin of `entry`'s bundle is asked for ranges (it has not refused or ignored them). */
  rangesServed(entry: Entry): boolean {
    return this.#origins.servesRanges(this.#view.resolveUrl(this.#view.bundle(entry.bundle!)!.url));
  }

  /**
   * One member by range (SPEC §7 "Range reads"), checked alone (bundle-ranges.ts); `undefined`
   * when the host refused the range, or is known to ignore ranges: the read then goes through a
   * whole-bundle load.
   */
  async range(entry: Entry, path: string, signal: AbortSignal, onWhole: WholeHandler): Promise<Uint8Array | undefined> {
    return (await this.#bundleRanges()).range(entry, path, signal, onWhole);
  }

  /**
   * Delta reads (issue 11): the ranges of `bundle` that hold the contents neither the cache
   * (`present`, else asked now) nor `held` has, plus `need`; `undefined` for the whole bundle:
   * delta reads off, an origin that ignores ranges, a cache that holds none of it or cannot
   * say, or ranges that would bring more than `maxMissingFraction` of it.
   */
  async deltaPlan(
    bundle: BundleEntry,
    held: (sha256: string) => boolean,
    present: Set<string> | undefined,
    need: string | undefined,
  ): Promise<DeltaPlan | undefined> {
    const url = this.#view.resolveUrl(bundle.url);
    if (!this.#delta || !this.#origins.servesRanges(url)) return undefined;
    const contents = new Map<string, Entry>();
    for (const entry of this.#view.membersOf(bundle.sha256)) if (!contents.has(entry.sha256)) contents.set(entry.sha256, entry);
    const unknown = [...contents.keys()].filter((sha256) => !held(sha256) && !present?.has(sha256));
    const cached = present ?? (unknown.length === 0 ? new Set<string>() : await this.#cache.contains(unknown));
    if (!cached) return undefined;
    const missing = [...contents.values()].filter((entry) => entry.sha256 === need || (!cached.has(entry.sha256) && !held(entry.sha256)));
    if (missing.length === contents.size) return undefined;
    const multipart = this.#delta.multipartRanges && this.#origins.servesMultipart(url);
    const ranges = (await this.#bundleRanges().catch(() => undefined))?.rangesOf(bundle, missing, multipart);
    return ranges && { ranges, missing, multipart: multipart && ranges.length > 1 };
  }

  /** Fetches a delta plan's ranges and verifies each member they bring on its own (bundle-ranges.ts). */
  async delta(bundle: BundleEntry, plan: DeltaPlan, callbacks: FetchCallbacks): Promise<Accepted> {
    return (await this.#bundleRanges()).delta(bundle, plan, callbacks);
  }

  /** Checks bytes this source owns (fetched) against an entry, hashing (and storing, when a worker can) in the pool; on a cold page here (`now`: not kept waiting for a worker to start, issue 22). */
  async #verifyOwned(
    bytes: Uint8Array,
    entry: Entry,
    where: { url?: string; path?: string; id?: string },
  ): Promise<{ bytes: Uint8Array; stored?: Promise<void> }> {
    checkFileSize(bytes.length, entry, where);
    const store = this.#cache.workerStore();
    const { inputs, digests, stored } = await this.#pool.digest({
      inputs: [bytes],
      transfer: true,
      now: true,
      ...(store ? { store: { ...store, keys: [entry.sha256] } } : {}),
    });
    checkFileDigest(digests[0]!, entry, where);
    return { bytes: inputs[0]!, ...(stored ? { stored } : {}) };
  }

  /** Contents checked all at once: copies for the cache first, then each handed over. */
  #handOver(accepted: { contents: Map<string, Uint8Array>; stored?: Promise<void> }, callbacks: FetchCallbacks): Accepted {
    const result = this.#forCache(accepted);
    for (const [sha256, bytes] of accepted.contents) callbacks.onContent(sha256, bytes);
    return result;
  }

  #forCache(accepted: { contents: Map<string, Uint8Array>; stored?: Promise<void> }): Accepted {
    if (accepted.stored) return { forCache: [], stored: accepted.stored };
    if (!this.#cache.enabled) return { forCache: [] };
    return { forCache: [...accepted.contents].map(([sha256, bytes]) => [sha256, bytes.slice()]) };
  }
}

/** A streamed bundle's checks as the transport's body consumer, its refusals as the bundle's integrity error. */
function streamConsumer(plan: BundleStreamPlan, url: string, deliver: (index: number, bytes: Uint8Array) => void): BodyConsumer {
  const verifier = new BundleStreamChecker(plan, sha256Hex, { member: deliver }, deferredJudge(plan));
  const refused = (error: unknown): never => {
    if (error instanceof StreamRefusal) throw refusalError(error.failure, url);
    throw error;
  };
  return {
    push(chunk) {
      try {
        verifier.push(chunk);
      } catch (error) {
        refused(error);
      }
    },
    finish: () => verifier.finish().catch(refused),
  };
}

/** A bundle body of the wrong size, as the bundle's integrity error (SPEC §7 "Verified"), naming it (its URL is the error's `url`). */
export function bundleSizeError(error: unknown, bundle: BundleEntry, url: string): unknown {
  if (!(error instanceof ResponseSizeError)) return error;
  // The URL is the error's `url` (and holds the SHA-256): the message names the bundle once, and
  // says what arrived against what the index lists, the transport's "GET <url>: …" left as `cause`.
  const arrived =
    error.declaredBytes !== undefined
      ? `its Content-Length says ${error.declaredBytes}`
      : error.receivedBytes !== undefined
        ? `more arrived (${error.receivedBytes} bytes read, reading stopped)`
        : error.message;
  return new BundleIntegrityError('bundle', `bundle ${bundle.sha256}: ${arrived}, the index lists ${bundle.sizeBytes} bytes`, [], {
    url,
    cause: error,
  });
}
