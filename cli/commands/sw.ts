/**
 * `awake-bundle sw --out <site-folder> [--index <url>]`: writes the prebuilt service worker
 * (dist/sw/awake-bundle-sw.js, built by `npm run build`) into a site, with the index URL baked in
 * when given.
 */
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SERVICE_WORKER_FILE, serviceWorkerSource } from '../../core/node/service-worker-file.js';
import { CommandFailure, makeFolder, parseCommandLine, printable, UsageError, type Command, type CommandContext } from '../usage.js';

export { SERVICE_WORKER_FILE };

const HELP = `Usage: awake-bundle sw --out <site-folder> [--index <url>] [--json]

Writes ${SERVICE_WORKER_FILE} into <site-folder>: a self-contained service worker (no imports at
run time) that answers the page's requests for the files an index lists with verified bytes
from its bundles, and lets every other request through. Register it from the page:

  navigator.serviceWorker.register('${SERVICE_WORKER_FILE}')

Its index URL, relative to the worker's own URL: the register URL's query
('${SERVICE_WORKER_FILE}?index=published/project.index.json'), else --index, else
project.index.json. The worker serves URLs below the folder that holds the index, within the
worker's scope (by default the folder it is served from).
Exit codes: 0 written, 1 failed, 2 wrong command line.`;

export const swCommand: Command = {
  name: 'sw',
  summary: 'write the service worker that serves indexed URLs from verified bundles',
  help: HELP,
  async run(argv, { stdout, stderr }: CommandContext) {
    const { values, positionals } = parseCommandLine(argv, {
      out: { type: 'string' },
      index: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (values.help) {
      stdout.write(`${HELP}\n`);
      return 0;
    }
    if (positionals.length > 0) throw new UsageError(`sw takes no positional arguments, found ${printable(positionals[0]!)}`);
    if (values.out === undefined || values.out === '') throw new UsageError('sw needs --out <site-folder>');
    if (values.index !== undefined && values.index.trim() === '') throw new UsageError('--index must be a URL, found an empty one');
    // A package that was not built names the missing worker (exit 1).
    const worker = await serviceWorkerSource(values.index);
    const target = join(values.out, SERVICE_WORKER_FILE);
    await makeFolder(values.out, 'site folder');
    try {
      await writeFile(target, worker);
    } catch (error) {
      throw new CommandFailure(`${target}: cannot write: ${(error as Error).message}`);
    }
    const index = values.index ?? 'project.index.json';
    if (values.index !== undefined) {
      const missing = await missingIndexFile(values.out, values.index);
      const publishTo = join(values.out, dirOf(values.index));
      if (missing !== undefined)
        stderr.write(
          `awake-bundle: warning: ${printable(`there is no ${missing}: the worker fetches --index ${values.index} relative to its own URL; publish there (awake-bundle <assets> --out ${publishTo}) or fix --index`)}\n`,
        );
    }
    stdout.write(
      values.json
        ? `${JSON.stringify({ file: target, index })}\n`
        : `wrote ${printable(target)} (index ${printable(index)}, relative to the worker's URL)\n`,
    );
    return 0;
  },
};

/**
 * The file a relative index URL names below the site folder, when it is not there: the worker
 * would fetch a 404 (or a single-page app's fallback page). `undefined` for an index that is
 * there, and for absolute and root-relative URLs (the site's layout above the worker is unknown).
 */
async function missingIndexFile(out: string, indexUrl: string): Promise<string | undefined> {
  if (/^[a-z][a-z\d+.-]*:|^[/\\]/i.test(indexUrl)) return undefined;
  let path: string;
  try {
    path = decodeURIComponent(indexUrl.replace(/[?#].*$/s, ''));
  } catch {
    return undefined;
  }
  const file = join(out, path);
  return (await stat(file).catch(() => undefined))?.isFile() ? undefined : file;
}

/** `published/` of `published/project.index.json`; `.` for a bare file name. */
function dirOf(url: string): string {
  const path = url.replace(/[?#].*$/s, '');
  return path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '.';
}
