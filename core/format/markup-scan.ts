/**
 * The text scanning behind `--group auto`'s XML and AngelCode text referrers (references.ts,
 * FORMAT.md "`--group auto`"), in time linear in the text: every search is an `indexOf` from a
 * position that only moves forward, so each character is searched a bounded number of times,
 * whatever the file holds (an unclosed `<!--`, a `<tileset` without `>`, an attribute of
 * megabytes). A regular expression over the whole file would try each start again to the end
 * of the text, quadratic on such files. Each function finds exactly what the regular
 * expression in its comment finds; `work.steps` counts the characters visited.
 */

/** A count of the characters a scan visited (and of other unit steps), for its callers' bounds and tests. */
export interface ScanWork {
  steps: number;
}

/**
 * The occurrences of `needle` in `text`, asked for at positions that mostly grow: an occurrence
 * found stays the answer until a position past it is asked for, so a scan whose positions only
 * grow searches each character once. A position before the last search start searches again.
 */
class Occurrences {
  private searchedFrom = 0;
  private found = -1; // the first occurrence at or after searchedFrom; text.length when there is none

  constructor(
    private readonly text: string,
    private readonly needle: string,
    private readonly work: ScanWork,
  ) {}

  /** The first index at or after `from` where `needle` starts, or -1. */
  from(from: number): number {
    if (from < this.searchedFrom || this.found < from) {
      const at = this.text.indexOf(this.needle, from);
      this.searchedFrom = from;
      this.found = at < 0 ? this.text.length : at;
      this.work.steps += this.found - from + 1;
    }
    return this.found < this.text.length ? this.found : -1;
  }
}

/** `\s` of a JavaScript regular expression (ECMAScript WhiteSpace and LineTerminator). */
export function isSpace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/** Where `^` matches in a multiline regular expression: after `\n`, `\r`, U+2028, U+2029. */
const isLineTerminator = (code: number) => code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029;

/** `\w`: `[A-Za-z0-9_]`. */
const isWordCharacter = (code: number) =>
  (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f;

/** The first index at or after `from` (and before `end`) that is not `\s`. */
function skipSpaces(text: string, from: number, end: number, work: ScanWork): number {
  let at = from;
  while (at < end && isSpace(text.charCodeAt(at))) at++;
  work.steps += at - from + 1;
  return at;
}

/** Whether `text` starts with `<` after `\s` (`/^\s*</`). */
export function startsWithTag(text: string, work: ScanWork): boolean {
  return text.charCodeAt(skipSpaces(text, 0, text.length, work)) === 0x3c;
}

/**
 * `text` without its XML comments: `text.replace(/<!--[\s\S]*?-->/g, '')`. A `<!--` that no
 * `-->` closes is kept, with the rest of the text after it.
 */
export function withoutXmlComments(text: string, work: ScanWork): string {
  const opens = new Occurrences(text, '<!--', work);
  const closes = new Occurrences(text, '-->', work);
  const kept: string[] = [];
  let keptFrom = 0;
  for (let open = opens.from(0); open >= 0; open = opens.from(keptFrom)) {
    const close = closes.from(open + 4);
    if (close < 0) break; // and no later `<!--` closes either
    kept.push(text.slice(keptFrom, open));
    keptFrom = close + 3;
  }
  if (keptFrom === 0) return text;
  kept.push(text.slice(keptFrom));
  return kept.join('');
}

/**
 * The raw value of `attribute` on every `<element …>` tag of `xml`, as the tags
 * `/<element(\s[^>]*)>/g` finds, and in each the first `\sattribute\s*=\s*(?:"([^"]*)"|'([^']*)')`,
 * find them (entities not decoded). A tag ends at its first `>`, even inside quotes.
 */
export function xmlAttributeValues(xml: string, element: string, attribute: string, work: ScanWork): string[] {
  const values: string[] = [];
  const tags = new Occurrences(xml, `<${element}`, work);
  const tagEnds = new Occurrences(xml, '>', work);
  const names = new Occurrences(xml, attribute, work);
  const quotes = { '"': new Occurrences(xml, '"', work), "'": new Occurrences(xml, "'", work) };
  let tag = tags.from(0);
  while (tag >= 0) {
    const inside = tag + element.length + 1; // the `\s` after the name
    if (!isSpace(xml.charCodeAt(inside))) {
      tag = tags.from(tag + 1);
      continue;
    }
    const end = tagEnds.from(inside + 1);
    if (end < 0) break; // no `>` closes this tag, nor any later one
    const value = attributeValue(xml, inside, end, attribute, names, quotes, work);
    if (value !== undefined) values.push(value);
    tag = tags.from(end + 1);
  }
  return values;
}

/** The first `\sattribute\s*=\s*` followed by a quoted value in `xml` from `start` (a `\s`) to `end`, or undefined. */
function attributeValue(
  xml: string,
  start: number,
  end: number,
  attribute: string,
  names: Occurrences,
  quotes: Record<'"' | "'", Occurrences>,
  work: ScanWork,
): string | undefined {
  for (let name = names.from(start + 1); name >= 0 && name + attribute.length <= end; name = names.from(name + 1)) {
    if (!isSpace(xml.charCodeAt(name - 1))) continue;
    const equals = skipSpaces(xml, name + attribute.length, end, work);
    if (xml[equals] !== '=' || equals >= end) continue;
    const open = skipSpaces(xml, equals + 1, end, work);
    const quote = xml[open];
    if (open >= end || (quote !== '"' && quote !== "'")) continue;
    const close = quotes[quote].from(open + 1);
    if (close >= 0 && close < end) return xml.slice(open + 1, close);
  }
  return undefined;
}

/**
 * The file names of an AngelCode BMFont text file's page lines, as
 * `/^page\b[^\n]*?\sfile=(?:"([^"\n]*)"|(\S+))/gm` finds them (`$1 ?? $2` of each match).
 */
export function angelCodePageFiles(text: string, work: ScanWork): string[] {
  const files: string[] = [];
  const pages = new Occurrences(text, 'page', work);
  const scan: PageLineScan = {
    text,
    newlines: new Occurrences(text, '\n', work),
    keys: new Occurrences(text, 'file=', work),
    quotes: new Occurrences(text, '"', work),
    work,
  };
  let page = pages.from(0);
  while (page >= 0) {
    if ((page > 0 && !isLineTerminator(text.charCodeAt(page - 1))) || isWordCharacter(text.charCodeAt(page + 4))) {
      page = pages.from(page + 1);
      continue;
    }
    // `[^\n]*?\s` stops at the line's `\n` at the latest: the `\s` may be that `\n` itself.
    const lineEnd = scan.newlines.from(page + 4);
    const match = pageLineFile(scan, page, lineEnd < 0 ? text.length : lineEnd);
    if (match !== undefined) {
      files.push(match.file);
      page = pages.from(match.end);
      continue;
    }
    // A later `page` on this line (after a `\r`) has the same `file=` candidates, none of which matched.
    if (lineEnd < 0) break;
    page = pages.from(lineEnd + 1);
  }
  return files;
}

interface PageLineScan {
  text: string;
  newlines: Occurrences;
  keys: Occurrences;
  quotes: Occurrences;
  work: ScanWork;
}

/** The first `\sfile=` value after the `page` at `page`, its `\s` at `lastSpace` at the latest, and where the match ends. */
function pageLineFile(scan: PageLineScan, page: number, lastSpace: number): { file: string; end: number } | undefined {
  const { text, newlines, keys, quotes, work } = scan;
  for (let key = keys.from(page + 5); key >= 0 && key - 1 <= lastSpace; key = keys.from(key + 1)) {
    if (!isSpace(text.charCodeAt(key - 1))) continue;
    const value = key + 5;
    if (text[value] === '"') {
      const close = quotes.from(value + 1);
      const valueLineEnd = newlines.from(value + 1);
      if (close >= 0 && (valueLineEnd < 0 || close < valueLineEnd)) return { file: text.slice(value + 1, close), end: close + 1 };
    }
    // `(\S+)`, which also takes a `"` that no `"` closes on its line.
    let valueEnd = value;
    while (valueEnd < text.length && !isSpace(text.charCodeAt(valueEnd))) valueEnd++;
    work.steps += valueEnd - value + 1;
    if (valueEnd > value) return { file: text.slice(value, valueEnd), end: valueEnd };
  }
  return undefined;
}
