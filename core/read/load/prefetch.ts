/**
 * Prefetches and loads (SPEC §7 "Prefetch", "Byte progress"): what the cache holds of each group
 * (one call), the network for the rest at once, byte progress over all of it. Reads of a group a
 * prefetch is deciding wait for its decision (`deciding`) rather than ask the cache themselves.
 */
import { entryKey, type ProjectIndex } from '../../format/project-index.js';
import { rangeAside } from '../fetch/aside-ranges.js';
import { pushTo, type Entry } from '../open/index-view.js';
import { PrefetchReport } from './load-progress.js';
import { ByteBudget, decided, type Load } from './load-registry.js';
import { hadAlready, type LoadRunner } from './loads.js';
import type { WholeAllowance } from '../plan/needed-bytes.js';
import type { PrefetchOptions } from '../options.js';
import type { SourceParts } from '../state/source-parts.js';

export interface PrefetchFile {
  path: string;
  entry: Entry;
}

export class Prefetcher {
  readonly #parts: SourceParts;
  readonly #loads: LoadRunner;

  constructor(parts: SourceParts, loads: LoadRunner) {
    this.#parts = parts;
    this.#loads = loads;
  }

  async prefetch(files: PrefetchFile[], options: PrefetchOptions, signal: AbortSignal): Promise<void> {
    const { view, cache, ledger } = this.#parts;
    const { asked, held } = ledger;
    const keep = options.keep !== false || !cache.enabled;
    const groups = new Map<string, Entry[]>();
    for (const { entry } of files) {
      pushTo(groups, view.loadKeyOf(entry), entry);
      if (!keep) continue;
      const key = entryKey(entry);
      if (asked.has(key)) continue;
      asked.add(key);
      held.pin(entry.sha256);
    }
    const decided = ledger.beginDeciding(groups.keys());
    try {
      await this.#prefetchGroups(groups, files, keep, signal, decided, options);
    } finally {
      for (const loadKey of groups.keys()) decided(loadKey);
    }
  }

  /**
   * Starts the loads of `files` that neither memory, a load in flight nor the cache holds (the
   * read-ahead of references, read-ahead.ts): what arrives is held for their reads within
   * `pendingBytes`, pinned by nothing, so files the engine never asks for cost no memory past it.
   */
  async ahead(files: PrefetchFile[], wanted: (path: string) => boolean): Promise<void> {
    const { view, registry, ledger } = this.#parts;
    /**
     * Groups with a file still wanted, that this page neither has nor has on its way (held, by a
     * range, being written, brought, or brought by the load in flight: `hadAlready`; a file the
     * engine has just taken, before it is marked handed out, is one), whose load is neither in
     * flight nor being decided. A read-ahead never asks for bytes the page has had.
     */
    const open = (among: PrefetchFile[]) => {
      const groups = new Map<string, Entry[]>();
      for (const { path, entry } of among) {
        const loadKey = view.loadKeyOf(entry);
        if (wanted(path) && !hadAlready(this.#parts, loadKey, entry.sha256)) pushTo(groups, loadKey, entry);
      }
      let pathOf: Map<Entry, string> | undefined;
      for (const loadKey of [...groups.keys()]) {
        const load = registry.get(loadKey);
        if (load) this.#besideLoad(load, groups.get(loadKey)!, (pathOf ??= new Map(among.map((file) => [file.entry, file.path]))));
        if (load || ledger.deciding(loadKey)) groups.delete(loadKey);
      }
      return groups;
    };
    const groups = open(files);
    if (groups.size === 0) return;
    const { complete, present } = await this.#cachedGroups(groups);
    // One load over its bundles (needed-bytes.ts `WholeAllowance`).
    const allowance: WholeAllowance = {};
    // While the cache answered, the game may have read them, or a load of theirs started: asked again.
    const still = open(files);
    for (const loadKey of still.keys())
      if (groups.has(loadKey) && !complete.has(loadKey) && !this.#parts.lifetime.aborted)
        this.#loads.start(loadKey, { ...(present ? { present } : {}), wanted: shasOf(groups.get(loadKey)!), allowance });
    // A return visit: what the cache holds is read now, in one batch, while the engine parses the
    // referrer, and held (unpinned) for its reads, rather than read when each asks.
    const cached = [...still].filter(([loadKey]) => complete.has(loadKey)).flatMap(([, entries]) => entries);
    if (cached.length === 0 || this.#parts.lifetime.aborted) return;
    const wantedContents = () => new Set(files.filter((file) => wanted(file.path)).map((file) => file.entry.sha256));
    await this.#holdFromCache(cached, wantedContents);
  }

  /**
   * Read-ahead files of a bundle whose load is in flight (needed bytes, SPEC §7): one gathering
   * its reads wants them too; one that planned without them brings them by ranges of their own
   * (aside-ranges.ts), at once, rather than after it.
   */
  #besideLoad(load: Load, entries: Entry[], pathOf: Map<Entry, string>): void {
    if (!this.#parts.lines) return;
    if (load.status === 'gathering') return void entries.forEach((entry) => load.wanted!.add(entry.sha256));
    if (!decided(load) || !load.brings) return;
    for (const entry of distinct(entries))
      if (!load.brings.has(entry.sha256) && this.#parts.planner.readsByRange(entry, true))
        void rangeAside(this.#parts, this.#loads, entry, pathOf.get(entry) ?? entryKey(entry)).catch(() => undefined);
  }

  /**
   * The files whose contents changed since `previous` and whose earlier contents the cache holds
   * (and the new ones it does not): what `prefetchChanged` brings into the cache.
   */
  async changedSince(previous: ProjectIndex): Promise<PrefetchFile[]> {
    // Keys are paths, or ids (the same path keeps its id while the salt stays the same).
    const before = new Map((previous.files as Entry[]).map((file) => [entryKey(file), file.sha256] as const));
    const changed = [...this.#parts.view.entries()].filter((entry) => (before.get(entryKey(entry)) ?? entry.sha256) !== entry.sha256);
    if (changed.length === 0) return [];
    const present = await this.#parts.cache.contains([
      ...new Set(changed.flatMap((entry) => [entry.sha256, before.get(entryKey(entry))!])),
    ]);
    if (!present) return [];
    return changed
      .filter((entry) => present.has(before.get(entryKey(entry))!) && !present.has(entry.sha256))
      .map((entry) => ({ path: entry.path ?? entry.id!, entry }));
  }

  async #prefetchGroups(
    groups: Map<string, Entry[]>,
    files: PrefetchFile[],
    keep: boolean,
    signal: AbortSignal,
    decided: (loadKey: string) => void,
    options: PrefetchOptions,
  ): Promise<void> {
    const { view, registry, ledger, pendingBytes } = this.#parts;
    const { asked } = ledger;
    // What the cache holds (one call), then the network for the rest at once, while the groups
    // the cache holds whole are read from it (one batch each) when this prefetch keeps them.
    const { complete: cached, present } = await this.#cachedGroups(groups);
    const jobs = [...groups.keys()].filter((loadKey) => !cached.has(loadKey));
    // One load over its bundles (needed-bytes.ts `WholeAllowance`).
    const allowance: WholeAllowance = {};
    const fromCache = [...cached].map(async (loadKey) => {
      if (!keep || (await this.#holdFromCache(groups.get(loadKey)!))) return decided(loadKey);
      const load = registry.get(loadKey) ?? this.#loads.start(loadKey, { wanted: shasOf(groups.get(loadKey)!), allowance });
      decided(loadKey);
      await registry.join(load, signal);
    });
    // Without keeping, bodies come a few at a time: within `pendingBytes` in flight (at least one).
    const budget = keep ? undefined : new ByteBudget(pendingBytes);
    const starting = jobs.map(async (loadKey) => {
      const size = view.sizeOfLoad(loadKey);
      if (budget) await budget.take(size, signal);
      const load =
        registry.get(loadKey) ??
        this.#loads.start(loadKey, { ...(present ? { present } : {}), hold: keep, wanted: shasOf(groups.get(loadKey)!), allowance });
      decided(loadKey);
      if (budget)
        void load.done
          .then(
            () => load.stored,
            () => undefined,
          )
          .then(() => budget.give(size));
      return load;
    });
    // The total is what the loads will download, known once each has decided (before its requests).
    // With a budget, loads start in turns: their shares are their listed sizes, whatever they decide.
    let shares = jobs.map((loadKey) => view.sizeOfLoad(loadKey));
    if (!budget) shares = await Promise.all(starting.map(async (started) => (await started).planned));
    const report = new PrefetchReport(registry, files, view, options);
    report.begin(jobs, shares, starting);
    await Promise.all(
      starting
        .map(async (started) => {
          const load: Load = await started;
          await registry.join(load, signal);
          report.finished(load);
          await load.stored;
          // What a delta load did not bring, the cache holds: read it for this prefetch's reads that
          // have not happened yet (a read that comes while this is read unpins what it finds held).
          if (keep && load.partial) await this.#holdFromCache(groups.get(load.key)!.filter((entry) => asked.has(entryKey(entry))));
        })
        .concat(fromCache),
    );
    report.end();
  }

  /**
   * What the cache holds of each prefetch group, in one `hasMany` call for all of them (counts,
   * no bytes): per load key, whether every content the group needs and `held` lacks is there.
   * A content whose cache write is pending counts as there (SPEC §7 "Needed bytes": no byte twice): a
   * worker writes once no load is in flight, so a load of its bundle that just ended, while
   * another is still under way, is not in the store yet, and asking the store would fetch it again.
   */
  async #cachedGroups(groups: Map<string, Entry[]>): Promise<{ complete: Set<string>; present?: Set<string> }> {
    const { ledger, cache, view } = this.#parts;
    const complete = new Set<string>();
    const wanted = new Map<string, Entry[]>();
    for (const [loadKey, group] of groups) {
      // On its way by a range of its own (aside-ranges.ts) counts as there too: `#holdFromCache` waits for it.
      if (group.every((entry) => ledger.has(entry.sha256))) complete.add(loadKey);
      else if (cache.enabled) wanted.set(loadKey, distinct(group.filter((entry) => !ledger.has(entry.sha256))));
    }
    if (wanted.size === 0) return { complete };
    // The same call asks for every member of the bundles that may be fetched (for delta reads).
    const shas = new Set<string>();
    for (const missing of wanted.values()) for (const entry of missing) shas.add(entry.sha256);
    for (const loadKey of wanted.keys()) for (const entry of view.membersOf(loadKey)) shas.add(entry.sha256);
    const present = await cache.contains([...shas]);
    if (!present) return { complete };
    for (const sha256 of shas) if (ledger.onItsWay(sha256)) present.add(sha256);
    for (const [loadKey, missing] of wanted) if (missing.every((entry) => present.has(entry.sha256))) complete.add(loadKey);
    return { complete, present };
  }

  /**
   * Reads a group that the cache holds whole into `held` for the prefetch's reads (one batch,
   * checked in a worker where there is one), pinned for them; for a read-ahead (`stillWanted`),
   * the contents whose files are still unread, held unpinned within the memory budget like what a
   * load brings. False when an entry was gone or bad after all.
   */
  async #holdFromCache(group: Entry[], stillWanted?: () => Set<string>): Promise<boolean> {
    const { ledger, cache } = this.#parts;
    const { held } = ledger;
    const unheld = () => distinct(group.filter((entry) => !held.has(entry.sha256)));
    if (unheld().length === 0) return true;
    await this.#written(unheld());
    // What came by a range of its own meanwhile is held now, pinned for this prefetch's reads (aside-ranges.ts).
    const wanted = unheld();
    if (wanted.length === 0) return true;
    const found = await cache.getVerified(wanted);
    const unread = stillWanted?.();
    const readsOf = new Map<string, number>();
    for (const file of group) readsOf.set(file.sha256, (readsOf.get(file.sha256) ?? 0) + 1);
    for (const [sha256, bytes] of found) {
      const reads = readsOf.get(sha256) ?? 0;
      if (unread && (!unread.has(sha256) || held.has(sha256))) continue; // read, or brought, meanwhile
      held.put(sha256, bytes, reads, unread ? 0 : reads, 'cache');
    }
    return found.size === wanted.length;
  }

  /**
   * Once the ranges of their own that bring `entries` (aside-ranges.ts) and their pending cache
   * writes have settled (the workers asked to write now), as a read waits (read-steps.ts `fromCache`).
   */
  async #written(entries: Entry[]): Promise<void> {
    const { ledger } = this.#parts;
    const coming = entries.flatMap((entry) => ledger.ranging(entry.sha256) ?? []);
    if (coming.length > 0) await Promise.all(coming.map((range) => range.catch(() => undefined)));
    const pending = entries.flatMap((entry) => ledger.writing(entry.sha256) ?? []);
    if (pending.length === 0) return;
    this.#parts.flushWrites();
    await Promise.all(pending);
  }
}

/** The contents of a group's entries (a load's `wanted`: with needed bytes, what it fetches). */
function shasOf(entries: Entry[]): string[] {
  return entries.map((entry) => entry.sha256);
}

/** One entry per content. */
function distinct(entries: Entry[]): Entry[] {
  return [...new Map(entries.map((entry) => [entry.sha256, entry])).values()];
}
