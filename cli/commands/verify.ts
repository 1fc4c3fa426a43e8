/**
 * `awake-bundle verify <published-dir>`: checks every bundle and member against the index and
 * the canonical layout (SPEC §5–6), naming every problem; exit 1 when there is any. The checks
 * are `verifyPublished` from awake-bundle/node.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { INDEX_FILE_NAME } from '../../core/node/publish.js';
import { verifyPublished } from '../../core/node/verify-published.js';
import { folderCensus, noFilesContents } from '../empty-input.js';
import { CommandFailure, parseCommandLine, plural, printable, UsageError, type Command } from '../usage.js';

const HELP = `Usage: awake-bundle verify <published-dir | project.index.json> [--json]

Checks the index (rules and canonical JSON), every bundle (present, size, SHA-256, header, table,
canonical layout) and every member and loose file against its entry. Names every problem.
Exit codes: 0 all good, 1 problems found, 2 wrong command line.`;

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
    await checkTarget(positionals[0]!);
    const result = await verifyPublished(positionals[0]!);
    if (values.json)
      stdout.write(
        `${JSON.stringify({ ok: result.problems.length === 0, bundles: result.bundles, files: result.files, problems: result.problems }, null, 2)}\n`,
      );
    else if (result.problems.length === 0)
      stdout.write(`OK: ${plural(result.bundles, 'bundle')} and ${plural(result.files, 'file')} match the index\n`);
    else
      stderr.write(
        `${plural(result.problems.length, 'problem')}:\n${result.problems.map((problem) => `  ${printable(problem, { keepNewlines: true })}`).join('\n')}\n`,
      );
    return result.problems.length === 0 ? 0 : 1;
  },
};

/**
 * What is not a verification result: a target that does not exist, and a folder with no index
 * (a source folder, most likely: the hint shows how to publish it).
 */
async function checkTarget(target: string): Promise<void> {
  const info = await stat(target).catch(() => undefined);
  if (!info) throw new CommandFailure(`${target} does not exist: nothing to verify (give a published folder or its ${INDEX_FILE_NAME})`);
  if (!info.isDirectory() || (await stat(join(target, INDEX_FILE_NAME)).catch(() => undefined))) return;
  const entries = await readdir(target).catch(() => []);
  if (entries.length === 0) throw new CommandFailure(`${target} is an empty folder, not a published folder (no ${INDEX_FILE_NAME})`);
  // Not "it has files" when all it has is empty folders.
  const contents = noFilesContents(await folderCensus(target));
  if (contents !== undefined)
    throw new CommandFailure(`${target} is not a published folder: it has no ${INDEX_FILE_NAME}, and holds ${contents}`);
  const out = 'build/published';
  throw new CommandFailure(
    `${target} is not a published folder: it has no ${INDEX_FILE_NAME}, but it has files. To publish it and verify the result:\n` +
      `  awake-bundle ${shellWord(target)} --out ${out}\n  awake-bundle verify ${out}`,
  );
}

/** `target` as one shell word: as it is when it is plain, else in single quotes. */
function shellWord(text: string): string {
  return /^[\w./@%+=:,-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
