/**
 * What is wrong with a bundle's header or table (SPEC §5 reader checks), judged against the
 * index's members: the AWKB decoder and its messages. Only a bundle that failed needs them, so the
 * reader imports this module then (verify.ts `verifyBundle`, stream-check.ts `judgedError`).
 */
import { BundleFormatError, KEY_PREVIEW_CHARACTERS, previewValue } from '../../errors.js';
import { decodeBundle, type DecodedBundle } from '../../format/awkb-decode.js';
import type { BundleStreamPlan, StreamFailure } from './stream-plan.js';
import type { ExpectedMember } from './verify.js';

/**
 * What is wrong with the header or table, if anything, judged against the index's members.
 * `bytes` may be only the bundle's start (a streamed head) when `sizeBytes` gives the whole size.
 */
export function structuralProblem(
  bytes: Uint8Array,
  members: readonly ExpectedMember[],
  sizeBytes = bytes.length,
): { part: 'header' | 'table'; message: string; cause?: unknown } | undefined {
  let decoded: DecodedBundle;
  try {
    decoded = decodeBundle(bytes, sizeBytes);
  } catch (error) {
    if (error instanceof BundleFormatError) return { part: error.part, message: error.message, cause: error };
    throw error;
  }
  const byKey = new Map(decoded.records.map((record) => [record.key, record]));
  for (const member of members) {
    const record = byKey.get(member.key);
    if (!record) return { part: 'table', message: `AWKB table: no record for ${previewValue(member.key, KEY_PREVIEW_CHARACTERS)}` };
    const stored =
      (record.storedBytes ?? record.sizeBytes) !== (member.storedBytes ?? member.sizeBytes) || record.encoding !== member.encoding;
    if (record.offset !== member.offset || record.sizeBytes !== member.sizeBytes || record.sha256 !== member.sha256 || stored) {
      return {
        part: 'table',
        message: `AWKB table: record ${previewValue(member.key, KEY_PREVIEW_CHARACTERS)} differs from its index entry`,
      };
    }
  }
  return undefined;
}

/**
 * Why `head` (the bytes of a bundle's head as they arrived, not the canonical ones) is refused:
 * the structural problem the AWKB reader checks name (SPEC §5), else a table that is not the
 * canonical one of the index's records.
 */
export function judgeHead(plan: Pick<BundleStreamPlan, 'sha256' | 'sizeBytes' | 'members'>, head: Uint8Array): StreamFailure {
  const problem = structuralProblem(head, plan.members, plan.sizeBytes);
  const what = `bundle ${plan.sha256}`;
  if (problem) return { part: problem.part, message: `${what}: ${problem.message}`, damaged: [] };
  return { part: 'table', message: `${what}: AWKB table: not the canonical table of the index's records for this bundle`, damaged: [] };
}
