/**
 * The part of the read-ahead (read-ahead.ts) that reads references: imported with the reference
 * reader (core/format/references.ts) the first time a file that may name others is handed out,
 * so a game that reads none carries neither.
 */
import { glbJsonEnd, referencesOf } from '../format/references.js';

/**
 * The listed files `bytes` (the file at `path`, or a .glb's head) names, in the order it names
 * them; none for a Phaser pack (a scene picks its sections) or a file that cannot be read.
 */
export function namedFiles(path: string, bytes: Uint8Array, listed: ReadonlySet<string>): string[] {
  const extension = path.slice(path.lastIndexOf('.') + 1).toLowerCase();
  const head = extension === 'glb' ? bytes.subarray(0, glbJsonEnd(bytes) ?? 0) : bytes;
  try {
    if (extension === 'json' && isPack(head)) return [];
    return referencesOf(path, head, listed);
  } catch {
    return []; // a file the reader cannot read references nothing (as for `--group auto`)
  }
}

/** A Phaser pack: a JSON object one of whose values is a section (an object with a `files` array). */
function isPack(bytes: Uint8Array): boolean {
  const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.values(value).some(
    (section) => typeof section === 'object' && section !== null && Array.isArray((section as { files?: unknown }).files),
  );
}
