/**
 * `--group auto` (SPEC §6 "Groups", §8): the grouping that puts each file with what references
 * it. Which files a file references is read by core/format/references.ts (shared with the
 * reader's read-ahead). FORMAT.md "`--group auto` (§6, §8)" documents every format and rule.
 *
 * A file that cannot be read as its format (bad JSON, a truncated .glb) references nothing: a
 * grouping never fails a publish.
 */
import { fileReferences, mayReference, type PackSection, type ReferenceMap } from '../format/references.js';
import { compareKeys } from '../format/paths.js';
import type { Grouping } from './grouping.js';
import { groupByFolder } from './grouping.js';

// ---- the grouping ----

/**
 * SPEC §6 custom grouping for `--group auto`: each file with what references it. `references`
 * maps a referring file to the listed files it references (`referencesOf`). A *root* is a file
 * that references something and that no other file references; roots are taken in key order of
 * their paths, and each takes into the group `ref:<root path>` every file it reaches, following
 * references transitively, that no earlier root took. Then each file that references something
 * and is still in no group (a cycle no root reaches) does the same, in key order. Every other
 * file keeps `fallback`'s group. So a file that several roots reach goes with the first root.
 *
 * A Phaser pack file with sections in `references.sections` takes a group per section instead,
 * `ref:<pack path>#<section key>`: its sections in turn, each with what it names (and what that
 * reaches) that no earlier section or root took; the pack itself, and what it names outside its
 * sections, go with its first section: a game loads a pack's sections as it needs them
 * (`load.pack(key, url, section)`), and its first one first. A pack that another file names is no root:
 * it is reached whole, as any file, since Phaser loads a pack entry's sections all at once.
 */
export function groupByReferences(references: ReferenceMap, fallback: Grouping = groupByFolder(1)): Grouping {
  const referrers = [...references.keys()].filter((path) => references.get(path)!.some((target) => target !== path)).sort(compareKeys);
  const referenced = new Set<string>();
  for (const [path, targets] of references) for (const target of targets) if (target !== path) referenced.add(target);
  const groupOf = new Map<string, string>();
  /** Puts into `group` each file of `pending`, and what it reaches, that is in no group yet. */
  const reach = (pending: string[], group: string) => {
    for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
      if (groupOf.has(path)) continue;
      groupOf.set(path, group);
      for (const target of references.get(path) ?? []) pending.push(target); // not push(...): a file may name 200,000
    }
  };
  const take = (root: string) => {
    const sections = references.sections?.get(root);
    if (sections === undefined || sections.length === 0) return reach([root], `ref:${root}`);
    const first = `ref:${root}#${sections[0]!.key}`;
    groupOf.set(root, first);
    const inSections = new Set<string>();
    for (const section of sections) for (const target of section.references) inSections.add(target);
    const outsideSections = (references.get(root) ?? []).filter((target) => !inSections.has(target)); // a pack that is also an atlas…
    reach(outsideSections, first);
    for (const section of sections) reach(section.references.slice(), `ref:${root}#${section.key}`);
  };
  for (const root of referrers) if (!referenced.has(root)) take(root);
  for (const referrer of referrers) if (!groupOf.has(referrer)) take(referrer);
  return {
    groupOf(path) {
      return groupOf.get(path) ?? fallback.groupOf(path);
    },
  };
}

/**
 * The references of every file in `paths` that `--group auto` reads (`mayReference`), for
 * `groupByReferences`, with each Phaser pack file's sections in `sections`. `read` gives a
 * file's bytes (a .glb's may stop after its JSON chunk), or undefined for a file it does not
 * read (too large): such a file references nothing. Files are read one at a time, and their
 * bytes let go once read.
 */
export async function collectReferences(
  paths: readonly string[],
  read: (path: string) => Promise<Uint8Array | undefined>,
): Promise<Map<string, string[]> & { sections: Map<string, PackSection[]> }> {
  const listed = new Set(paths);
  const references = Object.assign(new Map<string, string[]>(), { sections: new Map<string, PackSection[]>() });
  for (const path of paths) {
    if (!mayReference(path)) continue;
    const bytes = await read(path);
    if (bytes === undefined) continue;
    const found = fileReferences(path, bytes, listed, { steps: 0 });
    if (found.references.length > 0) references.set(path, found.references);
    if (found.sections.length > 0) references.sections.set(path, found.sections);
  }
  return references;
}
