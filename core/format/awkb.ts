/**
 * The AWKB v1 bundle file (SPEC §5): a 16-byte header, a table of records sorted by key, then
 * each distinct content once. Big-endian throughout; no trailer, no timestamps.
 */
import { InvalidOptionError } from '../errors.js';
import { SHA256_HEX } from './sha256.js';
import { fromHex } from '../hash.js';
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
  const sorted = members
    .map((member, given) => ({ member, given, keyBytes: utf8(member.key) }))
    .sort((a, b) => compareBytes(a.keyBytes, b.keyBytes));
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
  const records: BundleRecord[] = sorted.map(({ member }) => ({
    key: member.key,
    offset: 0,
    sizeBytes: member.sizeBytes,
    sha256: member.sha256,
  }));
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
      record.offset = seen.offset;
      continue;
    }
    firstOffset.set(record.sha256, { offset: end, sizeBytes: record.sizeBytes });
    written.push(index);
    record.offset = end;
    end += record.sizeBytes;
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

/**
 * `records` (of one bundle, with their offsets) in the data order those offsets show (SPEC §5):
 * by offset, an empty content before a content that starts where it lies (the empty one took
 * the end first), copies of one content in the order given. Laid out with `dataOrder: 'given'`,
 * they give back these offsets when the bundle is laid out canonically in some data order.
 */
export function inDataOrder<T extends { offset: number; sizeBytes: number }>(records: readonly T[]): T[] {
  return [...records].sort((a, b) => a.offset - b.offset || a.sizeBytes - b.sizeBytes);
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

/** The bytes of one record, as a view into `bundle` (no copy). */
export function memberBytes(bundle: Uint8Array, record: BundleRecord): Uint8Array {
  return bundle.subarray(record.offset, record.offset + record.sizeBytes);
}
