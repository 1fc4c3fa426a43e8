/** What keeps a folder from being made: for messages that name it instead of the folder asked for. */
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * The first of `folder` and its parents (outermost first, as `folder` spells them) that exists
 * and is not a folder: `afile` for `afile/sub` when `afile` is a file. `undefined` when none is.
 */
export async function fileInTheWay(folder: string): Promise<string | undefined> {
  const chain = [folder];
  for (let parent = dirname(folder); parent !== chain.at(-1); parent = dirname(parent)) chain.push(parent);
  for (const path of chain.reverse()) {
    const info = await stat(path).catch(() => undefined);
    if (info && !info.isDirectory()) return path;
  }
  return undefined;
}

/** "a file is in the way (afile is a file, not a folder)": names the file when it is not `folder` itself. */
export async function inTheWayReason(folder: string): Promise<string> {
  const blocker = await fileInTheWay(folder);
  return blocker === undefined || blocker === folder
    ? 'a file is in the way (it must be a folder)'
    : `a file is in the way (${blocker} is a file, not a folder)`;
}
