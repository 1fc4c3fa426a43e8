/**
 * Planning bundles (SPEC §6 "Order" and "Split"): groups in key order of their names, files in
 * key order of their paths, each group filled into bundles up to the target size.
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
  /** Files in path order. */
  files: LooseFileEntry[];
  /** Sum of the distinct contents: the bundle's data size. */
  dataBytes: number;
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
    const groupFiles = groups.get(group)!.sort((a, b) => compareKeys(a.path, b.path));
    let current: PlannedBundle | undefined;
    let contents = new Set<string>();
    for (const file of groupFiles) {
      const adds = contents.has(file.sha256) ? 0 : file.sizeBytes;
      if (!current || (current.files.length > 0 && current.dataBytes + adds > targetBundleBytes)) {
        current = { group, files: [], dataBytes: 0 };
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
