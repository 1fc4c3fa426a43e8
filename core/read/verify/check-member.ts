/**
 * The one check of a member's bytes against what the index (or a bundle's table) lists for it
 * (SPEC §7 "Verified"): its size, then its SHA-256, of the decoded bytes for an encoded member
 * (SPEC §5a). Whoever hashed the bytes (this thread, a worker, a pool of one's own), every place
 * that hands a member over, keeps it or stores it asks here, so the rule is written once.
 * Browser-safe, and small: the worker program carries it too.
 */

/** Why bytes are not the member listed: too few or too many of them, or another SHA-256. */
export type MemberFault = 'size' | 'sha256';

/**
 * `undefined` when `bytes` are the member `expected` lists and `digest` is their SHA-256 (lowercase
 * hex); else what differs. No bytes, or no digest (a decode that refused), is a `'sha256'` fault.
 */
export function checkMember(
  expected: { readonly sha256: string; readonly sizeBytes: number },
  bytes: { readonly length: number } | undefined,
  digest: string | undefined,
): MemberFault | undefined {
  if (bytes !== undefined && bytes.length !== expected.sizeBytes) return 'size';
  return bytes !== undefined && digest === expected.sha256 ? undefined : 'sha256';
}
