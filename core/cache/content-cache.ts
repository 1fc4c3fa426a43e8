/**
 * The content cache (SPEC §7 "Cache"): SHA-256 (lowercase hex) → bytes. Any object with these
 * two methods serves, so users can plug in their own store. Members and loose files are stored
 * under their own SHA-256, so loose and bundled indexes, and versions of a project, share one
 * cache. Readers re-check every entry they get back; a store need not verify.
 */
export interface ContentCache {
  get(sha256: string): Promise<Uint8Array | undefined>;
  put(sha256: string, bytes: Uint8Array): Promise<void>;
  /** Optional: drop an entry that failed its check on read. */
  delete?(sha256: string): Promise<void>;
  /** Optional: whether an entry is present, without reading it. */
  has?(sha256: string): Promise<boolean>;
}
