/**
 * What changed between two versions of a project index (SPEC §2–3): files added, changed and
 * removed; bundles new and gone; the bytes a host uploads; and the bytes a returning player
 * downloads, whole bundles against delta ranges (`planDeltaRanges`). Pure: indexes in, numbers out.
 *
 * A returning player holds the old version's contents: the cache is keyed by SHA-256 (SPEC §7),
 * so a content is missing exactly when no entry of the old index has it, whatever its path.
 */
import {
  DEFAULT_MULTIPART_RANGE_OPTIONS,
  planDeltaRanges,
  type DeltaMember,
  type DeltaRangeOptions,
  type DeltaRangePlan,
} from './delta-ranges.js';
import { opaqueId } from './ids.js';
import { entryKey, type BundledFileEntry, type BundleEntry, type ProjectIndex } from './project-index.js';

export interface IndexDiffFile {
  /** The path, or the id when the indexes compare by id. */
  key: string;
  sizeBytes: number;
  sha256: string;
}

export interface IndexDiffChangedFile {
  key: string;
  old: { sizeBytes: number; sha256: string };
  new: { sizeBytes: number; sha256: string };
}

export interface BundleDeltaPlan extends DeltaRangePlan {
  bundle: BundleEntry;
}

export interface IndexDiff {
  /** What files are compared by: paths, or opaque ids (SPEC §4) when either index uses them. */
  keys: 'path' | 'id';
  /** Things a reader of the numbers should know (a loose index, ids with different salts…). */
  notes: string[];
  files: { added: IndexDiffFile[]; changed: IndexDiffChangedFile[]; removed: IndexDiffFile[]; unchanged: number };
  bundles: { new: BundleEntry[]; gone: BundleEntry[]; kept: number };
  /** The new bundles: what a host uploads. */
  upload: { bundles: number; bytes: number };
  download: {
    /** Distinct contents of the new version that the old one lacks, and their bytes. */
    missingContents: number;
    missingBytes: number;
    /** Loose entries (formatVersion 2, or `url` entries of 3) with missing content: one request each, counted in both totals below. */
    looseFiles: { files: number; bytes: number };
    /** Every bundle holding a missing content fetched whole, one request each. */
    wholeBundles: { bundles: number; bytes: number; requests: number };
    /** Only the missing members' ranges, by the reader's rule (`planDeltaRanges`). */
    deltaRanges: { bytes: number; requests: number; bundlesWhole: number; bundlesRanged: number; plans: BundleDeltaPlan[] };
    /**
     * The same missing members asked for as the reader does by default where the server answers
     * multi-range requests: one request per bundle (`DEFAULT_MULTIPART_RANGE_OPTIONS`, with the
     * missing fraction of `options`). `bytes` counts the ranges, not the ~130-byte part headers.
     */
    multiRange: { bytes: number; requests: number; bundlesWhole: number };
  };
}

type Entry = ProjectIndex['files'][number];

const saltOf = (index: ProjectIndex) => (index.formatVersion === 3 ? index.pathIds?.salt : undefined);

/**
 * The key of every entry of both indexes, in a common kind: paths when neither uses ids; ids
 * when one does, computing the other side's ids from its paths with that salt (SPEC §4).
 */
function alignKeys(
  oldIndex: ProjectIndex,
  newIndex: ProjectIndex,
  notes: string[],
): { keys: 'path' | 'id'; keyOf: (entry: Entry, side: 'old' | 'new') => string } {
  const oldSalt = saltOf(oldIndex);
  const newSalt = saltOf(newIndex);
  if (oldSalt === undefined && newSalt === undefined) return { keys: 'path', keyOf: (entry) => entryKey(entry) };
  if (oldSalt !== undefined && newSalt !== undefined) {
    if (oldSalt !== newSalt)
      notes.push(
        'the indexes use different salts for their ids, so no id matches: every file shows as removed and added (the download figures, by content, still hold)',
      );
    return { keys: 'id', keyOf: (entry) => entryKey(entry) };
  }
  const salt = (oldSalt ?? newSalt)!;
  const pathSide = oldSalt === undefined ? 'old' : 'new';
  notes.push(
    `the ${pathSide} index lists paths and the other ids: compared by id, with the ${pathSide === 'old' ? 'new' : 'old'} index's salt`,
  );
  return { keys: 'id', keyOf: (entry, side) => (side === pathSide ? opaqueId(salt, entry.path!) : entryKey(entry)) };
}

function diffFiles(
  oldIndex: ProjectIndex,
  newIndex: ProjectIndex,
  keyOf: (entry: Entry, side: 'old' | 'new') => string,
): IndexDiff['files'] {
  const oldByKey = new Map(oldIndex.files.map((entry) => [keyOf(entry, 'old'), entry]));
  const newKeys = new Set<string>();
  const files: IndexDiff['files'] = { added: [], changed: [], removed: [], unchanged: 0 };
  for (const entry of newIndex.files) {
    const key = keyOf(entry, 'new');
    newKeys.add(key);
    const before = oldByKey.get(key);
    if (!before) files.added.push({ key, sizeBytes: entry.sizeBytes, sha256: entry.sha256 });
    else if (before.sha256 !== entry.sha256 || before.sizeBytes !== entry.sizeBytes) {
      files.changed.push({
        key,
        old: { sizeBytes: before.sizeBytes, sha256: before.sha256 },
        new: { sizeBytes: entry.sizeBytes, sha256: entry.sha256 },
      });
    } else files.unchanged++;
  }
  for (const [key, entry] of oldByKey) {
    if (!newKeys.has(key)) files.removed.push({ key, sizeBytes: entry.sizeBytes, sha256: entry.sha256 });
  }
  return files;
}

const bundlesOf = (index: ProjectIndex): BundleEntry[] => (index.formatVersion === 3 ? index.bundles : []);
const sizeSum = (items: readonly { sizeBytes: number }[]) => items.reduce((sum, item) => sum + item.sizeBytes, 0);

function diffBundles(oldIndex: ProjectIndex, newIndex: ProjectIndex): IndexDiff['bundles'] {
  const oldNames = new Set(bundlesOf(oldIndex).map((bundle) => bundle.sha256));
  const newNames = new Set(bundlesOf(newIndex).map((bundle) => bundle.sha256));
  return {
    new: bundlesOf(newIndex).filter((bundle) => !oldNames.has(bundle.sha256)),
    gone: bundlesOf(oldIndex).filter((bundle) => !newNames.has(bundle.sha256)),
    kept: bundlesOf(newIndex).filter((bundle) => oldNames.has(bundle.sha256)).length,
  };
}

function planDownload(oldIndex: ProjectIndex, newIndex: ProjectIndex, options: DeltaRangeOptions): IndexDiff['download'] {
  const held = new Set(oldIndex.files.map((entry) => entry.sha256));
  // An empty content needs no bytes: a player has it already.
  const missing = new Map(
    newIndex.files.filter((entry) => entry.sizeBytes > 0 && !held.has(entry.sha256)).map((entry) => [entry.sha256, entry.sizeBytes]),
  );
  const looseMissing = new Map(
    newIndex.files.filter((entry) => entry.url !== undefined && missing.has(entry.sha256)).map((entry) => [entry.sha256, entry.sizeBytes]),
  );
  const looseFiles = { files: looseMissing.size, bytes: [...looseMissing.values()].reduce((sum, size) => sum + size, 0) };

  const missingSet = new Set(missing.keys());
  const membersOf = new Map<string, DeltaMember[]>();
  for (const entry of newIndex.files as BundledFileEntry[]) {
    if (entry.bundle === undefined) continue;
    const members = membersOf.get(entry.bundle) ?? [];
    // A range asks for stored bytes (SPEC §5a): an encoded member takes its storedBytes in the bundle.
    members.push({ offset: entry.offset!, sizeBytes: entry.storedBytes ?? entry.sizeBytes, sha256: entry.sha256 });
    membersOf.set(entry.bundle, members);
  }
  const plans: BundleDeltaPlan[] = [];
  for (const bundle of bundlesOf(newIndex)) {
    const plan = planDeltaRanges(bundle.sizeBytes, membersOf.get(bundle.sha256) ?? [], missingSet, options);
    if (!plan.none) plans.push({ bundle, ...plan });
  }
  const multipartOptions = {
    ...DEFAULT_MULTIPART_RANGE_OPTIONS,
    ...(options.maxMissingFraction !== undefined ? { maxMissingFraction: options.maxMissingFraction } : {}),
  };
  const multiPlans = plans.map((plan) =>
    planDeltaRanges(plan.bundle.sizeBytes, membersOf.get(plan.bundle.sha256) ?? [], missingSet, multipartOptions),
  );
  const rangedBytes = plans.reduce((sum, plan) => sum + plan.bytes, 0);
  const rangedRequests = plans.reduce((sum, plan) => sum + plan.ranges.length, 0);
  const wholeBytes = sizeSum(plans.map((plan) => plan.bundle));
  return {
    missingContents: missing.size,
    missingBytes: [...missing.values()].reduce((sum, size) => sum + size, 0),
    looseFiles,
    wholeBundles: { bundles: plans.length, bytes: wholeBytes + looseFiles.bytes, requests: plans.length + looseFiles.files },
    deltaRanges: {
      bytes: rangedBytes + looseFiles.bytes,
      requests: rangedRequests + looseFiles.files,
      bundlesWhole: plans.filter((plan) => plan.whole).length,
      bundlesRanged: plans.filter((plan) => !plan.whole).length,
      plans,
    },
    multiRange: {
      bytes: multiPlans.reduce((sum, plan) => sum + plan.bytes, 0) + looseFiles.bytes,
      requests: multiPlans.length + looseFiles.files,
      bundlesWhole: multiPlans.filter((plan) => plan.whole).length,
    },
  };
}

/**
 * Compares two valid indexes (from `parseProjectIndex`): files by path, or by id when ids replace
 * paths; bundles by SHA-256; downloads by content. `options` sets the delta-range rule.
 */
export function diffProjectIndexes(oldIndex: ProjectIndex, newIndex: ProjectIndex, options: DeltaRangeOptions = {}): IndexDiff {
  const notes: string[] = [];
  for (const [side, index] of [
    ['old', oldIndex],
    ['new', newIndex],
  ] as const) {
    if (index.formatVersion === 2)
      notes.push(`the ${side} index is loose (formatVersion 2): it has no bundles, its files are fetched one by one`);
  }
  const { keys, keyOf } = alignKeys(oldIndex, newIndex, notes);
  const bundles = diffBundles(oldIndex, newIndex);
  return {
    keys,
    notes,
    files: diffFiles(oldIndex, newIndex, keyOf),
    bundles,
    upload: { bundles: bundles.new.length, bytes: sizeSum(bundles.new) },
    download: planDownload(oldIndex, newIndex, options),
  };
}
