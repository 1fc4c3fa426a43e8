/**
 * The publish settings the command line's flags set (SPEC §8: `--group`, `--depth`, `--loads`,
 * `--target-mb`, `--opaque-ids --salt`, `--url-prefix`, `--allow-case-collisions`, `--no-compress`), as plain
 * values, and the writer options they stand for. The CLI and the build plugins both map them
 * here, so a plugin's output is the CLI's for the same settings, byte for byte.
 */
import type { Grouping } from './grouping.js';
import { groupByFolder, oneGroup } from './grouping.js';
import type { NamedLoad } from './loads.js';

export interface PublishSettings {
  /**
   * `folder` (a group per top folder, SPEC §6 `byFolder`), `one`, or `auto` (each file with what
   * references it, the rest by folder: FORMAT.md "`--group auto`").
   */
  grouping: 'folder' | 'one' | 'auto';
  /** With `folder` and `auto`: how many folder levels name a group. */
  depth: number;
  /** `--loads`: the loads file's loads (SPEC §6 `byLoads`), ahead of `grouping`, which groups the rest. */
  loads?: readonly NamedLoad[];
  targetBundleBytes: number;
  /** Opaque ids (SPEC §4) with this salt; absent: paths. */
  salt?: string;
  /** Folder of the bundle URLs, relative to the index. */
  urlPrefix: string;
  allowCaseCollisions: boolean;
  /** Store members encoded where that pays (SPEC §5a); `--no-compress` makes it false. Default true. */
  compress?: boolean;
}

/** The writer options (`publishFolder`, `publishToDirectory`) that `settings` stand for. */
export function writerOptionsOf(settings: PublishSettings): {
  grouping: Grouping;
  groupByReferences: boolean;
  loads?: readonly NamedLoad[];
  targetBundleBytes: number;
  pathIds: { salt: string } | null;
  bundleUrlPrefix: string;
  allowCaseCollisions: boolean;
  compress?: boolean;
} {
  return {
    grouping: settings.grouping === 'one' ? oneGroup() : groupByFolder(settings.depth),
    groupByReferences: settings.grouping === 'auto',
    ...(settings.loads !== undefined ? { loads: settings.loads } : {}),
    targetBundleBytes: settings.targetBundleBytes,
    pathIds: settings.salt !== undefined ? { salt: settings.salt } : null,
    bundleUrlPrefix: settings.urlPrefix,
    allowCaseCollisions: settings.allowCaseCollisions,
    // Unset: the publish's default (core/node/publish.ts `COMPRESS_BY_DEFAULT`).
    ...(settings.compress !== undefined ? { compress: settings.compress } : {}),
  };
}
