/**
 * Publishing a folder (SPEC §8) reading each file once: the bundles are planned a bundle at a
 * time (SPEC §6: groups in key order, files in path order, split where the next distinct
 * content would pass the target), so each file is read, hashed for its index entry and handed
 * to the writer from the same bytes. The output is byte for byte what publishToDirectory makes
 * from the folder's loose index.
 *
 * A file larger than the target is the exception: its SHA-256 decides its place (a copy of an
 * earlier content adds nothing to a bundle) and goes into its bundle's table, which comes before
 * its bytes, and it is never held whole; so it is hashed as a stream first and streamed again
 * into its bundle, where the writer checks it did not change in between.
 */
import { closeSync, createReadStream, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { PublishInputError, type ReadProjectFile } from '../publish/bundle-writer.js';
import { groupByFolder, toGrouping } from '../publish/grouping.js';
import { DEFAULT_TARGET_BUNDLE_BYTES } from '../publish/plan.js';
import { compareKeys, looseFileUrl } from '../format/paths.js';
import type { BundledIndex, LooseFileEntry } from '../format/project-index.js';
import { nodeSha256, sha256HexNode } from './hash.js';
import { listFolderFiles, type FolderFile, type FolderIndexOptions } from './loose-index.js';
import { checkPathCollisions, publishBundles, recyclingDiskReader, type PublishOptions, type PublishSummary } from './publish.js';

export type PublishFolderOptions = Omit<PublishOptions, 'looseIndex' | 'locate' | 'read' | 'onPlan'> &
  Pick<FolderIndexOptions, 'exclude' | 'rootPath'> & {
    /** The folder whose files are published (every regular file below it, SPEC §8). */
    folder: string;
    /** Its `listFolderFiles` listing, when the caller made it already (it is not made again). */
    files?: FolderFile[];
  };

/** A file read and hashed, waiting for its bundle to close. */
interface ReadFile {
  entry: LooseFileEntry;
  /** The bytes, for a file up to the target; a larger one is read again as a stream. */
  bytes?: Uint8Array;
}

/**
 * Publishes every regular file below `options.folder` into `options.outDir`, as
 * `publishToDirectory` does with the folder's loose index, reading each file up to the target
 * size once (see the top of this file). Progress counts bundles as they are planned.
 */
export async function publishFolder(options: PublishFolderOptions): Promise<PublishSummary> {
  const files = options.files ?? (await listFolderFiles(options.folder, options));
  if (files.length === 0) throw new PublishInputError(`${options.folder}: no files to publish (the folder is empty)`, options.folder);
  checkPathCollisions(files.map((file) => file.path), options);
  const target = options.targetBundleBytes ?? DEFAULT_TARGET_BUNDLE_BYTES;
  const expectedBytes = files.reduce((sum, file) => sum + file.sizeBytes, 0);
  return publishBundles({ ...options, expectedBytes }, async ({ writer, store, pace }) => {
    const onDisk = new Map(files.map((file) => [file.path, file.absolutePath]));
    const fromDisk = recyclingDiskReader((entry) => onDisk.get(entry.path)!, pace);
    const merged: BundledIndex = { formatVersion: 3, rootPath: options.rootPath ?? '/project', bundles: [], files: [] };
    for (const bundleFiles of bundlesOf(files, toGrouping(options.grouping ?? groupByFolder(1)), target, options.folder)) {
      const held = new Map<string, Uint8Array>();
      const entries: LooseFileEntry[] = [];
      for await (const file of bundleFiles) {
        entries.push(file.entry);
        if (file.bytes) held.set(file.entry.path, file.bytes);
      }
      // The same writer as for a whole loose index, given one bundle's worth: the same bytes.
      const read: ReadProjectFile = (entry, hint) => held.get(entry.path) ?? fromDisk(entry, hint);
      const part = await writer.write({ formatVersion: 2, rootPath: merged.rootPath, files: entries }, read, store);
      merged.pathIds ??= part.pathIds;
      merged.bundles.push(...part.bundles);
      merged.files.push(...part.files);
    }
    if (merged.pathIds === undefined) delete merged.pathIds;
    return merged;
  });
}

/**
 * The bundles of SPEC §6, a bundle at a time: each is an async sequence of its files, each
 * read (and hashed) when the sequence reaches it. A bundle's sequence must be consumed before
 * the next one is asked for.
 */
function* bundlesOf(files: FolderFile[], grouping: { groupOf(path: string): string }, target: number, folder: string): Generator<AsyncGenerator<ReadFile>> {
  const groups = new Map<string, FolderFile[]>();
  for (const file of files) {
    const group = grouping.groupOf(file.path);
    if (typeof group !== 'string') throw new TypeError(`grouping returned ${typeof group} for ${JSON.stringify(file.path)}; a group name is a string`);
    const list = groups.get(group) ?? [];
    if (list.length === 0) groups.set(group, list);
    list.push(file);
  }
  for (const group of [...groups.keys()].sort(compareKeys)) {
    const queue = groups.get(group)!.sort((a, b) => compareKeys(a.path, b.path));
    let next = 0;
    let carried: ReadFile | undefined; // read for the bundle before, which it did not fit
    while (carried || next < queue.length) {
      // One bundle: files in path order while the distinct contents fit the target (SPEC §6).
      yield (async function* () {
        const contents = new Set<string>();
        let dataBytes = 0;
        for (;;) {
          const file = carried ?? (next < queue.length ? await readAndHash(queue[next++]!, target, folder) : undefined);
          carried = undefined;
          if (!file) return;
          const adds = contents.has(file.entry.sha256) ? 0 : file.entry.sizeBytes;
          if (contents.size > 0 && dataBytes + adds > target) {
            carried = file;
            return;
          }
          contents.add(file.entry.sha256);
          dataBytes += adds;
          yield file;
        }
      })();
    }
  }
}

/** Reads a file (whole up to the target, else as a stream) and makes its loose index entry. */
async function readAndHash(file: FolderFile, target: number, folder: string): Promise<ReadFile> {
  const url = looseFileUrl(file.path);
  try {
    if (file.sizeBytes <= target) {
      const bytes = readWholeFile(file.absolutePath);
      return { entry: { path: file.path, sizeBytes: bytes.length, sha256: sha256HexNode(bytes), url }, bytes };
    }
    const hash = nodeSha256();
    let sizeBytes = 0;
    for await (const chunk of createReadStream(file.absolutePath, { highWaterMark: 1 << 20 })) {
      hash.update(chunk as Buffer);
      sizeBytes += (chunk as Buffer).length;
    }
    return { entry: { path: file.path, sizeBytes, sha256: hash.digestHex(), url } };
  } catch (error) {
    throw new PublishInputError(`${join(folder, file.path)}: cannot read: ${(error as Error).message}`, file.path, error);
  }
}

const probe = Buffer.alloc(1); // only whether a byte is there matters

/** The whole file as it is now: its fstat size, read to its end however long it has grown. */
function readWholeFile(path: string): Uint8Array {
  const fd = openSync(path, 'r');
  try {
    let bytes = Buffer.allocUnsafe(fstatSync(fd).size);
    let filled = 0;
    for (;;) {
      if (filled === bytes.length) {
        if (readSync(fd, probe, 0, 1, filled) === 0) return bytes;
        const grown = Buffer.allocUnsafe(2 * bytes.length + 64 * 1024); // it grew since fstat
        bytes.copy(grown, 0, 0, filled);
        bytes = grown;
      }
      const bytesRead = readSync(fd, bytes, filled, bytes.length - filled, filled);
      if (bytesRead === 0) return bytes.subarray(0, filled);
      filled += bytesRead;
    }
  } finally {
    closeSync(fd);
  }
}
