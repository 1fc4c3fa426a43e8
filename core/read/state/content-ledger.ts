/**
 * What one source knows of each content besides its cache, kept in one place: held in memory
 * for the reads that will need it, on its way by a range of its own, being written to the
 * cache, or brought by a load of this source; and which files a prefetch asked for. "Is this
 * content here or coming?" is answered here once, for reads, loads, prefetches and the
 * planner alike, so that no byte is asked for twice (SPEC §7 "One request per bundle",
 * "Needed bytes").
 */
import { entryKey } from '../../format/project-index.js';
import type { Entry } from '../open/index-view.js';
import { HeldMembers } from './held-members.js';

export class ContentLedger {
  /** Verified contents held for the files that will read them, within `pendingBytes`. */
  readonly held: HeldMembers;
  /** Keys of files a prefetch asked for that have not been read (or released) since. */
  readonly asked = new Set<string>();
  /** Contents on their way by a range of their own beside a load (aside-ranges.ts): true once held, false when the host refused the range. */
  readonly #ranging = new Map<string, Promise<boolean>>();
  /**
   * Cache writes not yet settled, by content: what a load brought and the cache does not hold yet
   * (a worker's writes wait until the loads in flight are over). A read that finds nothing held
   * waits for its content's write rather than fetch it again.
   */
  readonly #writes = new Map<string, Promise<void>>();
  /** Per bundle, the contents its needed-bytes loads and ranges brought: a later plan of that bundle never brings them again. */
  readonly #brought = new Map<string, Set<string>>();
  /** Groups whose source (cache or network) a prefetch is deciding, by load key. */
  readonly #deciding = new Map<string, Promise<void>>();

  constructor(pendingBytes: number) {
    this.held = new HeldMembers(pendingBytes);
  }

  /** Held, or on its way here by a range or a pending cache write: nothing needs to fetch it. */
  has(sha256: string): boolean {
    return this.held.has(sha256) || this.onItsWay(sha256);
  }

  /** Not held yet, but coming: by a range of its own, or into the cache by a pending write. */
  onItsWay(sha256: string): boolean {
    return this.#ranging.has(sha256) || this.#writes.has(sha256);
  }

  /** `has`, or brought by an earlier load of bundle `loadKey` on this source (since let go). */
  had(loadKey: string, sha256: string): boolean {
    return this.has(sha256) || this.#brought.get(loadKey)?.has(sha256) === true;
  }

  /**
   * Holds `bytes` of content `sha256` for `files` (the files that will read it), pinned for those
   * a prefetch asked for; `from` is what vouches for them (a load's key, or `cache`).
   */
  holdFor(sha256: string, bytes: Uint8Array, files: readonly Entry[], from: string): void {
    let pins = 0;
    for (const file of files) if (this.asked.has(entryKey(file))) pins++;
    this.held.put(sha256, bytes, files.length, pins, from);
  }

  /** The range bringing `sha256` by itself, if one is on its way. */
  ranging(sha256: string): Promise<boolean> | undefined {
    return this.#ranging.get(sha256);
  }

  /** Notes `range` as bringing `sha256` until it settles. */
  range(sha256: string, range: Promise<boolean>): Promise<boolean> {
    const tracked = range.finally(() => {
      if (this.#ranging.get(sha256) === tracked) this.#ranging.delete(sha256);
    });
    this.#ranging.set(sha256, tracked);
    return tracked;
  }

  /** The pending cache write of `sha256`, if any. */
  writing(sha256: string): Promise<void> | undefined {
    return this.#writes.get(sha256);
  }

  /** Marks `contents` as written by `stored` until it settles: a read that finds them gone from memory waits for it. */
  markWrites(contents: Iterable<string>, stored: Promise<void>): void {
    const marked = [...contents];
    for (const sha256 of marked) this.#writes.set(sha256, stored);
    void stored.then(() => {
      for (const sha256 of marked) if (this.#writes.get(sha256) === stored) this.#writes.delete(sha256);
    });
  }

  /** Notes contents of bundle `loadKey` that a needed-bytes load or a range of this source brought. */
  noteBrought(loadKey: string, contents: Iterable<string>): void {
    const set = this.#brought.get(loadKey) ?? new Set<string>();
    for (const sha256 of contents) set.add(sha256);
    this.#brought.set(loadKey, set);
  }

  /** The prefetch deciding the group of `loadKey`, if one is: settles once it has. */
  deciding(loadKey: string): Promise<void> | undefined {
    return this.#deciding.get(loadKey);
  }

  /** Marks groups as being decided by a prefetch; returns the function that ends one group's wait. */
  beginDeciding(loadKeys: Iterable<string>): (loadKey: string) => void {
    const ends = new Map<string, () => void>();
    for (const loadKey of loadKeys) {
      if (this.#deciding.has(loadKey)) continue;
      let end!: () => void;
      const decision = new Promise<void>((resolve) => (end = resolve));
      this.#deciding.set(loadKey, decision);
      ends.set(loadKey, () => {
        if (this.#deciding.get(loadKey) === decision) this.#deciding.delete(loadKey);
        end();
      });
    }
    return (loadKey) => ends.get(loadKey)?.();
  }

  /** The source is disposed: nothing held, nothing asked for. */
  clear(): void {
    this.asked.clear();
    this.held.clear();
  }
}
