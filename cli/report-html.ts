/**
 * `report --html`: one self-contained page (inline CSS and SVG, no script, and a
 * Content-Security-Policy that lets it load nothing): a treemap of the bundles and their files,
 * each file coloured by the first load that reads it, a legend, and the over-fetch per load.
 */
import { LOAD_FETCH_MODEL, type LoadReport, type ReportFile } from '../core/publish/load-report.js';
import { squarify, type Rect } from './treemap.js';
import { formatBytes, formatRatio, printable, shortSha } from './usage.js';

/** Tableau 10 without its grey (the grey is for files no load reads). */
const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f'];
export const UNUSED_COLOUR = '#d3d3d3';

/** The colour of the `i`th load: the palette, then hues a golden angle apart. */
export function loadColour(i: number): string {
  if (i < PALETTE.length) return PALETTE[i]!;
  const hue = Math.round((i * 137.508) % 360);
  return `hsl(${hue}, 55%, ${i % 2 === 0 ? 55 : 42}%)`;
}

const escapeMarkup = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.codePointAt(0)};`);

/**
 * Text from the index or the loads file, for the page: escaped as the text report escapes it
 * (`printable`: controls, bidi overrides and isolates, separators as `\xNN` or `\u{NNNN}`, so a
 * name cannot reorder or hide what is shown beside it), then for HTML.
 */
const escapeHtml = (text: string) => escapeMarkup(printable(text));

/** A tooltip: each line escaped, so the line breaks are the page's own and never a name's. */
const escapeLines = (lines: readonly string[]) => lines.map(escapeHtml).join('\n');

const WIDTH = 1200;
const HEIGHT = 680;
const HEADER = 16;

interface Cell {
  label: string;
  /** The tooltip's lines. */
  title: string[];
  sizeBytes: number;
  files: ReportFile[];
}

const round = (value: number) => Math.round(value * 10) / 10;
const rectAttributes = ({ x, y, width, height }: Rect) =>
  `x="${round(x)}" y="${round(y)}" width="${round(Math.max(0, width))}" height="${round(Math.max(0, height))}"`;

function fileRect(file: ReportFile, rect: Rect, colourOf: (file: ReportFile) => string): string {
  const name = file.path ?? file.key;
  const title = [name, formatBytes(file.sizeBytes), file.firstLoad !== undefined ? `first load: ${file.firstLoad}` : 'no load reads it'];
  const shape = `<rect class="file" ${rectAttributes(rect)} fill="${colourOf(file)}"><title>${escapeLines(title)}</title></rect>`;
  // The file's own name where it fits; the whole path is in the title.
  if (rect.width < 48 || rect.height < 16) return shape;
  const baseName = name.slice(name.lastIndexOf('/') + 1);
  return `${shape}<text class="name" x="${round(rect.x + 4)}" y="${round(rect.y + 13)}">${escapeMarkup(fitLabel(printable(baseName), rect.width - 8))}</text>`;
}

/** A bundle (or the loose files): its frame, a label when there is room, its files inside. */
function cellSvg(cell: Cell, rect: Rect, colourOf: (file: ReportFile) => string): string {
  const labelled = rect.height > HEADER * 2.5 && rect.width > 70;
  const inner = {
    x: rect.x + 2,
    y: rect.y + (labelled ? HEADER : 2),
    width: rect.width - 4,
    height: rect.height - (labelled ? HEADER + 2 : 4),
  };
  const files = squarify(cell.files, (file) => file.sizeBytes, inner).map(({ item, rect: fileBounds }) =>
    fileRect(item, fileBounds, colourOf),
  );
  const label = labelled
    ? `<text x="${round(rect.x + 4)}" y="${round(rect.y + 12)}">${escapeMarkup(fitLabel(printable(cell.label), rect.width - 8))}</text>`
    : '';
  return `<g class="bundle"><rect class="frame" ${rectAttributes(rect)}><title>${escapeLines(cell.title)}</title></rect>${label}${files.join('')}</g>`;
}

/** The label cut to what fits in `width` pixels at about 6.5 pixels a character (whole code points: a pair is never split). */
function fitLabel(label: string, width: number): string {
  const characters = Math.floor(width / 6.5);
  const points = [...label];
  return points.length <= characters ? label : `${points.slice(0, Math.max(1, characters - 1)).join('')}…`;
}

function treemapSvg(report: LoadReport, colourOf: (file: ReportFile) => string): string {
  const cells: Cell[] = report.bundles.map((bundle) => ({
    label: `${shortSha(bundle.sha256)} · ${formatBytes(bundle.sizeBytes)}`,
    title: [
      `bundle ${bundle.url}`,
      `${formatBytes(bundle.sizeBytes)}, ${bundle.files} files`,
      ...(bundle.loads ? [`loads: ${bundle.loads.join(', ') || 'none'}`] : []),
    ],
    sizeBytes: bundle.sizeBytes,
    files: report.files.filter((file) => file.bundle === bundle.sha256),
  }));
  const loose = report.files.filter((file) => file.bundle === undefined);
  if (loose.length > 0)
    cells.push({
      label: `loose files · ${formatBytes(report.looseFiles.bytes)}`,
      title: [`${loose.length} loose files, one request each`],
      sizeBytes: report.looseFiles.bytes,
      files: loose,
    });
  const placed = squarify(cells, (cell) => cell.sizeBytes, { x: 0, y: 0, width: WIDTH, height: HEIGHT });
  return `<svg class="treemap" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="Treemap of the bundles and their files">${placed.map(({ item, rect }) => cellSvg(item, rect, colourOf)).join('')}</svg>`;
}

function legendHtml(report: LoadReport, colours: Map<string, string>): string {
  const swatch = (colour: string, label: string) =>
    `<li><span class="swatch" style="background:${colour}"></span>${escapeHtml(label)}</li>`;
  const items = [...colours].map(([name, colour]) => swatch(colour, name));
  items.push(swatch(UNUSED_COLOUR, report.loads ? 'no load reads it' : 'no loads file: files are not coloured by load'));
  return `<ul class="legend">${items.join('')}</ul>`;
}

function loadsTable(report: LoadReport, colours: Map<string, string>): string {
  if (!report.loads) return '<p>No loads file: the per-load part needs one (SPEC §6).</p>';
  const number = (text: string) => `<td class="n">${escapeHtml(text)}</td>`;
  const rows = report.loads.map(
    (load) =>
      `<tr><td><span class="swatch" style="background:${colours.get(load.name)}"></span>${escapeHtml(load.name)}</td>${number(String(load.files))}${number(formatBytes(load.usedBytes))}${number(formatBytes(load.alone.fetchedBytes))}${number(formatRatio(load.alone.ratio))}${number(String(load.alone.requests))}${number(formatBytes(load.inOrder.fetchedBytes))}${number(formatRatio(load.inOrder.ratio))}${number(String(load.inOrder.requests))}<td>${escapeHtml(load.alone.bundles.map(shortSha).join(', '))}</td></tr>`,
  );
  const totals = report.totals!;
  const ratio = (fetched: number) => formatRatio(totals.usedBytes > 0 ? fetched / totals.usedBytes : null);
  rows.push(
    `<tr class="total"><td>all loads</td><td></td>${number(formatBytes(totals.usedBytes))}${number(formatBytes(totals.alone.fetchedBytes))}${number(ratio(totals.alone.fetchedBytes))}${number(String(totals.alone.requests))}${number(formatBytes(totals.inOrder.fetchedBytes))}${number(ratio(totals.inOrder.fetchedBytes))}${number(String(totals.inOrder.requests))}<td></td></tr>`,
  );
  return `<table><thead><tr><th rowspan="2">load</th><th rowspan="2">files</th><th rowspan="2">used</th><th colspan="3">alone (no cache)</th><th colspan="3">in order (with a cache)</th><th rowspan="2">bundles touched</th></tr><tr><th>fetched</th><th>ratio</th><th>requests</th><th>fetched</th><th>ratio</th><th>requests</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function bundlesTable(report: LoadReport): string {
  if (report.bundles.length === 0) return '';
  const rows = report.bundles.map(
    (bundle) =>
      `<tr><td><code>${shortSha(bundle.sha256)}</code></td><td class="n">${formatBytes(bundle.sizeBytes)}</td><td class="n">${bundle.files}</td><td class="n">${bundle.unusedFiles ?? '–'}</td><td>${escapeHtml(bundle.loads ? bundle.loads.join(', ') || 'none' : '–')}</td></tr>`,
  );
  return `<h2>Bundles</h2><table><thead><tr><th>bundle</th><th>size</th><th>files</th><th>unused</th><th>loads</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function unusedList(report: LoadReport): string {
  const unused = report.unusedFiles;
  if (!unused) return '';
  const items = unused.files.map(
    (file) =>
      `<li><code>${escapeHtml(file.key)}</code> ${formatBytes(file.sizeBytes)}${file.bundle ? ` in <code>${shortSha(file.bundle)}</code>` : ' (loose)'}</li>`,
  );
  return `<h2>Files no load uses</h2><details${unused.count <= 50 ? ' open' : ''}><summary>${unused.count} files, ${formatBytes(unused.bytes)}</summary><ul>${items.join('')}</ul></details>`;
}

const STYLE = `
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 16px; margin: 24px 0 8px; }
.meta, .model { color: #555; max-width: 1200px; margin: 4px 0; }
.legend { list-style: none; padding: 0; margin: 12px 0; display: flex; flex-wrap: wrap; gap: 6px 18px; }
.swatch { display: inline-block; width: 14px; height: 14px; margin-right: 6px; vertical-align: -2px; border: 1px solid rgba(0,0,0,.25); }
.treemap { display: block; max-width: 100%; height: auto; border: 1px solid #999; }
.treemap .frame { fill: #f4f4f4; stroke: #333; stroke-width: 1.5; }
.treemap .file { stroke: #fff; stroke-width: .75; }
.treemap .file:hover { stroke: #000; stroke-width: 2; }
.treemap text { font: 11px system-ui, sans-serif; fill: #222; pointer-events: none; }
.treemap text.name { paint-order: stroke; stroke: rgba(255,255,255,.8); stroke-width: 3px; }
table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f0f0f0; } tr.total td { font-weight: 600; background: #fafafa; }
`;

export interface ReportPageInput {
  source: string;
  /** The index and loads lines, as the text report says them. */
  index: string;
  loads: string;
  report: LoadReport;
}

export function reportPage({ source, index, loads, report }: ReportPageInput): string {
  const colours = new Map((report.loads ?? []).map((load, i) => [load.name, loadColour(i)] as const));
  const colourOf = (file: ReportFile) => (file.firstLoad !== undefined ? colours.get(file.firstLoad)! : UNUSED_COLOUR);
  const notes = report.notes.map((note) => `<p class="meta">note: ${escapeHtml(note)}</p>`).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>awake-bundle report: ${escapeHtml(source)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>Bundles and loads</h1>
<p class="meta">index: ${escapeHtml(index)}</p>
<p class="meta">loads: ${escapeHtml(loads)}</p>
${notes}
<p class="model">${escapeHtml(LOAD_FETCH_MODEL)} Each rectangle is a bundle, its area its size; inside, its files, coloured by the first load that reads them (hover for the path and size).</p>
${legendHtml(report, colours)}
${treemapSvg(report, colourOf)}
<h2>Over-fetch per load</h2>
${loadsTable(report, colours)}
${bundlesTable(report)}
${unusedList(report)}
</body>
</html>
`;
}
