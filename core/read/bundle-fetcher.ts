/**
 * Fetching what a load brings, verified (SPEC §7): a whole bundle, streamed so that each member
 * is handed over as soon as it passes ("Streamed members"); a loose file; one member by range
 * ("Range reads"); or only the members a cache lacks, by ranges (delta reads, issue 11). Every
 * content goes to `onContent` once it passed, as bytes the receiver owns; what the cache should
 * keep comes back once the whole load passed, never before (nothing of a failed bundle is cached).
 */
import { BundleIntegrityError, FileIntegrityError, NetworkError, RangeResponseError, RequestAbortedError, ResponseSizeError } from '../errors.js';
import { entryKey, type BundleEntry } from '../format/project-index.js';
import { sha256Hex } from '../hash.js';
import { linkSignals } from '../net/abort.js';
import type { BodyConsumer, Transport } from '../net/transport.js';
import { StreamRefusal, BundleStreamVerifier, type BundleStreamPlan } from './bundle-stream.js';
import { deltaRangesFor, type ByteRange, type DeltaReadOptions } from './delta-ranges.js';
import { WorkerDigestPool, type DigestPool } from './digest-pool.js';
import { pushTo, type Entry, type IndexView } from './index-view.js';
import { originOf, pageHref, preloadedFetchUrls, type OriginCapabilities } from './origins.js';
import { DEFAULT_RANGE_READS, RangeScheduler, type RangeBatch, type RangeRead, type RangeReadOptions, type RangeWaiter } from './range-reads.js';
import { acceptBundle, checkFileDigest, checkFileSize } from './verify.js';
import type { VerifiedCache } from './verified-cache.js';

/** What the reader does with a whole bundle that came for a range read (a server that ignores ranges): hold and cache its members. */
export type WholeHandler = (accepted: Accepted, contents: Map<string, Uint8Array>) => void;

/** A range read as the fetcher queues it. */
interface RangeReadFor extends RangeRead {
  onWhole: WholeHandler;
}

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
  /** Range reads' turns per origin and shared requests. */
  readonly #ranges: RangeScheduler<RangeReadFor>;

  constructor(view: IndexView, transport: Transport, pool: DigestPool, cache: VerifiedCache, origins: OriginCapabilities, delta: Required<DeltaReadOptions> | undefined, inWorkers: boolean, ranges: Required<RangeReadOptions> = DEFAULT_RANGE_READS) {
    this.#view = view;
    this.#transport = transport;
    this.#pool = pool;
    this.#cache = cache;
    this.#origins = origins;
    this.#delta = delta;
    this.#inWorkers = inWorkers;
    this.#preloaded = inWorkers ? preloadedFetchUrls() : new Set();
    this.#ranges = new RangeScheduler(ranges, (batch) => this.#rangeBatch(batch));
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
    const remote = inWorker ? (this.#pool as WorkerDigestPool).streamBundle(plan, deliver(this.#cache.enabled && !store), store) : undefined;
    const consumer = (): BodyConsumer => streamConsumer(plan, url, deliver(this.#cache.enabled));
    await this.#transport.stream(url, {
      signal: callbacks.signal, expectedBytes: bundle.sizeBytes,
      ...(callbacks.onProgress ? { onProgress: (received: number) => callbacks.onProgress!(received, bundle.sizeBytes) } : {}),
    }, consumer, remote?.attempt).catch((error: unknown) => {
      throw bundleSizeError(error, bundle, url);
    });
    const byWorker = remote?.stored();
    if (byWorker) return { forCache: [], stored: byWorker };
    // The copies kept as members passed (each content once, whatever attempt brought it).
    return { forCache: [...kept] };
  }

  /** A bundle read whole, then checked (a layout other than the canonical one). */
  async #wholeUnstreamed(bundle: BundleEntry, url: string, callbacks: FetchCallbacks): Promise<Accepted> {
    const bytes = await this.#transport.getBytes(url, {
      signal: callbacks.signal, expectedBytes: bundle.sizeBytes,
      ...(callbacks.onProgress ? { onProgress: (received: number) => callbacks.onProgress!(received, bundle.sizeBytes) } : {}),
    }).catch((error: unknown) => {
      throw bundleSizeError(error, bundle, url);
    });
    return this.#handOver(await acceptBundle(bytes, bundle, this.#view.expectedMembers(bundle.sha256), this.#pool, url, this.#cache.workerStore()), callbacks);
  }

  async loose(entry: Entry, callbacks: FetchCallbacks): Promise<Accepted> {
    const url = this.#view.resolveUrl(entry.url!);
    const where = { url, ...this.#view.where(undefined, entry) };
    const bytes = await this.#transport.getBytes(url, {
      signal: callbacks.signal, expectedBytes: entry.sizeBytes,
      ...(callbacks.onProgress ? { onProgress: (received: number) => callbacks.onProgress!(received, entry.sizeBytes) } : {}),
    }).catch((error: unknown) => {
      if (!(error instanceof ResponseSizeError)) throw error;
      throw new FileIntegrityError(`${where.path ?? entry.id} (${url}): listed at ${entry.sizeBytes} bytes, the response is not: ${error.message}`, { ...where, cause: error });
    });
    const { bytes: verified, stored } = await this.#verifyOwned(bytes, entry, where);
    return this.#handOver({ contents: new Map([[entry.sha256, verified]]), ...(stored ? { stored } : {}) }, callbacks);
  }

  /** Whether the origin of `entry`'s bundle is asked for ranges (it has not refused or ignored them). */
  rangesServed(entry: Entry): boolean {
    return this.#origins.servesRanges(this.#view.resolveUrl(this.#view.bundle(entry.bundle!)!.url));
  }

  /**
   * One member by range (SPEC §7 "Range reads"), checked alone. Reads wait their turn within
   * `maxRequestsPerOrigin` requests per origin, and those of one bundle waiting together share a
   * request for the span of their members (range-reads.ts). A server that answers with the whole
   * bundle (200) has it checked as one, its members handed over to `onWhole`, and its origin gets
   * whole bundles from then on. `undefined` when the host refused the range (403, 416, 501), or is
   * known to ignore ranges: the read then goes through a whole-bundle load.
   */
  range(entry: Entry, path: string, signal: AbortSignal, onWhole: WholeHandler): Promise<Uint8Array | undefined> {
    const bundle = this.#view.bundle(entry.bundle!)!;
    const url = this.#view.resolveUrl(bundle.url);
    return this.#ranges.read(originOf(url), bundle.sha256, url, { entry, path, onWhole }, signal);
  }

  /** One shared range request: its span of the bundle, each distinct member checked alone, each read given bytes of its own. */
  async #rangeBatch(batch: RangeBatch<RangeReadFor>): Promise<void> {
    const bundle = this.#view.bundle(batch.bundleSha)!;
    const { url, waiters } = batch;
    // Learnt while these waited: ranges are not served there; the reads go through whole loads.
    if (!this.#origins.servesRanges(url)) return void waiters.forEach((waiter) => waiter.resolve(undefined));
    const answer = await this.#transport.getRange(url, batch.offset, batch.length, { signal: batch.signal, expectedBytes: bundle.sizeBytes }).catch((error: unknown) => {
      throw bundleSizeError(error, bundle, url);
    });
    if (answer.kind === 'refused') {
      this.#origins.ignoresRanges(url);
      return void waiters.forEach((waiter) => waiter.resolve(undefined));
    }
    if (answer.kind === 'whole') {
      // A server that ignores ranges sent the whole bundle: check it as one (SPEC §7), keep its
      // members, and ask that origin for whole bundles from now on rather than get them again per read.
      this.#origins.ignoresRanges(url);
      const accepted = await acceptBundle(answer.bytes, bundle, this.#view.expectedMembers(bundle.sha256), this.#pool, url, this.#cache.workerStore());
      const mine = waiters.map((waiter) => accepted.contents.get(waiter.read.entry.sha256)!.slice());
      waiters[0]!.read.onWhole(this.#forCache(accepted), accepted.contents);
      return void waiters.forEach((waiter, i) => waiter.resolve(mine[i]));
    }
    const members = [...new Map(waiters.map(({ read }) => [read.entry.sha256, read.entry])).values()];
    const store = this.#cache.workerStore();
    // `now`: on a cold page the bytes came on this thread and are hashed here, not kept waiting
    // for a worker to start (issue 22); once one has answered, in a worker as before.
    const { digests, parts, stored } = await this.#pool.digest({
      inputs: [answer.bytes], split: true, transfer: true, now: true,
      ranges: members.map((entry) => ({ input: 0, offset: entry.offset! - batch.offset, length: entry.sizeBytes })),
      // The worker stores them only when every one matched (SPEC §7); else the good ones are stored below.
      ...(store ? { store: { ...store, keys: members.map((entry) => entry.sha256) } } : {}),
    });
    const passed = new Map<string, Uint8Array>();
    members.forEach((entry, i) => {
      if (digests[i] === entry.sha256) passed.set(entry.sha256, parts![i]!);
    });
    // The cache gets copies of its own where it needs them: the parts go to the reads.
    const allPassed = passed.size === members.length;
    void this.#cache.store(stored && allPassed ? [] : [...passed].map(([sha256, bytes]) => [sha256, this.#cache.needsCopies ? bytes.slice() : bytes]), allPassed ? stored : undefined);
    // Every read owns its bytes: reads of one content get copies, the last one its part.
    const readsOf = new Map<string, RangeWaiter<RangeReadFor>[]>();
    for (const waiter of waiters) pushTo(readsOf, waiter.read.entry.sha256, waiter);
    for (const [sha256, reads] of readsOf) {
      const bytes = passed.get(sha256);
      reads.forEach((waiter, i) => {
        const { entry, path } = waiter.read;
        if (bytes === undefined) {
          const failed = members.findIndex((member) => member.sha256 === sha256);
          try {
            checkFileDigest(digests[failed]!, entry, { url, ...this.#view.where(path, entry) });
          } catch (error) {
            waiter.reject(error);
          }
        } else {
          waiter.resolve(i === reads.length - 1 ? bytes : bytes.slice());
        }
      });
    }
  }

  /**
   * Delta reads (issue 11): the ranges of `bundle` that hold the contents neither the cache
   * (`present`, else asked now) nor `held` has, plus `need`; `undefined` for the whole bundle:
   * delta reads off, an origin that ignores ranges, a cache that holds none of it or cannot
   * say, or ranges that would bring more than `maxMissingFraction` of it.
   */
  async deltaPlan(bundle: BundleEntry, held: (sha256: string) => boolean, present: Set<string> | undefined, need: string | undefined): Promise<DeltaPlan | undefined> {
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
    const ranges = this.#rangesOf(bundle, missing, multipart);
    return ranges && { ranges, missing, multipart: multipart && ranges.length > 1 };
  }

  #rangesOf(bundle: BundleEntry, missing: Entry[], multipart: boolean): ByteRange[] | undefined {
    return deltaRangesFor(missing.map((entry) => ({ offset: entry.offset!, sizeBytes: entry.sizeBytes, sha256: entry.sha256 })), bundle.sizeBytes, this.#delta!, multipart);
  }

  /**
   * Fetches a delta plan's ranges and verifies each member they bring on its own (SPEC §7
   * "Verified"); one damaged member rejects them all, nothing cached. A multipart plan is one
   * request for every range; an origin that does not answer it with them all (a 200, unread; one
   * range of several) is asked again one range per request (the plan for that), and so from then
   * on, as after a malformed answer (a `RangeResponseError` for this load). One range per request:
   * at once; a 200 answer is the whole bundle (a server that ignores ranges): it is checked as
   * one, the other requests are stopped, and its origin gets whole bundles from then on.
   */
  async delta(bundle: BundleEntry, plan: DeltaPlan, callbacks: FetchCallbacks): Promise<Accepted> {
    const url = this.#view.resolveUrl(bundle.url);
    const { missing, multipart } = plan;
    let { ranges } = plan;
    let inputs: Uint8Array[];
    /** Where each range starts: its input, and its offset there. */
    let places: { input: number; at: number }[];
    let answered: Awaited<ReturnType<Transport['getRanges']>> | undefined;
    const planned = ranges.reduce((sum, range) => sum + range.length, 0);
    const report = callbacks.onProgress && ((bytes: number) => callbacks.onProgress!(Math.min(planned, bytes), planned));
    if (multipart) {
      // One request for every range (multipart/byteranges); a server that cannot is asked one range at a time.
      // Several ranges are not a CORS-safelisted Range: a page on another origin sends a preflight
      // first, which a CDN may refuse (a network failure to the page). One attempt there, then ranges one by one.
      const page = pageHref();
      const crossOrigin = page !== undefined && originOf(page) !== originOf(url);
      try {
        answered = await this.#transport.getRanges(url, ranges, { signal: callbacks.signal, expectedBytes: bundle.sizeBytes, ...(report ? { onProgress: report } : {}), ...(crossOrigin ? { attempts: 1 } : {}) });
      } catch (error) {
        if (error instanceof RangeResponseError) this.#origins.lacksMultipart(url);
        if (!(error instanceof NetworkError) || callbacks.signal.aborted) throw error;
        answered = { kind: 'unsupported', reason: error.message };
      }
      if (answered.kind === 'refused') return this.#wholeAfterRangesRefused(bundle, url, callbacks);
      if (answered.kind === 'unsupported') {
        this.#origins.lacksMultipart(url);
        ranges = this.#rangesOf(bundle, missing, false)!;
      }
    }
    if (answered?.kind === 'ranges') {
      inputs = [answered.body];
      places = answered.at.map((at) => ({ input: 0, at }));
    } else {
      const bodies = await this.#fetchRanges(url, bundle, ranges, callbacks.signal, report);
      if ('refused' in bodies) return this.#wholeAfterRangesRefused(bundle, url, callbacks);
      if (!Array.isArray(bodies)) {
        this.#origins.ignoresRanges(url);
        return this.#handOver(await acceptBundle(bodies.whole, bundle, this.#view.expectedMembers(bundle.sha256), this.#pool, url, this.#cache.workerStore()), callbacks);
      }
      inputs = bodies.length > 0 ? bodies : [new Uint8Array(0)];
      places = bodies.map((_, input) => ({ input, at: 0 }));
    }
    const parts = missing.map((entry) => {
      // Empty contents lie in no range: an empty view of the first input.
      if (entry.sizeBytes === 0) return { input: 0, offset: 0, length: 0 };
      const k = ranges.findIndex((range) => range.offset <= entry.offset! && entry.offset! + entry.sizeBytes <= range.offset + range.length);
      return { input: places[k]!.input, offset: places[k]!.at + entry.offset! - ranges[k]!.offset, length: entry.sizeBytes };
    });
    const store = this.#cache.workerStore();
    // One job for every member: the worker stores them all or, with one damaged, none (SPEC §7).
    const { digests, parts: owned, stored } = await this.#pool.digest({
      inputs, ranges: parts, split: true, transfer: true, now: true,
      ...(store ? { store: { ...store, keys: missing.map((entry) => entry.sha256) } } : {}),
    });
    const damaged = missing.filter((entry, i) => digests[i] !== entry.sha256).map((entry) => entry.sha256);
    if (damaged.length > 0) {
      const keys = this.#view.membersOf(bundle.sha256).filter((entry) => damaged.includes(entry.sha256)).map(entryKey);
      throw new BundleIntegrityError('members', `bundle ${bundle.sha256}: damaged member${keys.length > 1 ? 's' : ''} ${keys.map((key) => JSON.stringify(key)).join(', ')} in the ranges of a delta read`, keys, { url });
    }
    return this.#handOver({ contents: new Map(missing.map((entry, i) => [entry.sha256, owned![i]!])), ...(stored ? { stored } : {}) }, callbacks);
  }

  /**
   * A host that refused a Range request (403, 416 or 501): this load fetches the whole bundle
   * instead, streamed and checked as one (SPEC §7 "Verified"), and later loads from that origin
   * go whole at once, as for a host that answers ranges with 200.
   */
  #wholeAfterRangesRefused(bundle: BundleEntry, url: string, callbacks: FetchCallbacks): Promise<Accepted> {
    this.#origins.ignoresRanges(url);
    return this.whole(bundle, callbacks);
  }

  /**
   * The bodies of `ranges` in order, or `{ whole }` when an answer was the whole bundle, or
   * `{ refused }` when the host refused a range (403, 416, 501); the other requests then stop.
   */
  async #fetchRanges(url: string, bundle: BundleEntry, ranges: ByteRange[], signal: AbortSignal, onProgress?: (received: number) => void): Promise<Uint8Array[] | { whole: Uint8Array } | { refused: true }> {
    const siblings = new AbortController();
    const link = linkSignals([signal, siblings.signal]);
    const received = ranges.map(() => 0);
    let whole: Uint8Array | undefined;
    let refused = false;
    let failure: { error: unknown } | undefined;
    try {
      const answers = await Promise.allSettled(ranges.map(async (range, i) => {
        try {
          const answer = await this.#transport.getRange(url, range.offset, range.length, {
            signal: link.signal, expectedBytes: bundle.sizeBytes,
            ...(onProgress ? { onProgress: (bytes: number) => {
              received[i] = bytes;
              onProgress(received.reduce((sum, each) => sum + each, 0));
            } } : {}),
          });
          if (answer.kind === 'refused') {
            refused = true;
            siblings.abort(new RequestAbortedError(`GET ${url}: not needed, the server refused a range (HTTP ${answer.status}): the bundle is fetched whole`, { url }));
            return new Uint8Array(0);
          }
          if (answer.kind === 'whole') {
            whole ??= answer.bytes;
            siblings.abort(new RequestAbortedError(`GET ${url}: not needed, the server ignores ranges and sent the whole bundle`, { url }));
          }
          return answer.bytes;
        } catch (error) {
          if (!siblings.signal.aborted) {
            failure = { error };
            siblings.abort(error);
          }
          throw error;
        }
      }));
      if (whole) return { whole };
      if (refused) return { refused };
      if (failure) throw bundleSizeError(failure.error, bundle, url);
      return answers.map((answer) => (answer as PromiseFulfilledResult<Uint8Array>).value);
    } finally {
      link.release();
    }
  }

  /** Checks bytes this source owns (fetched) against an entry, hashing (and storing, when a worker can) in the pool; on a cold page here (`now`, as above). */
  async #verifyOwned(bytes: Uint8Array, entry: Entry, where: { url?: string; path?: string; id?: string }): Promise<{ bytes: Uint8Array; stored?: Promise<void> }> {
    checkFileSize(bytes.length, entry, where);
    const store = this.#cache.workerStore();
    const { inputs, digests, stored } = await this.#pool.digest({ inputs: [bytes], transfer: true, now: true, ...(store ? { store: { ...store, keys: [entry.sha256] } } : {}) });
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
  const verifier = new BundleStreamVerifier(plan, sha256Hex, { member: deliver });
  const refused = (error: unknown): never => {
    if (error instanceof StreamRefusal) throw new BundleIntegrityError(error.failure.part, error.failure.message, error.failure.damaged, { url });
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
  const arrived = error.declaredBytes !== undefined ? `its Content-Length says ${error.declaredBytes}` : error.receivedBytes !== undefined ? `more arrived (${error.receivedBytes} bytes read, reading stopped)` : error.message;
  return new BundleIntegrityError('bundle', `bundle ${bundle.sha256}: ${arrived}, the index lists ${bundle.sizeBytes} bytes`, [], { url, cause: error });
}
