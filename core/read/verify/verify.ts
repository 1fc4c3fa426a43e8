/**
 * Checking fetched bytes against the index (SPEC §7 "Verified"): a loose file or a member read
 * alone, the canonical layout of a bundle's records, and the words of a bundle's damage. The
 * checks of a bundle read whole (`acceptBundle`, `verifyBundle`) are in accept.ts.
 */
import { FileIntegrityError, KEY_PREVIEW_CHARACTERS, MAX_PROBLEMS_IN_MESSAGE, previewValue } from '../../errors.js';
import { canonicalBundleLayout, type BundleLayout, type BundleRecord } from '../../format/awkb.js';
import { sha256Hex } from '../../hash.js';
import { checkMember } from './check-member.js';

/** What the index says of one member of a bundle: the table record it must match (key, offset, sizes, SHA-256, encoding). */
export type ExpectedMember = BundleRecord;

/** The bytes a member takes in its bundle: its stored size when encoded (SPEC §5a), else its size. */
export function spanOf(member: { sizeBytes: number; storedBytes?: number }): number {
  return member.storedBytes ?? member.sizeBytes;
}

/** The cause of a bundle that ends early, said first wherever one is reported. */
export function cutShort(received: number, listedBytes: number): string {
  return `cut short: ${received} of its listed ${listedBytes} bytes`;
}

/** "damaged member(s) a, b and 3 more": every one is in the error's `damaged`; the message names the first few, so its size does not grow with the bundle. */
export function describeDamaged(damaged: readonly string[]): string {
  const shown = damaged
    .slice(0, MAX_PROBLEMS_IN_MESSAGE)
    .map((key) => previewValue(key, KEY_PREVIEW_CHARACTERS))
    .join(', ');
  const more = damaged.length > MAX_PROBLEMS_IN_MESSAGE ? ` and ${damaged.length - MAX_PROBLEMS_IN_MESSAGE} more` : '';
  return `damaged member${damaged.length > 1 ? 's' : ''} ${shown}${more}`;
}

/** Checks one loose file, or one member read alone by range, against its entry. */
export async function verifyFileBytes(
  bytes: Uint8Array,
  expected: { sizeBytes: number; sha256: string },
  where: { url?: string; path?: string; id?: string },
): Promise<void> {
  checkFileSize(bytes.length, expected, where);
  checkFileBytes(bytes, await sha256Hex(bytes), expected, where);
}

/** The size check of `verifyFileBytes`, made before hashing (a file of the wrong size is not hashed). */
export function checkFileSize(length: number, expected: { sizeBytes: number }, where: { url?: string; path?: string; id?: string }): void {
  if (length !== expected.sizeBytes) {
    throw new FileIntegrityError(`${nameOf(where)}: got ${length} bytes, the index says ${expected.sizeBytes}`, where);
  }
}

/** Bytes hashed elsewhere (a worker, the pool) checked against their entry (`checkMember`): a typed error naming the file. */
export function checkFileBytes(
  bytes: Uint8Array | undefined,
  digest: string | undefined,
  expected: { sizeBytes: number; sha256: string },
  where: { url?: string; path?: string; id?: string },
): void {
  const fault = checkMember(expected, bytes, digest);
  if (fault === 'size') checkFileSize(bytes!.length, expected, where);
  else if (fault) throw new FileIntegrityError(`${nameOf(where)}: SHA-256 ${digest} differs from the index's ${expected.sha256}`, where);
}

function nameOf(where: { url?: string; path?: string; id?: string }): string {
  return where.path ?? where.id ?? where.url ?? 'file';
}

/**
 * The layout SPEC §5 gives the index's records of a bundle, in the data order their offsets show
 * (key order, or a load group's first-use order), when the index's offsets and the listed size
 * are that layout's; `undefined` when they are not (a bundle another writer laid out).
 */
export function canonicalLayoutFor(listing: { sizeBytes: number }, members: readonly ExpectedMember[]): BundleLayout | undefined {
  return canonicalBundleLayout(listing, members);
}
