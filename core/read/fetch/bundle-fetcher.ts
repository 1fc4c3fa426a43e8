/**
 * Fetching what a load brings, verified (SPEC §7): a whole bundle, streamed so that each member
 * is handed over as soon as it passes ("Streamed members"); a loose file; one member by range
 * ("Range reads"); or only the members a cache lacks, by ranges (delta reads). Every
 * content goes to `onContent` once it passed, as bytes the receiver owns; what the cache should
 * keep comes back once the whole load passed, never before (nothing of a failed bundle is cached).
 */
import { FileIntegrityError, ResponseSizeError } from '../../errors.js';
import type { BundleEntry } from '../../format/project-index.js';
import { sha256Hex } from '../../hash.js';
import type { BodyConsumer, Transport } from '../../net/transport.js';
import * as rangesModule from './bundle-ranges.js';
import { acceptBundle } from '../verify/accept.js';
import { bundleSizeError, type Accepted, type FetchCallbacks, type RangeHandlers, type Replan } from './fetched.js';
import {
  BundleStreamChecker,
  deferredJudge,
  judgedError,
  refusalError,
  StreamRefusal,
  type BundleStreamPlan,
} from '../verify/stream-check.js';
import type { DigestPool } from '../workers/digest-pool.js';
import type { Entry, IndexView } from '../open/index-view.js';
import type { LoadPlan } from '../plan/load-planner.js';
import type { OriginCapabilities } from '../open/origins.js';
import { preloadedFetchUrls } from '../open/page-preloads.js';
import { DEFAULT_RANGE_READS, type RangeReadOptions } from '../plan/range-reads.js';
import { checkFileBytes, checkFileSize } from '../verify/verify.js';
import type { VerifiedCache } from '../state/verified-cache.js';

type RangesModule = typeof rangesModule;
type BundleRanges = InstanceType<RangesModule['BundleRanges']>;

/**
 * The range and delta reads' module (bundle-ranges.ts, which carries the delta rule too) with the
 * transport's range requests: part of the entry, not a chunk imported on first use. With needed
 * bytes on by default, a first visit's first load plans and asks for ranges; a chunk asked for
 * then (or as the page starts) could only arrive in front of that first request, never beside it.
 * A promise, as the planner takes its rule.
 */
export function importRangesModule(): Promise<RangesModule> {
  return Promise.resolve(rangesModule);
}

export class BundleFetcher {
  readonly #view: IndexView;
  readonly #transport: Transport;
  readonly #pool: DigestPool;
  readonly #cache: VerifiedCache;
  readonly #origins: OriginCapabilities;
  /** Bodies are read in the pool's workers (the platform's own fetch, no `fetch` option). */
  readonly #inWorkers: boolean;
  /** URLs the page preloads (`<link rel="preload" as="fetch">`), read when the source opened. */
  readonly #preloaded: Set<string>;
  readonly #rangeReads: Required<RangeReadOptions>;
  /** Whether this page has a bundle's content already, or on its way (loads.ts `hadAlready`): range requests never span it. */
  readonly #had: ((bundleSha: string, sha256: string) => boolean) | undefined;
  #ranges: Promise<BundleRanges> | undefined;

  constructor(
    view: IndexView,
    transport: Transport,
    pool: DigestPool,
    cache: VerifiedCache,
    origins: OriginCapabilities,
    inWorkers: boolean,
    ranges: Required<RangeReadOptions> = DEFAULT_RANGE_READS,
    had?: (bundleSha: string, sha256: string) => boolean,
  ) {
    this.#had = had;
    this.#view = view;
    this.#transport = transport;
    this.#pool = pool;
    this.#cache = cache;
    this.#origins = origins;
    this.#inWorkers = inWorkers;
    this.#preloaded = inWorkers ? preloadedFetchUrls() : new Set();
    this.#rangeReads = ranges;
  }

  #bundleRanges(): Promise<BundleRanges> {
    this.#ranges ??= Promise.resolve(
      new rangesModule.BundleRanges({
        view: this.#view,
        transport: this.#transport,
        pool: this.#pool,
        cache: this.#cache,
        origins: this.#origins,
        ranges: this.#rangeReads,
        handOver: (accepted, callbacks) => this.#handOver(accepted, callbacks),
        forCache: (accepted) => this.#forCache(accepted),
        had: this.#had,
      }),
    );
    return this.#ranges;
  }

  /**
   * Carries out a load's plan (load-planner.ts): a loose file, a whole bundle, or ranges of one.
   * `Replan` when the host could not serve the ranges as planned (nothing was handed over); the
   * load asks the planner again. A ranges plan whose module cannot be imported is fetched whole.
   */
  async carryOut(plan: LoadPlan, callbacks: FetchCallbacks): Promise<Accepted | Replan> {
    if (plan.kind === 'loose') return this.loose(plan.entry, callbacks);
    if (plan.kind === 'whole') return this.whole(plan.bundle, callbacks);
    const ranges = await this.#bundleRanges().catch(() => undefined);
    return ranges ? ranges.fetchRanges(plan, callbacks) : { replan: 'whole' };
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
    // A bundle the page preloads is fetched here, where the preloaded response is (streamBundle).
    const remote = this.#inWorkers
      ? this.#pool.streamBundle?.(plan, deliver(this.#cache.enabled && !store), store, this.#preloaded.has(url))
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
    const bytes = await this.#transport
      .getBytes(url, {
        signal: callbacks.signal,
        expectedBytes: bundle.sizeBytes,
        ...(callbacks.onProgress ? { onProgress: (received: number) => callbacks.onProgress!(received, bundle.sizeBytes) } : {}),
      })
      .catch((error: unknown) => {
        throw bundleSizeError(error, bundle, url);
      });
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

  /**
   * One member by range (SPEC §7 "Range reads"), checked alone (bundle-ranges.ts); `undefined`
   * when the host refused the range, or is known to ignore ranges: the read then goes through a
   * whole-bundle load.
   */
  async range(entry: Entry, path: string, signal: AbortSignal, handlers: RangeHandlers): Promise<Uint8Array | undefined> {
    return (await this.#bundleRanges()).range(entry, path, signal, handlers);
  }

  /** Checks bytes this source owns (fetched) against an entry, hashing (and storing, when a worker can) in the pool; on a cold page here (`now`: not kept waiting for a worker to start). */
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
    checkFileBytes(inputs[0], digests[0], entry, where);
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
