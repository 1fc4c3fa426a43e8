/**
 * The AWKB decoder (SPEC §5 reader checks): the header and table of bundle bytes, each check
 * with its message. A module apart from awkb.ts (not re-exported there: an import, even unused,
 * would bring it along) so that a game's reader,
 * which compares a streamed head with the canonical one and needs the decoder only to say what is
 * wrong with one that differs, imports it then (read/structure.ts).
 */
import { BundleFormatError, KEY_PREVIEW_CHARACTERS, previewValue } from '../errors.js';
import { toHex } from '../hash.js';
import { AWKB_MAGIC, AWKB_VERSION, HEADER_BYTES, RECORD_FIXED_BYTES, type BundleRecord } from './awkb.js';
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
