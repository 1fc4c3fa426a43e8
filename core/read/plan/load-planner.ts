/**
 * The one place that decides what a load fetches: per load and per bundle, the whole
 * bundle, or ranges of the members the cache lacks (delta reads); per read, whether it
 * goes alone by range request (SPEC §7 "Range reads") or through a load. The fetchers
 * (bundle-fetcher.ts, bundle-ranges.ts) only carry plans out; when a host cannot serve a plan
 * (it refused ranges, it does not answer multi-range requests) they say so (`Replan`) and the
 * load asks here again. What a host answered is kept per origin (`OriginCapabilities`), so the
 * next plan for that origin is made for it from the start.
 */
import type { BundleEntry } from '../../format/project-index.js';
import type { ByteRange, DeltaReadOptions } from './delta-ranges.js';
import type { Replan } from '../fetch/fetched.js';
import type { Entry, IndexView } from '../open/index-view.js';
import type { OriginCapabilities } from '../open/origins.js';
import { nextTurn } from '../turns.js';
import type { LineEstimates, WholeAllowance } from './needed-bytes.js';
import type { VerifiedCache } from '../state/verified-cache.js';

/** What one load fetches, and how many bytes that is (its byte-progress share, SPEC §7 "Byte progress"). */
export type LoadPlan = { kind: 'loose'; entry: Entry; bytes: number } | { kind: 'whole'; bundle: BundleEntry; bytes: number } | RangesPlan;

/** Ranges of a bundle, and the distinct contents (one entry each) they bring; `multipart`: in one multi-range request. */
export interface RangesPlan {
  kind: 'ranges';
  bundle: BundleEntry;
  ranges: ByteRange[];
  missing: Entry[];
  multipart: boolean;
  bytes: number;
  /** Planned for needed bytes (the load's wanted members), not for what the cache lacks. */
  needed?: boolean | undefined;
  /**
   * Set where other members of the bundle came already (PlanInputs `fetched`): the widest gap a
   * range may span, so that it spans none of them; and never the whole, planned again too.
   */
  keepOut?: number | undefined;
}

/** What the planner knows of a load's members when it plans. */
export interface PlanInputs {
  /** Contents this source holds in memory now: not fetched again. */
  held: (sha256: string) => boolean;
  /** Contents the cache holds, when a prefetch asked already (else the planner asks). */
  present?: Set<string> | undefined;
  /** A content to bring whatever the cache says (a read just missed it there). */
  need?: string | undefined;
  /**
   * The contents the load is for (its reads' and prefetch's), when needed bytes are on (SPEC §7
   * "Needed bytes"); read when the load plans, so reads that join before then are counted.
   * `undefined`: every member the cache lacks (a delta load).
   */
  wanted?: ReadonlySet<string> | undefined;
  /** Shared by the bundles of one load (needed-bytes.ts `WholeAllowance`); else each bundle has a round trip's bytes of its own. */
  allowance?: WholeAllowance | undefined;
  /**
   * Contents of the bundle this source already has in this page's life: held, on their way by a
   * range of their own, brought by an earlier needed-bytes load, or written to the cache by a
   * load whose write is pending. With needed bytes, a bundle one of them is in never comes whole:
   * the whole would bring those bytes a second time (no byte twice).
   */
  fetched?: ((sha256: string) => boolean) | undefined;
}

/**
 * Members a planner plans between two turns it gives the event loop back (`#ranges`): a load over
 * many bundles plans them in slices, each a task of its own, rather than all of them in the task
 * that asked; a bundle larger than this is a slice of its own.
 */
export const PLAN_SLICE_MEMBERS = 4096;

/** Where the delta rule comes from: imported on first use, with the range fetchers (bundle-fetcher.ts `rangesModule`), in one go. */
export type DeltaRule = () => Promise<Pick<typeof import('./delta-plan.js'), 'deltaRangesFor'>>;

export class LoadPlanner {
  readonly #view: IndexView;
  readonly #cache: VerifiedCache;
  readonly #origins: OriginCapabilities;
  /** Delta reads' settings: with a cache that can say what it holds, else `undefined`. */
  readonly #delta: Required<DeltaReadOptions> | undefined;
  /** How ranges are asked for (`deltaReads`), needed bytes' too; `undefined` with `deltaReads: false`. */
  readonly #settings: Required<DeltaReadOptions> | undefined;
  readonly #rangeReads: boolean;
  /** The delta rule (delta-plan.ts), imported the first time a cache holds part of a bundle. */
  readonly #rule: DeltaRule;
  /** The lines to the origins, when needed bytes are on (needed-bytes.ts). */
  readonly #lines: LineEstimates | undefined;
  /** Members planned since the planner's last turn of the event loop began. */
  #sliced = 0;
  /** The next turn, shared by the plans that wait for it: a task of its own, where a slice begins. */
  #turn: Promise<void> | undefined;

  constructor(
    view: IndexView,
    cache: VerifiedCache,
    origins: OriginCapabilities,
    { delta, ranges }: { delta: Required<DeltaReadOptions> | undefined; ranges: Required<DeltaReadOptions> | undefined },
    rangeReads: boolean,
    rule: DeltaRule,
    lines?: LineEstimates,
  ) {
    this.#rule = rule;
    this.#lines = lines;
    this.#view = view;
    this.#cache = cache;
    this.#origins = origins;
    this.#delta = delta;
    this.#settings = ranges;
    this.#rangeReads = rangeReads;
  }

  /**
   * Whether one read of `entry` goes alone by range request: range reads on (or `aside`: a read
   * that a needed-bytes load of its bundle passed over, which would otherwise wait for that load
   * to end), a bundle member, an origin that serves ranges.
   */
  readsByRange(entry: Entry, aside = false): boolean {
    return (
      entry.url === undefined &&
      (this.#rangeReads || (aside && this.#settings !== undefined)) &&
      this.#origins.servesRanges(this.#view.resolveUrl(this.#view.bundle(entry.bundle!)!.url))
    );
  }

  /**
   * What the load of `loadKey` fetches: a loose file; ranges of the contents neither the cache
   * (`present`, else asked now) nor memory holds, plus `need`; or the whole bundle: delta reads
   * off, an origin that ignores ranges, a cache that holds none of it or cannot say, or ranges
   * that would bring more than `maxMissingFraction` of it.
   */
  async plan(loadKey: string, inputs: PlanInputs): Promise<LoadPlan> {
    const bundle = this.#view.bundle(loadKey);
    if (!bundle) {
      const entry = this.#view.looseEntry(loadKey)!;
      return { kind: 'loose', entry, bytes: entry.sizeBytes };
    }
    const ranges = await this.#ranges(bundle, inputs);
    if (ranges) return ranges;
    // A whole bundle is checked by its stream plan (stream-check.ts), made once per bundle: as
    // much work as a range plan, in a slice as one is.
    if (!this.#view.hasStreamPlan(bundle)) {
      await this.#slice(this.#view.membersOf(bundle.sha256).length);
      this.#view.streamPlan(bundle);
    }
    return this.#whole(bundle);
  }

  /**
   * Takes `members` into the current slice: a bundle whose members would take the slice past
   * PLAN_SLICE_MEMBERS first waits for a turn of the event loop (`nextTurn`, shared by the plans
   * waiting), and goes there if it is the first of it (a bundle that large is a slice alone) or
   * still fits. What is planned after the wait reads its inputs as they are then.
   */
  async #slice(members: number): Promise<void> {
    if (this.#sliced + members > PLAN_SLICE_MEMBERS)
      do
        await (this.#turn ??= nextTurn().then(() => {
          this.#turn = undefined;
          this.#sliced = 0;
        }));
      while (this.#sliced > 0 && this.#sliced + members > PLAN_SLICE_MEMBERS);
    this.#sliced += members;
  }

  /**
   * A plan again after its host could not serve it (`Replan`): the whole bundle, or its ranges one
   * per request (the origin was marked by the fetcher, so this and later plans are made for it).
   */
  async replan(plan: RangesPlan, why: Replan['replan']): Promise<LoadPlan> {
    if (why === 'whole') return this.#whole(plan.bundle);
    const ranges = plan.needed
      ? await this.#neededRanges(plan.bundle, plan.missing, false, undefined, plan.keepOut)
      : await this.#rangesOf(plan.bundle, plan.missing, false, keptOut(this.#delta!, plan.keepOut));
    return ranges ? { ...plan, ranges, multipart: false, bytes: sumOf(ranges) } : this.#whole(plan.bundle);
  }

  #whole(bundle: BundleEntry): LoadPlan {
    return { kind: 'whole', bundle, bytes: bundle.sizeBytes };
  }

  async #ranges(bundle: BundleEntry, inputs: PlanInputs): Promise<RangesPlan | undefined> {
    const url = this.#view.resolveUrl(bundle.url);
    if (!this.#settings || !this.#origins.servesRanges(url)) return undefined;
    const members = this.#view.membersOf(bundle.sha256);
    await this.#slice(members.length);
    const contents = this.#view.contentsOf(bundle.sha256);
    if (this.#lines && inputs.wanted) return this.#needed(bundle, url, contents, inputs);
    if (!this.#delta) return undefined;
    const { held, present, need } = inputs;
    const unknown = contents.filter(({ sha256 }) => !held(sha256) && !present?.has(sha256)).map(({ sha256 }) => sha256);
    const cached = present ?? (unknown.length === 0 ? new Set<string>() : await this.#cache.contains(unknown));
    if (!cached) return undefined;
    const missing = contents.filter((entry) => entry.sha256 === need || (!cached.has(entry.sha256) && !held(entry.sha256)));
    if (missing.length === contents.length) return undefined;
    const multipart = this.#delta.multipartRanges && this.#origins.servesMultipart(url);
    const keepOut = keepOutOf(contents, missing, inputs.fetched);
    const ranges = await this.#rangesOf(bundle, missing, multipart, keptOut(this.#delta, keepOut));
    return ranges && rangesPlan(bundle, ranges, missing, multipart, false, keepOut);
  }

  /**
   * Needed bytes (SPEC §7; needed-bytes.ts has the rule): ranges of the contents the load wants
   * that neither memory nor the cache (as a prefetch found it) holds, unless the whole bundle
   * adds at most one round trip's bytes to them (what is left of them, over a load's bundles).
   */
  async #needed(bundle: BundleEntry, url: string, contents: readonly Entry[], inputs: PlanInputs): Promise<RangesPlan | undefined> {
    const { held, present, need, wanted, allowance, fetched } = inputs;
    const missing = contents.filter(
      (entry) => entry.sha256 === need || (wanted!.has(entry.sha256) && !held(entry.sha256) && !present?.has(entry.sha256)),
    );
    // Everything it wanted is held, on its way or cached by now (the load gathered, then planned): nothing to fetch.
    if (missing.length === 0) return rangesPlan(bundle, [], missing, false, true);
    if (missing.length === contents.length) return undefined;
    const multipart = this.#settings!.multipartRanges && this.#origins.servesMultipart(url);
    // The whole bundle is priced only where none of its other members came already: else it would bring them twice.
    const keepOut = keepOutOf(contents, missing, fetched);
    const ranges = await this.#neededRanges(bundle, missing, multipart, allowance, keepOut);
    return ranges && rangesPlan(bundle, ranges, missing, multipart, true, keepOut);
  }

  /**
   * The needed members' ranges by the line's price (needed-bytes.ts); `undefined` for the whole
   * bundle, never where `keepOut` is set (some of its other members came already).
   */
  async #neededRanges(
    bundle: BundleEntry,
    missing: Entry[],
    multipart: boolean,
    allowance?: WholeAllowance,
    keepOut?: number,
  ): Promise<ByteRange[] | undefined> {
    const roundTrip = this.#lines!.roundTripBytes(this.#view.resolveUrl(bundle.url));
    const settings = {
      ...this.#settings!,
      maxGapBytes: roundTrip,
      multipartGapBytes: Math.min(roundTrip, this.#settings!.multipartGapBytes),
    };
    const ranges = await this.#rangesOf(bundle, missing, multipart, { ...keptOut(settings, keepOut), maxMissingFraction: 1 });
    if (!ranges || keepOut !== undefined) return ranges;
    const added = bundle.sizeBytes - sumOf(ranges);
    const left = allowance ? (allowance.bytes ??= roundTrip) : roundTrip;
    if (added > left) return ranges;
    if (allowance) allowance.bytes = left - added;
    return undefined;
  }

  /**
   * The delta rule's ranges of `missing` under `settings` (delta reads' by default); `undefined` for the whole bundle
   * (and when the rule's module cannot be imported: a chunk gone after a deploy).
   */
  async #rangesOf(
    bundle: BundleEntry,
    missing: Entry[],
    multipart: boolean,
    settings: Required<DeltaReadOptions> & { keepOutGapBytes?: number | undefined } = this.#delta!,
  ): Promise<ByteRange[] | undefined> {
    const rule = await this.#rule().catch(() => undefined);
    return rule?.deltaRangesFor(
      // A member's place in its bundle: its stored bytes when encoded (SPEC §5a: ranges ask for stored bytes).
      missing.map((entry) => ({ offset: entry.offset!, sizeBytes: entry.storedBytes ?? entry.sizeBytes, sha256: entry.sha256 })),
      bundle.sizeBytes,
      settings,
      multipart,
    );
  }
}

const sumOf = (ranges: readonly ByteRange[]) => ranges.reduce((sum, range) => sum + range.length, 0);

/** A ranges plan: one multi-range request only where there is more than one range. */
function rangesPlan(
  bundle: BundleEntry,
  ranges: ByteRange[],
  missing: Entry[],
  multipart: boolean,
  needed: boolean,
  keepOut?: number,
): RangesPlan {
  return { kind: 'ranges', bundle, ranges, missing, multipart: multipart && ranges.length > 1, bytes: sumOf(ranges), needed, keepOut };
}

/**
 * Where members of the bundle that the plan does not fetch came already (`fetched`): the widest
 * gap a range may then span, one byte less than the smallest of them (a gap holding one is at
 * least that wide), so that no range brings their bytes again; `undefined` where none did.
 */
function keepOutOf(contents: readonly Entry[], missing: readonly Entry[], fetched: PlanInputs['fetched']): number | undefined {
  if (!fetched) return undefined;
  let smallest = Infinity;
  // `missing` is a part of `contents`, in its order: walked beside it.
  let planned = 0;
  for (const entry of contents) {
    if (entry === missing[planned]) {
      planned++;
      continue;
    }
    // An empty member has no bytes to bring twice.
    const bytes = entry.storedBytes ?? entry.sizeBytes;
    if (bytes && fetched(entry.sha256)) smallest = Math.min(smallest, bytes);
  }
  return smallest < Infinity ? smallest - 1 : undefined;
}

/**
 * Range settings that keep out what came already (`keepOut`): never the whole bundle, no gap as
 * wide as such a member joined, not even to keep to the most ranges a bundle may take.
 */
function keptOut(
  settings: Required<DeltaReadOptions>,
  keepOut: number | undefined,
): Required<DeltaReadOptions> & { keepOutGapBytes?: number | undefined } {
  return keepOut === undefined
    ? settings
    : {
        ...settings,
        maxMissingFraction: 1,
        maxGapBytes: Math.min(settings.maxGapBytes, keepOut),
        multipartGapBytes: Math.min(settings.multipartGapBytes, keepOut),
        keepOutGapBytes: keepOut,
      };
}
