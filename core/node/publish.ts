/**
 * Publishing into a folder (SPEC §8): bundles named by SHA-256 under the out folder, only the
 * new (or damaged) ones written, and the index written last and atomically (temp file, fsync,
 * rename, fsync of the folder), so an interrupted publish — even a power cut or a SIGKILL —
 * never leaves an index that names a missing or partial bundle. Temporary files of a publish
 * that was killed are removed by the next one.
 */
import { closeSync, constants, createReadStream, openSync, readSync } from 'node:fs';
import { lstat, mkdir, open, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { InvalidOptionError, PublishInputError, PublishOutputError } from '../errors.js';
import { SHA256_HEX_DIGITS } from '../format/sha256.js';
import { pathCollisions, unsafePathReason } from '../format/paths.js';
import { serializeIndex, type BundledIndex, type LooseFileEntry, type LooseIndex } from '../format/project-index.js';
import {
  BundleWriter,
  type BundleHashing,
  type BundleWriterOptions,
  type FinishedBundle,
  type ReadProjectFile,
} from '../publish/bundle-writer.js';
import {
  commitTemporary,
  createPace,
  discardTemporary,
  isLiveTemporaryFile,
  processIsGone,
  TEMPORARY_SUFFIX,
  writeFileAtomic as writeAtomic,
  writeStreamToTemporary,
  type Pace,
} from './atomic-write.js';
import type { MemberCompressor } from '../publish/member-encoding.js';
import { nodeMemberCompressor } from './deflate.js';
import { nodeSha256, sha256HexNode } from './hash.js';
import { isInside } from './inside.js';
import { inTheWayReason } from './in-the-way.js';
import { publishGrouping, readReferrerFile, type GroupingInput, type PublishGroupingOptions } from './publish-grouping.js';

export { removeOwnTemporaryFilesSync } from './atomic-write.js';

export const INDEX_FILE_NAME = 'project.index.json';

export interface PublishProgress {
  bundlesDone: number;
  bundlesTotal: number;
  bytesDone: number;
  bytesTotal: number;
}

/** Where each project file is read from: its path on disk, or a reader of your own. */
export type PublishInput =
  /**
   * The path on disk of each entry's file (`looseFileLocator`, or a map from a folder walk):
   * the publish reads it through its own disk reader, which streams large files through two
   * reused buffers.
   */
  | { locate: (entry: LooseFileEntry) => string; read?: never }
  /** Any reader (memory, network…): each chunk it gives is written out before the next is asked for. */
  | { read: ReadProjectFile; locate?: never };

export type PublishOptions = BundleWriterOptions &
  PublishInput &
  PublishGroupingOptions & {
    looseIndex: LooseIndex;
    outDir: string;
    onProgress?: (progress: PublishProgress) => void;
    /**
     * Paths that differ only by case or Unicode normalization collide on case-insensitive hosts
     * (FORMAT.md "Paths"): refused unless this is true; then each pair goes to `onWarning`.
     */
    allowCaseCollisions?: boolean;
    onWarning?: (message: string) => void;
    /** Called as each bundle lands: `written` false when the out folder already held it (checked by its SHA-256). */
    onBundleStored?: (bundle: StoredBundle) => void;
    /**
     * Store members deflate-raw where that saves at least 1 KiB and 5% (SPEC §5a), compressed
     * with `node:zlib` on its thread pool. Default true; false stores every member as it is
     * (AWKB version 1 throughout, the output of before encoding existed). A `compressor` given
     * explicitly is used instead of `node:zlib`'s.
     */
    compress?: boolean;
  };

export interface StoredBundle {
  /** The bundle's URL relative to the index, as the index lists it. */
  url: string;
  sizeBytes: number;
  /** True when this publish wrote it (new, or rewritten because the copy there was damaged). */
  written: boolean;
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

/** Only names a publish makes: a bundle, a streamed bundle before it has its name, the index. */
const TEMPORARY_FILE = new RegExp(`^(?:${SHA256_HEX_DIGITS}\\.awkb|\\.incoming\\.awkb|project\\.index\\.json)${TEMPORARY_SUFFIX}$`);

/**
 * Removes, from `dir`, the temporary files of publishes whose process no longer runs. A file of
 * this process is never removed here, whichever thread made it (see processIsGone).
 */
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
    if (!match || isLiveTemporaryFile(path) || !processIsGone(Number(match[1]))) continue;
    const info = await lstat(path).catch(() => undefined);
    if (!info?.isFile()) continue;
    await rm(path, { force: true });
    removed++;
  }
  return removed;
}

/**
 * What a publish writes goes through core/node/atomic-write.ts (temporary file created
 * exclusively, fsync, rename, fsync of the folder); this file words its failures.
 */
function outputError(path: string, error: unknown): unknown {
  // Only the file system's own errors: a reader's failure (a changed input file) stays as it is.
  if (typeof (error as NodeJS.ErrnoException)?.syscall !== 'string') return error;
  const code = (error as NodeJS.ErrnoException).code;
  const why = code === 'EISDIR' || code === 'ENOTEMPTY' || code === 'EEXIST' ? 'a folder is in the way' : (error as Error).message;
  return new PublishOutputError(`${path}: cannot write: ${why}`, path, error);
}

/**
 * Writes `bytes` to `path` atomically: a reader sees the old file or the whole new one, also
 * after a crash. A link at `path` is replaced, never written through.
 */
export async function writeFileAtomic(path: string, bytes: Uint8Array | string, pace: Pace = createPace()): Promise<void> {
  await writeOutput(path, bytes, pace);
}

/** writeFileAtomic, resolving to whether the file under `path` is the one written (atomic-write.ts `commitTemporary`). */
async function writeOutput(path: string, bytes: Uint8Array | string, pace: Pace): Promise<boolean> {
  try {
    return await writeAtomic(path, bytes, { pace });
  } catch (error) {
    throw outputError(path, error);
  }
}

/**
 * After a bundle's rename, the file under its name is not the one this publish wrote: a
 * concurrent publish of the same bundle renamed its copy over ours (its bytes hash to the name:
 * fine), or something replaced our temporary file. A bundle's name never lies: a file there
 * whose bytes do not hash to it is removed, and the publish fails before it writes its index.
 */
async function checkLanded(path: string, sizeBytes: number, sha256: string): Promise<void> {
  const found = await holdsBundle(path, sizeBytes, sha256);
  if (found === 'same') return;
  if (found === 'damaged') await rm(path, { force: true });
  throw new PublishOutputError(
    `${path}: after the rename, the file under this name is not the bundle written (another writer replaced the temporary file)${found === 'damaged' ? '; its bytes do not hash to the name, so it was removed' : ''}`,
    path,
  );
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
      for await (const chunk of handle.createReadStream({ highWaterMark: STREAM_CHUNK_BYTES, autoClose: false }))
        hash.update(chunk as Buffer);
    } finally {
      await handle.close();
    }
  } catch {
    return 'damaged';
  }
  return hash.digestHex() === sha256 ? 'same' : 'damaged';
}

/** Makes `dir` a folder, or names what is in the way (a file, a link to a file). */
async function makeFolder(dir: string, what: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const message = code === 'EEXIST' || code === 'ENOTDIR' ? await inTheWayReason(dir) : (error as Error).message;
    throw new PublishOutputError(`${dir}: cannot make the ${what}: ${message}`, dir, error);
  }
}

/**
 * Makes the out folder and the bundle folder below it. The bundle folder must stay inside the
 * out folder once links are followed: a publish never writes outside its out folder.
 */
async function prepareOutFolder(outDir: string, bundleDir: string): Promise<void> {
  await makeFolder(outDir, 'out folder');
  await makeFolder(bundleDir, 'bundle folder');
  const [realOut, realBundles] = await Promise.all([realpath(outDir), realpath(bundleDir)]);
  if (!isInside(realBundles, realOut)) {
    throw new PublishOutputError(
      `${bundleDir}: a symbolic link leads outside the out folder ${outDir} (to ${realBundles}); a publish never writes outside its out folder`,
      bundleDir,
    );
  }
}

/** Refuses (or, when allowed, reports) paths that collide on case-insensitive hosts. */
export function checkPathCollisions(paths: string[], options: Pick<PublishOptions, 'allowCaseCollisions' | 'onWarning'>): void {
  const collisions = pathCollisions(paths);
  if (collisions.length === 0) return;
  const pairs = collisions.map(([a, b]) => `${JSON.stringify(a)} and ${JSON.stringify(b)}`);
  if (options.allowCaseCollisions) {
    for (const pair of pairs)
      options.onWarning?.(`paths ${pair} collide on case-insensitive hosts (they differ only by case or Unicode normalization)`);
    return;
  }
  throw new PublishInputError(
    `paths that differ only by case or Unicode normalization collide on case-insensitive hosts (macOS, Windows): ${pairs.join('; ')}. ` +
      'Rename one of each pair, or publish anyway with the allowCaseCollisions option',
    collisions[0]![0],
  );
}

export function checkBundleUrlPrefix(prefix: string): void {
  if (prefix === '') return;
  const reason = unsafePathReason(prefix.replace(/\/+$/, ''));
  if (reason !== undefined)
    throw new InvalidOptionError(
      'bundleUrlPrefix',
      `bundleUrlPrefix ${JSON.stringify(prefix)} must be a relative folder below the out folder: ${reason}`,
    );
}

/** node:crypto for every hash the writer computes: synchronous, no copies, ~1.8 GB/s with SHA-NI. */
export const nodeBundleHashing: BundleHashing = { digest: sha256HexNode, incremental: nodeSha256 };

export async function publishToDirectory(options: PublishOptions): Promise<PublishSummary> {
  if (!options.locate === !options.read)
    throw new InvalidOptionError('locate', 'publishToDirectory takes either locate or read (exactly one)');
  checkPathCollisions(
    options.looseIndex.files.map((entry) => entry.path),
    options,
  );
  const grouping = await publishGrouping(
    options,
    options.looseIndex.files.map((entry) => referrerInput(entry, options)),
  );
  return publishBundles({ ...options, grouping }, ({ writer, store, pace }) => {
    const read = options.locate ? recyclingDiskReader(options.locate, pace) : options.read;
    return writer.write(options.looseIndex, read, store);
  });
}

/** A loose index entry as the grouping reads it for references: from disk (`locate`), or through `read`. */
function referrerInput(entry: LooseFileEntry, input: PublishInput): GroupingInput {
  const read = async (): Promise<Uint8Array> => {
    if (input.locate) return readReferrerFile(input.locate(entry), entry.path);
    const content = await input.read!(entry, { stream: false });
    if (content instanceof Uint8Array) return content;
    const chunks: Uint8Array[] = [];
    for await (const chunk of content) chunks.push(chunk);
    return Buffer.concat(chunks);
  };
  return { path: entry.path, sizeBytes: entry.sizeBytes, read };
}

/** What publishBundles gives the code that makes the bundles. */
export interface BundleProduction {
  writer: BundleWriter;
  /** Hand each finished bundle here, in order, awaiting it: it lands in the out folder. */
  store: (bundle: FinishedBundle) => Promise<void>;
  /** The publish's own pace for synchronous file I/O (atomic-write.ts). */
  pace: Pace;
}

/** The options publishBundles reads: the writer's, the out folder, progress. */
export type PublishBundlesOptions = BundleWriterOptions &
  Pick<PublishOptions, 'outDir' | 'onProgress' | 'onBundleStored' | 'compress'> & {
    /** When the plan is made a bundle at a time: the input's bytes, the progress total meanwhile. */
    expectedBytes?: number;
  };

/**
 * The out-folder half of a publish: prepares the out folder, removes stale temporary files,
 * stores each bundle `produce` hands over (skipping ones already there, rewriting damaged
 * ones), and writes the index `produce` resolves to, last and atomically.
 */
export async function publishBundles(
  options: PublishBundlesOptions,
  produce: (production: BundleProduction) => Promise<BundledIndex>,
): Promise<PublishSummary> {
  // For progress reports: the sizes of the planned bundles, from the writer's own plan(s).
  const bundleBytes: number[] = [];
  let plannedBytes = 0;
  let bytesTotal = options.expectedBytes ?? 0;
  const writer = new BundleWriter({
    ...options,
    hashing: options.hashing ?? nodeBundleHashing,
    compressor: compressorFor(options),
    // `store` below has written a bundle's bytes out when it resolves: the writer may reuse them.
    reuseBuffers: options.reuseBuffers ?? true,
    onPlan: (plans) => {
      // A loop and a running sum: publishFolder plans a bundle at a time, and a plan may hold
      // more bundles than push(...) takes arguments.
      for (const plan of plans) {
        bundleBytes.push(plan.dataBytes);
        plannedBytes += plan.dataBytes;
      }
      bytesTotal = Math.max(options.expectedBytes ?? 0, plannedBytes);
      options.onPlan?.(plans);
    },
  });
  // One pace per publish: concurrent publishes in one process never share a count.
  const pace = createPace();
  checkBundleUrlPrefix(writer.bundleUrlPrefix);
  const bundleDir = join(options.outDir, ...writer.bundleUrlPrefix.split('/').filter(Boolean));
  await prepareOutFolder(options.outDir, bundleDir);
  const staleTemporaryFilesRemoved =
    (await removeStaleTemporaryFiles(bundleDir)) + (bundleDir === options.outDir ? 0 : await removeStaleTemporaryFiles(options.outDir));
  const summary = {
    bundles: 0,
    bytes: 0,
    newBundles: 0,
    newBytes: 0,
    existingBundles: 0,
    existingBytes: 0,
    rewrittenBundles: [] as string[],
    staleTemporaryFilesRemoved,
  };
  let bytesDone = 0;

  const store = async (bundle: FinishedBundle): Promise<void> => {
    let temporary: string | undefined;
    try {
      let sha256: string;
      if (bundle.kind === 'stream') {
        // Not reworded: a failure here is as likely the input file's as the out folder's.
        temporary = await writeStreamToTemporary(bundle.chunks, join(bundleDir, '.incoming.awkb'), pace);
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
        // The SHA-256 was taken of the bytes written through the temporary file's handle: the
        // name tells the truth when the file under it is that file (or another with those bytes).
        const landed = temporary
          ? await commitTemporary(temporary, path).catch((error: unknown) => {
              throw outputError(path, error);
            })
          : await writeOutput(path, (bundle as { bytes: Uint8Array }).bytes, pace);
        if (!landed) await checkLanded(path, bundle.sizeBytes, sha256);
        summary.newBundles++;
        summary.newBytes += bundle.sizeBytes;
      }
      options.onBundleStored?.({ url, sizeBytes: bundle.sizeBytes, written: existing !== 'same' });
    } catch (error) {
      if (temporary !== undefined && isLiveTemporaryFile(temporary)) await discardTemporary(temporary);
      throw error;
    }
    bytesDone += bundleBytes[summary.bundles - 1] ?? 0;
    options.onProgress?.({ bundlesDone: summary.bundles, bundlesTotal: bundleBytes.length, bytesDone, bytesTotal });
  };

  const index = await produce({ writer, store, pace });
  const indexPath = join(options.outDir, INDEX_FILE_NAME);
  // Last, and atomically: the index appears only once every bundle it names is in place.
  await writeFileAtomic(indexPath, serializeIndex(index), pace);
  return { index, indexPath, ...summary };
}

/**
 * Whether a publish encodes members when not told (SPEC §5a, §8: members are encoded where that
 * pays unless `--no-compress`). The reader and the service worker decode them wherever they read.
 */
export const COMPRESS_BY_DEFAULT = true;

/** The compressor a Node publish uses (SPEC §5a, §8 `--no-compress`): `node:zlib`'s when compressing. */
function compressorFor(options: Pick<PublishBundlesOptions, 'compress' | 'compressor'>): MemberCompressor | undefined {
  if (options.compress !== undefined && typeof options.compress !== 'boolean')
    throw new InvalidOptionError('compress', `compress must be true or false, got ${String(options.compress)}`);
  if (!(options.compress ?? COMPRESS_BY_DEFAULT)) return undefined;
  return options.compressor ?? nodeMemberCompressor;
}

/**
 * Reads project files from disk: `<root>/<path>`, or an explicit path per project path. Reads
 * straight into the bundle when the writer offers a place (`into`), streams large files. For a
 * `BundleWriter` of your own; `publishToDirectory` takes `locate` and reads by itself.
 */
export function diskReader(locate: (entry: LooseFileEntry) => string): ReadProjectFile {
  const pace = createPace();
  return (entry, { stream, into }) => {
    const path = locate(entry);
    if (stream) return createReadStream(path, { highWaterMark: STREAM_CHUNK_BYTES });
    return into ? readFileInto(path, into, pace) : readFile(path);
  };
}

/**
 * publishToDirectory's reader: it writes each chunk out before it asks for the next, so large
 * files stream through two reused buffers instead of a new one per chunk. Only for a consumer
 * that is done with each chunk when it asks for the next (publishBundles' `store`).
 */
export function recyclingDiskReader(locate: (entry: LooseFileEntry) => string, pace: Pace): ReadProjectFile {
  const spare: Buffer[][] = []; // stream buffers between files
  return (entry, { stream, into }) => {
    const path = locate(entry);
    if (stream) return recycledChunks(path, spare);
    return into ? readFileInto(path, into, pace) : readFile(path);
  };
}

const STREAM_CHUNK_BYTES = 1 << 20;

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
 * (synchronously, see atomic-write.ts; `pace` gives the event loop a turn). A shorter file gives the part of `into` it filled; a larger
 * one gives all its bytes, in a buffer of their own: either way the writer names the mismatch.
 */
async function readFileInto(path: string, into: Uint8Array, pace: Pace): Promise<Uint8Array> {
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
  await pace(filled);
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
    if (url.protocol !== 'file:')
      throw new PublishInputError(
        `${entry.path}: url ${JSON.stringify(entry.url)} is not a local file: give the folder that holds the files (root)`,
        entry.path,
      );
    return fileURLToPath(url);
  };
}
