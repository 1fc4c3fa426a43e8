/**
 * The publish settings the command line's flags set (SPEC §8: `--group`, `--depth`,
 * `--target-mb`, `--opaque-ids --salt`, `--url-prefix`, `--allow-case-collisions`), as plain
 * values, and the writer options they stand for. The CLI and the build plugins both map them
 * here, so a plugin's output is the CLI's for the same settings, byte for byte.
 */
import type { Grouping } from './grouping.js';
import { groupByFolder, oneGroup } from './grouping.js';

export interface PublishSettings {
  /** `folder` (a group per top folder, SPEC §6 `byFolder`) or `one`. */
  grouping: 'folder' | 'one';
  /** With `folder`: how many folder levels name a group. */
  depth: number;
  targetBundleBytes: number;
  /** Opaque ids (SPEC §4) with this salt; absent: paths. */
  salt?: string;
  /** Folder of the bundle URLs, relative to the index. */
  urlPrefix: string;
  allowCaseCollisions: boolean;
}

/** The writer options (`publishFolder`, `publishToDirectory`) that `settings` stand for. */
export function writerOptionsOf(settings: PublishSettings): {
  grouping: Grouping;
  targetBundleBytes: number;
  pathIds: { salt: string } | null;
  bundleUrlPrefix: string;
  allowCaseCollisions: boolean;
} {
  return {
    grouping: settings.grouping === 'one' ? oneGroup() : groupByFolder(settings.depth),
    targetBundleBytes: settings.targetBundleBytes,
    pathIds: settings.salt !== undefined ? { salt: settings.salt } : null,
    bundleUrlPrefix: settings.urlPrefix,
    allowCaseCollisions: settings.allowCaseCollisions,
  };
}
