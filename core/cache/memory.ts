/**
 * An in-memory `ContentCache` (SPEC §7 "Cache") bounded by bytes: when a put would go over
 * `maxBytes`, the least recently used entries (by get or put) leave first. An entry larger than
 * `maxBytes` is not stored. Works anywhere; nothing persists.
 */
import { InvalidOptionError } from '../errors.js';
import type { ContentCache } from './content-cache.js';

export interface MemoryCacheOptions {
  /** The most bytes held at once; 64 MiB unless given. */
  maxBytes?: number;
}

export const DEFAULT_MEMORY_CACHE_BYTES = 64 * 1024 * 1024;

export class MemoryCache implements ContentCache {
  readonly maxBytes: number;
  /** `put` keeps a copy, `get` hands out a copy. */
  readonly copiesBytes = true;
  // A Map iterates in insertion order; re-inserting on use keeps the least recently used first.
  readonly #entries = new Map<string, Uint8Array>();
  #bytes = 0;

  constructor(options: MemoryCacheOptions = {}) {
    const maxBytes = options.maxBytes ?? DEFAULT_MEMORY_CACHE_BYTES;
    if (!(maxBytes >= 0))
      throw new InvalidOptionError('maxBytes', `MemoryCache maxBytes must be a number ≥ 0, got ${String(options.maxBytes)}`);
    this.maxBytes = maxBytes;
  }

  /** Bytes held now. */
  get byteLength(): number {
    return this.#bytes;
  }

  /** Entries held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** The keys held, least recently used first. */
  keys(): string[] {
    return [...this.#entries.keys()];
  }

  async get(sha256: string): Promise<Uint8Array | undefined> {
    const bytes = this.#entries.get(sha256);
    if (bytes === undefined) return undefined;
    this.#entries.delete(sha256);
    this.#entries.set(sha256, bytes);
    // A copy: a caller that writes into what it got cannot change the cached entry.
    return bytes.slice();
  }

  async put(sha256: string, bytes: Uint8Array): Promise<void> {
    this.#remove(sha256);
    if (bytes.byteLength > this.maxBytes) return;
    while (this.#bytes + bytes.byteLength > this.maxBytes) {
      const oldest = this.#entries.keys().next().value as string;
      this.#remove(oldest);
    }
    // slice() copies only the viewed bytes, so a view into a larger buffer holds no more than it shows.
    this.#entries.set(sha256, bytes.slice());
    this.#bytes += bytes.byteLength;
  }

  async has(sha256: string): Promise<boolean> {
    return this.#entries.has(sha256);
  }

  async hasMany(sha256s: readonly string[]): Promise<boolean[]> {
    return sha256s.map((sha256) => this.#entries.has(sha256));
  }

  async getMany(sha256s: readonly string[]): Promise<(Uint8Array | undefined)[]> {
    return Promise.all(sha256s.map((sha256) => this.get(sha256)));
  }

  async putMany(entries: readonly (readonly [string, Uint8Array])[]): Promise<void> {
    // put() has no await: every copy is taken before this returns.
    await Promise.all(entries.map(([sha256, bytes]) => this.put(sha256, bytes)));
  }

  async delete(sha256: string): Promise<void> {
    this.#remove(sha256);
  }

  async clear(): Promise<void> {
    this.#entries.clear();
    this.#bytes = 0;
  }

  #remove(sha256: string): void {
    const bytes = this.#entries.get(sha256);
    if (bytes === undefined) return;
    this.#entries.delete(sha256);
    this.#bytes -= bytes.byteLength;
  }
}
