/**
 * The part of the read-ahead (read-ahead.ts) that reads references: imported with the reference
 * reader (core/format/references.ts) the first time a file that may name others is handed out,
 * so a game that reads none carries neither.
 */
import { fileReferences, glbJsonEnd } from '../../format/references.js';

/**
 * The listed files `bytes` (the file at `path`, or a .glb's head) names, in the order it names
 * them; none for a Phaser pack (a scene picks its sections) or a file that cannot be read. One
 * pass of the reader: the pack's sections come with its references.
 */
export function namedFiles(path: string, bytes: Uint8Array, listed: ReadonlySet<string>): string[] {
  const head = path.toLowerCase().endsWith('.glb') ? bytes.subarray(0, glbJsonEnd(bytes) ?? 0) : bytes;
  try {
    const { references, sections } = fileReferences(path, head, listed, { steps: 0 });
    return sections.length > 0 ? [] : references;
  } catch {
    return []; // a file the reader cannot read references nothing (as for `--group auto`)
  }
}
