/**
 * Planning bundles (SPEC §6 "Order" and "Split"): groups in key order of their names, files in
 * key order of their paths (in a load group, first-use order), each group filled into bundles
 * up to the target size in that order.
 */
import { InvalidOptionError } from '../errors.js';
import { compareKeys } from '../format/paths.js';
import type { LooseFileEntry } from '../format/project-index.js';
import type { Grouping } from './grouping.js';

/** The bundle size a publish aims for when not told (SPEC §8 `--target-mb`, 16 MiB). */
export const DEFAULT_TARGET_BUNDLE_BYTES = 16 * 1024 * 1024;
/** The folder, relative to the index, that bundles go in when not told (`--url-prefix`). */
export const DEFAULT_BUNDLE_URL_PREFIX = 'bundles';

export interface PlannedBundle {
  group: string;
  /**
   * `key`: files in key order of their paths, data in table order. `first-use` (a load group):
   * files in first-use order, and the data too (SPEC §5 "Data order"); the table is in key order
   * either way.
   */
  order: GroupOrder;
  /** Files in `order`. */
  files: LooseFileEntry[];
  /** Sum of the distinct contents: the bundle's data size. */
  dataBytes: number;
}

/** How a group's files, and its bundles' data, are ordered (SPEC §6 "Order"). */
export type GroupOrder = 'key' | 'first-use';

/**
 * Sorts one group's files in place into SPEC §6 order: key order of their paths (paths, also when
 * ids are on), or, where `grouping` gives the files a first use (a load group), first-use order.
 * A file it gives none (a group a custom fallback shares with a load) follows, in key order.
 */
export function orderGroupFiles(files: { path: string }[], grouping: Grouping): GroupOrder {
  const firstUse = new Map<string, number>();
  if (grouping.firstUse) {
    for (const { path } of files) {
      const use = grouping.firstUse(path);
      if (use !== undefined) firstUse.set(path, use);
    }
  }
  files.sort((a, b) => {
    const useA = firstUse.get(a.path);
    const useB = firstUse.get(b.path);
    if (useA !== undefined && useB !== undefined) return useA - useB;
    if (useA !== undefined || useB !== undefined) return useA !== undefined ? -1 : 1;
    return compareKeys(a.path, b.path);
  });
  return firstUse.size > 0 ? 'first-use' : 'key';
}

export function planBundles(files: readonly LooseFileEntry[], grouping: Grouping, targetBundleBytes: number): PlannedBundle[] {
  const groups = new Map<string, LooseFileEntry[]>();
  for (const file of files) {
    const group = grouping.groupOf(file.path);
    if (typeof group !== 'string')
      throw new InvalidOptionError(
        'grouping',
        `grouping returned ${typeof group} for ${JSON.stringify(file.path)}; a group name is a string`,
      );
    let list = groups.get(group);
    if (!list) groups.set(group, (list = []));
    list.push(file);
  }
  const plans: PlannedBundle[] = [];
  for (const group of [...groups.keys()].sort(compareKeys)) {
    const groupFiles = groups.get(group)!;
    const order = orderGroupFiles(groupFiles, grouping);
    let current: PlannedBundle | undefined;
    let contents = new Set<string>();
    for (const file of groupFiles) {
      const adds = contents.has(file.sha256) ? 0 : file.sizeBytes;
      if (!current || (current.files.length > 0 && current.dataBytes + adds > targetBundleBytes)) {
        current = { group, order, files: [], dataBytes: 0 };
        contents = new Set();
        plans.push(current);
      }
      current.files.push(file);
      if (!contents.has(file.sha256)) {
        contents.add(file.sha256);
        current.dataBytes += file.sizeBytes;
      }
    }
  }
  return plans;
}
