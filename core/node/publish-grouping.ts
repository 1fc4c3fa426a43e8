/**
 * The grouping a Node publish uses (SPEC §6 "Groups", "Loads"; §8 `--loads`, `--group auto`):
 * `loads` first, then, with `groupByReferences`, each file with what references it, then
 * `grouping` for the rest. References are read from the files themselves, before any bundle.
 */
import { open, readFile } from 'node:fs/promises';
import { PublishInputError } from '../errors.js';
import { unsafePathReason } from '../format/paths.js';
import { groupByFolder, toGrouping, type Grouping, type GroupingLike } from '../publish/grouping.js';
import { byLoads, parseLoadsFile, unlistedLoadPaths, type LoadsFile, type NamedLoad } from '../publish/loads.js';
import { glbJsonEnd, REFERRER_READ_LIMIT_BYTES } from '../format/references.js';
import { collectReferences, groupByReferences } from '../publish/references.js';

/** The grouping options of a Node publish (`publishFolder`, `publishToDirectory`, `publishToTarget`). */
export interface PublishGroupingOptions {
  /** Default `groupByFolder(1)`; with `loads` or `groupByReferences`, the group of the files they leave. */
  grouping?: GroupingLike;
  /**
   * `--group auto`: each file with the files that reference it (glTF, Phaser pack files, atlases,
   * bitmap fonts, Tiled maps; FORMAT.md "`--group auto`"), `grouping` for the rest.
   */
  groupByReferences?: boolean;
  /**
   * `--loads`: a file a load lists goes in the group `load:<name>` of the first load that lists
   * it (SPEC §6 `byLoads`), ahead of the other groupings. A listed path that is not a file of
   * the publish is ignored with a warning naming it and its load.
   */
  loads?: readonly NamedLoad[];
  onWarning?: (message: string) => void;
}

/** A file of the publish as the grouping sees it: its path, and how to read its bytes for references. */
export interface GroupingInput {
  path: string;
  sizeBytes: number;
  read: () => Promise<Uint8Array>;
}

/** The one grouping `options` stand for over `files` (see the top of this file). */
export async function publishGrouping(options: PublishGroupingOptions, files: readonly GroupingInput[]): Promise<Grouping> {
  let grouping = toGrouping(options.grouping ?? groupByFolder(1));
  if (options.groupByReferences) {
    const byPath = new Map(files.map((file) => [file.path, file]));
    const references = await collectReferences([...byPath.keys()], async (path) => {
      const file = byPath.get(path)!;
      // An unsafe path is refused by the writer, naming it, before it reads anything: not read here either.
      if (file.sizeBytes > REFERRER_READ_LIMIT_BYTES || unsafePathReason(path) !== undefined) return undefined;
      // Unreadable now: it references nothing here, and reading it for its bundle names the problem.
      return file.read().catch(() => undefined);
    });
    grouping = groupByReferences(references, grouping);
  }
  if (options.loads !== undefined) {
    for (const { path, load } of unlistedLoadPaths(options.loads, new Set(files.map((file) => file.path)))) {
      options.onWarning?.(`load ${JSON.stringify(load)} lists ${JSON.stringify(path)}, which is not a file of this publish: ignored`);
    }
    grouping = byLoads(options.loads, grouping);
  }
  return grouping;
}

/**
 * A referrer's bytes from disk: the whole file, or of a .glb its header and JSON chunk only
 * (up to `REFERRER_READ_LIMIT_BYTES`), so a large binary glTF is not read whole for references.
 */
export async function readReferrerFile(absolutePath: string, path: string): Promise<Uint8Array> {
  if (!path.toLowerCase().endsWith('.glb')) return readFile(absolutePath);
  const handle = await open(absolutePath, 'r');
  try {
    const head = new Uint8Array(20);
    const { bytesRead } = await handle.read(head, 0, 20, 0);
    const end = glbJsonEnd(head.subarray(0, bytesRead));
    if (end === undefined || end > REFERRER_READ_LIMIT_BYTES) return new Uint8Array(0);
    const bytes = new Uint8Array(end);
    let filled = 0;
    for (let read; filled < end && (read = (await handle.read(bytes, filled, end - filled, filled)).bytesRead) > 0;) filled += read;
    return bytes.subarray(0, filled);
  } finally {
    await handle.close();
  }
}

/**
 * The loads file at `file` (SPEC §6: `awkb-loads.json`), read and checked. A file that is missing
 * or unreadable, not UTF-8, or not such JSON is refused with a `PublishInputError` naming it.
 */
export async function readLoadsFile(file: string): Promise<LoadsFile> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a folder, not a file' : `cannot read: ${(error as Error).message}`;
    throw new PublishInputError(`loads file ${file}: ${why}`, file, error);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (error) {
    throw new PublishInputError(`loads file ${file}: not UTF-8 text`, file, error);
  }
  return parseLoadsFile(text, file);
}
