import { InvalidOptionError } from '../../errors.js';

/**
 * Verified contents that this source fetched (or read from its cache for a prefetch) and that
 * files not yet read will need (SPEC §7 "One request per bundle"). Each content is held once,
 * in a buffer no caller has seen; a read takes a copy, and the last expected read takes the
 * buffer itself, so every read owns what it gets.
 *
 * - Contents a prefetch asked for (`pins`) stay until read, whatever the budget.
 * - Other contents of a fetched bundle stay while the byte budget allows, the oldest leaving
 *   first. A content that reads are waiting for (`waiters`) never leaves before they take it.
 */
interface Held {
  bytes: Uint8Array;
  /** Reads still expected: files with this content not read since it arrived. */
  reads: number;
  /** Reads a prefetch asked for and that have not happened yet. */
  pins: number;
  /** Reads awaiting the load that brings this content, registered before it arrived. */
  waiters: number;
  /** What vouches for these bytes: the loads that brought them (by key), or the cache. Defect 9: one failing must not drop another's. */
  from: Set<string>;
}

export class HeldMembers {
  readonly #entries = new Map<string, Held>();
  readonly #waiting = new Map<string, number>();
  #bytes = 0;

  constructor(readonly maxBytes: number) {
    if (!(maxBytes >= 0)) throw new InvalidOptionError('pendingBytes', `pendingBytes must be a number ≥ 0, got ${maxBytes}`);
  }

  /** Bytes held now. */
  get sizeBytes(): number {
    return this.#bytes;
  }

  /** Bytes held past the budget's reach: contents a prefetch pinned or a read is waiting for. */
  get protectedBytes(): number {
    let bytes = 0;
    for (const entry of this.#entries.values()) if (entry.pins > 0 || entry.waiters > 0) bytes += entry.bytes.length;
    return bytes;
  }

  has(sha256: string): boolean {
    return this.#entries.has(sha256);
  }

  /**
   * Keeps `bytes` (a buffer the source owns) for `reads` expected reads, `pins` of them asked for
   * by a prefetch; `from` is what brought them (a load's key, or `cache`).
   */
  put(sha256: string, bytes: Uint8Array, reads: number, pins: number, from: string): void {
    const existing = this.#entries.get(sha256);
    if (existing) {
      existing.reads = Math.max(existing.reads, reads);
      existing.pins = Math.max(existing.pins, pins);
      existing.from.add(from);
      return;
    }
    const waiters = this.#waiting.get(sha256) ?? 0;
    if (reads < 1 && pins < 1 && waiters < 1) return;
    this.#entries.set(sha256, { bytes, reads: Math.max(reads, pins), pins, waiters, from: new Set([from]) });
    this.#bytes += bytes.length;
    this.#trim();
  }

  /** A prefetch asks for one more read of a held content: it now stays until that read. */
  pin(sha256: string): boolean {
    const entry = this.#entries.get(sha256);
    if (!entry) return false;
    entry.pins++;
    entry.reads = Math.max(entry.reads, entry.pins);
    return true;
  }

  /** Lets go of one pin (the prefetched file was released unread); the budget applies again. */
  unpin(sha256: string): void {
    const entry = this.#entries.get(sha256);
    if (!entry || entry.pins === 0) return;
    entry.pins--;
    entry.reads = Math.max(0, entry.reads - 1);
    this.#drop(sha256, entry);
    this.#trim();
  }

  /** A read will wait for a load that brings `sha256`: its content must not leave before the read takes it. */
  expect(sha256: string): void {
    this.#waiting.set(sha256, (this.#waiting.get(sha256) ?? 0) + 1);
    const entry = this.#entries.get(sha256);
    if (entry) entry.waiters++;
  }

  /** The read registered by `expect` gives up (its load failed or was aborted). */
  unexpect(sha256: string): void {
    this.#decrementWaiting(sha256);
    const entry = this.#entries.get(sha256);
    if (entry && entry.waiters > 0) {
      entry.waiters--;
      this.#drop(sha256, entry);
    }
  }

  /**
   * Bytes for one read, which the caller owns: a copy, or the held buffer itself when no other
   * read is expected. `waited` says the read was registered with `expect`; `pinned` that a
   * prefetch had asked for it.
   */
  take(sha256: string, options: { waited?: boolean; pinned?: boolean } = {}): Uint8Array | undefined {
    if (options.waited) this.#decrementWaiting(sha256);
    const entry = this.#entries.get(sha256);
    if (!entry) return undefined;
    if (options.waited && entry.waiters > 0) entry.waiters--;
    if (options.pinned && entry.pins > 0) entry.pins--;
    entry.reads = Math.max(0, entry.reads - 1);
    if (entry.reads === 0 && entry.waiters === 0 && entry.pins === 0) {
      this.#entries.delete(sha256);
      this.#bytes -= entry.bytes.length;
      return entry.bytes;
    }
    return entry.bytes.slice();
  }

  /**
   * The load `from` failed (SPEC §7: its bundle is rejected whole): lets go of what it brought,
   * whatever reads expected it, unless something else brought the same bytes too (another
   * bundle's load, the cache) or a read waiting for it has yet to take it.
   */
  forget(sha256: string, from: string): void {
    const entry = this.#entries.get(sha256);
    if (!entry) return;
    entry.from.delete(from);
    if (entry.from.size > 0 || entry.waiters > 0) return;
    this.#entries.delete(sha256);
    this.#bytes -= entry.bytes.length;
  }

  clear(): void {
    this.#entries.clear();
    this.#waiting.clear();
    this.#bytes = 0;
  }

  #decrementWaiting(sha256: string): void {
    const count = (this.#waiting.get(sha256) ?? 0) - 1;
    if (count > 0) this.#waiting.set(sha256, count);
    else this.#waiting.delete(sha256);
  }

  /** Forgets an entry no read expects any more. */
  #drop(sha256: string, entry: Held): void {
    if (entry.reads > 0 || entry.waiters > 0 || entry.pins > 0) return;
    this.#entries.delete(sha256);
    this.#bytes -= entry.bytes.length;
  }

  /** Over budget: the oldest entries that no prefetch pinned and no read awaits leave first. */
  #trim(): void {
    if (this.#bytes <= this.maxBytes) return;
    for (const [sha256, entry] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      if (entry.pins > 0 || entry.waiters > 0) continue;
      this.#entries.delete(sha256);
      this.#bytes -= entry.bytes.length;
    }
  }
}
