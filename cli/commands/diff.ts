/**
 * `awake-bundle diff <old-index> <new-index>`: what changed between two versions of a project,
 * what a host uploads, and what a returning player downloads (whole bundles against ranges).
 */
import { DEFAULT_DELTA_RANGE_OPTIONS, type DeltaRangeOptions } from '../../core/format/delta-ranges.js';
import { diffProjectIndexes, type IndexDiff } from '../../core/format/index-diff.js';
import type { ProjectIndex } from '../../core/format/project-index.js';
import { loadIndex } from '../read-index.js';
import { formatBytes, parseCommandLine, printable, UsageError, type Command, type CommandContext } from '../usage.js';

const HELP = `Usage: awake-bundle diff <old-index> <new-index> [--json]
                         [--max-gap <bytes>] [--max-missing <fraction>] [--max-ranges <n>]

Compares two project indexes (a project.index.json, the published folder holding one, or an
http(s) URL): files added, changed and removed; bundles new and gone; the bytes a host uploads
(the new bundles); and the bytes a returning player downloads, who holds the old version's
contents: whole bundles, or only the missing members' byte ranges (members closer than
--max-gap merged into one range, default 65536; the whole bundle when more than --max-missing of
it is missing, default 0.5; at most --max-ranges requests per bundle, default 4).
Bytes downloaded are stored bytes: an encoded member's range is its storedBytes (SPEC §5a).
Indexes with opaque ids compare by id. A loose (formatVersion 2) index compares by files only.
Exit codes: 0 compared (changed or not), 1 an index unreadable or invalid, 2 wrong command line.`;

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

function numberOption(value: string | undefined, flag: string, check: (n: number) => boolean, expected: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (value.trim() === '' || !check(number)) throw new UsageError(`${flag} must be ${expected}, found ${JSON.stringify(value)}`);
  return number;
}

function rangeOptions(values: { 'max-gap'?: string; 'max-missing'?: string; 'max-ranges'?: string }): DeltaRangeOptions {
  const options: DeltaRangeOptions = { ...DEFAULT_DELTA_RANGE_OPTIONS };
  const maxGapBytes = numberOption(values['max-gap'], '--max-gap', (n) => Number.isSafeInteger(n) && n >= 0, 'a whole number of bytes');
  const maxMissingFraction = numberOption(values['max-missing'], '--max-missing', (n) => n >= 0 && n <= 1, 'a fraction between 0 and 1');
  const maxRanges = numberOption(
    values['max-ranges'],
    '--max-ranges',
    (n) => Number.isSafeInteger(n) && n >= 1,
    'a whole number of at least 1',
  );
  if (maxGapBytes !== undefined) options.maxGapBytes = maxGapBytes;
  if (maxMissingFraction !== undefined) options.maxMissingFraction = maxMissingFraction;
  if (maxRanges !== undefined) options.maxRanges = maxRanges;
  return options;
}

function describeIndex(source: string, index: ProjectIndex): string {
  const bundles = index.formatVersion === 3 ? `, ${plural(index.bundles.length, 'bundle')}` : '';
  return `${printable(source)} (formatVersion ${index.formatVersion}, ${plural(index.files.length, 'file')}${bundles}${index.formatVersion === 3 && index.pathIds ? ', opaque ids' : ''})`;
}

/** The diff as text; names escaped (printable), colours only on a terminal. */
function formatDiff(sources: [string, string], indexes: [ProjectIndex, ProjectIndex], diff: IndexDiff, colour: boolean): string {
  const paint = (code: number, text: string) => (colour ? `\x1b[${code}m${text}\x1b[0m` : text);
  const added = (text: string) => paint(32, text);
  const removed = (text: string) => paint(31, text);
  const changed = (text: string) => paint(33, text);
  const lines = [`old: ${describeIndex(sources[0], indexes[0])}`, `new: ${describeIndex(sources[1], indexes[1])}`];
  for (const note of diff.notes) lines.push(`note: ${note}`);

  const { files, bundles, upload, download } = diff;
  lines.push(
    '',
    `Files: ${files.added.length} added, ${files.changed.length} changed, ${files.removed.length} removed, ${files.unchanged} unchanged`,
  );
  for (const file of files.added) lines.push(`  ${added('+')} ${printable(file.key)}  ${formatBytes(file.sizeBytes)}`);
  for (const file of files.changed)
    lines.push(`  ${changed('~')} ${printable(file.key)}  ${formatBytes(file.old.sizeBytes)} → ${formatBytes(file.new.sizeBytes)}`);
  for (const file of files.removed) lines.push(`  ${removed('-')} ${printable(file.key)}  ${formatBytes(file.sizeBytes)}`);

  if (indexes[0].formatVersion === 3 || indexes[1].formatVersion === 3) {
    lines.push('', `Bundles: ${bundles.new.length} new, ${bundles.gone.length} gone, ${bundles.kept} kept`);
    for (const bundle of bundles.new) lines.push(`  ${added('+')} ${printable(bundle.url)}  ${formatBytes(bundle.sizeBytes)}`);
    for (const bundle of bundles.gone) lines.push(`  ${removed('-')} ${printable(bundle.url)}  ${formatBytes(bundle.sizeBytes)}`);
    lines.push('', `Upload: ${plural(upload.bundles, 'new bundle')}, ${formatBytes(upload.bytes)}`);
  }

  const { wholeBundles, deltaRanges, multiRange, looseFiles } = download;
  const loose =
    looseFiles.files > 0 ? `; ${plural(looseFiles.files, 'loose file')} (${formatBytes(looseFiles.bytes)}) fetched alone in both` : '';
  lines.push(
    '',
    `Download for a returning player: ${plural(download.missingContents, 'missing content')}, ${formatBytes(download.missingBytes)}${loose}`,
    `  whole bundles: ${formatBytes(wholeBundles.bytes)} in ${plural(wholeBundles.requests, 'request')} (${plural(wholeBundles.bundles, 'bundle')})`,
    `  delta ranges:  ${formatBytes(deltaRanges.bytes)} in ${plural(deltaRanges.requests, 'request')} (${plural(deltaRanges.bundlesRanged, 'bundle')} by ranges, ${deltaRanges.bundlesWhole} whole)`,
    `  multi-range:   ${formatBytes(multiRange.bytes)} in ${plural(multiRange.requests, 'request')} (one per bundle, the reader's default where the server answers multi-range requests)`,
  );
  return `${lines.join('\n')}\n`;
}

/** --json: the library's result, with the sources and each index's shape. */
function diffJson(sources: [string, string], indexes: [ProjectIndex, ProjectIndex], diff: IndexDiff): string {
  const describe = (source: string, index: ProjectIndex) => ({
    source,
    formatVersion: index.formatVersion,
    files: index.files.length,
    bundles: index.formatVersion === 3 ? index.bundles.length : 0,
    opaqueIds: index.formatVersion === 3 && index.pathIds !== undefined,
  });
  return `${JSON.stringify({ old: describe(sources[0], indexes[0]), new: describe(sources[1], indexes[1]), ...diff }, null, 2)}\n`;
}

export const diffCommand: Command = {
  name: 'diff',
  summary: 'what changed between two indexes, and what it costs to upload and download',
  help: HELP,
  async run(argv, { stdout }: CommandContext) {
    const { values, positionals } = parseCommandLine(argv, {
      json: { type: 'boolean' },
      'max-gap': { type: 'string' },
      'max-missing': { type: 'string' },
      'max-ranges': { type: 'string' },
    });
    if (values.help) {
      stdout.write(`${HELP}\n`);
      return 0;
    }
    if (positionals.length !== 2) throw new UsageError(`diff takes two indexes (old and new), found ${positionals.length}`);
    const options = rangeOptions(values);
    const sources = [positionals[0]!, positionals[1]!] as [string, string];
    const indexes: [ProjectIndex, ProjectIndex] = [await loadIndex(sources[0]), await loadIndex(sources[1])];
    const diff = diffProjectIndexes(indexes[0], indexes[1], options);
    stdout.write(values.json ? diffJson(sources, indexes, diff) : formatDiff(sources, indexes, diff, stdout.isTTY === true));
    return 0;
  },
};
