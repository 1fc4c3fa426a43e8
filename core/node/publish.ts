/**
 * Publishing into a folder (SPEC §8): bundles named by SHA-256 under the out folder, only the
 * new ones written, and the index written last and atomically (temp file + rename), so an
 * interrupted publish never leaves an index that names a missing bundle.
 */
import { closeSync, createReadStream, openSync, readSync, writeSync } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { unsafePathReason } from '../format/paths.js';
import { serializeIndex, type BundledIndex, type LooseFileEntry, type LooseIndex } from '../format/project-index.js';
import { BundleWriter, PublishInputError, type BundleHashing, type BundleWriterOptions, type FinishedBundle, type ReadProjectFile } from '../publish/bundle-writer.js';
import { nodeSha256, sha256HexNode } from './hash.js';

export const INDEX_FILE_NAME = 'project.index.json';

export interface PublishProgress {
  bundlesDone: number;
  bundlesTotal: number;
  bytesDone: number;
  bytesTotal: number;
}

export interface PublishOptions extends BundleWriterOptions {
  looseIndex: LooseIndex;
  read: ReadProjectFile;
  outDir: string;
  onProgress?: (progress: PublishProgress) => void;
}

export interface PublishSummary {
  index: BundledIndex;
  indexPath: string;
  bundles: number;
  bytes: number;
  /** Bundles written by this publish: the upload a host needs. */
  newBundles: number;
  newBytes: number;
  /** Bundles the out folder already held. */
  existingBundles: number;
  existingBytes: number;
}

let temporaryCounter = 0;
function temporaryName(path: string): string {
  return `${path}.tmp-${process.pid}-${++temporaryCounter}`;
}

async function existingSize(path: string): Promise<number | undefined> {
  try {
    const info = await stat(path);
    return info.isFile() ? info.size : undefined;
  } catch {
    return undefined;
  }
}

/** Writes `bytes` to `path` through a temporary file and a rename. */
export async function writeFileAtomic(path: string, bytes: Uint8Array | string): Promise<void> {
  const temporary = temporaryName(path);
  try {
    if (typeof bytes === 'string') await writeFile(temporary, bytes);
    else await writeWhole(temporary, bytes);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/**
 * File I/O in publishing is synchronous, in slices: on a page-cached disk a thread-pool round
 * trip per call costs more than the call, and 128 KiB writes cost the kernel less than one
 * 16 MiB write (measured on the bench:publish tree, see BENCHMARKS.md). After every few MiB the
 * event loop gets a turn, so a publish never holds it for long.
 */
const WRITE_SLICE_BYTES = 128 * 1024;
const YIELD_EVERY_BYTES = 4 * 1024 * 1024;
let bytesSinceYield = 0;

async function paced(bytes: number): Promise<void> {
  bytesSinceYield += bytes;
  if (bytesSinceYield < YIELD_EVERY_BYTES) return;
  bytesSinceYield = 0;
  await new Promise<void>((resolve) => setImmediate(resolve));
}

async function writeAll(fd: number, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length; ) {
    const slice = Math.min(bytes.length - at, WRITE_SLICE_BYTES);
    at += writeSync(fd, bytes, at, slice);
    await paced(slice);
  }
}

/** Writes `bytes` to a new file at `path`. */
async function writeWhole(path: string, bytes: Uint8Array): Promise<void> {
  const fd = openSync(path, 'w');
  try {
    await writeAll(fd, bytes);
  } finally {
    closeSync(fd);
  }
}

async function writeStreamAtomic(chunks: AsyncIterable<Uint8Array>, directory: string): Promise<string> {
  const temporary = temporaryName(join(directory, '.incoming.awkb'));
  const fd = openSync(temporary, 'w');
  let isOpen = true;
  try {
    for await (const chunk of chunks) await writeAll(fd, chunk);
    isOpen = false;
    closeSync(fd);
    return temporary;
  } catch (error) {
    if (isOpen) closeSync(fd);
    await rm(temporary, { force: true });
    throw error;
  }
}

export function checkBundleUrlPrefix(prefix: string): void {
  if (prefix === '') return;
  const reason = unsafePathReason(prefix.replace(/\/+$/, ''));
  if (reason !== undefined) throw new PublishInputError(`--url-prefix ${JSON.stringify(prefix)} must be a relative folder below the out folder: ${reason}`);
}

/** node:crypto for every hash the writer computes: synchronous, no copies, ~1.8 GB/s with SHA-NI. */
export const nodeBundleHashing: BundleHashing = { digest: sha256HexNode, incremental: nodeSha256 };

export async function publishToDirectory(options: PublishOptions): Promise<PublishSummary> {
  // For progress reports: the sizes of the planned bundles, from the writer's own plan.
  let bundleBytes: number[] = [];
  let bytesTotal = 0;
  const writer = new BundleWriter({
    ...options,
    hashing: options.hashing ?? nodeBundleHashing,
    // `store` below has written a bundle's bytes out when it resolves: the writer may reuse them.
    reuseBuffers: options.reuseBuffers ?? true,
    onPlan: (plans) => {
      bundleBytes = plans.map((plan) => plan.dataBytes);
      bytesTotal = bundleBytes.reduce((sum, bytes) => sum + bytes, 0);
      options.onPlan?.(plans);
    },
  });
  // A reader from diskReader streams through reused buffers here (see recycledChunks).
  const read = recyclingReaders.get(options.read) ?? options.read;
  checkBundleUrlPrefix(writer.bundleUrlPrefix);
  const bundleDir = join(options.outDir, ...writer.bundleUrlPrefix.split('/').filter(Boolean));
  await mkdir(bundleDir, { recursive: true });
  const summary = { bundles: 0, bytes: 0, newBundles: 0, newBytes: 0, existingBundles: 0, existingBytes: 0 };
  let bytesDone = 0;

  const store = async (bundle: FinishedBundle): Promise<void> => {
    let sha256: string;
    let temporary: string | undefined;
    if (bundle.kind === 'stream') {
      temporary = await writeStreamAtomic(bundle.chunks, bundleDir);
      sha256 = (await bundle.finished).sha256;
    } else sha256 = bundle.sha256;
    const path = join(options.outDir, writer.bundleUrl(sha256));
    const existing = await existingSize(path);
    summary.bundles++;
    summary.bytes += bundle.sizeBytes;
    if (existing === bundle.sizeBytes) {
      // Named by its SHA-256: a file of that name and size already holds these bytes.
      summary.existingBundles++;
      summary.existingBytes += bundle.sizeBytes;
      if (temporary) await rm(temporary, { force: true });
    } else {
      if (bundle.kind === 'stream') await rename(temporary!, path);
      else await writeFileAtomic(path, bundle.bytes);
      summary.newBundles++;
      summary.newBytes += bundle.sizeBytes;
    }
    bytesDone += bundleBytes[summary.bundles - 1] ?? 0;
    options.onProgress?.({ bundlesDone: summary.bundles, bundlesTotal: bundleBytes.length, bytesDone, bytesTotal });
  };

  const index = await writer.write(options.looseIndex, read, store);
  const indexPath = join(options.outDir, INDEX_FILE_NAME);
  // Last, and atomically: the index appears only once every bundle it names is in place.
  await writeFileAtomic(indexPath, serializeIndex(index));
  return { index, indexPath, ...summary };
}

/**
 * Reads project files from disk: `<root>/<path>`, or an explicit path per project path. Reads
 * straight into the bundle when the writer offers a place (`into`), streams large files.
 */
export function diskReader(locate: (entry: LooseFileEntry) => string): ReadProjectFile {
  const reader: ReadProjectFile = (entry, { stream, into }) => {
    const path = locate(entry);
    if (stream) return createReadStream(path, { highWaterMark: STREAM_CHUNK_BYTES });
    return into ? readFileInto(path, into) : readFile(path);
  };
  // publishToDirectory writes each chunk out before it asks for the next, so there it can
  // stream through two reused buffers instead of a new one per chunk.
  const spare: Buffer[][] = []; // stream buffers between files
  recyclingReaders.set(reader, (entry, { stream, into }) => {
    const path = locate(entry);
    if (stream) return recycledChunks(path, spare);
    return into ? readFileInto(path, into) : readFile(path);
  });
  return reader;
}

const STREAM_CHUNK_BYTES = 1 << 20;
const recyclingReaders = new WeakMap<ReadProjectFile, ReadProjectFile>();

/**
 * The file's bytes as chunks read through two buffers in turn, the next chunk read while the
 * current one is used. A chunk is valid until the one after the next is asked for: only for a
 * consumer that is done with each chunk when it asks for the next.
 */
async function* recycledChunks(path: string, spare: Buffer[][]): AsyncGenerator<Uint8Array> {
  const handle = await open(path, 'r');
  const buffers = spare.pop() ?? [Buffer.allocUnsafeSlow(STREAM_CHUNK_BYTES), Buffer.allocUnsafeSlow(STREAM_CHUNK_BYTES)];
  let position = 0;
  let turn = 0;
  let reading = handle.read(buffers[0]!, 0, STREAM_CHUNK_BYTES, position);
  try {
    for (;;) {
      const { bytesRead, buffer } = await reading;
      if (bytesRead === 0) return;
      position += bytesRead;
      turn ^= 1;
      reading = handle.read(buffers[turn]!, 0, STREAM_CHUNK_BYTES, position);
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await reading.catch(() => undefined);
    await handle.close();
    spare.push(buffers);
  }
}

const probe = Buffer.alloc(1); // only the count of bytes read into it matters

/**
 * Reads the file at `path` into `into`, which is as long as the loose index says the file is
 * (synchronously: see `paced`). A shorter file gives the part of `into` it filled; a larger
 * one gives all its bytes, in a buffer of their own: either way the writer names the mismatch.
 */
async function readFileInto(path: string, into: Uint8Array): Promise<Uint8Array> {
  const fd = openSync(path, 'r');
  let filled = 0;
  try {
    while (filled < into.length) {
      const bytesRead = readSync(fd, into, filled, into.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    if (filled === into.length && readSync(fd, probe, 0, 1, filled) !== 0) return await readFile(path);
  } finally {
    closeSync(fd);
  }
  await paced(filled);
  return filled === into.length ? into : into.subarray(0, filled);
}

/**
 * Where a loose index's file lies on disk (SPEC §8): `<root>/<path>` when a root is given,
 * else its `url` resolved against the index file's own folder.
 */
export function looseFileLocator(indexFile: string, root?: string): (entry: LooseFileEntry) => string {
  if (root !== undefined) return (entry) => join(root, ...entry.path.split('/'));
  const base = pathToFileURL(join(dirname(indexFile), '/'));
  return (entry) => {
    const url = new URL(entry.url, base);
    if (url.protocol !== 'file:') throw new PublishInputError(`${entry.path}: url ${JSON.stringify(entry.url)} is not a local file; pass --root <folder>`, entry.path);
    return fileURLToPath(url);
  };
}
