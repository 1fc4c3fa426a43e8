/**
 * `verify` of a bundle with encoded members (AWKB version 2, SPEC §5a): its size and SHA-256,
 * its table against the index's entries (stored sizes and encodings too), its canonical layout,
 * and each distinct content decoded with `node:zlib` (core/node/inflate.ts) and checked against
 * its entry's size and SHA-256. A member that does not decode is named with its encoding and why
 * (`MemberDecodeError`: past its listed size, short, trailing bytes, broken, unknown encoding).
 */
import { BundleFormatError, MemberDecodeError } from '../errors.js';
import { canonicalBundleLayout, memberBytes, type BundleRecord } from '../format/awkb.js';
import { decodeBundle } from '../format/awkb-decode.js';
import type { BundleEntry } from '../format/project-index.js';
import { sha256HexNode } from './hash.js';
import { decodeMemberNode } from './inflate.js';

/** One member as the index lists it, with its stored size and encoding when encoded. */
export interface ListedMember extends Omit<BundleRecord, 'offset'> {
  offset: number;
}

/** Every problem of an encoded bundle, each a line that starts with `where`; empty when it is good. */
export async function encodedBundleProblems(
  bytes: Uint8Array,
  bundle: BundleEntry,
  members: readonly ListedMember[],
  where: string,
): Promise<string[]> {
  const problems: string[] = [];
  if (bytes.length !== bundle.sizeBytes) problems.push(`${where}: ${bytes.length} bytes, the index says ${bundle.sizeBytes}`);
  const actual = sha256HexNode(bytes);
  if (actual !== bundle.sha256) problems.push(`${where}: its bytes hash to ${actual}, the index says ${bundle.sha256}`);
  let records: BundleRecord[];
  try {
    records = decodeBundle(bytes).records;
  } catch (error) {
    if (!(error instanceof BundleFormatError)) throw error;
    return [...problems, `${where}: ${error.message}`];
  }
  const byKey = new Map(records.map((record) => [record.key, record]));
  for (const member of members) {
    const record = byKey.get(member.key);
    if (!record) problems.push(`${where}: member ${JSON.stringify(member.key)} is in the index but not in the bundle's table`);
    else if (!sameRecord(record, member))
      problems.push(`${where}: member ${JSON.stringify(member.key)}: its table record differs from its index entry`);
  }
  const listed = new Set(members.map((member) => member.key));
  for (const record of records)
    if (!listed.has(record.key)) problems.push(`${where}: member ${JSON.stringify(record.key)} is in the bundle but not in the index`);
  if (!canonicalBundleLayout({ sizeBytes: bytes.length }, records))
    problems.push(`${where}: not in the canonical layout (sharing, gaps or overlaps differ from SPEC §5)`);
  // Each distinct stored content once, as the table places it (SPEC §5a: dedup covers stored bytes).
  const judged = new Set<string>();
  for (const record of records) {
    const place = `${record.offset}:${record.storedBytes ?? record.sizeBytes}`;
    if (judged.has(place)) continue;
    judged.add(place);
    const problem = await memberProblem(bytes, record);
    if (problem) problems.push(`${where}: ${problem}`);
  }
  return problems;
}

function sameRecord(record: BundleRecord, member: ListedMember): boolean {
  return (
    record.offset === member.offset &&
    record.sizeBytes === member.sizeBytes &&
    record.sha256 === member.sha256 &&
    record.storedBytes === member.storedBytes &&
    record.encoding === member.encoding
  );
}

/** What is wrong with one member's bytes, decoded when encoded; `undefined` when they match. */
async function memberProblem(bundle: Uint8Array, record: BundleRecord): Promise<string | undefined> {
  const stored = memberBytes(bundle, record);
  let decoded = stored;
  if (record.encoding !== undefined) {
    try {
      decoded = await decodeMemberNode(stored, record);
    } catch (error) {
      if (error instanceof MemberDecodeError) return `member ${error.message}`;
      throw error;
    }
  }
  const digest = sha256HexNode(decoded);
  if (digest === record.sha256) return undefined;
  const how = record.encoding === undefined ? '' : ` decoded (${record.encoding})`;
  return `member ${JSON.stringify(record.key)} at offset ${record.offset} is damaged: its ${decoded.length} bytes${how} hash to ${digest}; the index says ${record.sizeBytes} bytes, ${record.sha256}`;
}
