/** Folder containment on the local file system, for the publish, the folder listing and the build plugins. */
import { relative, sep } from 'node:path';

/** Whether `child` is `parent` or lies below it (both absolute; a name such as `..data` inside counts as inside). */
export function isInside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !rel.startsWith(sep) && !/^[A-Za-z]:/.test(rel));
}
