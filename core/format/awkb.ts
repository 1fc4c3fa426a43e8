/**
 * The AWKB bundle file (SPEC §5): a 16-byte header, a table of records sorted by key, then
 * each distinct content once. Big-endian throughout; no trailer, no timestamps. Version 1 when
 * no member is encoded; version 2 (SPEC §5a) when some member is stored encoded, its records
 * then holding a stored size and an encoding byte too.
 */
import { InvalidOptionError } from '../errors.js';
import { SHA256_HEX } from './sha256.js';
import { hexInto } from '../hash.js';
import { compareBytes, utf8 } from './paths.js';

export const AWKB_MAGIC = new Uint8Array([0x41, 0x57, 0x4b, 0x42]); // "AWKB"
export const AWKB_VERSION = 1;
/** The version of a bundle with encoded members (SPEC §5a). */
export const AWKB_VERSION_ENCODED = 2;
export const HEADER_BYTES = 16;
/** Fixed bytes of a version 1 record besides its key: key length (2), offset (8), size (8), SHA-256 (32). */
export const RECORD_FIXED_BYTES = 2 + 8 + 8 + 32;
/** Fixed bytes of a version 2 record besides its key (SPEC §5a): key length, offset, stored size, size, SHA-256, encoding. */
export const RECORD_FIXED_BYTES_ENCODED = 2 + 8 + 8 + 8 + 32 + 1;
const MAX_KEY_BYTES = 0xffff;

/** How a member's bytes are stored when not as they are (SPEC §5a); absent means stored as is. */
export type MemberEncoding = 'deflate-raw';
/** The encodings this implementation reads and writes, by name. */
export const MEMBER_ENCODINGS: readonly MemberEncoding[] = ['deflate-raw'];
/** The encoding byte of a version 2 record (SPEC §5a): 0 none, 1 deflate-raw (2 is kept for brotli). */
export const ENCODING_BYTE = { none: 0, 'deflate-raw': 1 } as const;

/** The encoding an encoding byte names, `null` for 0 (none), `undefined` for a byte this implementation does not know. */
export function encodingOfByte(byte: number): MemberEncoding | null | undefined {
  if (byte === ENCODING_BYTE.none) return null;
  if (byte === ENCODING_BYTE['deflate-raw']) return 'deflate-raw';
  return undefined;
}

/** One table record: where a member's bytes lie in the bundle and what they hash to. */
export interface BundleRecord {
  key: string;
  offset: number;
  /** Of the member's own (decoded) bytes, as the SHA-256 (SPEC §5a). */
  sizeBytes: number;
  /** Lowercase hex, of the member's own (decoded) bytes. */
  sha256: string;
  /** Bytes from `offset` that the bundle stores, when the member is encoded (SPEC §5a); else `sizeBytes`. */
  storedBytes?: number;
  /** Present exactly when `storedBytes` is. */
  encoding?: MemberEncoding;
}

/**
 * What the writer knows of a member before its bytes are laid out. `storedBytes` and `encoding`
 * come together, for a member stored encoded (SPEC §5a); without them it is stored as it is.
 */
export interface BundleMemberSpec {
  key: string;
  sizeBytes: number;
  sha256: string;
  storedBytes?: number;
  encoding?: MemberEncoding;
}

/** The bytes a member takes in its bundle: its stored size (SPEC §5a). */
export function storedSizeOf(member: { sizeBytes: number; storedBytes?: number }): number {
  return member.storedBytes ?? member.sizeBytes;
}

export interface BundleLayout {
  /** Header and table: the bundle's first `head.length` bytes. */
  head: Uint8Array;
  /** Records in table (key) order. */
  records: BundleRecord[];
  /** Indices into `records` whose content is written to the data area, in data order. */
  written: number[];
  /** Size of the whole bundle in bytes. */
  sizeBytes: number;
}

export interface LayoutOptions {
  /**
   * The data order (SPEC §5 "Data order"): `key` (the default), table order; `given`, the order
   * of `members` (a load group's first-use order, SPEC §6). The table is in key order either way.
   */
  dataOrder?: 'key' | 'given';
}

/**
 * Lays out a bundle from its members (SPEC §5): sorts them by key, refuses equal keys, and
 * gives each distinct content one place in the data area, in data order.
 */
export function layoutBundle(members: readonly BundleMemberSpec[], options: LayoutOptions = {}): BundleLayout {
  return layOut(members, options).layout;
}

/** A key with a UTF-16 surrogate: ordered (and told apart) by its UTF-8 bytes, not its code units. */
const SURROGATE = /[\uD800-\uDFFF]/;
/** A key of other than ASCII: its UTF-8 bytes are not its code units. */
const NOT_ASCII = /[^\0-\x7f]/;

/**
 * `layoutBundle`, and for each record (in table order) the index in `members` it came from.
 * Keys sort by their UTF-8 bytes (SPEC §5): for keys without surrogates that is the order of their
 * UTF-16 code units, compared as strings; an ASCII key's bytes are its code units, never encoded.
 */
function layOut(members: readonly BundleMemberSpec[], options: LayoutOptions): { layout: BundleLayout; givenOf: number[] } {
  const bytesOrder = members.some((member) => SURROGATE.test(member.key));
  const sorted = members.map((member, given) => ({
    member,
    given,
    keyBytes: bytesOrder || NOT_ASCII.test(member.key) ? utf8(member.key) : undefined,
  }));
  sorted.sort(
    bytesOrder
      ? (a, b) => compareBytes(a.keyBytes!, b.keyBytes!)
      : ({ member: { key: a } }, { member: { key: b } }) => (a < b ? -1 : a > b ? 1 : 0),
  );
  let keyBytesTotal = 0;
  for (let i = 0; i < sorted.length; i++) {
    const { member, keyBytes } = sorted[i]!;
    const keyLength = keyBytes ? keyBytes.length : member.key.length;
    if (keyLength === 0 || keyLength > MAX_KEY_BYTES)
      throw new InvalidOptionError('members', `bundle key ${JSON.stringify(member.key)} must be 1..65535 UTF-8 bytes`);
    if (i > 0 && (bytesOrder ? compareBytes(sorted[i - 1]!.keyBytes!, keyBytes!) === 0 : sorted[i - 1]!.member.key === member.key))
      throw new InvalidOptionError('members', `two bundle members share the key ${JSON.stringify(member.key)}`);
    if (!SHA256_HEX.test(member.sha256))
      throw new InvalidOptionError('members', `member ${JSON.stringify(member.key)}: sha256 must be 64 lowercase hex digits`);
    if (!Number.isSafeInteger(member.sizeBytes) || member.sizeBytes < 0)
      throw new InvalidOptionError('members', `member ${JSON.stringify(member.key)}: sizeBytes must be a non-negative safe integer`);
    checkEncodingSpec(member);
    keyBytesTotal += keyLength;
  }
  // SPEC §5a: version 2 only when some member is encoded, so a bundle with none is byte for byte
  // what version 1 always gave.
  const encoded = sorted.some(({ member }) => member.encoding !== undefined);
  const fixed = encoded ? RECORD_FIXED_BYTES_ENCODED : RECORD_FIXED_BYTES;
  const tableSize = sorted.length * fixed + keyBytesTotal;
  if (sorted.length > 0xffffffff || tableSize > 0xffffffff) throw new InvalidOptionError('members', 'bundle table too large for AWKB');

  const dataStart = HEADER_BYTES + tableSize;
  let end = dataStart;
  const firstOffset = new Map<string, BundleRecord>();
  const records: BundleRecord[] = sorted.map(({ member: { key, sizeBytes, sha256, storedBytes, encoding } }) =>
    encoding === undefined
      ? { key, offset: 0, sizeBytes, sha256 }
      : { key, offset: 0, sizeBytes, sha256, storedBytes: storedBytes!, encoding },
  );
  const written: number[] = [];
  // Table indices in data order.
  const dataOrder = sorted.map((_, index) => index);
  if (options.dataOrder === 'given') dataOrder.sort((a, b) => sorted[a]!.given - sorted[b]!.given);
  for (const index of dataOrder) {
    const record = records[index]!;
    const seen = firstOffset.get(record.sha256);
    if (seen) {
      if (seen.sizeBytes !== record.sizeBytes)
        throw new InvalidOptionError('members', `members with SHA-256 ${record.sha256} differ in size`);
      // One copy per distinct content covers the stored bytes (SPEC §5a): copies are stored alike.
      if (seen.encoding !== record.encoding || storedSizeOf(seen) !== storedSizeOf(record))
        throw new InvalidOptionError('members', `members with SHA-256 ${record.sha256} are stored differently`);
      record.offset = seen.offset;
      continue;
    }
    firstOffset.set(record.sha256, record);
    written.push(index);
    record.offset = end;
    end += storedSizeOf(record);
  }

  const head = new Uint8Array(dataStart);
  const view = new DataView(head.buffer);
  let at = HEADER_BYTES;
  /** A u64 (SPEC §5: big-endian) of a safe integer, as two u32s. */
  const u64 = (value: number) => {
    view.setUint32(at, Math.floor(value / 0x100000000));
    view.setUint32(at + 4, value >>> 0);
    at += 8;
  };
  head.set(AWKB_MAGIC, 0);
  view.setUint16(4, encoded ? AWKB_VERSION_ENCODED : AWKB_VERSION);
  view.setUint16(6, 0);
  view.setUint32(8, records.length);
  view.setUint32(12, tableSize);
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    const { member, keyBytes } = sorted[i]!;
    const key = member.key;
    if (keyBytes) {
      view.setUint16(at, keyBytes.length);
      head.set(keyBytes, at + 2);
      at += 2 + keyBytes.length;
    } else {
      view.setUint16(at, key.length);
      at += 2;
      for (let c = 0; c < key.length; c++) head[at++] = key.charCodeAt(c);
    }
    u64(record.offset);
    if (encoded) u64(storedSizeOf(record));
    u64(record.sizeBytes);
    hexInto(record.sha256, head, at);
    at += 32;
    if (encoded) head[at++] = record.encoding === undefined ? ENCODING_BYTE.none : ENCODING_BYTE[record.encoding];
  }
  return { layout: { head, records, written, sizeBytes: end }, givenOf: sorted.map(({ given }) => given) };
}

/** SPEC §5a: an encoding this implementation knows, with a stored size; or neither. */
function checkEncodingSpec(member: BundleMemberSpec): void {
  const refuse = (problem: string) => new InvalidOptionError('members', `member ${JSON.stringify(member.key)}: ${problem}`);
  if (member.encoding === undefined) {
    if (member.storedBytes !== undefined && member.storedBytes !== member.sizeBytes)
      throw refuse('storedBytes without an encoding must equal sizeBytes');
    return;
  }
  if (!MEMBER_ENCODINGS.includes(member.encoding)) throw refuse(`unknown encoding ${JSON.stringify(member.encoding)}`);
  if (!Number.isSafeInteger(member.storedBytes) || member.storedBytes! < 0)
    throw refuse('an encoded member needs storedBytes, a non-negative safe integer');
}

/**
 * The canonical layout (SPEC §5, §5a) of one bundle's records as an index lists them (offsets,
 * sizes, SHA-256s, and `storedBytes` + `encoding` where encoded), in the data order their
 * offsets show; `undefined` when the index's offsets or the listed size are not that layout's (a
 * bundle another writer laid out, or a listing no layout gives). Its `head` is the canonical
 * header and table a reader compares a bundle's first bytes with (SPEC §7).
 */
export function canonicalBundleLayout(
  listing: { sizeBytes: number },
  members: readonly (BundleMemberSpec & { offset: number })[],
): BundleLayout | undefined {
  const ordered = inDataOrder(members);
  let laid: ReturnType<typeof layOut>;
  try {
    // The records as they are: a stored size comes only with an encoding (SPEC §5a), in an index and a table alike.
    laid = layOut(ordered, { dataOrder: 'given' });
  } catch {
    return undefined;
  }
  const { layout, givenOf } = laid;
  if (layout.sizeBytes !== listing.sizeBytes) return undefined;
  return layout.records.some((record, i) => ordered[givenOf[i]!]!.offset !== record.offset) ? undefined : layout;
}

/**
 * `records` (of one bundle, with their offsets) in the data order those offsets show (SPEC §5):
 * by offset, an empty content before a content that starts where it lies (the empty one took
 * the end first), copies of one content in the order given. Laid out with `dataOrder: 'given'`,
 * they give back these offsets when the bundle is laid out canonically in some data order.
 */
export function inDataOrder<T extends { offset: number; sizeBytes: number; storedBytes?: number }>(records: readonly T[]): T[] {
  return [...records].sort((a, b) => a.offset - b.offset || storedSizeOf(a) - storedSizeOf(b));
}

export interface BundleMemberInput {
  key: string;
  bytes: Uint8Array;
  /** Lowercase hex SHA-256 of `bytes`; the caller computed it (see `buildBundle`). */
  sha256: string;
  /** The bytes as stored, for a member stored encoded (SPEC §5a); `encoding` says how. */
  stored?: Uint8Array;
  encoding?: MemberEncoding;
}

/**
 * Encodes members whose SHA-256s are known into AWKB bytes (SPEC §5): version 1, or version 2
 * when some member comes with its `stored` bytes and `encoding` (SPEC §5a).
 */
export function encodeBundle(members: readonly BundleMemberInput[]): Uint8Array {
  const byKey = new Map(members.map((member) => [member.key, member]));
  const layout = layoutBundle(
    members.map(({ key, bytes, sha256, stored, encoding }) =>
      encoding === undefined || stored === undefined
        ? { key, sizeBytes: bytes.length, sha256 }
        : { key, sizeBytes: bytes.length, sha256, storedBytes: stored.length, encoding },
    ),
  );
  const out = new Uint8Array(layout.sizeBytes);
  out.set(layout.head, 0);
  for (const index of layout.written) {
    const record = layout.records[index]!;
    const member = byKey.get(record.key)!;
    out.set(record.encoding !== undefined ? member.stored! : member.bytes, record.offset);
  }
  return out;
}

/**
 * The stored bytes of one record, as a view into `bundle` (no copy): the member's own bytes when
 * it is stored as is, its encoded bytes when `record.encoding` is set (SPEC §5a; decode them).
 */
export function memberBytes(bundle: Uint8Array, record: BundleRecord): Uint8Array {
  return bundle.subarray(record.offset, record.offset + storedSizeOf(record));
}
