import { MemoryCache } from '../../core/cache/memory.js';

/** A MemoryCache that records every content it is asked to store. */
export class RecordingCache extends MemoryCache {
  readonly puts: string[] = [];
  override async put(key: string, bytes: Uint8Array): Promise<void> {
    this.puts.push(key);
    return super.put(key, bytes);
  }
  override async putMany(entries: readonly (readonly [string, Uint8Array])[]): Promise<void> {
    for (const [key] of entries) this.puts.push(key);
    return super.putMany(entries);
  }
}
