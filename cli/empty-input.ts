/**
 * What a folder with no file to publish holds instead, so the CLI can say why it found nothing:
 * "the folder is empty" is wrong for a folder of empty subfolders, or one whose only files are
 * .DS_Store or lie in the out folder (both left out of the input, SPEC §8).
 */
import { readdir, realpath, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { plural } from './usage.js';

/** Files the folder listing leaves out by name (core/node/loose-index.ts SKIPPED_NAMES). */
const SKIPPED_NAMES = new Set(['.DS_Store', 'Thumbs.db']);
/** A census is for a message: past this many entries it stops counting (a huge tree of empty folders is still named). */
const MAX_ENTRIES = 10_000;
/** Subfolders a message names. */
const NAMED_FOLDERS = 3;

export interface FolderCensus {
  /** Subfolders at any depth, the out folder and what it holds not counted. */
  folders: number;
  /** The first few subfolders met (relative paths), to name them. */
  someFolders: string[];
  /** .DS_Store and Thumbs.db files. */
  skippedFiles: number;
  /** Files inside an excluded folder (the out folder when it lies inside the input). */
  excludedFiles: number;
  /** Other files: when there are any, the folder is not empty of files. */
  files: number;
  /** The walk stopped at MAX_ENTRIES entries: the counts are lower bounds. */
  partial: boolean;
}

/** Counts what lies below `folder`; `exclude` as listFolderFiles takes it. Unreadable entries are passed over. */
export async function folderCensus(folder: string, exclude: string[] = []): Promise<FolderCensus> {
  const root = resolve(folder);
  const excluded = await Promise.all(exclude.map((path) => realpath(resolve(path)).catch(() => resolve(path))));
  const census: FolderCensus = { folders: 0, someFolders: [], skippedFiles: 0, excludedFiles: 0, files: 0, partial: false };
  let seen = 0;
  const walk = async (dir: string, inExcluded: boolean): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (++seen > MAX_ENTRIES) {
        census.partial = true;
        return;
      }
      const path = join(dir, entry.name);
      const info = entry.isSymbolicLink() ? await stat(path).catch(() => undefined) : entry;
      if (!info) continue;
      if (info.isDirectory()) {
        const real = await realpath(path).catch(() => path);
        const out = inExcluded || excluded.some((dir) => real === dir || real.startsWith(`${dir}${sep}`));
        if (!out) {
          census.folders++;
          if (census.someFolders.length < NAMED_FOLDERS) census.someFolders.push(`${relative(root, path).split(sep).join('/')}/`);
        }
        // A link back up the tree would loop: links to folders are counted, not walked.
        if (!entry.isSymbolicLink()) await walk(path, out);
      } else if (inExcluded) census.excludedFiles++;
      else if (SKIPPED_NAMES.has(entry.name)) census.skippedFiles++;
      else census.files++;
    }
  };
  await walk(root, false);
  return census;
}

/**
 * What a folder without a file to publish holds, to follow "the folder holds": `only empty folders
 * (3 subfolders: art/, art/tiles/, sounds/)`, or `only 1 subfolder (art/) and 1 .DS_Store or
 * Thumbs.db file (left out by name)`. Undefined when it holds files after all (a listing
 * rule this does not know left them out) or nothing at all.
 */
export function noFilesContents(census: FolderCensus): string | undefined {
  if (census.files > 0) return undefined;
  const more = census.folders > census.someFolders.length;
  const count = `${census.partial ? 'over ' : ''}${plural(census.folders, 'subfolder')}`;
  const names = census.someFolders.join(', ');
  const left = [
    ...(census.skippedFiles > 0 ? [`${plural(census.skippedFiles, '.DS_Store or Thumbs.db file')} (left out by name)`] : []),
    ...(census.excludedFiles > 0 ? [`${plural(census.excludedFiles, 'file')} in the out folder (left out of the input)`] : []),
  ];
  if (left.length === 0) return census.folders === 0 ? undefined : `only empty folders (${count}${more ? ', such as ' : ': '}${names})`;
  const parts = [...(census.folders > 0 ? [`${count} (${more ? 'such as ' : ''}${names})`] : []), ...left];
  return `only ${parts.slice(0, -1).join(', ')}${parts.length > 1 ? ' and ' : ''}${parts.at(-1)}`;
}

/** Why `folder` has no file to publish, for a listing that came back empty; undefined when the census finds files. */
export async function noFilesReason(folder: string, exclude: string[] = [], verb = 'publish'): Promise<string | undefined> {
  const census = await folderCensus(folder, exclude);
  if (census.files > 0) return undefined;
  const contents = noFilesContents(census);
  return contents === undefined
    ? `${folder}: no files to ${verb} (the folder is empty)`
    : `${folder}: no files to ${verb}: the folder holds ${contents}`;
}
