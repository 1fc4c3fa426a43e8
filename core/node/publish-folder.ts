/**
 * Publishing a folder (SPEC §8) reading each file once: the bundles are planned a bundle at a
 * time (SPEC §6: groups in key order, files in path order or a load group's first-use order,
 * split where the next distinct content would pass the target), so each file is read, hashed for its index entry and handed
 * to the writer from the same bytes. The output is byte for byte what publishToDirectory makes
 * from the folder's loose index.
 *
 * A file larger than the target is the exception: its SHA-256 decides its place (a copy of an
 * earlier content adds nothing to a bundle) and goes into its bundle's table, which comes before
 * its bytes, and it is never held whole; so it is hashed as a stream first and streamed again
 * into its bundle, where the writer checks it did not change in between.
 *
 * With `groupByReferences` (`--group auto`) the files that may reference others (.gltf, .json…)
 * are read once more, before any bundle, for the grouping (core/node/publish-grouping.ts).
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidOptionError, PublishInputError } from '../errors.js';
import type { ReadProjectFile } from '../publish/bundle-writer.js';
import type { Grouping } from '../publish/grouping.js';
import { DEFAULT_TARGET_BUNDLE_BYTES, orderGroupFiles } from '../publish/plan.js';
import { compareKeys, looseFileUrl } from '../format/paths.js';
import type { BundledIndex, LooseFileEntry } from '../format/project-index.js';
import { nodeSha256, sha256HexNode } from './hash.js';
import { listFolderFiles, type FolderFile, type FolderIndexOptions } from './loose-index.js';
import { publishGrouping, readReferrerFile } from './publish-grouping.js';
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
 * size once (see the top of this file). Memory: one bundle's distinct contents as read, and the
 * bundle the writer builds from them. Progress counts bundles as they are planned.
 */
export async function publishFolder(options: PublishFolderOptions): Promise<PublishSummary> {
  const files = options.files ?? (await listFolderFiles(options.folder, options));
  if (files.length === 0) throw new PublishInputError(`${options.folder}: no files to publish (the folder is empty)`, options.folder);
  checkPathCollisions(
    files.map((file) => file.path),
    options,
  );
  const target = options.targetBundleBytes ?? DEFAULT_TARGET_BUNDLE_BYTES;
  const expectedBytes = files.reduce((sum, file) => sum + file.sizeBytes, 0);
  // References (`groupByReferences`) are read before any bundle: a referrer is read twice.
  const grouping = await publishGrouping(
    options,
    files.map((file) => ({ path: file.path, sizeBytes: file.sizeBytes, read: () => readReferrerFile(file.absolutePath, file.path) })),
  );
  // The writer keeps its bundle buffer from one bundle to the next (one write call per bundle).
  return publishBundles({ ...options, grouping, expectedBytes, keepBuffersBetweenWrites: true }, async ({ writer, store, pace }) => {
    const onDisk = new Map(files.map((file) => [file.path, file.absolutePath]));
    const fromDisk = recyclingDiskReader((entry) => onDisk.get(entry.path)!, pace);
    const staging = new Staging(Math.min(target, expectedBytes));
    const merged: BundledIndex = { formatVersion: 3, rootPath: options.rootPath ?? '/project', bundles: [], files: [] };
    try {
      for (const bundleFiles of bundlesOf(files, grouping, target, options.folder, staging)) {
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
        // Loops, not push(...): a bundle of 200,000 small files is past the limit on arguments.
        for (const bundle of part.bundles) merged.bundles.push(bundle);
        for (const file of part.files) merged.files.push(file);
      }
    } finally {
      writer.releaseBuffers();
    }
    if (merged.pathIds === undefined) delete merged.pathIds;
    return merged;
  });
}

/**
 * One reused buffer that a bundle's files are read into, one after another; emptied when the
 * bundle is written (the writer copies what it needs into the bundle). A file that does not
 * fit gets a buffer of its own.
 */
class Staging {
  private buffer: Uint8Array | undefined;
  private used = 0;

  constructor(private readonly capacity: number) {}

  /** A place for `size` bytes, or undefined when there is no room left. */
  take(size: number): Uint8Array | undefined {
    if (this.used + size > this.capacity) return undefined;
    this.buffer ??= new Uint8Array(this.capacity);
    const place = this.buffer.subarray(this.used, this.used + size);
    this.used += size;
    return place;
  }

  /** Gives back the last place taken (a copy of a content already held). */
  giveBack(place: Uint8Array): void {
    if (place.buffer === this.buffer?.buffer && place.byteOffset + place.length === this.used) this.used = place.byteOffset;
  }

  holds(bytes: Uint8Array | undefined): boolean {
    return bytes !== undefined && bytes.buffer === this.buffer?.buffer;
  }

  empty(): void {
    this.used = 0;
  }
}

/**
 * The bundles of SPEC §6, a bundle at a time: each is an async sequence of its files, each
 * read (and hashed) when the sequence reaches it. A bundle's sequence must be consumed, and
 * its bytes used, before the next one is asked for.
 */
function* bundlesOf(
  files: FolderFile[],
  grouping: Grouping,
  target: number,
  folder: string,
  staging: Staging,
): Generator<AsyncGenerator<ReadFile>> {
  const groups = new Map<string, FolderFile[]>();
  for (const file of files) {
    const group = grouping.groupOf(file.path);
    if (typeof group !== 'string')
      throw new InvalidOptionError(
        'grouping',
        `grouping returned ${typeof group} for ${JSON.stringify(file.path)}; a group name is a string`,
      );
    const list = groups.get(group) ?? [];
    if (list.length === 0) groups.set(group, list);
    list.push(file);
  }
  for (const group of [...groups.keys()].sort(compareKeys)) {
    const queue = groups.get(group)!;
    orderGroupFiles(queue, grouping);
    let next = 0;
    let carried: ReadFile | undefined; // read for the bundle before, which it did not fit
    while (carried || next < queue.length) {
      staging.empty();
      // One bundle: files in SPEC §6 order while the distinct contents fit the target.
      yield (async function* () {
        const contents = new Map<string, Uint8Array | undefined>(); // SHA-256 → the bytes held
        const sizes = new Set<number>();
        let dataBytes = 0;
        for (;;) {
          let file = carried;
          carried = undefined;
          if (!file) {
            const listed = queue[next];
            if (!listed) return;
            // A file that cannot fit unless it copies a content already here (same size) starts
            // the next bundle without being read now: only a possible copy is read ahead.
            if (contents.size > 0 && dataBytes + listed.sizeBytes > target && !sizes.has(listed.sizeBytes)) return;
            next++;
            file = await readAndHash(listed, target, folder, staging);
          }
          const earlier = contents.get(file.entry.sha256);
          if (contents.has(file.entry.sha256)) {
            if (file.bytes && earlier) {
              staging.giveBack(file.bytes);
              file.bytes = earlier; // the same content: hold it once
            }
          } else if (contents.size > 0 && dataBytes + file.entry.sizeBytes > target) {
            // Read ahead and not a copy: keep its bytes for the next bundle, out of the staging buffer.
            if (staging.holds(file.bytes)) file.bytes = file.bytes!.slice();
            carried = file;
            return;
          } else {
            contents.set(file.entry.sha256, file.bytes);
            sizes.add(file.entry.sizeBytes);
            dataBytes += file.entry.sizeBytes;
          }
          yield file;
        }
      })();
    }
  }
}

/** Reads a file (whole up to the target, else as a stream) and makes its loose index entry. */
async function readAndHash(file: FolderFile, target: number, folder: string, staging: Staging): Promise<ReadFile> {
  const url = looseFileUrl(file.path);
  try {
    if (file.sizeBytes <= target) {
      const bytes = readWholeFile(file.absolutePath, staging);
      return { entry: { path: file.path, sizeBytes: bytes.length, sha256: sha256HexNode(bytes), url }, bytes };
    }
    const { sha256, sizeBytes } = await hashLargeFile(file.absolutePath);
    return { entry: { path: file.path, sizeBytes, sha256, url } };
  } catch (error) {
    throw new PublishInputError(`${join(folder, file.path)}: cannot read: ${(error as Error).message}`, file.path, error);
  }
}

const probe = Buffer.alloc(1); // only whether a byte is there matters
const HASH_CHUNK_BYTES = 1 << 20;

/**
 * SHA-256 and size of a file larger than the target, read through one reused 1 MiB buffer (a
 * stream would leave a new buffer per chunk to the garbage collector), giving the event loop a
 * turn every few MiB.
 */
async function hashLargeFile(path: string): Promise<{ sha256: string; sizeBytes: number }> {
  const fd = openSync(path, 'r');
  try {
    const hash = nodeSha256();
    const hashChunk = Buffer.allocUnsafeSlow(HASH_CHUNK_BYTES);
    let sizeBytes = 0;
    for (let bytesRead; (bytesRead = readSync(fd, hashChunk, 0, HASH_CHUNK_BYTES, sizeBytes)) > 0;) {
      hash.update(hashChunk.subarray(0, bytesRead));
      sizeBytes += bytesRead;
      if (sizeBytes % (4 * HASH_CHUNK_BYTES) < bytesRead) await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return { sha256: hash.digestHex(), sizeBytes };
  } finally {
    closeSync(fd);
  }
}

/**
 * The whole file as it is now: its fstat size read into the staging buffer (or a buffer of its
 * own when that is full), then on to its end however long it has grown since.
 */
function readWholeFile(path: string, staging: Staging): Uint8Array {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    let bytes = staging.take(size) ?? new Uint8Array(size);
    let filled = 0;
    for (;;) {
      if (filled === bytes.length) {
        if (readSync(fd, probe, 0, 1, filled) === 0) return bytes;
        staging.giveBack(bytes);
        const grown = new Uint8Array(2 * bytes.length + 64 * 1024); // it grew since fstat
        grown.set(bytes.subarray(0, filled));
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
