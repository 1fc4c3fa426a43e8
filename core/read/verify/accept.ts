/**
 * Accepting a bundle read whole (SPEC §7 "Verified"): `acceptBundle` (the check that hashes each
 * byte once) and `verifyBundle` (the whole-bundle check that names the damage). A game's reader
 * streams bundles (stream-check.ts) and needs these only for a bundle whose layout is not the
 * canonical one (read whole, the import going out with its request), a damaged one, or range and
 * delta reads (bundle-ranges.ts): so they are a module of their own, imported then.
 */
import { BundleIntegrityError, MemberDecodeError } from '../../errors.js';
import { decodedOrRefusal } from '../../format/encoded-member.js';
import type { BundleLayout } from '../../format/awkb.js';
import type { BundleEntry } from '../../format/project-index.js';
import { sha256Hex } from '../../hash.js';
import { InThreadDigests, type DigestPool, type WorkerStoreAccess } from '../workers/digest-pool.js';
import { canonicalLayoutFor, cutShort, describeDamaged, spanOf, type ExpectedMember } from './verify.js';
import { checkMember } from './check-member.js';

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
  const wholeMatches = bytes.length === listing.sizeBytes && checkMember(listing, bytes, await sha256Hex(bytes)) === undefined;
  const verified: VerifiedMember[] = [];
  const damaged: string[] = [];
  let refusal: MemberDecodeError | undefined;
  for (const member of members) {
    const span = spanOf(member);
    const inside = member.offset + span <= bytes.length;
    let memberBytes: Uint8Array | MemberDecodeError | undefined = inside ? bytes.subarray(member.offset, member.offset + span) : undefined;
    // An encoded member (SPEC §5a): its stored bytes decoded; the SHA-256 is of what they decode to.
    if (memberBytes && member.encoding !== undefined) memberBytes = await decodedOrRefusal(memberBytes, member);
    if (memberBytes instanceof MemberDecodeError) refusal ??= memberBytes;
    if (memberBytes instanceof Uint8Array && checkMember(member, memberBytes, await sha256Hex(memberBytes)) === undefined)
      verified.push({ ...member, bytes: memberBytes });
    else damaged.push(member.key);
  }
  if (wholeMatches && damaged.length === 0) return verified;

  const details = url === undefined ? {} : { url };
  const what = `bundle ${listing.sha256}`;
  // Only a bundle that failed needs the AWKB decoder (structure.ts): imported then. Where it is
  // not carried (the service worker's build leaves it out), the members are still named.
  const decoder = await import('./structure.js').catch(() => undefined);
  const structure = decoder?.structuralProblem(bytes, members);
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
    const why = refusal ? `; ${refusal.message}` : '';
    throw new BundleIntegrityError('members', `${what}: ${describeDamaged(damaged)}${why}${also}`, damaged, {
      ...details,
      ...(refusal ? { cause: refusal } : {}),
    });
  }
  const size = bytes.length === listing.sizeBytes ? '' : ` (${bytes.length} bytes, listed ${listing.sizeBytes})`;
  throw new BundleIntegrityError(
    'header',
    `${what}: bytes do not match the listed SHA-256${size}, though every member${decoder ? ' and the table do' : ' does'}`,
    [],
    details,
  );
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
      // An encoded member's stored bytes are decoded in the pool (SPEC §5a): its part is the decoded bytes.
      ranges: written.map((record) => ({
        input: 0,
        offset: record.offset,
        length: spanOf(record),
        ...(record.encoding === undefined ? {} : { decode: { key: record.key, sizeBytes: record.sizeBytes, encoding: record.encoding } }),
      })),
      split: true,
      transfer: true,
      // The store gets only contents that match (the worker compares each digest with its key).
      ...(store ? { store: { ...store, keys: written.map((record) => record.sha256) } } : {}),
    });
    if (written.every((record, i) => checkMember(record, parts![i], digests[i]) === undefined)) {
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
