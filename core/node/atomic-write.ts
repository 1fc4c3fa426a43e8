/**
 * Atomic file writes for Node, shared by the publisher and the folder cache: a temporary file
 * created exclusively beside the target (never an existing file or a link: O_EXCL), written,
 * fsynced, renamed into place, the folder fsynced, and removed again on any failure. A reader
 * sees the old file or the whole new one, also after a crash or a power cut.
 *
 * Temporary files are `<final name>.tmp-<pid>-<threadId>-<random>`: the pid lets a later process
 * tell a killed writer's leftovers from a running one's (publish.ts `removeStaleTemporaryFiles`);
 * the thread id and 48 random bits keep the names of concurrent writers apart, also in the
 * `worker_threads` of one process, whose module state (and so any counter) is their own.
 *
 * A temporary file stays bound to the handle it was written through: its device and inode are
 * noted at creation, checked again just before the rename, and the file under the final name is
 * compared with them after it (`commitTemporary`). So a caller that names a file by a hash of
 * the bytes it wrote can tell whether the file under that name is the one it wrote.
 *
 * Errors are the operating system's (their message names the path, `code` says why): each
 * caller words them for its own users.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, fsyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { lstat, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { threadId } from 'node:worker_threads';

/** Which file a handle or a name leads to: its device and inode (bigint: an inode may pass 2^53). */
interface FileIdentity {
  dev: bigint;
  ino: bigint;
}

/** This thread's temporary files being written, with the identity of each when this module created it. */
const liveTemporaryFiles = new Map<string, FileIdentity | undefined>();

/** A name for a temporary file beside `path` that no other writer (process, thread) makes. */
export function temporaryName(path: string): string {
  return `${path}.tmp-${process.pid}-${threadId}-${randomBytes(6).toString('hex')}`;
}

/** The end of a temporary name this module makes (`.tmp-<pid>-<threadId>-<random>`) or made before (`.tmp-<pid>-<n>`); its group is the pid. */
export const TEMPORARY_SUFFIX = String.raw`\.tmp-(\d+)-\d+(?:-[0-9a-f]{12})?`;

/**
 * Whether the process `pid` no longer runs. This process is never gone: a file with its pid is
 * this thread's own (live, or already removed) or another thread's of this process, at work now
 * (`worker_threads` share the pid, and a thread's own records are its alone), or, rarely, a
 * killed process's whose pid this one has since been given: a later process removes that one.
 */
export function processIsGone(pid: number): boolean {
  if (!(Number.isSafeInteger(pid) && pid > 0)) return false; // kill(0 or -n) would signal a group
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'; // EPERM: alive, someone else's
  }
}

/** Whether `path` is a temporary file this thread is writing now. */
export function isLiveTemporaryFile(path: string): boolean {
  return liveTemporaryFiles.has(path);
}

/**
 * Removes this thread's temporary files at once. For a signal handler (the CLI's SIGINT and
 * SIGTERM): synchronous, so nothing else runs between it and the exit. Returns how many.
 */
export function removeOwnTemporaryFilesSync(): number {
  let removed = 0;
  for (const path of liveTemporaryFiles.keys()) {
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
  for (let at = 0; at < bytes.length;) {
    const slice = Math.min(bytes.length - at, WRITE_SLICE_BYTES);
    at += writeSync(fd, bytes, at, slice);
    await pace(slice);
  }
}

/**
 * Creates the temporary file `path` exclusively (O_EXCL), notes it for removeOwnTemporaryFilesSync,
 * and notes which file its handle writes (its identity).
 */
function createTemporary(path: string): number {
  liveTemporaryFiles.set(path, undefined);
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
    const { dev, ino } = fstatSync(fd, { bigint: true });
    liveTemporaryFiles.set(path, { dev, ino });
    return fd;
  } catch (error) {
    if (fd !== undefined) {
      closeSync(fd);
      rmSync(path, { force: true });
    }
    liveTemporaryFiles.delete(path);
    throw error;
  }
}

/** The identity of what is named `path` (a link is not followed), or undefined when nothing is. */
async function identityAt(path: string): Promise<FileIdentity | undefined> {
  const info = await lstat(path, { bigint: true }).catch(() => undefined);
  return info && { dev: info.dev, ino: info.ino };
}

const sameFile = (a: FileIdentity | undefined, b: FileIdentity | undefined) =>
  a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino;

/** The temporary file is no longer the one its handle wrote: another writer removed and made the name again. */
function replacedError(temporary: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${temporary}: the temporary file is not the one written (another writer replaced it); not renamed`), {
    code: 'ETEMPORARYREPLACED',
    syscall: 'rename',
    path: temporary,
  });
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

/**
 * Renames a finished temporary file into place and makes the rename durable. A temporary file
 * this module created is first checked to be still the file its handle wrote (else nothing is
 * renamed: an error with code `ETEMPORARYREPLACED`). Resolves to true when the file under `path`
 * after the rename is that file; false when another stands there (a concurrent writer renamed
 * its own over it, or it was replaced between the check and the rename), or for a temporary
 * file made elsewhere (a link, a copy), whose bytes this module did not write.
 */
export async function commitTemporary(temporary: string, path: string, options: CommitOptions = {}): Promise<boolean> {
  const written = liveTemporaryFiles.get(temporary);
  // Gone is not replaced: the rename then fails with ENOENT (the cache's clear() moved its folder).
  const before = written && (await identityAt(temporary));
  if (before !== undefined && !sameFile(written, before)) throw replacedError(temporary);
  try {
    await rename(temporary, path);
  } catch (error) {
    if (!options.replaceFolder || !isInTheWay(error)) throw error;
    await rm(path, { recursive: true, force: true });
    await rename(temporary, path);
  }
  liveTemporaryFiles.delete(temporary);
  syncFolder(dirname(path));
  return sameFile(written, await identityAt(path));
}

/** Removes a temporary file, unless it is no longer the one this thread wrote (then it is another writer's). */
export async function discardTemporary(temporary: string): Promise<void> {
  const written = liveTemporaryFiles.get(temporary);
  if (written === undefined || sameFile(written, await identityAt(temporary))) await rm(temporary, { force: true });
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
 * replaced, never written through. Resolves as `commitTemporary` does: true when the file under
 * `path` is the one written.
 */
export async function writeFileAtomic(path: string, bytes: Uint8Array | string, options: AtomicWriteOptions = {}): Promise<boolean> {
  const temporary = temporaryName(path);
  await writeTemporary(temporary, [typeof bytes === 'string' ? Buffer.from(bytes) : bytes], options.pace ?? createPace());
  try {
    return await commitTemporary(temporary, path, options);
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
export async function writeStreamToTemporary(
  chunks: AsyncIterable<Uint8Array>,
  placeholder: string,
  pace: Pace = createPace(),
): Promise<string> {
  const temporary = temporaryName(placeholder);
  await writeTemporary(temporary, chunks, pace);
  return temporary;
}
