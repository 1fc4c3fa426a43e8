/**
 * How a project's loads (SPEC §6) meet its bundles: for each load, the bytes it fetches against
 * the bytes it uses; for each bundle, the loads that touch it; and the files no load uses. Pure:
 * an index and loads in, numbers out (`awake-bundle report` prints them).
 *
 * The model is the reader's (SPEC §7) with `deltaReads` off: reading a member fetches its whole
 * bundle, one request, and the other members then read with no request; a loose file is one
 * request of its own size. Two figures per load:
 * - `alone`: the load with no cache. Every bundle holding a file it reads is fetched whole, once.
 * - `inOrder`: a cold start that runs the loads in the file's order with a cache (SPEC §7: keyed
 *   by SHA-256). A file whose content an earlier load fetched (any member of a bundle it fetched,
 *   or a loose file) costs nothing; the rest is fetched as in `alone`.
 */
import { opaqueId } from '../format/ids.js';
import { entryKey, type ProjectIndex } from '../format/project-index.js';
import type { NamedLoad } from './loads.js';

/** What a load fetches under one model. */
export interface LoadFetch {
  /** Bytes fetched: the listed sizes of the bundles and loose files below. */
  fetchedBytes: number;
  /** `fetchedBytes / usedBytes`; null when the load uses no bytes. */
  ratio: number | null;
  /** Requests: one per bundle, one per loose file. */
  requests: number;
  /** The bundles fetched (their sha256), in index order. */
  bundles: string[];
  /** Loose files fetched. */
  looseFiles: number;
}

export interface LoadReportEntry {
  name: string;
  /** Distinct files of the index the load reads. */
  files: number;
  /** Their bytes: what the game is handed. */
  usedBytes: number;
  alone: LoadFetch;
  inOrder: LoadFetch;
  /** Paths the load lists that the index does not (ignored, as SPEC §6 asks of a writer). */
  notInIndex: string[];
}

export interface BundleReportEntry {
  sha256: string;
  url: string;
  sizeBytes: number;
  /** Members (entries), and the sum of their sizes (more than `sizeBytes` when contents repeat). */
  files: number;
  fileBytes: number;
  /** Members no load reads; null without loads. */
  unusedFiles: number | null;
  /** The loads that read one of its members, in load order; null without loads. */
  loads: string[] | null;
}

export interface ReportFile {
  /** The index's key: the path, or the id (SPEC §4). */
  key: string;
  /** The path, when the index lists paths or a load named this id's path. */
  path?: string;
  sizeBytes: number;
  sha256: string;
  /** The bundle's sha256, for a member; absent for a loose file. */
  bundle?: string;
  /** The first load that reads it; absent when none does (or without loads). */
  firstLoad?: string;
}

export interface LoadReport {
  /** What files are keyed by in the index. */
  keys: 'path' | 'id';
  /** Per load, in the loads file's order; null when no loads were given. */
  loads: LoadReportEntry[] | null;
  /** Sums over the loads (a file two loads read counts in both); null without loads. */
  totals: {
    usedBytes: number;
    alone: { fetchedBytes: number; requests: number };
    inOrder: { fetchedBytes: number; requests: number };
  } | null;
  /** Every bundle, in index order. */
  bundles: BundleReportEntry[];
  /** Loose files (formatVersion 2, or `url` entries of 3): fetched one by one. */
  looseFiles: { count: number; bytes: number };
  /** Every file of the index, in index order, with the first load that reads it. */
  files: ReportFile[];
  /** Files no load reads, in index order; null without loads. */
  unusedFiles: { count: number; bytes: number; files: ReportFile[] } | null;
  /** Things a reader of the numbers should know. */
  notes: string[];
}

/** The model above in a paragraph, for the command line and the report page. */
export const LOAD_FETCH_MODEL =
  'A load fetches every bundle holding a file it reads, whole (the reader with deltaReads off), one request each, and each loose file it reads, one request. "alone": the load with no cache, each bundle counted once per load. "in order": a cold start running the loads in the file\'s order with a cache, where a file whose content an earlier load fetched costs nothing. ratio = fetched / used.';

type Entry = ProjectIndex['files'][number];

interface Bundle {
  sha256: string;
  url: string;
  sizeBytes: number;
}

/** The bundle an entry lives in, or undefined for a loose file. */
const bundleOf = (entry: Entry): string | undefined => ('bundle' in entry ? entry.bundle : undefined);

/** The index's entries for each path a load lists: paths, or their ids with the index's salt (SPEC §4). */
function entriesByLoadPath(index: ProjectIndex): { keys: 'path' | 'id'; lookUp: (path: string) => Entry | undefined } {
  const byKey = new Map(index.files.map((entry) => [entryKey(entry), entry] as const));
  const salt = index.formatVersion === 3 ? index.pathIds?.salt : undefined;
  if (salt === undefined) return { keys: 'path', lookUp: (path) => byKey.get(path) };
  return { keys: 'id', lookUp: (path) => byKey.get(opaqueId(salt, path)) };
}

/** What one load fetches when the contents in `cached` cost nothing. */
function fetchFor(
  entries: readonly Entry[],
  usedBytes: number,
  bundleBySha: ReadonlyMap<string, Bundle>,
  order: ReadonlyMap<string, number>,
  cached: ReadonlySet<string>,
): LoadFetch {
  const bundles = new Set<string>();
  const loose = new Set<Entry>();
  for (const entry of entries) {
    if (cached.has(entry.sha256)) continue;
    const bundle = bundleOf(entry);
    if (bundle === undefined) loose.add(entry);
    else bundles.add(bundle);
  }
  const sorted = [...bundles].sort((a, b) => order.get(a)! - order.get(b)!);
  let fetchedBytes = 0;
  for (const sha256 of sorted) fetchedBytes += bundleBySha.get(sha256)!.sizeBytes;
  for (const entry of loose) fetchedBytes += entry.sizeBytes;
  return {
    fetchedBytes,
    ratio: usedBytes > 0 ? fetchedBytes / usedBytes : null,
    requests: sorted.length + loose.size,
    bundles: sorted,
    looseFiles: loose.size,
  };
}

/**
 * The report for `index` and `loads` (undefined: no loads file, so only the per-bundle part).
 * A path a load repeats counts once in that load.
 */
export function reportLoads(index: ProjectIndex, loads: readonly NamedLoad[] | undefined): LoadReport {
  const bundleList: Bundle[] = index.formatVersion === 3 ? index.bundles : [];
  const bundleBySha = new Map(bundleList.map((bundle) => [bundle.sha256, bundle] as const));
  const order = new Map(bundleList.map((bundle, i) => [bundle.sha256, i] as const));
  const membersOf = new Map<string, Entry[]>(bundleList.map((bundle) => [bundle.sha256, []]));
  for (const entry of index.files) {
    const bundle = bundleOf(entry);
    if (bundle !== undefined) membersOf.get(bundle)?.push(entry);
  }

  const { keys, lookUp } = entriesByLoadPath(index);
  const notes: string[] = [];
  if (index.formatVersion === 2) notes.push('the index is loose (formatVersion 2): it has no bundles, its files are fetched one by one');
  if (keys === 'id')
    notes.push(
      "the index lists opaque ids, not paths (SPEC §4): the loads' paths were matched by their ids, made with the salt the index publishes (pathIds.salt); files no load lists show by id",
    );

  const firstLoad = new Map<Entry, string>();
  const pathOf = new Map<Entry, string>();
  const loadsOf = new Map<string, string[]>();
  const cached = new Set<string>();
  const entries = loads?.map((load): LoadReportEntry => {
    const read = new Set<Entry>();
    const notInIndex = new Set<string>();
    for (const path of load.paths) {
      const entry = lookUp(path);
      if (entry === undefined) {
        notInIndex.add(path);
        continue;
      }
      read.add(entry);
      pathOf.set(entry, path);
      if (!firstLoad.has(entry)) firstLoad.set(entry, load.name);
    }
    const files = [...read];
    let usedBytes = 0;
    for (const entry of files) usedBytes += entry.sizeBytes;
    const alone = fetchFor(files, usedBytes, bundleBySha, order, new Set());
    const inOrder = fetchFor(files, usedBytes, bundleBySha, order, cached);
    for (const sha256 of inOrder.bundles) for (const member of membersOf.get(sha256)!) cached.add(member.sha256);
    for (const entry of files) if (bundleOf(entry) === undefined) cached.add(entry.sha256);
    for (const sha256 of alone.bundles) loadsOf.set(sha256, [...(loadsOf.get(sha256) ?? []), load.name]);
    return { name: load.name, files: files.length, usedBytes, alone, inOrder, notInIndex: [...notInIndex] };
  });

  const files = index.files.map((entry): ReportFile => {
    const key = entryKey(entry);
    const path = keys === 'path' ? key : pathOf.get(entry);
    const bundle = bundleOf(entry);
    const first = firstLoad.get(entry);
    return {
      key,
      ...(path !== undefined ? { path } : {}),
      sizeBytes: entry.sizeBytes,
      sha256: entry.sha256,
      ...(bundle !== undefined ? { bundle } : {}),
      ...(first !== undefined ? { firstLoad: first } : {}),
    };
  });
  const unused = entries ? files.filter((file) => file.firstLoad === undefined) : undefined;
  const loose = files.filter((file) => file.bundle === undefined);

  return {
    keys,
    loads: entries ?? null,
    totals: entries ? totalsOf(entries) : null,
    bundles: bundleList.map((bundle) => {
      const members = membersOf.get(bundle.sha256)!;
      return {
        sha256: bundle.sha256,
        url: bundle.url,
        sizeBytes: bundle.sizeBytes,
        files: members.length,
        fileBytes: sumOf(members),
        unusedFiles: entries ? members.filter((member) => !firstLoad.has(member)).length : null,
        loads: entries ? (loadsOf.get(bundle.sha256) ?? []) : null,
      };
    }),
    looseFiles: { count: loose.length, bytes: sumOf(loose) },
    files,
    unusedFiles: unused ? { count: unused.length, bytes: sumOf(unused), files: unused } : null,
    notes,
  };
}

const sumOf = (items: readonly { sizeBytes: number }[]) => items.reduce((sum, item) => sum + item.sizeBytes, 0);

function totalsOf(entries: readonly LoadReportEntry[]): NonNullable<LoadReport['totals']> {
  const totals = { usedBytes: 0, alone: { fetchedBytes: 0, requests: 0 }, inOrder: { fetchedBytes: 0, requests: 0 } };
  for (const entry of entries) {
    totals.usedBytes += entry.usedBytes;
    for (const model of ['alone', 'inOrder'] as const) {
      totals[model].fetchedBytes += entry[model].fetchedBytes;
      totals[model].requests += entry[model].requests;
    }
  }
  return totals;
}
