/**
 * Publishing into a folder (SPEC §8): bundles named by SHA-256 under the out folder, only the
 * new (or damaged) ones written, and the index written last and atomically (temp file, fsync,
 * rename, fsync of the folder), so an interrupted publish — even a power cut or a SIGKILL —
 * never leaves an index that names a missing or partial bundle. Temporary files of a publish
 * that was killed are removed by the next one.
 */
import { closeSync, constants, createReadStream, fsyncSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { lstat, mkdir, open, readdir, readFile, realpath, rename, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { InvalidOptionError, PublishInputError, PublishOutputError } from '../errors.js';
import { SHA256_HEX_DIGITS } from '../format/sha256.js';
import { pathCollisions, unsafePathReason } from '../format/paths.js';
import { serializeIndex, type BundledIndex, type LooseFileEntry, type LooseIndex } from '../format/project-index.js';
import { BundleWriter, type BundleHashing, type BundleWriterOptions, type FinishedBundle, type ReadProjectFile } from '../publish/bundle-writer.js';
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
  /**
   * Paths that differ only by case or Unicode normalization collide on case-insensitive hosts
   * (FORMAT.md "Paths"): refused unless this is true; then each pair goes to `onWarning`.
   */
  allowCaseCollisions?: boolean;
  onWarning?: (message: string) => void;
}

export interface PublishSummary {
  index: BundledIndex;
  indexPath: string;
  bundles: number;
  bytes: number;
  /** Bundles written by this publish: the upload a host needs. */
  newBundles: number;
  newBytes: number;
  /** Bundles the out folder already held, checked by their SHA-256 (their name). */
  existingBundles: number;
  existingBytes: number;
  /**
   * URLs of bundles the out folder held under the right name but with other bytes (or as a
   * link, not a file): written again, and counted in `newBundles` too.
   */
  rewrittenBundles: string[];
  /** Temporary files of earlier publishes whose process is gone, removed before writing. */
  staleTemporaryFilesRemoved: number;
}

/**
 * Temporary files are `<final name>.tmp-<pid>-<n>`: the pid lets a later publish tell a
 * killed publish's leftovers from a running one's.
 */
let temporaryCounter = 0;
const liveTemporaryFiles = new Set<string>();
function temporaryName(path: string): string {
  return `${path}.tmp-${process.pid}-${++temporaryCounter}`;
}

/**
 * Removes this process's temporary files at once. For a signal handler (the CLI's SIGINT and
 * SIGTERM): synchronous, so nothing else runs between it and the exit. Returns how many.
 */
export function removeOwnTemporaryFilesSync(): number {
  let removed = 0;
  for (const path of liveTemporaryFiles) {
    try {
      rmSync(path, { force: true });
      removed++;
    } catch {
      // Best effort: the next publish removes what is left (removeStaleTemporaryFiles).
    }
  }
  liveTemporaryFiles.clear();
  return removed;
}

/** Only names a publish makes: a bundle, a streamed bundle before it has its name, the index. */
const TEMPORARY_FILE = new RegExp(`^(?:${SHA256_HEX_DIGITS}\\.awkb|\\.incoming\\.awkb|project\\.index\\.json)\\.tmp-(\\d+)-\\d+$`);

function processIsGone(pid: number): boolean {
  if (!(Number.isSafeInteger(pid) && pid > 0)) return false; // kill(0 or -n) would signal a group
  if (pid === process.pid) return true; // ours are in liveTemporaryFiles, skipped below
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'; // EPERM: alive, someone else's
  }
}

/** Removes, from `dir`, the temporary files of publishes whose process no longer runs. */
export async function removeStaleTemporaryFiles(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const match = TEMPORARY_FILE.exec(name);
    const path = join(dir, name);
    if (!match || liveTemporaryFiles.has(path) || !processIsGone(Number(match[1]))) continue;
    const info = await lstat(path).catch(() => undefined);
    if (!info?.isFile()) continue;
    await rm(path, { force: true });
    removed++;
  }
  return removed;
}

/** Makes a rename in `dir` durable; a file system that cannot sync a folder is left as it is. */
function syncFolder(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // EISDIR/EINVAL/EPERM on platforms or file systems without folder fsync.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Renames a finished temporary file into place and makes the rename durable. */
async function commitTemporary(temporary: string, path: string): Promise<void> {
  try {
    await rename(temporary, path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'EISDIR' || code === 'ENOTEMPTY' || code === 'EEXIST' ? 'a folder is in the way' : (error as Error).message;
    throw new PublishOutputError(`${path}: cannot write: ${why}`, path, error);
  }
  liveTemporaryFiles.delete(temporary);
  syncFolder(dirname(path));
}

async function discardTemporary(temporary: string): Promise<void> {
  await rm(temporary, { force: true });
  liveTemporaryFiles.delete(temporary);
}

/**
 * Writes `bytes` to `path` through a temporary file, fsync and a rename (then an fsync of the
 * folder): a reader sees the old file or the whole new one, also after a crash. A link at
 * `path` is replaced, never written through.
 */
export async function writeFileAtomic(path: string, bytes: Uint8Array | string): Promise<void> {
  const temporary = temporaryName(path);
  try {
    await writeWhole(temporary, typeof bytes === 'string' ? Buffer.from(bytes) : bytes);
    await commitTemporary(temporary, path);
  } catch (error) {
    await discardTemporary(temporary);
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

/**
 * Creates the temporary file `path` (never an existing file or a link: O_EXCL) and notes it for
 * removeOwnTemporaryFilesSync.
 */
function createTemporary(path: string): number {
  liveTemporaryFiles.add(path);
  try {
    return openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  } catch (error) {
    liveTemporaryFiles.delete(path);
    throw new PublishOutputError(`${path}: cannot create: ${(error as Error).message}`, path, error);
  }
}

/** Writes `bytes` to a new temporary file at `path`, on disk (fsync) before it is renamed. */
async function writeWhole(path: string, bytes: Uint8Array): Promise<void> {
  const fd = createTemporary(path);
  try {
    await writeAll(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

async function writeStreamAtomic(chunks: AsyncIterable<Uint8Array>, directory: string): Promise<string> {
  const temporary = temporaryName(join(directory, '.incoming.awkb'));
  const fd = createTemporary(temporary);
  let isOpen = true;
  try {
    for await (const chunk of chunks) await writeAll(fd, chunk);
    fsyncSync(fd);
    isOpen = false;
    closeSync(fd);
    return temporary;
  } catch (error) {
    if (isOpen) closeSync(fd);
    await discardTemporary(temporary);
    throw error;
  }
}

/**
 * Whether the out folder already holds the bundle at `path`: a regular file (not a link) of
 * the listed size whose bytes hash to its name (FORMAT.md "Command line"). A file of the right
 * size is not enough: a damaged copy would never be rewritten.
 */
async function holdsBundle(path: string, sizeBytes: number, sha256: string): Promise<'absent' | 'same' | 'damaged'> {
  const info = await lstat(path).catch(() => undefined);
  if (info === undefined) return 'absent';
  if (!info.isFile() || info.size !== sizeBytes) return 'damaged';
  const hash = nodeSha256();
  try {
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      for await (const chunk of handle.createReadStream({ highWaterMark: STREAM_CHUNK_BYTES, autoClose: false })) hash.update(chunk as Buffer);
    } finally {
      await handle.close();
    }
  } catch {
    return 'damaged';
  }
  return hash.digestHex() === sha256 ? 'same' : 'damaged';
}

function isInside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !rel.startsWith(sep) && !/^[A-Za-z]:/.test(rel));
}

/** Makes `dir` a folder, or names what is in the way (a file, a link to a file). */
async function makeFolder(dir: string, what: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const message = code === 'EEXIST' || code === 'ENOTDIR' ? 'a file is in the way (it must be a folder)' : (error as Error).message;
    throw new PublishOutputError(`${dir}: cannot make the ${what}: ${message}`, dir, error);
  }
}

/**
 * Makes the out folder and the bundle folder below it. The bundle folder must stay inside the
 * out folder once links are followed: a publish never writes outside --out.
 */
async function prepareOutFolder(outDir: string, bundleDir: string): Promise<void> {
  await makeFolder(outDir, 'out folder');
  await makeFolder(bundleDir, 'bundle folder');
  const [realOut, realBundles] = await Promise.all([realpath(outDir), realpath(bundleDir)]);
  if (!isInside(realBundles, realOut)) {
    throw new PublishOutputError(`${bundleDir}: a symbolic link leads outside the out folder ${outDir} (to ${realBundles}); a publish never writes outside --out`, bundleDir);
  }
}

/** Refuses (or, when allowed, reports) paths that collide on case-insensitive hosts. */
function checkPathCollisions(index: LooseIndex, options: PublishOptions): void {
  const collisions = pathCollisions(index.files.map((entry) => entry.path));
  if (collisions.length === 0) return;
  const pairs = collisions.map(([a, b]) => `${JSON.stringify(a)} and ${JSON.stringify(b)}`);
  if (options.allowCaseCollisions) {
    for (const pair of pairs) options.onWarning?.(`paths ${pair} collide on case-insensitive hosts (they differ only by case or Unicode normalization)`);
    return;
  }
  throw new PublishInputError(
    `paths that differ only by case or Unicode normalization collide on case-insensitive hosts (macOS, Windows): ${pairs.join('; ')}. ` +
      'Rename one of each pair, or publish anyway with allowCaseCollisions (--allow-case-collisions)',
    collisions[0]![0],
  );
}

export function checkBundleUrlPrefix(prefix: string): void {
  if (prefix === '') return;
  const reason = unsafePathReason(prefix.replace(/\/+$/, ''));
  if (reason !== undefined) throw new InvalidOptionError('urlPrefix', `--url-prefix ${JSON.stringify(prefix)} must be a relative folder below the out folder: ${reason}`);
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
  checkPathCollisions(options.looseIndex, options);
  const bundleDir = join(options.outDir, ...writer.bundleUrlPrefix.split('/').filter(Boolean));
  await prepareOutFolder(options.outDir, bundleDir);
  const staleTemporaryFilesRemoved = (await removeStaleTemporaryFiles(bundleDir)) + (bundleDir === options.outDir ? 0 : await removeStaleTemporaryFiles(options.outDir));
  const summary = { bundles: 0, bytes: 0, newBundles: 0, newBytes: 0, existingBundles: 0, existingBytes: 0, rewrittenBundles: [] as string[], staleTemporaryFilesRemoved };
  let bytesDone = 0;

  const store = async (bundle: FinishedBundle): Promise<void> => {
    let temporary: string | undefined;
    try {
      let sha256: string;
      if (bundle.kind === 'stream') {
        temporary = await writeStreamAtomic(bundle.chunks, bundleDir);
        sha256 = (await bundle.finished).sha256;
      } else sha256 = bundle.sha256;
      const url = writer.bundleUrl(sha256);
      const path = join(options.outDir, url);
      const existing = await holdsBundle(path, bundle.sizeBytes, sha256);
      summary.bundles++;
      summary.bytes += bundle.sizeBytes;
      if (existing === 'same') {
        summary.existingBundles++;
        summary.existingBytes += bundle.sizeBytes;
        if (temporary) await discardTemporary(temporary);
      } else {
        if (existing === 'damaged') summary.rewrittenBundles.push(url);
        if (temporary) await commitTemporary(temporary, path);
        else await writeFileAtomic(path, (bundle as { bytes: Uint8Array }).bytes);
        summary.newBundles++;
        summary.newBytes += bundle.sizeBytes;
      }
    } catch (error) {
      if (temporary !== undefined && liveTemporaryFiles.has(temporary)) await discardTemporary(temporary);
      throw error;
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
