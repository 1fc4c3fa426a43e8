/**
 * Loads: one request per bundle (or loose file), shared (SPEC §7 "One request per bundle"); the
 * planner decides what each fetches (load-planner.ts), the fetcher carries that out, and each
 * verified content is held for the reads that will need it as soon as it passed.
 */
import type { Accepted, FetchCallbacks } from '../fetch/fetched.js';
import { decided, type Load } from './load-registry.js';
import { nowMs, type LineSample, type WholeAllowance } from '../plan/needed-bytes.js';
import type { SourceParts } from '../state/source-parts.js';

/** Plans a load may go through when its host cannot serve one: multi-range → one range per request → whole. */
const MAX_REPLANS = 2;

export interface StartOptions {
  /** What the cache holds of the bundle, when a prefetch asked already. */
  present?: Set<string>;
  /** A content to bring whatever the cache says (a read just missed it there). */
  need?: string;
  /** Hold what arrives for the files that will read it (default true); false: only for reads already waiting. */
  hold?: boolean;
  /** The contents this load is for (a prefetch's group), with `need`: with needed bytes on, it fetches no others (SPEC §7 "Needed bytes"). */
  wanted?: Iterable<string>;
  /** What the bundles of the load this one is part of may still add by coming whole (needed-bytes.ts `WholeAllowance`). */
  allowance?: WholeAllowance;
}

export class LoadRunner {
  readonly #parts: SourceParts;

  constructor(parts: SourceParts) {
    this.#parts = parts;
  }

  /**
   * Starts fetching a bundle or loose file; each verified content goes to `held` as soon as it
   * passed, and the whole load's to the cache once all passed.
   */
  start(loadKey: string, options: StartOptions = {}): Load {
    const { view, registry, lines } = this.#parts;
    const gathering =
      lines && view.bundle(loadKey) && (options.wanted || options.need)
        ? new Set([...(options.wanted ?? []), ...(options.need ? [options.need] : [])])
        : undefined;
    const load = registry.start(loadKey, view.sizeOfLoad(loadKey), async (load, decide) => {
      if (gathering) {
        load.status = 'gathering';
        load.wanted = gathering;
      }
      const line = new LineTiming();
      const callbacks: FetchCallbacks = {
        signal: load.controller.signal,
        onProgress: (received, total) => {
          line.received(received);
          registry.progress(load, received, total);
        },
        onContent: (sha256, bytes) => this.#arrive(load, sha256, bytes, options.hold ?? true),
      };
      try {
        const accepted = await this.#carryOut(load, options, decide, callbacks, line);
        load.status = 'storing';
        load.stored = this.#parts.cache.store(accepted.forCache, accepted.stored);
        // A worker's write waits for the loads in flight to end, after this load has left: marked pending.
        if (accepted.stored) this.#parts.ledger.markWrites(load.arrived, load.stored);
        // The load stays in flight until the cache holds what it brought, so that a read coming
        // meanwhile joins it (or finds the cache filled) rather than fetch the bundle again. Not a
        // worker's write: workers write once the loads are over (see flushStores).
        if (!accepted.stored) await load.stored;
      } catch (error) {
        // SPEC §7: a bundle that fails is rejected whole; what it brought and no read took yet goes
        // too, unless something else brought the same bytes.
        for (const sha256 of load.arrived) this.#parts.ledger.held.forget(sha256, load.key);
        throw error;
      }
    });
    return load;
  }

  /** The planner's plan, carried out; planned again (bounded) where the host could not serve it. */
  async #carryOut(
    load: Load,
    options: StartOptions,
    decide: (bytes: number) => void,
    callbacks: FetchCallbacks,
    line: LineTiming,
  ): Promise<Accepted> {
    const { planner, fetcher, ledger, lookups, lines, view } = this.#parts;
    let wanted: Set<string> | undefined;
    if (load.status === 'gathering') {
      // The reads asked for with this one that are still asking the cache: those that miss join it (needed-bytes.ts).
      await lookups.quiet(load.key);
      wanted = load.wanted;
      load.status = 'planning';
      // A read alone is a load of one (SPEC §7 "Needed bytes"): the rule decides between its
      // member's range and the whole bundle, as for any load; no whole bundle of unrelated members.
    }
    let plan = await planner.plan(load.key, {
      // On its way by a range of its own (aside-ranges.ts), or being written to the cache by a load
      // that ended (its reads wait for the write), counts as held: not asked for twice.
      held: (sha256) => ledger.has(sha256),
      present: options.present,
      need: options.need,
      wanted,
      allowance: options.allowance,
      // What this source has of the bundle already, or brought: the whole would bring it twice.
      fetched: (sha256) => hadAlready(this.#parts, load.key, sha256),
    });
    if (plan.kind === 'ranges') {
      load.partial = true;
      load.brings = new Set(plan.missing.map((entry) => entry.sha256));
    }
    decide(plan.bytes);
    // Nothing left to fetch: what it wanted came meanwhile (no request, and no sample of the line).
    if (plan.kind === 'ranges' && plan.missing.length === 0) return { forCache: [] };
    line.begin();
    let result = await fetcher.carryOut(plan, callbacks);
    const asPlanned = !('replan' in result);
    for (let replans = 1; 'replan' in result; replans++) {
      if (plan.kind !== 'ranges' || replans > MAX_REPLANS) throw new Error(`internal: load ${load.key} was planned again ${replans} times`);
      plan = await planner.replan(plan, result.replan);
      // Whole now: it brings every member (reads that passed it over read the cache, as planned).
      if (plan.kind === 'whole') load.brings = undefined;
      result = await fetcher.carryOut(plan, callbacks);
    }
    if (plan.kind === 'ranges')
      ledger.noteBrought(
        load.key,
        plan.missing.map((entry) => entry.sha256),
      );
    if (lines && asPlanned && plan.kind !== 'loose') lines.observe(view.resolveUrl(plan.bundle.url), line.sample(plan.bytes));
    return result;
  }

  /**
   * A content passed: held for the files of the load that will read it (those a prefetch asked
   * for stay until read). A load that only fills the cache (`hold` false) keeps it only for the
   * reads already waiting for it.
   */
  #arrive(load: Load, sha256: string, bytes: Uint8Array, hold: boolean): void {
    if (load.arrived.has(sha256)) return; // again, from a retry
    this.#parts.ledger.holdFor(sha256, bytes, hold ? this.#parts.view.filesWith(load.key, sha256) : [], load.key);
    this.#parts.registry.arrive(load, sha256);
  }

  /** A whole bundle that came for a range read: its members held and cached as a load's. */
  keepWhole(bundleSha: string, accepted: Accepted, contents: Map<string, Uint8Array>): void {
    const { cache, view, ledger, registry } = this.#parts;
    void cache.store(accepted.forCache, accepted.stored);
    if (accepted.stored && registry.size === 0) this.#parts.flushWhenIdle();
    for (const [sha256, bytes] of contents) {
      ledger.holdFor(sha256, bytes, view.filesWith(bundleSha, sha256), bundleSha);
    }
  }
}

/**
 * Whether this page has content `sha256` of bundle `loadKey` already, or has it on its way: held,
 * on its way by a range of its own, being written to the cache, brought by an earlier load of this
 * source, or brought by the load of that bundle in flight (planned with it, or arrived). A range
 * that spans such a member would ask for its bytes twice (SPEC §7 "One request per bundle").
 */
export function hadAlready(parts: SourceParts, loadKey: string, sha256: string): boolean {
  if (parts.ledger.had(loadKey, sha256)) return true;
  const load = parts.registry.get(loadKey);
  return !!load && (load.arrived.has(sha256) || (decided(load) && (load.brings === undefined || load.brings.has(sha256))));
}

/** One load's fetch as its line saw it (needed-bytes.ts `LineEstimates`): from the request to its first body bytes, and the body's time. */
class LineTiming {
  #start = 0;
  #firstByte: number | undefined;

  begin(): void {
    this.#start = nowMs();
    this.#firstByte = undefined;
  }

  received(bytes: number): void {
    if (bytes > 0) this.#firstByte ??= nowMs();
  }

  sample(bytes: number): LineSample {
    const end = nowMs();
    const first = this.#firstByte ?? end;
    return { waitedMs: first - this.#start, bytes, bodyMs: end - first };
  }
}
