/**
 * The members a load brings by ranges of their bundle (SPEC §7 "Needed bytes", delta reads),
 * each checked as soon as its bytes are in: the range answers' bytes (`Transport.streamRanges`)
 * are cut into a buffer per member as they arrive, each member is hashed once complete (in the
 * pool's workers once they answer, on a cold page here), and one that matches its entry is handed
 * over at once, before the rest of its ranges arrive, and a copy kept for the cache. A damaged
 * member fails the load, naming it, once every answer is in; what passed was handed over (each
 * member is checked alone), but nothing of the load is cached (as for a bundle, SPEC §7
 * "Streamed members", and delta reads).
 */
import { roomFor } from '../../bytes.js';
import { BundleIntegrityError, type MemberDecodeError } from '../../errors.js';
import { entryKey, type BundleEntry } from '../../format/project-index.js';
import type { RangeSink } from '../../net/requests.js';
import type { ByteRange } from '../plan/delta-ranges.js';
import type { DigestPool } from '../workers/digest-pool.js';
import type { Accepted, FetchCallbacks } from './fetched.js';
import type { Entry, IndexView } from '../open/index-view.js';
import type { VerifiedCache } from '../state/verified-cache.js';
import { spanOf } from '../verify/verify.js';
import { checkMember } from '../verify/check-member.js';

/**
 * A member being cut from one attempt's answer: its buffer, grown with its bytes (not allocated at
 * its listed size, which a host may answer with 100 bytes), and how many of them came.
 */
interface Cut {
  entry: Entry;
  bytes?: Uint8Array;
  filled: number;
}

export class RangeMembers {
  /** Distinct contents to bring that take bytes, by offset. */
  readonly #contents: Entry[];
  readonly #pool: DigestPool;
  readonly #cache: VerifiedCache;
  readonly #callbacks: FetchCallbacks;
  readonly #passed = new Set<string>();
  readonly #damaged = new Set<string>();
  readonly #checks: Promise<void>[] = [];
  readonly #kept: [string, Uint8Array][] = [];
  /** Why members that did not decode were refused, by SHA-256. */
  readonly #decodeErrors = new Map<string, MemberDecodeError>();

  constructor(missing: readonly Entry[], pool: DigestPool, cache: VerifiedCache, callbacks: FetchCallbacks) {
    this.#pool = pool;
    this.#cache = cache;
    this.#callbacks = callbacks;
    const seen = new Set<string>();
    // One entry per content (the first asked), by offset. Empty contents lie in no range: checked
    // now, and not among those to cut.
    this.#contents = missing
      .filter((entry) => !seen.has(entry.sha256) && seen.add(entry.sha256))
      .sort((a, b) => a.offset! - b.offset!)
      .filter((entry) => spanOf(entry) > 0 || void this.#check(entry, new Uint8Array(0)));
  }

  /**
   * A sink for one attempt at `ranges` (a new one for each attempt): the members inside them that
   * have not passed yet, each cut into a buffer of its own from the bytes as they come.
   */
  sink(ranges: readonly ByteRange[]): RangeSink {
    // The members to cut, by index in `#contents`, found range by range with a search and a walk:
    // a sink costs what its ranges hold, not a pass over every content of the load (where a host
    // answers no multi-range request, each range is a request and a sink: SPEC §7 "Needed bytes").
    const cuts: Cut[] = [];
    for (const { offset, length } of ranges)
      this.#eachWithin(offset, offset + length, (entry, i) => {
        if (offset <= entry.offset! && entry.offset! + spanOf(entry) <= offset + length && !this.#passed.has(entry.sha256))
          cuts[i] = { entry, filled: 0 };
      });
    return {
      data: (offset, bytes) => {
        const end = offset + bytes.length;
        this.#eachWithin(offset, end, (entry, i) => {
          const cut = cuts[i];
          // An encoded member's stored bytes (SPEC §5a), decoded where it is hashed.
          const span = spanOf(entry);
          if (cut && cut.filled < span) {
            const from = Math.max(offset, entry.offset!);
            const to = Math.min(end, entry.offset! + span);
            cut.bytes = roomFor(cut.bytes, to - entry.offset!, span);
            cut.bytes.set(bytes.subarray(from - offset, to - offset), from - entry.offset!);
            cut.filled += to - from;
            if (cut.filled >= span) {
              this.#check(entry, cut.bytes);
              cut.bytes = undefined;
            }
          }
        });
      },
      finish: async () => {},
    };
  }

  /**
   * Calls `visit` with each content that has a byte in [`from`, `to`), and its index: a binary
   * search for the first, then a walk (contents are in offset order, and do not overlap).
   */
  #eachWithin(from: number, to: number, visit: (entry: Entry, index: number) => void): void {
    const contents = this.#contents;
    let low = 0;
    let high = contents.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (contents[mid]!.offset! + spanOf(contents[mid]!) <= from) low = mid + 1;
      else high = mid;
    }
    for (let i = low; i < contents.length && contents[i]!.offset! < to; i++) visit(contents[i]!, i);
  }

  /**
   * Hashes one member's bytes (given up to the pool), an encoded one's once decoded there (SPEC
   * §5a); one that matches is handed over and kept for the cache, decoded.
   */
  #check(entry: Entry, bytes: Uint8Array): void {
    const decode =
      entry.encoding === undefined ? undefined : { key: entryKey(entry), sizeBytes: entry.sizeBytes, encoding: entry.encoding };
    // No store by the worker: it would write a member before the load as a whole has passed.
    const job = {
      inputs: [bytes],
      transfer: true,
      now: true,
      ...(decode ? { split: true, ranges: [{ input: 0, offset: 0, length: bytes.length, decode }] } : {}),
    };
    const check = this.#pool.digest(job).then(({ inputs, digests, parts, decodeErrors }) => {
      const refused = decodeErrors?.[0];
      if (refused) this.#decodeErrors.set(entry.sha256, refused);
      const member = decode ? parts![0]! : inputs[0]!;
      if (checkMember(entry, member, digests[0]) !== undefined) return void this.#damaged.add(entry.sha256);
      // A retried answer may bring a content again: it was handed over once.
      if (this.#passed.has(entry.sha256)) return;
      this.#passed.add(entry.sha256);
      // The cache's copy is taken now, before the member is handed over: the load writes it only
      // once every answer is in, and a game may have detached the buffer by then (Phaser gives
      // audio to decodeAudioData), which left the cache an empty copy and the next visit a refetch.
      if (this.#cache.enabled) this.#kept.push([entry.sha256, member.slice()]);
      this.#callbacks.onContent(entry.sha256, member);
    });
    // Awaited by `done`; a pool that fails (a worker lost) before then, or an answer that fails
    // first so `done` never comes, must not leave an unhandled rejection.
    check.catch(() => undefined);
    this.#checks.push(check);
  }

  /**
   * Once every answer is in: what the cache should keep; or, with a member damaged, the bundle's
   * integrity error naming every damaged one.
   */
  async done(bundle: BundleEntry, url: string, view: IndexView): Promise<Accepted> {
    await Promise.all(this.#checks);
    if (this.#damaged.size > 0) {
      const keys = view
        .membersOf(bundle.sha256)
        .filter((entry) => this.#damaged.has(entry.sha256))
        .map(entryKey);
      const decode = [...this.#decodeErrors.values()][0];
      throw new BundleIntegrityError(
        'members',
        `bundle ${bundle.sha256}: damaged member${keys.length > 1 ? 's' : ''} ${keys.map((key) => JSON.stringify(key)).join(', ')} in the ranges of a delta read${decode ? `; ${decode.message}` : ''}`,
        keys,
        { url, ...(decode ? { cause: decode } : {}) },
      );
    }
    return { forCache: this.#kept };
  }
}
