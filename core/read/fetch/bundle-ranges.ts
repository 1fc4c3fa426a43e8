/**
 * A bundle's bytes by ranges: one member by range (SPEC §7 "Range reads", off by default) and
 * the members a cache lacks (delta reads), each member verified alone. bundle-fetcher.ts
 * imports this module on demand, the first time a source reads by range or a cache holds part of
 * a bundle: a game whose loads are whole bundles loads none of it (BENCHMARKS.md, "Size").
 */
import { NetworkError, RangeResponseError, RequestAbortedError } from '../../errors.js';
import { entryKey, type BundleEntry } from '../../format/project-index.js';
import { linkSignals } from '../../net/abort.js';
import type { StreamedRanges } from '../../net/requests.js';
import type { Transport } from '../../net/transport.js';
import { bundleSizeError, type Accepted, type FetchCallbacks, type RangeHandlers, type Replan } from './fetched.js';
import type { ByteRange } from '../plan/delta-ranges.js';
import type { DigestPool } from '../workers/digest-pool.js';
import { pushTo, type Entry, type IndexView } from '../open/index-view.js';
import type { RangesPlan } from '../plan/load-planner.js';
import { originOf, pageHref, type OriginCapabilities } from '../open/origins.js';
import type { RangeReadOptions } from '../plan/range-reads.js';
import { RangeScheduler, type RangeBatch, type RangeRead, type RangeWaiter } from './range-scheduler.js';
import { acceptBundle } from '../verify/accept.js';
import { RangeMembers } from './range-members.js';
import { checkFileBytes, spanOf } from '../verify/verify.js';
import type { VerifiedCache } from '../state/verified-cache.js';
import { checkMember } from '../verify/check-member.js';

// The delta rule, for the load planner.
export { deltaRangesFor } from '../plan/delta-plan.js';

/** A range read as the fetcher queues it. */
type RangeReadFor = RangeRead & RangeHandlers;

/** What the ranges share with the bundle fetcher that made them: its parts, and how it hands contents over. */
export interface BundleRangesContext {
  view: IndexView;
  transport: Transport;
  pool: DigestPool;
  cache: VerifiedCache;
  origins: OriginCapabilities;
  ranges: Required<RangeReadOptions>;
  /** Contents checked all at once: copies for the cache first, then each handed over. */
  handOver(accepted: { contents: Map<string, Uint8Array>; stored?: Promise<void> }, callbacks: FetchCallbacks): Accepted;
  /** What the cache should keep of contents checked all at once. */
  forCache(accepted: { contents: Map<string, Uint8Array>; stored?: Promise<void> }): Accepted;
  /** Whether this page has bundle `bundleSha`'s content `sha256` already, or has it on its way (loads.ts `hadAlready`). */
  had?: ((bundleSha: string, sha256: string) => boolean) | undefined;
}

export class BundleRanges {
  readonly #view: IndexView;
  readonly #transport: Transport;
  readonly #pool: DigestPool;
  readonly #cache: VerifiedCache;
  readonly #origins: OriginCapabilities;
  readonly #shared: BundleRangesContext;
  /** Range reads' turns per origin and shared requests. */
  readonly #ranges: RangeScheduler<RangeReadFor>;

  constructor(shared: BundleRangesContext) {
    this.#view = shared.view;
    this.#transport = shared.transport;
    this.#pool = shared.pool;
    this.#cache = shared.cache;
    this.#origins = shared.origins;
    this.#shared = shared;
    const had = shared.had;
    this.#ranges = new RangeScheduler(
      shared.ranges,
      (batch) => this.#rangeBatch(batch),
      had && ((bundleSha, from, to) => this.#membersWithin(bundleSha, from, to).some((entry) => had(bundleSha, entry.sha256))),
    );
  }

  /** Members of a bundle by offset, sorted once per bundle (for `#membersWithin`). */
  readonly #byOffset = new Map<string, Entry[]>();

  /** The members of `bundleSha` with a byte in `[from, to)`: a binary search, then those in the span. */
  #membersWithin(bundleSha: string, from: number, to: number): Entry[] {
    let sorted = this.#byOffset.get(bundleSha);
    if (!sorted) {
      sorted = [...this.#view.membersOf(bundleSha)].sort((a, b) => a.offset! - b.offset!);
      this.#byOffset.set(bundleSha, sorted);
    }
    const endOf = (entry: Entry) => entry.offset! + (entry.storedBytes ?? entry.sizeBytes);
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (sorted[middle]!.offset! < from) low = middle + 1;
      else high = middle;
    }
    // The member before may reach into the span (members do not overlap: one before is enough).
    if (low > 0 && endOf(sorted[low - 1]!) > from) low--;
    const within: Entry[] = [];
    for (let i = low; i < sorted.length && sorted[i]!.offset! < to; i++) if (endOf(sorted[i]!) > from) within.push(sorted[i]!);
    return within;
  }

  /**
   * One member by range (SPEC §7 "Range reads"), checked alone. Reads wait their turn within
   * `maxRequestsPerOrigin` requests per origin, and those of one bundle waiting together share a
   * request for the span of their members (range-reads.ts). A server that answers with the whole
   * bundle (200) has it checked as one, its members handed over to `onWhole`, and its origin gets
   * whole bundles from then on. `undefined` when the host refused the range (403, 416, 501), or is
   * known to ignore ranges: the read then goes through a whole-bundle load.
   */
  range(entry: Entry, path: string, signal: AbortSignal, handlers: RangeHandlers): Promise<Uint8Array | undefined> {
    const bundle = this.#view.bundle(entry.bundle!)!;
    const url = this.#view.resolveUrl(bundle.url);
    return this.#ranges.read(originOf(url), bundle.sha256, url, { entry, path, ...handlers }, signal);
  }

  /** One shared range request: its span of the bundle, each distinct member checked alone, each read given bytes of its own. */
  async #rangeBatch(batch: RangeBatch<RangeReadFor>): Promise<void> {
    const bundle = this.#view.bundle(batch.bundleSha)!;
    const { url, waiters } = batch;
    // Learnt while these waited: ranges are not served there; the reads go through whole loads.
    if (!this.#origins.servesRanges(url)) return void waiters.forEach((waiter) => waiter.resolve(undefined));
    const answer = await this.#transport
      .getRange(url, batch.offset, batch.length, { signal: batch.signal, expectedBytes: bundle.sizeBytes })
      .catch((error: unknown) => {
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
      const accepted = await acceptBundle(
        answer.bytes,
        bundle,
        this.#view.expectedMembers(bundle.sha256),
        this.#pool,
        url,
        this.#cache.workerStore(),
      );
      const mine = waiters.map((waiter) => accepted.contents.get(waiter.read.entry.sha256)!.slice());
      waiters[0]!.read.onWhole(this.#shared.forCache(accepted), accepted.contents);
      return void waiters.forEach((waiter, i) => waiter.resolve(mine[i]));
    }
    const members = [...new Map(waiters.map(({ read }) => [read.entry.sha256, read.entry])).values()];
    const store = this.#cache.workerStore();
    // `now`: on a cold page the bytes came on this thread and are hashed here, not kept waiting
    // for a worker to start; once one has answered, in a worker as before.
    const { digests, parts, stored, decodeErrors } = await this.#pool.digest({
      inputs: [answer.bytes],
      split: true,
      transfer: true,
      now: true,
      // An encoded member's stored bytes, decoded in the pool (SPEC §5a): its part is the decoded bytes.
      ranges: members.map((entry) => ({
        input: 0,
        offset: entry.offset! - batch.offset,
        length: spanOf(entry),
        ...(entry.encoding === undefined ? {} : { decode: { key: entryKey(entry), sizeBytes: entry.sizeBytes, encoding: entry.encoding } }),
      })),
      // The worker stores them only when every one matched (SPEC §7); else the good ones are stored below.
      ...(store ? { store: { ...store, keys: members.map((entry) => entry.sha256) } } : {}),
    });
    const passed = new Map<string, Uint8Array>();
    members.forEach((entry, i) => {
      if (checkMember(entry, parts![i], digests[i]) === undefined) passed.set(entry.sha256, parts![i]!);
    });
    // The cache gets copies of its own where it needs them: the parts go to the reads.
    const allPassed = passed.size === members.length;
    const written = this.#cache.store(
      stored && allPassed ? [] : [...passed].map(([sha256, bytes]) => [sha256, this.#cache.needsCopies ? bytes.slice() : bytes]),
      allPassed ? stored : undefined,
    );
    for (const waiter of waiters) if (passed.has(waiter.read.entry.sha256)) waiter.read.onStored?.(written);
    // Every read owns its bytes: reads of one content get copies, the last one its part.
    const readsOf = new Map<string, RangeWaiter<RangeReadFor>[]>();
    for (const waiter of waiters) pushTo(readsOf, waiter.read.entry.sha256, waiter);
    for (const [sha256, reads] of readsOf) {
      const bytes = passed.get(sha256);
      reads.forEach((waiter, i) => {
        const { entry, path } = waiter.read;
        if (bytes === undefined) {
          const failed = members.findIndex((member) => member.sha256 === sha256);
          const refused = decodeErrors?.[failed];
          if (refused) return void waiter.reject(refused);
          try {
            checkFileBytes(parts![failed], digests[failed], entry, { url, ...this.#view.where(path, entry) });
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
   * Fetches a ranges plan (load-planner.ts), each member checked on its own as soon as its bytes
   * are in and handed over at once (range-members.ts; SPEC §7 "Needed bytes"); a damaged member
   * fails the load naming it, once the answers are in. A multipart plan is one request for every
   * range; an origin that does not answer it with them all (a 200, unread; one range of several) is
   * marked and `separate` said (the planner plans one range per request), as after a malformed
   * answer (a `RangeResponseError` for this load). One range per request: at once; a 200 answer
   * is the whole bundle (a server that ignores ranges): it is checked as one, the other requests
   * are stopped, and its origin gets whole bundles from then on. A host that refused a range (403,
   * 416, 501) is marked and `whole` said.
   */
  async fetchRanges(plan: RangesPlan, callbacks: FetchCallbacks): Promise<Accepted | Replan> {
    const { bundle, missing, multipart, ranges } = plan;
    const url = this.#view.resolveUrl(bundle.url);
    const planned = ranges.reduce((sum, range) => sum + range.length, 0);
    const report = callbacks.onProgress && ((bytes: number) => callbacks.onProgress!(Math.min(planned, bytes), planned));
    const members = new RangeMembers(missing, this.#pool, this.#cache, callbacks);
    if (multipart) {
      // One request for every range (multipart/byteranges); a server that cannot is asked one range at a time.
      // Several ranges are not a CORS-safelisted Range: a page on another origin sends a preflight
      // first, which a CDN may refuse (a network failure to the page). One attempt there, then ranges one by one.
      const page = pageHref();
      const crossOrigin = page !== undefined && originOf(page) !== originOf(url);
      let answered: StreamedRanges;
      try {
        answered = await this.#transport.streamRanges(
          url,
          ranges,
          {
            signal: callbacks.signal,
            expectedBytes: bundle.sizeBytes,
            ...(report ? { onProgress: report } : {}),
            ...(crossOrigin ? { attempts: 1 } : {}),
          },
          () => members.sink(ranges),
        );
      } catch (error) {
        if (error instanceof RangeResponseError) this.#origins.lacksMultipart(url);
        if (!(error instanceof NetworkError) || callbacks.signal.aborted) throw error;
        answered = { kind: 'unsupported', reason: error.message };
      }
      if (answered.kind === 'refused') return this.#rangesRefused(url);
      // Members that passed before the answer failed were handed over: their repeats are ignored.
      if (answered.kind !== 'streamed') {
        this.#origins.lacksMultipart(url);
        return { replan: 'separate' };
      }
    } else {
      const answer = await this.#streamSeparately(url, bundle, ranges, callbacks.signal, members, report);
      if (answer === 'refused') return this.#rangesRefused(url);
      if (answer !== 'streamed') {
        this.#origins.ignoresRanges(url);
        return this.#shared.handOver(
          await acceptBundle(answer.whole, bundle, this.#view.expectedMembers(bundle.sha256), this.#pool, url, this.#cache.workerStore()),
          callbacks,
        );
      }
    }
    return members.done(bundle, url, this.#view);
  }

  /**
   * A host that refused a Range request (403, 416 or 501): this load fetches the whole bundle
   * instead (the planner's `whole`), streamed and checked as one (SPEC §7 "Verified"), and later
   * loads from that origin go whole at once, as for a host that answers ranges with 200.
   */
  #rangesRefused(url: string): Replan {
    this.#origins.ignoresRanges(url);
    return { replan: 'whole' };
  }

  /**
   * `ranges`, one request each, all at once, their members checked as they arrive: `streamed`;
   * or `{ whole }` when an answer was the whole bundle, or `refused` when the host refused a range
   * (403, 416, 501); the other requests then stop.
   */
  async #streamSeparately(
    url: string,
    bundle: BundleEntry,
    ranges: ByteRange[],
    signal: AbortSignal,
    members: RangeMembers,
    onProgress?: (received: number) => void,
  ): Promise<'streamed' | 'refused' | { whole: Uint8Array }> {
    const siblings = new AbortController();
    const link = linkSignals([signal, siblings.signal]);
    const received = ranges.map(() => 0);
    let whole: Uint8Array | undefined;
    let refused = false;
    let failure: { error: unknown } | undefined;
    try {
      await Promise.allSettled(
        ranges.map(async (range, i) => {
          try {
            const answer = await this.#transport.streamRanges(
              url,
              [range],
              {
                signal: link.signal,
                expectedBytes: bundle.sizeBytes,
                ...(onProgress
                  ? {
                      onProgress: (bytes: number) => {
                        received[i] = bytes;
                        onProgress(received.reduce((sum, each) => sum + each, 0));
                      },
                    }
                  : {}),
              },
              () => members.sink([range]),
            );
            if (answer.kind === 'refused') {
              refused = true;
              siblings.abort(
                new RequestAbortedError(
                  `GET ${url}: not needed, the server refused a range (HTTP ${answer.status}): the bundle is fetched whole`,
                  { url },
                ),
              );
            } else if (answer.kind === 'whole') {
              whole ??= answer.bytes;
              siblings.abort(
                new RequestAbortedError(`GET ${url}: not needed, the server ignores ranges and sent the whole bundle`, { url }),
              );
            }
          } catch (error) {
            if (!siblings.signal.aborted) {
              failure = { error };
              siblings.abort(error);
            }
            throw error;
          }
        }),
      );
      if (whole) return { whole };
      if (refused) return 'refused';
      if (failure) throw bundleSizeError(failure.error, bundle, url);
      return 'streamed';
    } finally {
      link.release();
    }
  }
}
