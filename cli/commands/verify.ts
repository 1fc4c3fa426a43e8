/**
 * `awake-bundle verify <published-dir>`: checks every bundle and member against the index and
 * the canonical layout (SPEC §5–6), naming every problem; exit 1 when there is any. The checks
 * are `verifyPublished` from awake-bundle/node.
 */
import { verifyPublished } from '../../core/node/verify-published.js';
import { parseCommandLine, plural, printable, UsageError, type Command } from '../usage.js';

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
    const result = await verifyPublished(positionals[0]!);
    if (values.json) stdout.write(`${JSON.stringify({ ok: result.problems.length === 0, bundles: result.bundles, files: result.files, problems: result.problems }, null, 2)}\n`);
    else if (result.problems.length === 0) stdout.write(`OK: ${plural(result.bundles, 'bundle')} and ${plural(result.files, 'file')} match the index\n`);
    else stderr.write(`${plural(result.problems.length, 'problem')}:\n${result.problems.map((problem) => `  ${printable(problem, { keepNewlines: true })}`).join('\n')}\n`);
    return result.problems.length === 0 ? 0 : 1;
  },
};

