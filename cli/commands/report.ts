/**
 * `awake-bundle report <published> [--loads <file>] [--html <file>] [--json]`: how the loads
 * (SPEC §6) meet the bundles of a published project. Per load, the bytes it fetches against the
 * bytes it uses; per bundle, the loads that touch it; the files no load uses (`reportLoads`).
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ProjectIndex } from '../../core/format/project-index.js';
import { LOAD_FETCH_MODEL, reportLoads, type LoadFetch, type LoadReport } from '../../core/publish/load-report.js';
import { LOADS_FILE_NAME, parseLoadsFile, type LoadsFile } from '../../core/publish/loads.js';
import { isUrl, loadIndex } from '../read-index.js';
import { reportPage } from '../report-html.js';
import {
  CommandFailure,
  formatBytes,
  formatRatio,
  parseCommandLine,
  plural,
  printable,
  shortSha,
  UsageError,
  type Command,
  type CommandContext,
} from '../usage.js';

const HELP = `Usage: awake-bundle report <published> [--loads <file>] [--html <file>] [--json]

How the loads (SPEC §6) meet the bundles of a published project: per load, the bytes it fetches
against the bytes it uses, its requests and the bundles it touches; per bundle, its size, files
and the loads that touch it; and the files no load uses. <published> is a published folder (its
project.index.json), an index file, or an http(s) URL of an index. Bytes fetched are stored bytes
(a bundle's file size, its encoded members compressed, SPEC §5a); bytes used are the files' own.

The loads file: --loads <file>; else ${LOADS_FILE_NAME} in the current folder; else ${LOADS_FILE_NAME}
beside <published> (in the folder that holds the published folder, or beside the index file;
never for a URL). Without one, only the per-bundle part.

${wrap(LOAD_FETCH_MODEL, 96)}

With opaque ids (SPEC §4) the loads' paths are matched by their ids, made with the salt the index
publishes (pathIds.salt); files no load lists show by id.

Options:
  --loads <file>  the loads file ({"formatVersion": 1, "loads": [{"name", "paths"}]})
  --html <file>   also write one self-contained page: a treemap of the bundles and their files,
                  each file coloured by the first load that reads it, and the over-fetch per load
  --json          the report for machines, on stdout:
    { "source", "index": { "formatVersion", "files", "bundles", "bundleBytes", "opaqueIds" },
      "loadsFile": <path> | null, "html": <path> | null, "keys": "path" | "id", "notes": [...],
      "loads": [ { "name", "files", "usedBytes",
                   "alone":   { "fetchedBytes", "ratio", "requests", "bundles": [<sha256>], "looseFiles" },
                   "inOrder": { the same }, "notInIndex": [<path>] } ] | null,
      "totals": { "usedBytes", "alone": { "fetchedBytes", "requests" }, "inOrder": { the same } } | null,
      "bundles": [ { "sha256", "url", "sizeBytes", "files", "fileBytes", "unusedFiles", "loads": [<name>] } ],
      "looseFiles": { "count", "bytes" },
      "files": [ { "key", "path"?, "sizeBytes", "sha256", "bundle"?, "firstLoad"? } ],
      "unusedFiles": { "count", "bytes", "files": [ <as in "files"> ] } | null }
    Loads in the file's order, bundles and files in index order; "ratio" is null for a load
    that uses no bytes; the per-load fields, "totals", "unusedFiles" and each bundle's
    "unusedFiles" and "loads" are null without a loads file.
  -h, --help      show this help

Exit codes: 0 reported, 1 the index or the loads file unreadable or invalid (named), 2 wrong
command line.`;

function wrap(text: string, width: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line].join('\n');
}

export interface FoundLoads {
  path: string;
  /** How it was found, for the report's first lines. */
  how: 'given' | 'in the current folder' | 'beside the published folder' | 'beside the index file';
}

const isFile = async (path: string) => (await stat(path).catch(() => undefined))?.isFile() ?? false;

/** The loads file to use: `--loads`, else awkb-loads.json in the current folder, else beside `source`. */
async function findLoadsFile(given: string | undefined, source: string): Promise<FoundLoads | undefined> {
  if (given !== undefined) return { path: given, how: 'given' };
  if (await isFile(LOADS_FILE_NAME)) return { path: LOADS_FILE_NAME, how: 'in the current folder' };
  if (isUrl(source)) return undefined;
  const isFolder = (await stat(source).catch(() => undefined))?.isDirectory() ?? false;
  const beside = isFolder ? join(source, '..', LOADS_FILE_NAME) : join(dirname(source), LOADS_FILE_NAME);
  if (await isFile(beside)) return { path: beside, how: isFolder ? 'beside the published folder' : 'beside the index file' };
  return undefined;
}

async function readLoads(path: string): Promise<LoadsFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new CommandFailure(`loads file ${path}: cannot read: ${(error as Error).message}`);
  }
  return parseLoadsFile(text, path);
}

// ---------------------------------------------------------------------------------------------
// Text

/** Rows in columns two spaces apart; the columns in `right` aligned right. */
function table(rows: string[][], right: ReadonlySet<number>): string[] {
  const widths = rows[0]!.map((_, column) => rows.reduce((widest, row) => Math.max(widest, [...row[column]!].length), 0));
  return rows.map((row) =>
    `  ${row.map((cell, column) => (right.has(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join('  ')}`.trimEnd(),
  );
}

export function describeIndex(source: string, index: ProjectIndex): string {
  const bundles =
    index.formatVersion === 3
      ? `, ${plural(index.bundles.length, 'bundle')} of ${formatBytes(index.bundles.reduce((sum, bundle) => sum + bundle.sizeBytes, 0))}`
      : '';
  return `${source} (formatVersion ${index.formatVersion}, ${plural(index.files.length, 'file')}${bundles}${index.formatVersion === 3 && index.pathIds ? ', opaque ids' : ''})`;
}

export function describeLoads(found: FoundLoads | undefined, loads: LoadsFile | undefined, source: string): string {
  if (!found || !loads)
    return `none: no --loads, and no ${LOADS_FILE_NAME} in the current folder${isUrl(source) ? '' : ' or beside the index'}; the per-load part needs a loads file (SPEC §6)`;
  return `${found.path} (${plural(loads.loads.length, 'load')}${found.how === 'given' ? '' : `; found ${found.how}`})`;
}

function loadLines(report: LoadReport, paint: (text: string) => string): string[] {
  const loads = report.loads!;
  const totals = report.totals!;
  const figures = (fetch: Pick<LoadFetch, 'fetchedBytes' | 'ratio' | 'requests'>) => [
    formatBytes(fetch.fetchedBytes),
    formatRatio(fetch.ratio),
    String(fetch.requests),
  ];
  const ratioOf = (fetched: number) => (totals.usedBytes > 0 ? fetched / totals.usedBytes : null);
  const rows = [
    ['load', 'files', 'used', 'fetched', 'ratio', 'requests', 'in order', 'ratio', 'requests'],
    ...loads.map((load) => [
      printable(load.name),
      String(load.files),
      formatBytes(load.usedBytes),
      ...figures(load.alone),
      ...figures(load.inOrder),
    ]),
    [
      'all loads',
      '',
      formatBytes(totals.usedBytes),
      ...figures({ ...totals.alone, ratio: ratioOf(totals.alone.fetchedBytes) }),
      ...figures({ ...totals.inOrder, ratio: ratioOf(totals.inOrder.fetchedBytes) }),
    ],
  ];
  const lines = [
    '',
    paint('Per load (fetched and requests: alone, then in order)'),
    ...table(rows, new Set([1, 2, 3, 4, 5, 6, 7, 8])),
    '',
    paint('Bundles each load touches (alone; in order, those not already cached)'),
  ];
  for (const load of loads) {
    const later =
      load.inOrder.bundles.length === load.alone.bundles.length
        ? ''
        : `; in order: ${load.inOrder.bundles.map(shortSha).join(', ') || 'none'}`;
    const loose = load.alone.looseFiles > 0 ? ` + ${plural(load.alone.looseFiles, 'loose file')}` : '';
    lines.push(`  ${printable(load.name)}: ${load.alone.bundles.map(shortSha).join(', ') || 'none'}${loose}${later}`);
  }
  for (const load of loads) {
    if (load.notInIndex.length > 0)
      lines.push(
        `  note: ${printable(load.name)} lists ${plural(load.notInIndex.length, 'path')} the index does not: ${load.notInIndex.map((path) => printable(path)).join(', ')}`,
      );
  }
  return lines;
}

function bundleLines(report: LoadReport, paint: (text: string) => string): string[] {
  const lines: string[] = [];
  if (report.bundles.length > 0) {
    const withLoads = report.loads !== null;
    const rows = [
      ['bundle', 'size', 'files', ...(withLoads ? ['unused', 'loads'] : [])],
      ...report.bundles.map((bundle) => [
        shortSha(bundle.sha256),
        formatBytes(bundle.sizeBytes),
        String(bundle.files),
        ...(withLoads ? [String(bundle.unusedFiles), bundle.loads!.map((name) => printable(name)).join(', ') || 'none'] : []),
      ]),
    ];
    lines.push(
      '',
      paint(`Bundles: ${report.bundles.length}, ${formatBytes(report.bundles.reduce((sum, bundle) => sum + bundle.sizeBytes, 0))}`),
      ...table(rows, new Set([1, 2, 3])),
    );
  }
  if (report.looseFiles.count > 0)
    lines.push('', `Loose files: ${report.looseFiles.count}, ${formatBytes(report.looseFiles.bytes)} (one request each)`);
  return lines;
}

function unusedLines(report: LoadReport, paint: (text: string) => string): string[] {
  const unused = report.unusedFiles;
  if (!unused) return [];
  const rows = unused.files.map((file) => [
    printable(file.key),
    formatBytes(file.sizeBytes),
    file.bundle ? `bundle ${shortSha(file.bundle)}` : 'loose',
  ]);
  return [
    '',
    paint(`Files no load uses: ${unused.count}, ${formatBytes(unused.bytes)}`),
    ...(rows.length > 0 ? table(rows, new Set([1])) : []),
  ];
}

/** The report as text; names escaped (printable), headings in bold only on a terminal. */
function formatReport(
  source: string,
  index: ProjectIndex,
  found: FoundLoads | undefined,
  loads: LoadsFile | undefined,
  report: LoadReport,
  html: string | undefined,
  colour: boolean,
): string {
  const paint = (text: string) => (colour ? `\x1b[1m${text}\x1b[0m` : text);
  const lines = [`index: ${printable(describeIndex(source, index))}`, `loads: ${printable(describeLoads(found, loads, source))}`];
  for (const note of report.notes) lines.push(`note: ${note}`);
  if (report.loads) lines.push(wrap(`model: ${LOAD_FETCH_MODEL}`, 100));
  if (report.loads) lines.push(...loadLines(report, paint));
  lines.push(...bundleLines(report, paint), ...unusedLines(report, paint));
  if (html !== undefined) lines.push('', `HTML: ${printable(html)}`);
  return `${lines.join('\n')}\n`;
}

function reportJson(
  source: string,
  index: ProjectIndex,
  found: FoundLoads | undefined,
  report: LoadReport,
  html: string | undefined,
): string {
  const described = {
    formatVersion: index.formatVersion,
    files: index.files.length,
    bundles: index.formatVersion === 3 ? index.bundles.length : 0,
    bundleBytes: index.formatVersion === 3 ? index.bundles.reduce((sum, bundle) => sum + bundle.sizeBytes, 0) : 0,
    opaqueIds: index.formatVersion === 3 && index.pathIds !== undefined,
  };
  const { keys, notes, loads, totals, bundles, looseFiles, files, unusedFiles } = report;
  return `${JSON.stringify({ source, index: described, loadsFile: found?.path ?? null, html: html ?? null, keys, notes, loads, totals, bundles, looseFiles, files, unusedFiles }, null, 2)}\n`;
}

async function writePage(path: string, page: string): Promise<void> {
  try {
    await writeFile(path, page);
  } catch (error) {
    throw new CommandFailure(`${path}: cannot write the page: ${(error as Error).message}`);
  }
}

export const reportCommand: Command = {
  name: 'report',
  summary: 'per load, the bytes fetched against the bytes used; bundles, and files no load uses',
  help: HELP,
  async run(argv, { stdout }: CommandContext) {
    const { values, positionals } = parseCommandLine(argv, {
      loads: { type: 'string' },
      html: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (values.help) {
      stdout.write(`${HELP}\n`);
      return 0;
    }
    if (positionals.length !== 1)
      throw new UsageError(`report takes one index (a published folder, an index file or an http(s) URL), found ${positionals.length}`);
    if (values.loads === '') throw new UsageError('--loads needs a file name');
    if (values.html === '') throw new UsageError('--html needs a file name');
    const source = positionals[0]!;
    const index = await loadIndex(source);
    const found = await findLoadsFile(values.loads, source);
    const loads = found ? await readLoads(found.path) : undefined;
    const report = reportLoads(index, loads?.loads);
    if (values.html !== undefined) {
      await writePage(
        values.html,
        reportPage({ source, index: describeIndex(source, index), loads: describeLoads(found, loads, source), report }),
      );
    }
    stdout.write(
      values.json
        ? reportJson(source, index, found, report, values.html)
        : formatReport(source, index, found, loads, report, values.html, stdout.isTTY === true),
    );
    return 0;
  },
};
