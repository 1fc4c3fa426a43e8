/** `awake-bundle <loose-index.json | folder> --out <dir>`: write bundles and the bundled index (SPEC §8). */
import { readFile, realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathCollisions, unsafePathReason } from '../../core/format/paths.js';
import { decodeIndexText } from '../../core/format/index-text.js';
import { parseProjectIndex, type LooseIndex, type ProjectIndex } from '../../core/format/project-index.js';
import { listFolderFiles, type FolderFile } from '../../core/node/loose-index.js';
import { publishFolder } from '../../core/node/publish-folder.js';
import { readLoadsFile } from '../../core/node/publish-grouping.js';
import { AwakeError, UnsupportedIndexVersionError } from '../../core/errors.js';
import type { LooseFileEntry } from '../../core/format/project-index.js';
import { looseFileLocator, publishToDirectory, removeOwnTemporaryFilesSync, type PublishSummary } from '../../core/node/publish.js';
import { CommandFailure, formatBytes, parseCommandLine, plural, printable, progressLine, UsageError, type Command } from '../usage.js';
import { DEFAULT_BUNDLE_URL_PREFIX, DEFAULT_TARGET_BUNDLE_BYTES } from '../../core/publish/plan.js';
import { looseIndexFromFolder } from '../../core/node/loose-index.js';
import { parseTargetArguments, removeOwnStagingFoldersSync, runPublishToTarget, TARGET_HELP, TARGET_OPTIONS } from './publish-to.js';
import { writerOptionsFrom, type PublishArguments } from './publish-arguments.js';
import { noFilesReason } from '../empty-input.js';

const HELP = `Usage: awake-bundle <loose-index.json | assets-folder> [options]

Packs a project's files into SHA-256-named AWKB bundles and writes the bundled index:
  <out>/bundles/<sha256>.awkb and <out>/project.index.json
Bundles the out folder already holds (checked by their SHA-256) are not written again; a
damaged one is rewritten and reported. The index is written last, so an interrupted publish
never leaves an index naming a missing bundle. The out folder may lie inside the input folder
(it is left out of the input); it may not be the input folder itself.

Options:
  --out <dir>          output folder (default build/published)
  --group folder|one|auto
                       group by top folders (default), put everything in one group, or
                       (auto) put each file with the files that reference it (glTF, Phaser
                       pack files, atlases, bitmap fonts, Tiled maps), the rest by folder
  --depth <n>          with --group folder or auto: how many folder levels name a group
                       (default 1)
  --loads <file>       group the files each load of this loads file (awkb-loads.json) lists,
                       a load's files together, a file two loads list with the first; the
                       rest as --group says. A listed path that is not a file is ignored
                       with a warning
  --target-mb <n>      bundle size target in MiB, decimals allowed (default 16)
  --opaque-ids         replace paths with salted HMAC-SHA256 ids (needs --salt)
  --salt <text>        the salt for --opaque-ids
  --url-prefix <dir>   folder of bundle URLs, relative to the index (default bundles)
  --root <folder>      with a loose index: read files from <folder>/<path>
                       (default: each file's url, relative to the index file)
  --root-path <text>   with a folder: the index's rootPath (default /project)
  --allow-case-collisions
                       publish paths that differ only by case or Unicode normalization
                       (they collide on macOS and Windows hosts) with a warning, instead
                       of refusing them
  --no-compress        store every member as it is (AWKB version 1); by default a
                       member is stored deflate-raw where that saves at least 1 KiB
                       and 5% (AWKB version 2), and readers decode it
  --compress           the default, said explicitly
${TARGET_HELP}
  --json               print a machine-readable summary on stdout
  -h, --help           show this help

Exit codes: 0 published, 1 publish failed (nothing new is indexed), 2 wrong command line,
130/143 stopped by SIGINT/SIGTERM (its temporary files removed, nothing new indexed).`;

export function parsePublishArguments(argv: string[]): PublishArguments | 'help' {
  const { values, positionals } = parseCommandLine(argv, {
    out: { type: 'string' },
    group: { type: 'string' },
    depth: { type: 'string' },
    loads: { type: 'string' },
    'target-mb': { type: 'string' },
    'opaque-ids': { type: 'boolean' },
    salt: { type: 'string' },
    'url-prefix': { type: 'string' },
    root: { type: 'string' },
    'root-path': { type: 'string' },
    'allow-case-collisions': { type: 'boolean' },
    compress: { type: 'boolean' },
    'no-compress': { type: 'boolean' },
    json: { type: 'boolean' },
    ...TARGET_OPTIONS,
  });
  if (values.help) return 'help';
  if (values.out === '') throw new UsageError('--out must not be empty');
  if (positionals.length === 0) throw new UsageError('missing the input: a loose index (.json) or an assets folder');
  if (positionals.length > 1) throw new UsageError(`one input expected, got ${positionals.length}: ${positionals.join(' ')}`);
  const grouping = values.group ?? 'folder';
  if (grouping !== 'folder' && grouping !== 'one' && grouping !== 'auto')
    throw new UsageError(`--group must be "folder", "one" or "auto", got ${JSON.stringify(grouping)}`);
  let depth = 1;
  if (values.depth !== undefined) {
    if (!/^\d+$/.test(values.depth) || Number(values.depth) < 1)
      throw new UsageError(`--depth must be a positive integer, got ${JSON.stringify(values.depth)}`);
    if (grouping === 'one') throw new UsageError('--depth applies to --group folder or auto, not --group one');
    depth = Number(values.depth);
  }
  let targetBundleBytes = DEFAULT_TARGET_BUNDLE_BYTES;
  if (values['target-mb'] !== undefined) {
    const text = values['target-mb'];
    const megabytes = /^\d+(\.\d+)?$|^\.\d+$/.test(text) ? Number(text) : Number.NaN;
    // SPEC §8: the target is floor(n × 1,048,576) bytes.
    targetBundleBytes = Math.floor(megabytes * 1048576);
    if (!Number.isFinite(megabytes) || targetBundleBytes < 1)
      throw new UsageError(`--target-mb must be a number above 0 (MiB, decimals allowed), got ${JSON.stringify(text)}`);
    if (!Number.isSafeInteger(targetBundleBytes)) throw new UsageError(`--target-mb ${text} is too large`);
  }
  if (values['opaque-ids'] && !values.salt) throw new UsageError('--opaque-ids needs --salt <text>');
  if (values.salt !== undefined && !values['opaque-ids']) throw new UsageError('--salt is only used with --opaque-ids');
  if (values.compress && values['no-compress']) throw new UsageError('--compress and --no-compress ask for opposite things: give one');
  if (values.salt === '') throw new UsageError('--salt must not be empty');
  if (values.loads === '') throw new UsageError('--loads must name a loads file, such as awkb-loads.json');
  if (values['root-path'] !== undefined && values['root-path'].trim() === '') throw new UsageError('--root-path must not be blank');
  const urlPrefix = values['url-prefix'] ?? DEFAULT_BUNDLE_URL_PREFIX;
  const prefixProblem = urlPrefix.replace(/\/+$/, '') === '' ? undefined : unsafePathReason(urlPrefix.replace(/\/+$/, ''));
  if (prefixProblem !== undefined)
    throw new UsageError(
      `--url-prefix ${JSON.stringify(urlPrefix)} must be a folder relative to the index (SPEC §5), such as "bundles" (it ${prefixProblem})`,
    );
  const target = parseTargetArguments(values);
  return {
    input: positionals[0]!,
    out: values.out ?? 'build/published',
    grouping,
    depth,
    ...(values.loads !== undefined ? { loadsFile: values.loads } : {}),
    targetBundleBytes,
    ...(values['opaque-ids'] ? { salt: values.salt! } : {}),
    urlPrefix,
    ...(values.root !== undefined ? { root: values.root } : {}),
    ...(values['root-path'] !== undefined ? { rootPath: values['root-path'] } : {}),
    allowCaseCollisions: values['allow-case-collisions'] ?? false,
    ...(values['no-compress'] ? { compress: false } : values.compress ? { compress: true } : {}),
    json: values.json ?? false,
    ...(target !== undefined ? { target } : {}),
  };
}

/**
 * The out folder may lie inside the input (SPEC §8: it is left out of the input), but it may not
 * be the input itself: everything would be left out, and bundles would land among the assets.
 */
async function checkOutIsNotInput(args: PublishArguments): Promise<void> {
  const real = (path: string) => realpath(resolve(path)).catch(() => resolve(path));
  const [input, out] = await Promise.all([real(args.input), real(args.out)]);
  if (input === out)
    throw new UsageError(`--out ${args.out} is the input folder ${args.input}: choose another out folder, such as build/published`);
}

type Input = { folder: string; files: FolderFile[] } | { looseIndex: LooseIndex; locate: (entry: LooseFileEntry) => string };

async function loadInput(args: PublishArguments): Promise<Input> {
  let info;
  try {
    info = await stat(args.input);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CommandFailure(`${args.input}: ${code === 'ENOENT' ? 'no such file or folder' : `cannot read: ${(error as Error).message}`}`);
  }
  if (info.isDirectory()) {
    if (args.root !== undefined) throw new UsageError('--root applies to a loose index input, not a folder');
    await checkOutIsNotInput(args);
    const files = await listFolderFiles(args.input, { exclude: [args.out] });
    // The writer's own "the folder is empty" is wrong for a folder of empty folders: say what it holds.
    const reason = files.length === 0 ? await noFilesReason(args.input, [args.out]) : undefined;
    if (reason !== undefined) throw new CommandFailure(reason);
    return { folder: args.input, files };
  }
  if (args.rootPath !== undefined) throw new UsageError('--root-path applies to a folder input; a loose index has its own rootPath');
  const parsed = await readIndexInput(args.input);
  if (parsed.formatVersion !== 2)
    throw new CommandFailure(
      `${args.input}: formatVersion ${parsed.formatVersion} is already bundled; publish takes a loose (formatVersion 2) index or a folder`,
    );
  const looseIndex = parsed as LooseIndex;
  return { looseIndex, locate: checkedLocator(looseIndex, looseFileLocator(resolve(args.input), args.root)) };
}

/**
 * The input file as a project index. A file that is not one (empty, not JSON, JSON without a
 * `formatVersion`) is named as neither an index nor a folder, rather than as a broken index.
 */
async function readIndexInput(input: string): Promise<ProjectIndex> {
  // Strict UTF-8 (decodeIndexText): an index whose paths are not is refused, naming the entry.
  const text = decodeIndexText(await readFile(input), { url: input });
  const notAnIndex = (what: string) =>
    new CommandFailure(
      `${input} is neither a project index nor a folder: ${what}. Publish takes a loose index (.json) or an assets folder`,
    );
  if (text.trim() === '') throw notAnIndex('the file is empty');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw notAnIndex('it is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !('formatVersion' in value)) {
    throw notAnIndex(
      `it is JSON, but not a project index (${Array.isArray(value) ? 'an array' : typeof value === 'object' && value !== null ? 'no formatVersion' : `a ${value === null ? 'null' : typeof value}`})`,
    );
  }
  try {
    return parseProjectIndex(value, { url: input });
  } catch (error) {
    // An index this reader does not know (formatVersion 9): its message names no file.
    if (error instanceof UnsupportedIndexVersionError) throw new CommandFailure(`${input}: ${error.message}`);
    throw error;
  }
}

/** A folder input as a loose index and a locator (for publishToTarget). */
async function looseInputOf(args: PublishArguments): Promise<{ looseIndex: LooseIndex; locate: (entry: LooseFileEntry) => string }> {
  const { index, files } = await looseIndexFromFolder(args.input, {
    exclude: [args.out],
    ...(args.rootPath !== undefined ? { rootPath: args.rootPath } : {}),
  });
  const onDisk = new Map(files.map((file) => [file.path, file.absolutePath]));
  return { looseIndex: index, locate: (entry) => onDisk.get(entry.path)! };
}

/** Locates every file up front, so a url that is not a local file is named with the flag that helps. */
function checkedLocator(index: LooseIndex, locate: (entry: LooseFileEntry) => string): (entry: LooseFileEntry) => string {
  const paths = new Map<string, string>();
  for (const entry of index.files) {
    try {
      paths.set(entry.path, locate(entry));
    } catch (error) {
      if (error instanceof AwakeError) throw new CommandFailure(`${error.message}; pass --root <folder>`);
      throw error;
    }
  }
  return (entry) => paths.get(entry.path) ?? locate(entry);
}

/** Paths that collide on case-insensitive hosts, refused naming the flag that lets them through. */
function checkPathCollisions(paths: string[]): void {
  const collisions = pathCollisions(paths);
  if (collisions.length === 0) return;
  const pairs = collisions.map(([a, b]) => `${JSON.stringify(a)} and ${JSON.stringify(b)}`).join('; ');
  throw new CommandFailure(
    `paths that differ only by case or Unicode normalization collide on case-insensitive hosts (macOS, Windows): ${pairs}. ` +
      'Rename one of each pair, or publish anyway with --allow-case-collisions',
  );
}

export const publishCommand: Command = {
  name: 'publish',
  summary: 'pack a folder or loose index into bundles (the default command)',
  help: HELP,
  cleanUpOnSignal: () => {
    removeOwnTemporaryFilesSync();
    removeOwnStagingFoldersSync(); // --to without --out
  },
  async run(argv, { stdout, stderr }) {
    const args = parsePublishArguments(argv);
    if (args === 'help') {
      stdout.write(`${HELP}\n`);
      return 0;
    }
    // The loads file first: one that is refused stops the publish before anything is read or written.
    if (args.loadsFile !== undefined) args.loads = (await readLoadsFile(args.loadsFile)).loads;
    const progress = progressLine(stderr, !args.json);
    const started = Date.now();
    const input = await loadInput(args);
    if (!args.allowCaseCollisions)
      checkPathCollisions('folder' in input ? input.files.map((file) => file.path) : input.looseIndex.files.map((entry) => entry.path));
    if (args.target !== undefined) {
      // An upload publishes into a staging folder first (publishToTarget), from a loose index:
      // a folder is indexed here, so its files are read twice on this path.
      const loose = 'folder' in input ? await looseInputOf(args) : input;
      progress.clear();
      return runPublishToTarget({ ...args, target: args.target }, loose, { stdout, stderr });
    }
    const warnings: string[] = [];
    const options = { outDir: args.out, ...writerOptionsFrom(args, progress, stderr, warnings) };
    // A folder is read once, its files hashed as they are bundled (publishFolder).
    const summary =
      'folder' in input
        ? await publishFolder({
            ...options,
            folder: input.folder,
            files: input.files,
            ...(args.rootPath !== undefined ? { rootPath: args.rootPath } : {}),
          })
        : await publishToDirectory({ ...options, looseIndex: input.looseIndex, locate: input.locate });
    progress.clear();
    const seconds = (Date.now() - started) / 1000;
    if (args.json) {
      const { index, ...counts } = summary;
      stdout.write(`${JSON.stringify({ ok: true, out: args.out, files: index.files.length, ...counts, warnings, seconds }, null, 2)}\n`);
    } else {
      stdout.write(summaryText(summary, args.out, seconds));
    }
    return 0;
  },
};

function summaryText(summary: PublishSummary, out: string, seconds: number): string {
  const rewritten = summary.rewrittenBundles;
  return printable(
    `Published ${plural(summary.index.files.length, 'file')} in ${plural(summary.bundles, 'bundle')} (${formatBytes(summary.bytes)}) to ${out} in ${seconds.toFixed(1)} s\n` +
      `  new:           ${plural(summary.newBundles, 'bundle')}, ${formatBytes(summary.newBytes)} (${plural(summary.newBytes, 'byte')}) to upload\n` +
      `  rewritten:     ${plural(rewritten.length, 'damaged bundle')}${rewritten.length > 0 ? ' (their bytes did not match their name; counted in new):' : ''}\n` +
      rewritten.map((url) => `                 ${url}\n`).join('') +
      `  already there: ${plural(summary.existingBundles, 'bundle')}, ${formatBytes(summary.existingBytes)}\n` +
      (summary.staleTemporaryFilesRemoved > 0
        ? `  cleaned up:    ${plural(summary.staleTemporaryFilesRemoved, 'temporary file')} of interrupted publishes\n`
        : '') +
      `  index:         ${summary.indexPath}\n`,
    { keepNewlines: true },
  );
}
