/**
 * A content-addressed folder for Node (SPEC §7 "Cache"): `<dir>/<first 2 hex>/<sha256>`, written
 * atomically (atomic-write.ts, as the publisher writes), so a reader never sees half an entry. The reader
 * re-checks every entry it gets; a bad one is deleted and fetched again.
 *
 * The folder is shared ground (other processes, other tools, a user's hands), so an entry is
 * read only when it is a regular file no larger than `maxEntryBytes`: a FIFO, a link, a folder
 * or a device in its place is removed and counts as missing, and a FIFO can never block a read.
 * `clear()` works while other processes write into the folder.
 *
 * Writers in other processes and in other `worker_threads` of this one share the folder safely:
 * each write goes through a temporary name no other writer makes (atomic-write.ts).
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import type { ContentCache } from '../cache/content-cache.js';
import { InvalidOptionError } from '../errors.js';
import { SHA256_HEX } from '../format/sha256.js';
import { writeFileAtomic } from './atomic-write.js';

/** Larger entries are not read: well above a bundle member, below Node's Buffer limit. */
const DEFAULT_MAX_ENTRY_BYTES = 2 ** 31;
/** O_NONBLOCK: opening a FIFO does not wait for a writer; O_NOFOLLOW: a link is not an entry. */
const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);
/** A put whose folder a concurrent clear() took away starts again; this many times at most. */
const PUT_ATTEMPTS = 3;

export interface NodeFolderCacheOptions {
  /** Entries larger than this are treated as missing (and removed). Default 2 GiB. */
  maxEntryBytes?: number;
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code;

export class NodeFolderCache implements ContentCache {
  readonly maxEntryBytes: number;

  constructor(
    readonly dir: string,
    options: NodeFolderCacheOptions = {},
  ) {
    this.maxEntryBytes = options.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES;
    if (!(Number.isSafeInteger(this.maxEntryBytes) && this.maxEntryBytes >= 0))
      throw new InvalidOptionError('maxEntryBytes', `maxEntryBytes must be a non-negative integer, got ${options.maxEntryBytes}`);
  }

  private pathOf(sha256: string): string {
    if (!SHA256_HEX.test(sha256))
      throw new InvalidOptionError('sha256', `cache key must be a lowercase hex SHA-256, got ${JSON.stringify(sha256)}`);
    return join(this.dir, sha256.slice(0, 2), sha256);
  }

  async get(sha256: string): Promise<Uint8Array | undefined> {
    const path = this.pathOf(sha256);
    let handle;
    try {
      handle = await open(path, READ_FLAGS);
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return undefined;
      if (errorCode(error) === 'ELOOP' || errorCode(error) === 'EISDIR') return this.dropStrayEntry(path);
      throw error;
    }
    try {
      const info = await handle.stat();
      if (!info.isFile() || info.size > this.maxEntryBytes) {
        await handle.close();
        handle = undefined;
        return await this.dropStrayEntry(path);
      }
      // Exactly the size fstat gave: a file that grows meanwhile cannot make us read on forever.
      const bytes = new Uint8Array(info.size);
      let filled = 0;
      while (filled < bytes.length) {
        const { bytesRead } = await handle.read(bytes, filled, bytes.length - filled, filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return filled === bytes.length ? bytes : bytes.subarray(0, filled); // a short one fails its SHA-256 check
    } finally {
      await handle?.close();
    }
  }

  /** Something that is not an entry (folder, FIFO, link, oversized file) sits at `path`. */
  private async dropStrayEntry(path: string): Promise<undefined> {
    await rm(path, { recursive: true, force: true }).catch(() => undefined);
    return undefined;
  }

  async has(sha256: string): Promise<boolean> {
    return lstat(this.pathOf(sha256)).then(
      (info) => info.isFile() && info.size <= this.maxEntryBytes,
      () => false,
    );
  }

  async put(sha256: string, bytes: Uint8Array): Promise<void> {
    const path = this.pathOf(sha256);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.putOnce(path, bytes);
      } catch (error) {
        // ENOENT: a clear() moved the folder away between our mkdir and our rename.
        if (errorCode(error) !== 'ENOENT' || attempt >= PUT_ATTEMPTS) throw error;
      }
    }
  }

  private async putOnce(path: string, bytes: Uint8Array): Promise<void> {
    await mkdir(join(path, '..'), { recursive: true });
    // A folder in an entry's place is removed: the cache owns its folder.
    await writeFileAtomic(path, bytes, { replaceFolder: true });
  }

  async delete(sha256: string): Promise<void> {
    await rm(this.pathOf(sha256), { recursive: true, force: true });
  }

  /**
   * Empties the cache, also while other processes write into it: the folder is first renamed
   * aside (atomic; a writer then makes a fresh folder), and the renamed copy removed, which no
   * writer can reach any more. Where the rename is impossible (a mount point), entries are
   * removed one by one, and ones that vanish or fill meanwhile are let be.
   */
  async clear(): Promise<void> {
    const aside = `${this.dir}.clearing-${process.pid}-${threadId}-${randomBytes(6).toString('hex')}`;
    try {
      await rename(this.dir, aside);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return;
      return this.clearInPlace();
    }
    await rm(aside, { recursive: true, force: true, maxRetries: 3 });
  }

  private async clearInPlace(): Promise<void> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    await Promise.all(
      names.map((name) =>
        rm(join(this.dir, name), { recursive: true, force: true, maxRetries: 3 }).catch((error: unknown) => {
          if (errorCode(error) !== 'ENOENT' && errorCode(error) !== 'ENOTEMPTY') throw error;
        }),
      ),
    );
  }
}
