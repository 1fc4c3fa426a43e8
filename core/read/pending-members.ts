/**
 * Members of fetched bundles that nobody has read yet, held in memory when there is no cache
 * (SPEC §7 "One request per bundle"): up to a byte budget, the oldest dropped first.
 */
export class PendingMembers {
  private readonly entries = new Map<string, { bytes: Uint8Array; readers: number }>();
  private bytes = 0;

  constructor(readonly maxBytes: number) {}

  get sizeBytes(): number {
    return this.bytes;
  }

  /** Keeps `bytes` until `readers` reads (the files that share this content) have taken it. */
  put(sha256: string, bytes: Uint8Array, readers = 1): void {
    if (bytes.length > this.maxBytes || this.entries.has(sha256) || readers < 1) return;
    this.entries.set(sha256, { bytes, readers });
    this.bytes += bytes.length;
    for (const [oldest, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= old.bytes.length;
    }
  }

  has(sha256: string): boolean {
    return this.entries.has(sha256);
  }

  /** Hands the member over; forgets it once every file with this content has been read. */
  take(sha256: string): Uint8Array | undefined {
    const entry = this.entries.get(sha256);
    if (!entry) return undefined;
    if (--entry.readers === 0) {
      this.entries.delete(sha256);
      this.bytes -= entry.bytes.length;
    }
    return entry.bytes;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}
