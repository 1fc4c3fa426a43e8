/**
 * Index bytes to index text (SPEC preamble: "Text is UTF-8"). A lenient decoder turns bytes that
 * are not UTF-8 into U+FFFD, so an index whose path holds FF FE would be read as a different,
 * legal path; the index is refused instead, naming the field that holds them (`files[1].path`),
 * or, when the bytes lie where no field can be named, the byte offset.
 */
import { IndexValidationError, MAX_PROBLEMS_KEPT, previewValue } from '../errors.js';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
/** For the valid stretches between invalid bytes; a BOM there is a character, not a mark. */
const stretchDecoder = new TextDecoder('utf-8', { ignoreBOM: true });

export interface DecodeIndexOptions {
  /** Named in errors: where the index came from (a URL or a file). */
  url?: string;
}

/**
 * The index's text, decoded as strict UTF-8 (a leading BOM dropped, as `TextDecoder` does).
 * Bytes that are not UTF-8 fail with `IndexValidationError` (`E_INDEX_INVALID`) naming every
 * field that holds some (`files[i].path`, `bundles[i].url`, `rootPath`…) with the bytes, and the
 * offset of the first; when no field holds them (they break the JSON), the offset alone.
 */
export function decodeIndexText(bytes: Uint8Array, options: DecodeIndexOptions = {}): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw notUtf8Error(bytes, options);
  }
}

/** The first invalid UTF-8 sequence at or after `from` (its maximal subpart, Unicode §3.9), if any. */
export function invalidUtf8At(bytes: Uint8Array, from = 0): { offset: number; length: number } | undefined {
  const n = bytes.length;
  let i = from;
  while (i < n) {
    const lead = bytes[i]!;
    if (lead < 0x80) {
      i++;
      continue;
    }
    // Unicode Table 3-7: the continuation bytes each lead allows (no overlongs, surrogates, or past U+10FFFF).
    let need: number;
    let low = 0x80;
    let high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) need = 1;
    else if (lead === 0xe0) {
      need = 2;
      low = 0xa0;
    } else if (lead === 0xed) {
      need = 2;
      high = 0x9f;
    } else if (lead >= 0xe1 && lead <= 0xef) need = 2;
    else if (lead === 0xf0) {
      need = 3;
      low = 0x90;
    } else if (lead === 0xf4) {
      need = 3;
      high = 0x8f;
    } else if (lead >= 0xf1 && lead <= 0xf3) need = 3;
    else return { offset: i, length: 1 };
    let j = i + 1;
    for (let k = 0; k < need; k++, j++) {
      const next = bytes[j];
      if (next === undefined || next < low || next > high) return { offset: i, length: j - i };
      low = 0x80;
      high = 0xbf;
    }
    i = j;
  }
  return undefined;
}

/**
 * Each invalid byte becomes a lone low surrogate U+DC80–U+DCFF (as Python's `surrogateescape`),
 * which no valid UTF-8 decodes to, so after `JSON.parse` the strings that hold them can be named.
 */
function escapeInvalidBytes(bytes: Uint8Array): { text: string; first: { offset: number; length: number } } {
  const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  const parts: string[] = [];
  let first: { offset: number; length: number } | undefined;
  let at = start;
  for (let bad = invalidUtf8At(bytes, at); bad; bad = invalidUtf8At(bytes, at)) {
    first ??= bad;
    parts.push(stretchDecoder.decode(bytes.subarray(at, bad.offset)));
    for (let k = bad.offset; k < bad.offset + bad.length; k++) parts.push(String.fromCharCode(0xdc00 | bytes[k]!));
    at = bad.offset + bad.length;
  }
  parts.push(stretchDecoder.decode(bytes.subarray(at)));
  return { text: parts.join(''), first: first! };
}

/** In u-mode a surrogate pair is one code point, so this finds only the lone ones the escape made. */
const ESCAPED = /[\uDC80-\uDCFF]/u;
const ESCAPED_ALL = /[\uDC80-\uDCFF]/gu;

const hexByte = (char: string) => (char.charCodeAt(0) & 0xff).toString(16).toUpperCase().padStart(2, '0');

/** A string for a message, quoted and cut (`previewValue`), its escaped bytes shown as `\xFF`; and the bytes alone (`FF FE`). */
function describeEscaped(text: string): { shown: string; bytes: string } {
  const found = (text.match(ESCAPED_ALL) ?? []).slice(0, 16).map(hexByte);
  // JSON.stringify writes a lone surrogate as \udcff.
  const shown = previewValue(text).replace(
    /\\u(dc[89a-f][0-9a-f])/gi,
    (_, code: string) => `\\x${hexByte(String.fromCharCode(parseInt(code, 16)))}`,
  );
  return { shown, bytes: found.join(' ') };
}

function notUtf8Error(bytes: Uint8Array, options: DecodeIndexOptions): IndexValidationError {
  const details = options.url === undefined ? {} : { url: options.url };
  const { text, first } = escapeInvalidBytes(bytes);
  const firstBytes = Array.from(bytes.subarray(first.offset, first.offset + first.length), (byte) =>
    byte.toString(16).toUpperCase().padStart(2, '0'),
  ).join(' ');
  const where = `the first at byte ${first.offset} (${firstBytes})`;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return new IndexValidationError([`is not UTF-8: ${where}`], details);
  }
  const { fields, count } = fieldsHoldingEscapes(value);
  if (fields.length === 0) return new IndexValidationError([`is not UTF-8: ${where}`], details);
  const problems = fields.map(({ name, text: held, isKey }, i) => {
    const { shown, bytes: found } = describeEscaped(held);
    const what = isKey ? `has a key ${shown}` : shown;
    return `${name} ${what} is not UTF-8 (bytes ${found})${i === 0 ? `; ${where} of the index` : ''}`;
  });
  return new IndexValidationError(problems, details, count);
}

/**
 * Where strings (values or keys) hold escaped bytes: `files[3].path`, `bundles[0].url`. Walked
 * with a stack of its own, so a value nested 10⁵ deep cannot overflow the call stack; names
 * deeper than a few levels are cut (no index field lies that deep).
 */
function fieldsHoldingEscapes(root: unknown): { fields: { name: string; text: string; isKey: boolean }[]; count: number } {
  interface Place {
    parent: Place | undefined;
    step: string;
  }
  const nameOf = (place: Place | undefined): string => {
    const steps: string[] = [];
    for (let at = place; at; at = at.parent) steps.push(at.step);
    steps.reverse();
    const shown = steps.length > 8 ? [...steps.slice(0, 8), '…'] : steps;
    return shown.join('').replace(/^\./, '') || 'index';
  };
  const fields: { name: string; text: string; isKey: boolean }[] = [];
  let count = 0;
  const found = (place: Place | undefined, text: string, isKey: boolean) => {
    count++;
    if (fields.length < MAX_PROBLEMS_KEPT) fields.push({ name: nameOf(place), text, isKey });
  };
  const stack: { value: unknown; place: Place | undefined }[] = [{ value: root, place: undefined }];
  while (stack.length > 0) {
    const { value, place } = stack.pop()!;
    if (typeof value === 'string') {
      if (ESCAPED.test(value)) found(place, value, false);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], place: { parent: place, step: `[${i}]` } });
    } else if (typeof value === 'object' && value !== null) {
      const keys = Object.keys(value);
      for (const key of keys) if (ESCAPED.test(key)) found(place, key, true);
      for (let k = keys.length - 1; k >= 0; k--) {
        const key = keys[k]!;
        stack.push({
          value: (value as Record<string, unknown>)[key],
          place: { parent: place, step: ESCAPED.test(key) ? `[${describeEscaped(key).shown}]` : `.${key}` },
        });
      }
    }
  }
  return { fields, count };
}
