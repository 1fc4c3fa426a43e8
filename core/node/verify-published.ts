/**
 * Checking a published folder against its index (SPEC §5–6): what `awake-bundle verify` runs,
 * for scripts and CI that would rather call a function.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { BundleIntegrityError, MAX_PROBLEMS_IN_MESSAGE } from '../errors.js';
import { inDataOrder, layoutBundle } from '../format/awkb.js';
import { decodeBundle } from '../format/awkb-decode.js';
import { unsafePathReason } from '../format/paths.js';
import { decodeIndexText } from '../format/index-text.js';
import {
  entryKey,
  parseProjectIndexJson,
  serializeIndex,
  type BundledFileEntry,
  type BundleEntry,
  type ProjectIndex,
} from '../format/project-index.js';
import { verifyBundle } from '../read/verify/accept.js';
import { cutShort, type ExpectedMember } from '../read/verify/verify.js';
import { sha256HexNode } from './hash.js';
import { INDEX_FILE_NAME } from './publish.js';
import { encodedBundleProblems } from './verify-encoded.js';

function localPath(base: string, url: string): string | undefined {
  let decoded: string;
  try {
    decoded = url.split('/').map(decodeURIComponent).join('/');
  } catch {
    return undefined;
  }
  return unsafePathReason(decoded) === undefined ? join(base, ...decoded.split('/')) : undefined;
}

async function readIfPresent(path: string): Promise<Uint8Array | undefined> {
  try {
    return await readFile(path);
  } catch {
    return undefined;
  }
}

/** What `verifyPublished` found. */
export interface VerifyPublishedResult {
  /** One line per problem, each naming its place (`bundles[0] (bundles/<sha256>.awkb)`, `files[3] (path)`); empty when all is well. */
  problems: string[];
  /** Bundles the index lists. */
  bundles: number;
  /** Files the index lists. */
  files: number;
  /** The index, when it could be read and parsed. */
  index?: ProjectIndex;
}

/**
 * Checks a published folder (or its `project.index.json`) as `awake-bundle verify` does: the
 * index (rules and canonical JSON), every bundle (present, size, SHA-256, header, table,
 * canonical layout, SPEC §5–6), every member and every loose file in the folder against its
 * entry. Never throws for what it finds: every problem is a line in `problems`; a damaged
 * member is named with its own offset, size and SHA-256 beside what the index says.
 */
export async function verifyPublished(target: string): Promise<VerifyPublishedResult> {
  const problems: string[] = [];
  const isDir = (await stat(target).catch(() => undefined))?.isDirectory() ?? false;
  const indexPath = isDir ? join(target, INDEX_FILE_NAME) : target;
  const base = isDir ? target : join(target, '..');
  const bytes = await readFile(indexPath).catch(() => undefined);
  if (bytes === undefined) return { problems: [`${indexPath}: missing or unreadable`], bundles: 0, files: 0 };
  let index: ProjectIndex;
  try {
    index = parseProjectIndexJson(decodeIndexText(bytes, { url: indexPath }), { url: indexPath });
  } catch (error) {
    return { problems: [(error as Error).message], bundles: 0, files: 0 };
  }
  // Compared as bytes: a BOM, which decoding drops, is not canonical either.
  if (!Buffer.from(serializeIndex(index)).equals(bytes))
    problems.push(`${indexPath}: not in canonical form (key order, sorted files, two-space indent, final newline)`);

  const bundles = index.formatVersion === 3 ? index.bundles : [];
  for (const [i, bundle] of bundles.entries()) {
    const where = `bundles[${i}] (${bundle.url})`;
    const path = localPath(base, bundle.url);
    if (!path) {
      problems.push(`${where}: url is not a relative path inside the published folder`);
      continue;
    }
    const bytes = await readIfPresent(path);
    if (!bytes) {
      problems.push(`${where}: missing`);
      continue;
    }
    if (!bundle.url.endsWith(`${bundle.sha256}.awkb`)) problems.push(`${where}: url does not end with <sha256>.awkb`);
    const entries = (index.files as BundledFileEntry[]).filter((entry) => entry.bundle === bundle.sha256);
    if (entries.some((entry) => entry.encoding !== undefined)) {
      // SPEC §5a: stored bytes are decoded before their SHA-256 is checked.
      const listed = entries.map((entry) => ({
        key: entryKey(entry),
        offset: entry.offset!,
        sizeBytes: entry.sizeBytes,
        sha256: entry.sha256,
        ...(entry.encoding !== undefined ? { storedBytes: entry.storedBytes!, encoding: entry.encoding } : {}),
      }));
      for (const problem of await encodedBundleProblems(bytes, bundle, listed, where)) problems.push(problem);
      continue;
    }
    const members: ExpectedMember[] = entries.map((entry) => ({
      key: entryKey(entry),
      offset: entry.offset!,
      sizeBytes: entry.sizeBytes,
      sha256: entry.sha256,
    }));
    try {
      await verifyBundle(bytes, bundle, members, bundle.url);
    } catch (error) {
      if (!(error instanceof BundleIntegrityError)) throw error;
      for (const problem of failedBundleProblems(bytes, bundle, members, error, where)) problems.push(problem);
      continue;
    }
    for (const problem of canonicalLayoutProblems(bytes, members, where)) problems.push(problem); // a bundle may hold 200,000 members
  }

  for (const [i, entry] of index.files.entries()) {
    if (entry.url === undefined) continue;
    const where = `files[${i}] (${entryKey(entry)})`;
    const path = localPath(base, entry.url);
    if (!path) continue; // a loose file elsewhere (another origin) is not part of this folder
    const bytes = await readIfPresent(path);
    if (!bytes) problems.push(`${where}: missing at ${entry.url}`);
    else if (bytes.length !== entry.sizeBytes) problems.push(`${where}: ${bytes.length} bytes, the index says ${entry.sizeBytes}`);
    else if (sha256HexNode(bytes) !== entry.sha256) problems.push(`${where}: SHA-256 differs from the index`);
  }
  return { problems, bundles: bundles.length, files: index.files.length, index };
}

/**
 * What is wrong with a bundle `verifyBundle` refused, the cause first and each thing named once:
 * `where` names the bundle (its URL holds the SHA-256), so the reader's "bundle <sha256>: " goes.
 */
function failedBundleProblems(
  bytes: Uint8Array,
  bundle: BundleEntry,
  members: ExpectedMember[],
  error: BundleIntegrityError,
  where: string,
): string[] {
  const detail = error.message.startsWith(`bundle ${bundle.sha256}: `)
    ? error.message.slice(`bundle ${bundle.sha256}: `.length)
    : error.message;
  if (bytes.length < Math.min(16, bundle.sizeBytes))
    return [`${where}: ${cutShort(bytes.length, bundle.sizeBytes)}, not even the 16-byte header`];
  if (error.damaged.length === 0) {
    const actual = sha256HexNode(bytes);
    if (actual === bundle.sha256) return [`${where}: ${detail}`];
    const size = bytes.length === bundle.sizeBytes ? '' : `, the index says ${bundle.sizeBytes} bytes`;
    const listed = bundle.url.includes(bundle.sha256) ? '' : `, the index says SHA-256 ${bundle.sha256}`;
    return [`${where}: ${detail} (its ${bytes.length} bytes hash to ${actual}${size}${listed})`];
  }
  if (bytes.length < bundle.sizeBytes) {
    // Cut short: one problem for the cut and what lies past it; a member before the cut that is damaged is a problem of its own.
    const ends = new Map(members.map((member) => [member.key, member.offset + member.sizeBytes]));
    const past = error.damaged.filter((key) => ends.get(key)! > bytes.length);
    const before = error.damaged.filter((key) => ends.get(key)! <= bytes.length);
    const pastTheEnd = past.length === 0 ? '' : `; ${namedMembers(past)} ${past.length === 1 ? 'lies' : 'lie'} past its end`;
    return [`${where}: ${cutShort(bytes.length, bundle.sizeBytes)}${pastTheEnd}`, ...damagedMemberProblems(bytes, members, before, where)];
  }
  // verifyBundle words a table or header problem found beside damaged members as "; also …".
  const also = detail.includes('; also ') ? [`${where}: ${detail.slice(detail.indexOf('; also ') + 7)}`] : [];
  return [...damagedMemberProblems(bytes, members, error.damaged, where), ...also];
}

/** `member "a"`, `members "a", "b"`, or the first 20 and how many more. */
function namedMembers(keys: string[]): string {
  const shown = keys
    .slice(0, MAX_PROBLEMS_IN_MESSAGE)
    .map((key) => JSON.stringify(key))
    .join(', ');
  const more = keys.length > MAX_PROBLEMS_IN_MESSAGE ? ` and ${keys.length - MAX_PROBLEMS_IN_MESSAGE} more` : '';
  return `member${keys.length === 1 ? '' : 's'} ${shown}${more}`;
}

/** A bundle must be exactly what the writer makes of its members (SPEC §5), and hold only listed members. */
function canonicalLayoutProblems(bytes: Uint8Array, members: ExpectedMember[], where: string): string[] {
  const decoded = decodeBundle(bytes);
  const listed = new Set(members.map((member) => member.key));
  const problems = decoded.records
    .filter((record) => !listed.has(record.key))
    .map((record) => `${where}: member ${JSON.stringify(record.key)} is in the bundle but not in the index`);
  // The data order is the one the offsets show (key order, or a load group's first use: SPEC §5).
  const layout = layoutBundle(inDataOrder(decoded.records), { dataOrder: 'given' });
  const canonical = layout.sizeBytes === bytes.length && layout.records.every((record, i) => record.offset === decoded.records[i]!.offset);
  if (!canonical) problems.push(`${where}: not in the canonical layout (sharing, gaps or overlaps differ from SPEC §5)`);
  return problems;
}

/** Each damaged member named with its own bytes: where it lies, what they hash to, what the index says. */
function damagedMemberProblems(bytes: Uint8Array, members: ExpectedMember[], damaged: string[], where: string): string[] {
  return damaged.map((key) => {
    const member = members.find((candidate) => candidate.key === key)!;
    const end = member.offset + member.sizeBytes;
    const found =
      end > bytes.length
        ? `the bundle ends at byte ${bytes.length}, before the member's end at ${end}`
        : `its ${member.sizeBytes} bytes hash to ${sha256HexNode(bytes.subarray(member.offset, end))}`;
    return `${where}: member ${JSON.stringify(key)} at offset ${member.offset} is damaged: ${found}; the index says ${member.sizeBytes} bytes, ${member.sha256}`;
  });
}
