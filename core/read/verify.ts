/**
 * Checking a fetched bundle against the index (SPEC §7 "Verified"): its listed size and
 * SHA-256, then each member against its entry. A bundle that fails is rejected whole, and the
 * error names every damaged member, or the `header` or `table` when no member is damaged.
 */
import { BundleIntegrityError, FileIntegrityError, KEY_PREVIEW_CHARACTERS, MAX_PROBLEMS_IN_MESSAGE, previewValue } from '../errors.js';
import { layoutBundle, type BundleLayout } from '../format/awkb.js';
import type { BundleEntry } from '../format/project-index.js';
import { sha256Hex } from '../hash.js';
import { InThreadDigests, type DigestPool, type WorkerStoreAccess } from './digest-pool.js';

/** What the index says of one member of a bundle. */
export interface ExpectedMember {
  /** The table key: path, or id when ids replace paths. */
  key: string;
  offset: number;
  sizeBytes: number;
  sha256: string;
}

export interface VerifiedMember extends ExpectedMember {
  /** A view into the bundle bytes. */
  bytes: Uint8Array;
}

/**
 * Verifies `bytes` as the bundle `listing` holding `members`, and returns each member's bytes
 * (views into `bytes`). Throws `BundleIntegrityError` naming every damaged member, or the part.
 */
export async function verifyBundle(
  bytes: Uint8Array,
  listing: BundleEntry,
  members: readonly ExpectedMember[],
  url?: string,
): Promise<VerifiedMember[]> {
  const wholeMatches = bytes.length === listing.sizeBytes && (await sha256Hex(bytes)) === listing.sha256;
  const verified: VerifiedMember[] = [];
  const damaged: string[] = [];
  for (const member of members) {
    const inside = member.offset + member.sizeBytes <= bytes.length;
    const memberBytes = inside ? bytes.subarray(member.offset, member.offset + member.sizeBytes) : undefined;
    if (memberBytes && (await sha256Hex(memberBytes)) === member.sha256) verified.push({ ...member, bytes: memberBytes });
    else damaged.push(member.key);
  }
  if (wholeMatches && damaged.length === 0) return verified;

  const details = url === undefined ? {} : { url };
  const what = `bundle ${listing.sha256}`;
  // Only a bundle that failed needs the AWKB decoder (structure.ts): imported then.
  const { structuralProblem } = await import('./structure.js');
  const structure = structuralProblem(bytes, members);
  // A broken header means nothing after it can be placed (a truncated file has no members at
  // all), so the header is named alone; otherwise damaged members come first, then the table.
  if (structure?.part === 'header' || (structure && damaged.length === 0)) {
    throw new BundleIntegrityError(structure.part, `${what}: ${structure.message}`, [], { ...details, cause: structure.cause });
  }
  if (damaged.length > 0 && bytes.length < listing.sizeBytes) {
    // Cut short: the cause comes first. The members past the cut are damaged by it, and so is
    // the table's fit (a member "outside the data area"), which is therefore not named again.
    throw new BundleIntegrityError(
      'members',
      `${what}: ${cutShort(bytes.length, listing.sizeBytes)}; ${describeDamaged(damaged)}`,
      damaged,
      details,
    );
  }
  if (damaged.length > 0) {
    const also = structure ? `; also ${structure.message}` : '';
    throw new BundleIntegrityError('members', `${what}: ${describeDamaged(damaged)}${also}`, damaged, details);
  }
  const size = bytes.length === listing.sizeBytes ? '' : ` (${bytes.length} bytes, listed ${listing.sizeBytes})`;
  throw new BundleIntegrityError(
    'header',
    `${what}: bytes do not match the listed SHA-256${size}, though every member and the table do`,
    [],
    details,
  );
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
  checkFileDigest(await sha256Hex(bytes), expected, where);
}

/** The size half of `verifyFileBytes`, for callers that hash elsewhere (a worker). */
export function checkFileSize(length: number, expected: { sizeBytes: number }, where: { url?: string; path?: string; id?: string }): void {
  if (length !== expected.sizeBytes) {
    throw new FileIntegrityError(`${nameOf(where)}: got ${length} bytes, the index says ${expected.sizeBytes}`, where);
  }
}

/** The SHA-256 half of `verifyFileBytes`. */
export function checkFileDigest(actual: string, expected: { sha256: string }, where: { url?: string; path?: string; id?: string }): void {
  if (actual !== expected.sha256)
    throw new FileIntegrityError(`${nameOf(where)}: SHA-256 ${actual} differs from the index's ${expected.sha256}`, where);
}

function nameOf(where: { url?: string; path?: string; id?: string }): string {
  return where.path ?? where.id ?? where.url ?? 'file';
}

/** A bundle that passed: each distinct content's bytes, in a buffer of its own, by SHA-256. */
export interface AcceptedBundle {
  contents: Map<string, Uint8Array>;
  /** When `store` was given and the pool wrote the contents itself: settles with that write. */
  stored?: Promise<void>;
}

/**
 * Verifies a fetched bundle hashing each byte once (SPEC §7 "Verified", the equivalent check):
 * its size is the listed size, its header and table equal the canonical ones (§5) built from the
 * index's records, the index's offsets are the canonical layout (so the distinct contents tile
 * the data exactly), and each distinct content matches its SHA-256. The hashing, and the cutting
 * of each content into a buffer of its own, run in `pool` (Web Workers in browsers).
 *
 * With `store`, the pool also writes the contents to that IndexedDB store itself, when every
 * one of them matches (a bundle that fails stores nothing, SPEC §7).
 *
 * `bytes` is given up: with a worker pool its buffer moves to a worker. When the quick check
 * fails, the bundle is judged the slow way (`verifyBundle`, with the whole-bundle SHA-256) to
 * name the damage; see FORMAT.md "Verifying a bundle".
 */
export async function acceptBundle(
  bytes: Uint8Array,
  listing: BundleEntry,
  members: readonly ExpectedMember[],
  pool: DigestPool = new InThreadDigests(),
  url?: string,
  store?: WorkerStoreAccess,
): Promise<AcceptedBundle> {
  const layout = canonicalLayout(bytes, listing, members);
  if (layout) {
    const written = layout.written.map((index) => layout.records[index]!);
    const { inputs, digests, parts, stored } = await pool.digest({
      inputs: [bytes],
      ranges: written.map((record) => ({ input: 0, offset: record.offset, length: record.sizeBytes })),
      split: true,
      transfer: true,
      // The store gets only contents that match (the worker compares each digest with its key).
      ...(store ? { store: { ...store, keys: written.map((record) => record.sha256) } } : {}),
    });
    if (written.every((record, i) => digests[i] === record.sha256)) {
      return { contents: new Map(written.map((record, i) => [record.sha256, parts![i]!])), ...(stored ? { stored } : {}) };
    }
    bytes = inputs[0]!;
  }
  // Damaged (or laid out in a way the quick check does not know): judge it whole, naming the damage.
  const verified = await verifyBundle(bytes, listing, members, url);
  const contents = new Map<string, Uint8Array>();
  for (const member of verified) if (!contents.has(member.sha256)) contents.set(member.sha256, member.bytes.slice());
  return { contents };
}

/** The canonical layout of `members`, when `bytes` has its size and its exact header and table. */
function canonicalLayout(bytes: Uint8Array, listing: BundleEntry, members: readonly ExpectedMember[]): BundleLayout | undefined {
  const layout = bytes.length === listing.sizeBytes ? canonicalLayoutFor(listing, members) : undefined;
  if (!layout) return undefined;
  const head = layout.head;
  for (let i = 0; i < head.length; i++) if (bytes[i] !== head[i]) return undefined;
  return layout;
}

/**
 * The layout SPEC §5 gives the index's records of a bundle, when the index's offsets and the
 * listed size are that layout's; `undefined` when they are not (a bundle another writer laid out).
 */
export function canonicalLayoutFor(listing: { sizeBytes: number }, members: readonly ExpectedMember[]): BundleLayout | undefined {
  let layout: BundleLayout;
  try {
    layout = layoutBundle(members.map(({ key, sizeBytes, sha256 }) => ({ key, sizeBytes, sha256 })));
  } catch {
    return undefined;
  }
  if (layout.sizeBytes !== listing.sizeBytes) return undefined;
  const offsets = new Map(layout.records.map((record) => [record.key, record.offset]));
  return members.some((member) => offsets.get(member.key) !== member.offset) ? undefined : layout;
}
