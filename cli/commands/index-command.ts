/** `awake-bundle index <folder>`: write the loose (formatVersion 2) index of a folder. */
import { dirname } from 'node:path';
import { serializeIndex } from '../../core/format/project-index.js';
import { looseIndexFromFolder } from '../../core/node/loose-index.js';
import { removeOwnTemporaryFilesSync, writeFileAtomic } from '../../core/node/publish.js';
import { noFilesReason } from '../empty-input.js';
import {
  CommandFailure,
  formatBytes,
  makeFolder,
  parseCommandLine,
  plural,
  printable,
  progressLine,
  UsageError,
  type Command,
} from '../usage.js';

const HELP = `Usage: awake-bundle index <folder> [options]

Writes the loose (formatVersion 2) index of every regular file below <folder>.

Options:
  --out <file>         where to write it (default build/project.index.json; - for stdout)
  --url-prefix <dir>   prefix of the files' URLs (default files)
  --root-path <text>   the index's rootPath (default /project)
  --json               print a summary on stdout (with --out to a file)
  -h, --help           show this help`;

export const indexCommand: Command = {
  name: 'index',
  summary: 'write the loose index of a folder',
  help: HELP,
  cleanUpOnSignal: removeOwnTemporaryFilesSync,
  async run(argv, { stdout, stderr }) {
    const { values, positionals } = parseCommandLine(argv, {
      out: { type: 'string' },
      'url-prefix': { type: 'string' },
      'root-path': { type: 'string' },
      json: { type: 'boolean' },
    });
    if (values.help) {
      stdout.write(`${HELP}\n`);
      return 0;
    }
    if (positionals.length !== 1) throw new UsageError('index takes one folder');
    if (values['root-path'] !== undefined && values['root-path'].trim() === '') throw new UsageError('--root-path must not be blank');
    const out = values.out ?? 'build/project.index.json';
    const progress = progressLine(stderr, !values.json && out !== '-');
    const folder = positionals[0]!;
    const exclude = out !== '-' ? [out] : [];
    const { index } = await looseIndexFromFolder(folder, {
      exclude,
      ...(values['url-prefix'] !== undefined ? { urlPrefix: values['url-prefix'] } : {}),
      ...(values['root-path'] !== undefined ? { rootPath: values['root-path'] } : {}),
      onProgress: ({ files, bytes }) => progress.update(`indexing: ${plural(files, 'file')}, ${formatBytes(bytes)}`),
    }).catch(async (error: unknown) => {
      // "the folder is empty" is wrong for a folder of empty folders: say what it holds. Only that
      // refusal is replaced; any other (an unsafe name, an unreadable folder) names its own cause.
      const empty = error instanceof Error && error.message === `${folder}: no files to publish (the folder is empty)`;
      const reason = empty ? await noFilesReason(folder, exclude, 'index') : undefined;
      throw reason === undefined ? error : new CommandFailure(reason);
    });
    progress.clear();
    const text = serializeIndex(index);
    if (out === '-') {
      stdout.write(text);
      return 0;
    }
    await makeFolder(dirname(out), 'folder for the index');
    await writeFileAtomic(out, text);
    const bytes = index.files.reduce((sum, file) => sum + file.sizeBytes, 0);
    if (values.json) stdout.write(`${JSON.stringify({ ok: true, out, files: index.files.length, bytes })}\n`);
    else
      stdout.write(
        printable(`Indexed ${plural(index.files.length, 'file')} (${formatBytes(bytes)}) into ${out}\n`, { keepNewlines: true }),
      );
    return 0;
  },
};
