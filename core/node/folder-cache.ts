/**
 * A content-addressed folder for Node (SPEC §7 "Cache"): `<dir>/<first 2 hex>/<sha256>`, written
 * through a temporary file and a rename, so a reader never sees half an entry. The reader
 * re-checks every entry it gets; a bad one is deleted and fetched again.
 */
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ContentCache } from '../cache/content-cache.js';

const SHA256_HEX = /^[0-9a-f]{64}$/;
let counter = 0;

export class NodeFolderCache implements ContentCache {
  constructor(readonly dir: string) {}

  private pathOf(sha256: string): string {
    if (!SHA256_HEX.test(sha256)) throw new TypeError(`cache key must be a lowercase hex SHA-256, got ${JSON.stringify(sha256)}`);
    return join(this.dir, sha256.slice(0, 2), sha256);
  }

  async get(sha256: string): Promise<Uint8Array | undefined> {
    try {
      return new Uint8Array(await readFile(this.pathOf(sha256)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async has(sha256: string): Promise<boolean> {
    return stat(this.pathOf(sha256)).then((info) => info.isFile(), () => false);
  }

  async put(sha256: string, bytes: Uint8Array): Promise<void> {
    const path = this.pathOf(sha256);
    await mkdir(join(this.dir, sha256.slice(0, 2)), { recursive: true });
    const temporary = `${path}.tmp-${process.pid}-${++counter}`;
    try {
      await writeFile(temporary, bytes);
      await rename(temporary, path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
  }

  async delete(sha256: string): Promise<void> {
    await rm(this.pathOf(sha256), { force: true });
  }

  async clear(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}
