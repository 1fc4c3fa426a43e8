/** Which group each path is in (SPEC §6 "Groups"); no bundle mixes groups. */
import { InvalidOptionError } from '../errors.js';

export interface Grouping {
  groupOf(path: string): string;
  /**
   * A file's place in first-use order (SPEC §6 "Order"), for a file whose group is filled in that
   * order (a load group of `byLoads`); `undefined` for a file whose group goes in key order, as
   * every group of a grouping without this method does.
   */
  firstUse?(path: string): number | undefined;
}

/** A grouping, or any function from path to group name. */
export type GroupingLike = Grouping | ((path: string) => string);

export function toGrouping(grouping: GroupingLike): Grouping {
  return typeof grouping === 'function' ? { groupOf: grouping } : grouping;
}

/**
 * `folder:` + the path's first `depth` folder names joined by `/` (as many as it has, when it
 * has fewer). Files at the project root form the group `folder:`, so root files such as
 * `awake.project.json` get a bundle of their own.
 */
export function groupByFolder(depth = 1): Grouping {
  if (!Number.isInteger(depth) || depth < 1)
    throw new InvalidOptionError('depth', `groupByFolder depth must be a positive integer, got ${depth}`);
  return {
    groupOf(path) {
      const folders = path.split('/').slice(0, -1);
      return `folder:${folders.slice(0, depth).join('/')}`;
    },
  };
}

/** Every file in the group `one`: a small project that loads everything up front. */
export function oneGroup(): Grouping {
  return { groupOf: () => 'one' };
}
