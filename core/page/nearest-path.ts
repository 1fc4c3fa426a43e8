/**
 * The search behind the near-miss warning (near-misses.ts): the listed path a mistyped one is a
 * slip from. A module of its own, imported only once a file below the root loads loose: a game
 * whose paths are right loads none of it.
 */

/** The index's paths by folder (in lower case), so a slip is looked for among a folder's files, not every path. */
export class ListedPaths {
  readonly #listed: readonly string[];
  readonly #byFolder = new Map<string, string[]>();

  constructor(listed: readonly string[]) {
    this.#listed = listed;
    for (const path of listed) push(this.#byFolder, split(path.toLowerCase())[0], path);
  }

  /**
   * The listed path nearest to `path`, if one is near enough to be a slip: in its folder (or a
   * folder a couple of letters off, or another letter case), a file name within a few edits (at
   * most 3, and a quarter of the name's length; letter case costs nothing, two letters swapped
   * count one); else the one listed path with the same file name in another folder. Ties go to
   * the first listed.
   */
  nearest(path: string): string | undefined {
    const [folder, name] = split(path.toLowerCase());
    const limit = Math.min(3, Math.max(1, Math.floor(name.length / 4)));
    let best: string | undefined;
    let bestDistance = limit + 1;
    const consider = (candidates: readonly string[], folderDistance: number) => {
      for (const candidate of candidates) {
        const candidateName = split(candidate.toLowerCase())[1];
        if (Math.abs(candidateName.length - name.length) + folderDistance >= bestDistance) continue;
        const distance = folderDistance + editDistance(name, candidateName, bestDistance - 1 - folderDistance);
        if (distance < bestDistance) {
          best = candidate;
          bestDistance = distance;
        }
      }
    };
    consider(this.#byFolder.get(folder) ?? [], 0);
    if (best === undefined) {
      for (const [other, candidates] of this.#byFolder) {
        if (other === folder || Math.abs(other.length - folder.length) > 2) continue;
        const folderDistance = editDistance(folder, other, 2);
        if (folderDistance <= 2) consider(candidates, folderDistance);
      }
    }
    if (best !== undefined) return best;
    const sameName = this.#listed.filter((candidate) => split(candidate.toLowerCase())[1] === name);
    return sameName.length === 1 ? sameName[0] : undefined;
  }
}

/** `ListedPaths.nearest` over `listed`, for one path. */
export function nearestPath(path: string, listed: readonly string[]): string | undefined {
  return new ListedPaths(listed).nearest(path);
}

function split(path: string): [folder: string, name: string] {
  const slash = path.lastIndexOf('/');
  return [path.slice(0, slash + 1), path.slice(slash + 1)];
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/**
 * The edits (a letter added, dropped, changed, or two neighbours swapped) from `a` to `b`, or
 * `limit + 1` as soon as it is known to be over `limit` (optimal string alignment distance).
 */
function editDistance(a: string, b: string, limit: number): number {
  if (limit < 0) return limit + 1;
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      let value = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a.charCodeAt(i - 1) === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === b.charCodeAt(j - 1))
        value = Math.min(value, before[j - 2]! + 1);
      row.push(value);
      if (value < rowMin) rowMin = value;
    }
    if (rowMin > limit) return limit + 1;
    before = previous;
    previous = row;
  }
  return previous[b.length]!;
}
