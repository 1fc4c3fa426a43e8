/**
 * The AWKB v1 bundle file (SPEC §5): a 16-byte header, a table of records sorted by key, then
 * each distinct content once. Big-endian throughout; no trailer, no timestamps.
 */
import { BundleFormatError, InvalidOptionError, KEY_PREVIEW_CHARACTERS, previewValue } from '../errors.js';
import { SHA256_HEX } from './sha256.js';
import { fromHex, toHex } from '../hash.js';
import { compareBytes, utf8 } from './paths.js';

export const AWKB_MAGIC = new Uint8Array([0x41, 0x57, 0x4b, 0x42]); // "AWKB"
export const AWKB_VERSION = 1;
export const HEADER_BYTES = 16;
/** Fixed bytes of a record besides its key: key length (2), offset (8), size (8), SHA-256 (32). */
export const RECORD_FIXED_BYTES = 2 + 8 + 8 + 32;
const MAX_KEY_BYTES = 0xffff;

/** One table record: where a member's bytes lie in the bundle and what they hash to. */
export interface BundleRecord {
  key: string;
  offset: number;
  sizeBytes: number;
  /** Lowercase hex. */
  sha256: string;
}

/** What the writer knows of a member before its bytes are laid out. */
export interface BundleMemberSpec {
  key: string;
  sizeBytes: number;
  sha256: string;
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

/**
 * Lays out a bundle from its members (SPEC §5): sorts them by key, refuses equal keys, and
 * gives each distinct content one place in the data area, in table order.
 */
export function layoutBundle(members: readonly BundleMemberSpec[]): BundleLayout {
  const sorted = members.map((member) => ({ member, keyBytes: utf8(member.key) })).sort((a, b) => compareBytes(a.keyBytes, b.keyBytes));
  let tableSize = 0;
  for (let i = 0; i < sorted.length; i++) {
    const { member, keyBytes } = sorted[i]!;
    if (keyBytes.length === 0 || keyBytes.length > MAX_KEY_BYTES)
      throw new InvalidOptionError('members', `bundle key ${JSON.stringify(member.key)} must be 1..65535 UTF-8 bytes`);
    if (i > 0 && compareBytes(sorted[i - 1]!.keyBytes, keyBytes) === 0)
      throw new InvalidOptionError('members', `two bundle members share the key ${JSON.stringify(member.key)}`);
    if (!SHA256_HEX.test(member.sha256))
      throw new InvalidOptionError('members', `member ${JSON.stringify(member.key)}: sha256 must be 64 lowercase hex digits`);
    if (!Number.isSafeInteger(member.sizeBytes) || member.sizeBytes < 0)
      throw new InvalidOptionError('members', `member ${JSON.stringify(member.key)}: sizeBytes must be a non-negative safe integer`);
    tableSize += RECORD_FIXED_BYTES + keyBytes.length;
  }
  if (sorted.length > 0xffffffff || tableSize > 0xffffffff) throw new InvalidOptionError('members', 'bundle table too large for AWKB v1');

  const dataStart = HEADER_BYTES + tableSize;
  let end = dataStart;
  const firstOffset = new Map<string, { offset: number; sizeBytes: number }>();
  const records: BundleRecord[] = [];
  const written: number[] = [];
  for (const { member } of sorted) {
    const seen = firstOffset.get(member.sha256);
    if (seen) {
      if (seen.sizeBytes !== member.sizeBytes)
        throw new InvalidOptionError('members', `members with SHA-256 ${member.sha256} differ in size`);
      records.push({ key: member.key, offset: seen.offset, sizeBytes: member.sizeBytes, sha256: member.sha256 });
      continue;
    }
    firstOffset.set(member.sha256, { offset: end, sizeBytes: member.sizeBytes });
    written.push(records.length);
    records.push({ key: member.key, offset: end, sizeBytes: member.sizeBytes, sha256: member.sha256 });
    end += member.sizeBytes;
  }

  const head = new Uint8Array(dataStart);
  const view = new DataView(head.buffer);
  head.set(AWKB_MAGIC, 0);
  view.setUint16(4, AWKB_VERSION);
  view.setUint16(6, 0);
  view.setUint32(8, records.length);
  view.setUint32(12, tableSize);
  let at = HEADER_BYTES;
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    const keyBytes = sorted[i]!.keyBytes;
    view.setUint16(at, keyBytes.length);
    head.set(keyBytes, at + 2);
    at += 2 + keyBytes.length;
    view.setBigUint64(at, BigInt(record.offset));
    view.setBigUint64(at + 8, BigInt(record.sizeBytes));
    head.set(fromHex(record.sha256), at + 16);
    at += 48;
  }
  return { head, records, written, sizeBytes: end };
}

export interface BundleMemberInput {
  key: string;
  bytes: Uint8Array;
  /** Lowercase hex SHA-256 of `bytes`; the caller computed it (see `buildBundle`). */
  sha256: string;
}

/** Encodes members whose SHA-256s are known into AWKB v1 bytes (SPEC §5). */
export function encodeBundle(members: readonly BundleMemberInput[]): Uint8Array {
  const byKey = new Map(members.map((member) => [member.key, member]));
  const layout = layoutBundle(members.map(({ key, bytes, sha256 }) => ({ key, sizeBytes: bytes.length, sha256 })));
  const out = new Uint8Array(layout.sizeBytes);
  out.set(layout.head, 0);
  for (const index of layout.written) {
    const record = layout.records[index]!;
    out.set(byKey.get(record.key)!.bytes, record.offset);
  }
  return out;
}

export interface DecodedBundle {
  version: number;
  /** Records in table order. */
  records: BundleRecord[];
  /** Offset of the data area: 16 + table size. */
  dataStart: number;
  sizeBytes: number;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads the header and table of AWKB bytes and checks everything SPEC §5 asks before any of it
 * is trusted. Never allocates from a size field it has not bounded against `bytes.length`.
 * Member contents are not hashed here; see `verifyBundleBytes`.
 */
export function decodeBundle(bytes: Uint8Array, sizeBytes = bytes.length): DecodedBundle {
  // `sizeBytes`: the whole bundle's size when `bytes` is only its start (a streamed bundle's head).
  if (bytes.length < HEADER_BYTES) throw new BundleFormatError('header', `truncated: ${bytes.length} bytes, the header alone is 16`);
  for (let i = 0; i < 4; i++) {
    if (bytes[i] !== AWKB_MAGIC[i])
      throw new BundleFormatError('header', `bad magic ${toHex(bytes.subarray(0, 4))}, expected 41574b42 ("AWKB")`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint16(4);
  if (version !== AWKB_VERSION) throw new BundleFormatError('header', `unknown version ${version}; this reader knows version 1`);
  const reserved = view.getUint16(6);
  if (reserved !== 0) throw new BundleFormatError('header', `reserved field is ${reserved}, must be 0`);
  const count = view.getUint32(8);
  const tableSize = view.getUint32(12);
  const dataStart = HEADER_BYTES + tableSize;
  if (dataStart > sizeBytes)
    throw new BundleFormatError('table', `table size ${tableSize} runs past the end of the ${sizeBytes}-byte bundle`);
  if (count * RECORD_FIXED_BYTES > tableSize)
    throw new BundleFormatError('table', `member count ${count} cannot fit a ${tableSize}-byte table`);
  if (dataStart > bytes.length)
    throw new BundleFormatError('table', `truncated: the table ends at byte ${dataStart}, only ${bytes.length} bytes arrived`);

  const records: BundleRecord[] = [];
  let at = HEADER_BYTES;
  let previousKey: Uint8Array | undefined;
  for (let i = 0; i < count; i++) {
    if (at + 2 > dataStart) throw new BundleFormatError('table', `record ${i} starts past the table's end`);
    const keyLength = view.getUint16(at);
    if (at + 2 + keyLength + 48 > dataStart) throw new BundleFormatError('table', `record ${i} runs past the table's end`);
    const keyBytes = bytes.subarray(at + 2, at + 2 + keyLength);
    if (keyLength === 0) throw new BundleFormatError('table', `record ${i} has an empty key`);
    if (previousKey && compareBytes(previousKey, keyBytes) >= 0)
      throw new BundleFormatError('table', `keys not strictly increasing at record ${i}`);
    let key: string;
    try {
      key = strictUtf8.decode(keyBytes);
    } catch {
      throw new BundleFormatError('table', `record ${i} key is not valid UTF-8`);
    }
    at += 2 + keyLength;
    const offset = view.getBigUint64(at);
    const size = view.getBigUint64(at + 8);
    const sha256 = toHex(bytes.subarray(at + 16, at + 48));
    at += 48;
    const total = BigInt(sizeBytes);
    if (offset < BigInt(dataStart) || offset > total || size > total - offset) {
      throw new BundleFormatError(
        'table',
        `member ${previewValue(key, KEY_PREVIEW_CHARACTERS)} (offset ${offset}, size ${size}) lies outside the data area ${dataStart}..${sizeBytes}`,
      );
    }
    records.push({ key, offset: Number(offset), sizeBytes: Number(size), sha256 });
    previousKey = keyBytes;
  }
  if (at !== dataStart)
    throw new BundleFormatError('table', `${count} records use ${at - HEADER_BYTES} bytes but the table size says ${tableSize}`);
  return { version, records, dataStart, sizeBytes };
}

/** The bytes of one record, as a view into `bundle` (no copy). */
export function memberBytes(bundle: Uint8Array, record: BundleRecord): Uint8Array {
  return bundle.subarray(record.offset, record.offset + record.sizeBytes);
}
