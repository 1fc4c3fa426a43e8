/**
 * `awake-bundle verify <published-dir>`: checks every bundle and member against the index and
 * the canonical layout (SPEC §5–6), naming every problem; exit 1 when there is any.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { BundleIntegrityError } from '../../core/errors.js';
import { decodeBundle, layoutBundle } from '../../core/format/awkb.js';
import { unsafePathReason } from '../../core/format/paths.js';
import { entryKey, parseProjectIndexJson, serializeIndex, type BundledFileEntry, type ProjectIndex } from '../../core/format/project-index.js';
import { INDEX_FILE_NAME } from '../../core/node/publish.js';
import { sha256HexNode } from '../../core/node/hash.js';
import { verifyBundle, type ExpectedMember } from '../../core/read/verify.js';
import { parseCommandLine, printable, UsageError, type Command } from '../usage.js';

const HELP = `Usage: awake-bundle verify <published-dir | project.index.json> [--json]

Checks the index (rules and canonical JSON), every bundle (present, size, SHA-256, header, table,
canonical layout) and every member and loose file against its entry. Names every problem.
Exit codes: 0 all good, 1 problems found, 2 wrong command line.`;

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

export async function verifyPublished(target: string): Promise<{ problems: string[]; bundles: number; files: number; index?: ProjectIndex }> {
  const problems: string[] = [];
  const isDir = (await stat(target).catch(() => undefined))?.isDirectory() ?? false;
  const indexPath = isDir ? join(target, INDEX_FILE_NAME) : target;
  const base = isDir ? target : join(target, '..');
  const text = await readFile(indexPath, 'utf8').catch(() => undefined);
  if (text === undefined) return { problems: [`${indexPath}: missing or unreadable`], bundles: 0, files: 0 };
  let index: ProjectIndex;
  try {
    index = parseProjectIndexJson(text, { url: indexPath });
  } catch (error) {
    return { problems: [(error as Error).message], bundles: 0, files: 0 };
  }
  if (serializeIndex(index) !== text) problems.push(`${indexPath}: not in canonical form (key order, sorted files, two-space indent, final newline)`);

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
    const members: ExpectedMember[] = (index.files as BundledFileEntry[])
      .filter((entry) => entry.bundle === bundle.sha256)
      .map((entry) => ({ key: entryKey(entry), offset: entry.offset!, sizeBytes: entry.sizeBytes, sha256: entry.sha256 }));
    try {
      await verifyBundle(bytes, bundle, members, bundle.url);
    } catch (error) {
      if (!(error instanceof BundleIntegrityError)) throw error;
      const actual = sha256HexNode(bytes);
      problems.push(`${where}: ${error.message}${actual !== bundle.sha256 ? ` (its bytes hash to ${actual}, ${bytes.length} bytes)` : ''}`);
      continue;
    }
    problems.push(...canonicalLayoutProblems(bytes, members, where));
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

/** A bundle must be exactly what the writer makes of its members (SPEC §5), and hold only listed members. */
function canonicalLayoutProblems(bytes: Uint8Array, members: ExpectedMember[], where: string): string[] {
  const decoded = decodeBundle(bytes);
  const listed = new Set(members.map((member) => member.key));
  const problems = decoded.records.filter((record) => !listed.has(record.key)).map((record) => `${where}: member ${JSON.stringify(record.key)} is in the bundle but not in the index`);
  const layout = layoutBundle(decoded.records);
  const canonical = layout.sizeBytes === bytes.length && layout.records.every((record, i) => record.offset === decoded.records[i]!.offset);
  if (!canonical) problems.push(`${where}: not in the canonical layout (content order, sharing or padding differs from SPEC §5)`);
  return problems;
}

export const verifyCommand: Command = {
  name: 'verify',
  summary: 'check a published folder against its index',
  help: HELP,
  async run(argv, { stdout, stderr }) {
    const { values, positionals } = parseCommandLine(argv, { json: { type: 'boolean' } });
    if (values.help) {
      stdout.write(`${HELP}\n`);
      return 0;
    }
    if (positionals.length !== 1) throw new UsageError('verify takes one published folder (or its project.index.json)');
    const result = await verifyPublished(positionals[0]!);
    if (values.json) stdout.write(`${JSON.stringify({ ok: result.problems.length === 0, bundles: result.bundles, files: result.files, problems: result.problems }, null, 2)}\n`);
    else if (result.problems.length === 0) stdout.write(`OK: ${result.bundles} bundles and ${result.files} files match the index\n`);
    else stderr.write(`${result.problems.length} problem${result.problems.length > 1 ? 's' : ''}:\n${result.problems.map((problem) => `  ${printable(problem, { keepNewlines: true })}`).join('\n')}\n`);
    return result.problems.length === 0 ? 0 : 1;
  },
};

