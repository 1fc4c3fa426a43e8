/**
 * The loose index of a folder (SPEC §8): every regular file below it, symbolic links followed
 * (a link loop or a link that leaves the folder is refused), except `.DS_Store` and
 * `Thumbs.db`, and never the out folder when that lies inside the input.
 */
import { createReadStream } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { PublishInputError } from '../publish/bundle-writer.js';
import { looseFileUrl, unsafePathReason } from '../format/paths.js';
import { compareKeys } from '../format/paths.js';
import type { LooseFileEntry, LooseIndex } from '../format/project-index.js';
import { nodeSha256 } from './hash.js';

const SKIPPED_NAMES = new Set(['.DS_Store', 'Thumbs.db']);

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
}

function isInside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep) && rel !== '..' && !/^[A-Za-z]:/.test(rel));
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

  async function walk(realDir: string, projectDir: string, ancestors: Set<string>): Promise<void> {
    const entries = await readdir(realDir, { withFileTypes: true });
    for (const entry of entries) {
      if (SKIPPED_NAMES.has(entry.name)) continue;
      const projectPath = projectDir === '' ? entry.name : `${projectDir}/${entry.name}`;
      const reason = unsafePathReason(projectPath);
      if (reason !== undefined) throw new PublishInputError(`${join(folder, projectPath)}: unsafe project path ${JSON.stringify(projectPath)}: ${reason}`, projectPath);
      const onDisk = join(realDir, entry.name);
      let target = onDisk;
      if (entry.isSymbolicLink()) {
        try {
          target = await realpath(onDisk);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          const why = code === 'ELOOP' ? 'is a symbolic link loop' : `is a broken symbolic link (${code})`;
          throw new PublishInputError(`${join(folder, projectPath)}: ${why}`, projectPath, error);
        }
        if (!isInside(target, root)) throw new PublishInputError(`${join(folder, projectPath)}: symbolic link leaves the folder (to ${target})`, projectPath);
      }
      if (excluded.some((dir) => isInside(target, dir))) continue;
      const info = await stat(target);
      if (info.isDirectory()) {
        if (ancestors.has(target)) throw new PublishInputError(`${join(folder, projectPath)}: symbolic link loop (back to ${target})`, projectPath);
        await walk(target, projectPath, new Set(ancestors).add(target));
      } else if (info.isFile()) {
        files.push({ path: projectPath, absolutePath: target, sizeBytes: info.size });
      }
    }
  }
  await walk(root, '', new Set([root]));
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

/** Builds the loose index (formatVersion 2) of `folder`, hashing every file once. */
export async function looseIndexFromFolder(folder: string, options: FolderIndexOptions = {}): Promise<{ index: LooseIndex; files: FolderFile[] }> {
  const files = await listFolderFiles(folder, options);
  if (files.length === 0) throw new PublishInputError(`${folder}: no files to publish (the folder is empty)`, folder);
  const entries: LooseFileEntry[] = [];
  let bytes = 0;
  for (const file of files) {
    let digest;
    try {
      digest = await hashFile(file.absolutePath);
    } catch (error) {
      throw new PublishInputError(`${join(folder, file.path)}: cannot read: ${(error as Error).message}`, file.path, error);
    }
    bytes += digest.sizeBytes;
    entries.push({ path: file.path, sizeBytes: digest.sizeBytes, sha256: digest.sha256, url: looseFileUrl(file.path, options.urlPrefix) });
    options.onProgress?.({ files: entries.length, bytes });
  }
  return { index: { formatVersion: 2, rootPath: options.rootPath ?? '/project', files: entries }, files };
}
