/**
 * The loose index of a folder (SPEC §8): every regular file below it, symbolic links followed
 * (a link loop or a link that leaves the folder is refused), except `.DS_Store` and
 * `Thumbs.db`, and never the out folder when that lies inside the input.
 */
import { createReadStream } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import type { Dirent, Stats } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { PublishInputError } from '../errors.js';
import { compareKeys, looseFileUrl, unsafePathReason } from '../format/paths.js';
import type { LooseFileEntry, LooseIndex } from '../format/project-index.js';
import { nodeSha256 } from './hash.js';
import { isInside } from './inside.js';

const SKIPPED_NAMES = new Set(['.DS_Store', 'Thumbs.db']);
/** Entries of one folder looked at (stat, realpath) at once, and folders read at once. */
const STAT_BATCH = 16;
const WALK_LANES = 4;

export interface FolderIndexOptions {
  /** Default `/project`, as the conformance outputs show (FORMAT.md). */
  rootPath?: string;
  /** Loose file URL prefix; default `files`. */
  urlPrefix?: string;
  /** Folders (absolute or relative to cwd) left out, such as the publish output. */
  exclude?: string[];
  /** Called after each file is hashed, with bytes hashed so far. */
  onProgress?: (progress: { files: number; bytes: number }) => void;
}

export interface FolderFile {
  path: string;
  /** Absolute path on disk (after following links). */
  absolutePath: string;
  sizeBytes: number;
  /** Its stat when listed (size, times, inode): what a caller that keeps hashes compares against. */
  stats?: Stats;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Raw file-name bytes for a message: printable ASCII as is, every other byte as `\xNN`. */
export function escapeFileNameBytes(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) =>
    byte > 0x20 && byte < 0x7f && byte !== 0x5c ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`,
  ).join('');
}

/** A file name as text; one that is not valid UTF-8 has no project path (SPEC §1: text is UTF-8). */
function fileNameText(bytes: Buffer, folder: string, projectDir: string): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    const where = join(folder, ...projectDir.split('/'));
    throw new PublishInputError(
      `${where}: a file name is not valid UTF-8: "${escapeFileNameBytes(bytes)}" (rename it; project paths are UTF-8 text)`,
      projectDir === '' ? folder : projectDir,
    );
  }
}

/** Lists the project files below `folder` in key order, following links safely. */
export async function listFolderFiles(folder: string, options: Pick<FolderIndexOptions, 'exclude'> = {}): Promise<FolderFile[]> {
  let root: string;
  try {
    root = await realpath(resolve(folder));
    if (!(await stat(root)).isDirectory()) throw new PublishInputError(`${folder}: not a folder`, folder);
  } catch (error) {
    if (error instanceof PublishInputError) throw error;
    throw new PublishInputError(`${folder}: cannot read the folder: ${(error as Error).message}`, folder, error);
  }
  const excluded = await Promise.all((options.exclude ?? []).map(async (path) => realpath(resolve(path)).catch(() => resolve(path))));
  const files: FolderFile[] = [];

  // Where an entry leads: a file, a folder to walk, or nothing (left out).
  async function resolveEntry(realDir: string, projectDir: string, entry: Dirent<Buffer>, ancestors: Set<string>) {
    const name = fileNameText(entry.name, folder, projectDir);
    if (SKIPPED_NAMES.has(name)) return undefined;
    const projectPath = projectDir === '' ? name : `${projectDir}/${name}`;
    const reason = unsafePathReason(projectPath);
    if (reason !== undefined)
      throw new PublishInputError(
        `${join(folder, projectPath)}: unsafe project path ${JSON.stringify(projectPath)}: ${reason}`,
        projectPath,
      );
    const onDisk = join(realDir, name);
    let target = onDisk;
    if (entry.isSymbolicLink()) {
      try {
        target = await realpath(onDisk);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const why = code === 'ELOOP' ? 'is a symbolic link loop' : `is a broken symbolic link (${code})`;
        throw new PublishInputError(`${join(folder, projectPath)}: ${why}`, projectPath, error);
      }
      if (!isInside(target, root))
        throw new PublishInputError(`${join(folder, projectPath)}: symbolic link leaves the folder (to ${target})`, projectPath);
    }
    if (excluded.some((dir) => isInside(target, dir))) return undefined;
    const info = await stat(target);
    if (info.isDirectory()) {
      if (ancestors.has(target))
        throw new PublishInputError(`${join(folder, projectPath)}: symbolic link loop (back to ${target})`, projectPath);
      return { folder: target, projectPath };
    }
    return info.isFile() ? { file: { path: projectPath, absolutePath: target, sizeBytes: info.size, stats: info } } : undefined;
  }

  // Several folders are read at once, and the entries of each a batch at a time, all
  // concurrently. When something is refused, what is under way finishes, nothing more starts,
  // and the failure at the first project path in key order is reported (so it does not
  // depend on timing).
  type Folder = { real: string; project: string; ancestors: Set<string> };
  const failures: { at: string; error: unknown }[] = [];
  async function visit({ real, project, ancestors }: Folder, more: Folder[]): Promise<void> {
    let entries: Dirent<Buffer>[];
    try {
      // As bytes: a name that is not UTF-8 would otherwise come back with U+FFFD in it, and
      // then be reported as missing (ENOENT) instead of by its real bytes.
      entries = await readdir(real, { withFileTypes: true, encoding: 'buffer' });
    } catch (error) {
      failures.push({ at: project, error });
      return;
    }
    for (let start = 0; start < entries.length && failures.length === 0; start += STAT_BATCH) {
      const batch = entries.slice(start, start + STAT_BATCH);
      const settled = await Promise.allSettled(batch.map((entry) => resolveEntry(real, project, entry, ancestors)));
      for (const [i, outcome] of settled.entries()) {
        if (outcome.status === 'rejected') {
          const name = batch[i]!.name.toString('utf8');
          failures.push({ at: project === '' ? name : `${project}/${name}`, error: outcome.reason });
          continue;
        }
        const found = outcome.value;
        if (found?.file) files.push(found.file);
        else if (found?.folder)
          more.push({ real: found.folder, project: found.projectPath, ancestors: new Set(ancestors).add(found.folder) });
      }
    }
  }
  const waiting: Folder[] = [{ real: root, project: '', ancestors: new Set([root]) }];
  await new Promise<void>((resolveWalk) => {
    let active = 0;
    const pump = () => {
      while (active < WALK_LANES && waiting.length > 0 && failures.length === 0) {
        active++;
        const folder = waiting.pop()!;
        void visit(folder, waiting)
          .catch((error: unknown) => failures.push({ at: folder.project, error }))
          .finally(() => {
            active--;
            pump();
          });
      }
      if (active === 0) resolveWalk();
    };
    pump();
  });
  if (failures.length > 0) {
    const { at, error } = failures.sort((x, y) => compareKeys(x.at, y.at))[0]!;
    if (error instanceof PublishInputError) throw error;
    // A folder that cannot be listed, an entry that vanished: named like every other input error.
    throw new PublishInputError(`${join(folder, at)}: cannot read: ${(error as Error).message}`, at === '' ? folder : at, error);
  }
  return files.sort((a, b) => compareKeys(a.path, b.path));
}

export async function hashFile(absolutePath: string): Promise<{ sha256: string; sizeBytes: number }> {
  const hash = nodeSha256();
  let sizeBytes = 0;
  for await (const chunk of createReadStream(absolutePath, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
    sizeBytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digestHex(), sizeBytes };
}

/**
 * A worker thread that hashes whole files: it reads each through one reused 1 MiB buffer and
 * hashes with node:crypto, so several files hash at once on several cores, in flat memory.
 * (Inline source, so the package needs no separate worker file.)
 */
const HASH_WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { openSync, readSync, closeSync } = require('node:fs');
const { createHash } = require('node:crypto');
const buffer = Buffer.allocUnsafe(1 << 20);
parentPort.on('message', ({ id, path }) => {
  let fd;
  try {
    fd = openSync(path, 'r');
    const hash = createHash('sha256');
    let sizeBytes = 0;
    for (let n; (n = readSync(fd, buffer, 0, buffer.length, null)) > 0; sizeBytes += n) hash.update(buffer.subarray(0, n));
    parentPort.postMessage({ id, sha256: hash.digest('hex'), sizeBytes });
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message || error) });
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
});
`;

/** Below this many bytes in all, files are hashed on the main thread: starting workers costs more. */
const WORKER_MIN_BYTES = 32 * 1024 * 1024;
/** Files handed to one worker ahead of its answers, so it never waits for the next. */
const WORKER_QUEUE = 2;

type Digest = { sha256: string; sizeBytes: number };

/**
 * Hashes `paths` (absolute), calling `onDone(index, digest)` as each finishes, in any order.
 * A file that cannot be read rejects with its index. Uses worker threads (one per core, at most
 * 4) for large totals, else the main thread with a few reads in flight.
 */
async function hashFiles(paths: string[], totalBytes: number, onDone: (index: number, digest: Digest) => void): Promise<void> {
  const workers = Math.min(4, availableParallelism(), paths.length);
  if (workers < 2 || totalBytes < WORKER_MIN_BYTES) {
    let next = 0;
    const failed: { index: number; error: unknown }[] = [];
    const lane = async () => {
      while (next < paths.length && failed.length === 0) {
        const index = next++;
        try {
          onDone(index, await hashFile(paths[index]!));
        } catch (error) {
          failed.push({ index, error });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(4, paths.length) }, lane));
    // The earliest file in order that failed, whatever finished first.
    const first = failed.sort((a, b) => a.index - b.index)[0];
    if (first) throw new HashFailure(first.index, first.error);
    return;
  }
  const pool = Array.from({ length: workers }, () => new Worker(HASH_WORKER_SOURCE, { eval: true }));
  try {
    await new Promise<void>((resolvePool, rejectPool) => {
      let next = 0;
      let outstanding = 0;
      let settled = false;
      const failed: HashFailure[] = [];
      const settle = (error?: unknown) => {
        if (settled) return;
        settled = true;
        if (error === undefined) resolvePool();
        else rejectPool(error);
      };
      const send = (worker: Worker) => {
        if (failed.length > 0 || next >= paths.length) return;
        const id = next++;
        outstanding++;
        worker.postMessage({ id, path: paths[id] });
      };
      for (const worker of pool) {
        worker.on('message', (answer: { id: number; sha256?: string; sizeBytes?: number; error?: string }) => {
          outstanding--;
          if (answer.error !== undefined) failed.push(new HashFailure(answer.id, new Error(answer.error)));
          else {
            try {
              onDone(answer.id, { sha256: answer.sha256!, sizeBytes: answer.sizeBytes! });
            } catch (error) {
              return settle(error); // a progress callback that throws stops the hashing
            }
          }
          send(worker);
          // Once nothing is under way: done, or the earliest file in order that failed.
          if (outstanding === 0) settle(failed.sort((x, y) => x.index - y.index)[0]);
        });
        worker.on('error', settle);
        worker.on('exit', (code) => settle(new Error(`a hashing worker stopped (exit code ${code})`)));
        for (let i = 0; i < WORKER_QUEUE; i++) send(worker);
      }
    });
  } finally {
    await Promise.all(pool.map((worker) => worker.terminate()));
  }
}

class HashFailure extends Error {
  constructor(
    readonly index: number,
    readonly reason: unknown,
  ) {
    super((reason as Error)?.message ?? String(reason));
  }
}

/**
 * Builds the loose index (formatVersion 2) of `folder`, hashing every file once. Large folders
 * are hashed on worker threads, several files at a time.
 */
export async function looseIndexFromFolder(
  folder: string,
  options: FolderIndexOptions = {},
): Promise<{ index: LooseIndex; files: FolderFile[] }> {
  const files = await listFolderFiles(folder, options);
  if (files.length === 0) throw new PublishInputError(`${folder}: no files to publish (the folder is empty)`, folder);
  const digests: Digest[] = new Array(files.length);
  let hashedFiles = 0;
  let hashedBytes = 0;
  try {
    await hashFiles(
      files.map((file) => file.absolutePath),
      files.reduce((sum, file) => sum + file.sizeBytes, 0),
      (index, digest) => {
        digests[index] = digest;
        hashedBytes += digest.sizeBytes;
        options.onProgress?.({ files: ++hashedFiles, bytes: hashedBytes });
      },
    );
  } catch (error) {
    if (!(error instanceof HashFailure)) throw error;
    const file = files[error.index]!;
    throw new PublishInputError(`${join(folder, file.path)}: cannot read: ${error.message}`, file.path, error.reason);
  }
  const entries: LooseFileEntry[] = files.map((file, i) => ({
    path: file.path,
    sizeBytes: digests[i]!.sizeBytes,
    sha256: digests[i]!.sha256,
    url: looseFileUrl(file.path, options.urlPrefix),
  }));
  return { index: { formatVersion: 2, rootPath: options.rootPath ?? '/project', files: entries }, files };
}
