/**
 * Atomic file writes for Node, shared by the publisher and the folder cache: a temporary file
 * created exclusively beside the target (never an existing file or a link: O_EXCL), written,
 * fsynced, renamed into place, the folder fsynced, and removed again on any failure. A reader
 * sees the old file or the whole new one, also after a crash or a power cut.
 *
 * Temporary files are `<final name>.tmp-<pid>-<n>`: the pid lets a later process tell a killed
 * writer's leftovers from a running one's (publish.ts `removeStaleTemporaryFiles`).
 *
 * Errors are the operating system's (their message names the path, `code` says why): each
 * caller words them for its own users.
 */
import { closeSync, constants, fsyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

let temporaryCounter = 0;
const liveTemporaryFiles = new Set<string>();

export function temporaryName(path: string): string {
  return `${path}.tmp-${process.pid}-${++temporaryCounter}`;
}

/** Whether `path` is a temporary file this process is writing now. */
export function isLiveTemporaryFile(path: string): boolean {
  return liveTemporaryFiles.has(path);
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

/**
 * Gives the event loop a turn after every few MiB of synchronous I/O. One per writer (a publish,
 * a cache put): concurrent writers never share a count.
 */
export type Pace = (bytes: number) => Promise<void>;

const YIELD_EVERY_BYTES = 4 * 1024 * 1024;

export function createPace(): Pace {
  let bytesSinceYield = 0;
  return async (bytes) => {
    bytesSinceYield += bytes;
    if (bytesSinceYield < YIELD_EVERY_BYTES) return;
    bytesSinceYield = 0;
    await new Promise<void>((resolve) => setImmediate(resolve));
  };
}

/**
 * File I/O here is synchronous, in slices: on a page-cached disk a thread-pool round trip per
 * call costs more than the call, and 128 KiB writes cost the kernel less than one 16 MiB write
 * (measured on the bench:publish tree, see BENCHMARKS.md). `pace` keeps the event loop turning.
 */
const WRITE_SLICE_BYTES = 128 * 1024;

async function writeAll(fd: number, bytes: Uint8Array, pace: Pace): Promise<void> {
  for (let at = 0; at < bytes.length; ) {
    const slice = Math.min(bytes.length - at, WRITE_SLICE_BYTES);
    at += writeSync(fd, bytes, at, slice);
    await pace(slice);
  }
}

/** Creates the temporary file `path` exclusively (O_EXCL) and notes it for removeOwnTemporaryFilesSync. */
function createTemporary(path: string): number {
  liveTemporaryFiles.add(path);
  try {
    return openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  } catch (error) {
    liveTemporaryFiles.delete(path);
    throw error;
  }
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

/** Something that is not a file (a folder) stands where the rename must go. */
export function isInTheWay(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'EISDIR' || code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR';
}

export interface CommitOptions {
  /** Remove a folder standing at the target and rename again (the cache owns its folder). */
  replaceFolder?: boolean;
}

/** Renames a finished temporary file into place and makes the rename durable. */
export async function commitTemporary(temporary: string, path: string, options: CommitOptions = {}): Promise<void> {
  try {
    await rename(temporary, path);
  } catch (error) {
    if (!options.replaceFolder || !isInTheWay(error)) throw error;
    await rm(path, { recursive: true, force: true });
    await rename(temporary, path);
  }
  liveTemporaryFiles.delete(temporary);
  syncFolder(dirname(path));
}

export async function discardTemporary(temporary: string): Promise<void> {
  await rm(temporary, { force: true });
  liveTemporaryFiles.delete(temporary);
}

/** Writes `chunks` to a new temporary file `temporary`, on disk (fsync) when it resolves. */
async function writeTemporary(temporary: string, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>, pace: Pace): Promise<void> {
  const fd = createTemporary(temporary);
  try {
    for await (const chunk of chunks) await writeAll(fd, chunk, pace);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    await discardTemporary(temporary);
    throw error;
  }
  closeSync(fd);
}

export interface AtomicWriteOptions extends CommitOptions {
  pace?: Pace;
}

/**
 * Writes `bytes` to `path` atomically (see the top of this file). A link at `path` is
 * replaced, never written through.
 */
export async function writeFileAtomic(path: string, bytes: Uint8Array | string, options: AtomicWriteOptions = {}): Promise<void> {
  const temporary = temporaryName(path);
  await writeTemporary(temporary, [typeof bytes === 'string' ? Buffer.from(bytes) : bytes], options.pace ?? createPace());
  try {
    await commitTemporary(temporary, path, options);
  } catch (error) {
    await discardTemporary(temporary);
    throw error;
  }
}

/**
 * Streams `chunks` into a temporary file named after `placeholder` (for content whose final
 * name is known only at the end), on disk when it resolves to the temporary file's path; then
 * `commitTemporary` or `discardTemporary` it.
 */
export async function writeStreamToTemporary(chunks: AsyncIterable<Uint8Array>, placeholder: string, pace: Pace = createPace()): Promise<string> {
  const temporary = temporaryName(placeholder);
  await writeTemporary(temporary, chunks, pace);
  return temporary;
}
