/**
 * The AWKB decoder (SPEC §5 reader checks): the header and table of bundle bytes, each check
 * with its message. A module apart from awkb.ts (not re-exported there: an import, even unused,
 * would bring it along) so that a game's reader,
 * which compares a streamed head with the canonical one and needs the decoder only to say what is
 * wrong with one that differs, imports it then (read/structure.ts).
 */
import { BundleFormatError, KEY_PREVIEW_CHARACTERS, previewValue } from '../errors.js';
import { toHex } from '../hash.js';
import {
  AWKB_MAGIC,
  AWKB_VERSION,
  AWKB_VERSION_ENCODED,
  encodingOfByte,
  HEADER_BYTES,
  RECORD_FIXED_BYTES,
  RECORD_FIXED_BYTES_ENCODED,
  type BundleRecord,
} from './awkb.js';
import { compareBytes } from './paths.js';

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
 * Reads the header and table of AWKB bytes, version 1 (SPEC §5) or 2 (SPEC §5a), and checks
 * everything SPEC §5 asks before any of it is trusted. Never allocates from a size field it has
 * not bounded against `bytes.length`. Member contents are not hashed (nor decoded) here; see
 * `verifyBundleBytes`. A version 2 record's encoding byte must be one this implementation knows
 * (0 none, 1 deflate-raw): any other is refused naming it and the member.
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
  if (version !== AWKB_VERSION && version !== AWKB_VERSION_ENCODED)
    throw new BundleFormatError('header', `unknown version ${version}; this reader knows versions 1 and 2`);
  const reserved = view.getUint16(6);
  if (reserved !== 0) throw new BundleFormatError('header', `reserved field is ${reserved}, must be 0`);
  const count = view.getUint32(8);
  const tableSize = view.getUint32(12);
  const dataStart = HEADER_BYTES + tableSize;
  if (dataStart > sizeBytes)
    throw new BundleFormatError('table', `table size ${tableSize} runs past the end of the ${sizeBytes}-byte bundle`);
  // Version 1's records are the smaller: a count that cannot fit them fits no table.
  if (count * RECORD_FIXED_BYTES > tableSize)
    throw new BundleFormatError('table', `member count ${count} cannot fit a ${tableSize}-byte table`);
  if (dataStart > bytes.length)
    throw new BundleFormatError('table', `truncated: the table ends at byte ${dataStart}, only ${bytes.length} bytes arrived`);
  try {
    return { version, records: readTable(bytes, view, version, count, dataStart, sizeBytes), dataStart, sizeBytes };
  } catch (error) {
    // A table that the other version reads cleanly was written as that version: the header's
    // version is what is damaged (a v1 bundle whose version field says 2, or the reverse).
    const other = version === AWKB_VERSION ? AWKB_VERSION_ENCODED : AWKB_VERSION;
    if (error instanceof BundleFormatError && readsAs(bytes, view, other, count, dataStart, sizeBytes)) {
      throw new BundleFormatError('header', `version ${version} does not fit its table, which is laid out as version ${other}'s`, {
        cause: error,
      });
    }
    throw error;
  }
}

function readsAs(bytes: Uint8Array, view: DataView, version: number, count: number, dataStart: number, sizeBytes: number): boolean {
  try {
    readTable(bytes, view, version, count, dataStart, sizeBytes);
    return true;
  } catch {
    return false;
  }
}

/** The records of a version 1 or 2 table (SPEC §5, §5a), every field bounded before it is used. */
function readTable(
  bytes: Uint8Array,
  view: DataView,
  version: number,
  count: number,
  dataStart: number,
  sizeBytes: number,
): BundleRecord[] {
  const encoded = version === AWKB_VERSION_ENCODED;
  const fixed = encoded ? RECORD_FIXED_BYTES_ENCODED : RECORD_FIXED_BYTES;
  const tableSize = dataStart - HEADER_BYTES;
  if (count * fixed > tableSize) throw new BundleFormatError('table', `member count ${count} cannot fit a ${tableSize}-byte table`);
  const records: BundleRecord[] = [];
  const total = BigInt(sizeBytes);
  let at = HEADER_BYTES;
  let previousKey: Uint8Array | undefined;
  for (let i = 0; i < count; i++) {
    if (at + 2 > dataStart) throw new BundleFormatError('table', `record ${i} starts past the table's end`);
    const keyLength = view.getUint16(at);
    if (at + keyLength + fixed > dataStart) throw new BundleFormatError('table', `record ${i} runs past the table's end`);
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
    const shown = previewValue(key, KEY_PREVIEW_CHARACTERS);
    at += 2 + keyLength;
    const offset = view.getBigUint64(at);
    at += 8;
    const stored = encoded ? view.getBigUint64(at) : undefined;
    if (encoded) at += 8;
    const size = view.getBigUint64(at);
    const sha256 = toHex(bytes.subarray(at + 8, at + 40));
    at += 40;
    let encoding: ReturnType<typeof encodingOfByte> = null;
    if (encoded) {
      const byte = bytes[at++]!;
      encoding = encodingOfByte(byte);
      // SPEC §5a: any other value is refused, naming it (2 is kept for brotli).
      if (encoding === undefined)
        throw new BundleFormatError(
          'table',
          `member ${shown} has encoding ${byte}, which this reader does not know (0 none, 1 deflate-raw)`,
        );
      if (encoding === null && stored !== size)
        throw new BundleFormatError(
          'table',
          `member ${shown} is stored as is (encoding 0) but its stored size ${stored} differs from its size ${size}`,
        );
    }
    const span = stored ?? size;
    if (offset < BigInt(dataStart) || offset > total || span > total - offset) {
      throw new BundleFormatError(
        'table',
        `member ${shown} (offset ${offset}, ${encoded ? 'stored size' : 'size'} ${span}) lies outside the data area ${dataStart}..${sizeBytes}`,
      );
    }
    // A decoded size is the index's to bound, not the bundle's: it may exceed the bundle (SPEC §5a).
    if (size > BigInt(Number.MAX_SAFE_INTEGER)) throw new BundleFormatError('table', `member ${shown} has a size ${size} past 2^53 − 1`);
    const record: BundleRecord = { key, offset: Number(offset), sizeBytes: Number(size), sha256 };
    if (encoding) {
      record.storedBytes = Number(span);
      record.encoding = encoding;
    }
    records.push(record);
    previousKey = keyBytes;
  }
  if (at !== dataStart)
    throw new BundleFormatError('table', `${count} records use ${at - HEADER_BYTES} bytes but the table size says ${tableSize}`);
  return records;
}
