/**
 * `Range` request headers (RFC 9110 §14) read against a file's size: what `serve` and the
 * service worker answer with 206, 416 or the whole file. No Node or DOM imports, so a browser
 * bundle (the service worker) takes it alone.
 */
/**
 * Longer `Range` headers are ignored (the whole file is sent): 16 KiB, Node's default limit for
 * a request's whole header section, and far more than 64 ranges need. Every parser here is
 * linear in the header's length besides (no regular expression that can backtrack), so the
 * bound caps the work of one call at a few thousand character steps.
 */
export const MAX_RANGE_HEADER_LENGTH = 16 * 1024;

/**
 * The one range a `Range` header asks for, `'unsatisfiable'`, or `undefined` to send the whole
 * file: no header, a malformed, invalid or multi-range one (RFC 9110 §14.2 lets a server ignore
 * those), or one longer than `MAX_RANGE_HEADER_LENGTH`. `requestedRanges` is the multi-range
 * parser `serve` uses.
 *
 * Grammar (whitespace is JavaScript's `\s`, around every token): `bytes = first - last`, where
 * `first` and `last` are ASCII digits, either may be missing but not both; `bytes` in any case.
 */
export function requestedRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  const spec = rangeSetOf(header)?.trim();
  if (spec === undefined) return undefined;
  const parts = firstAndLast(spec);
  return parts && rangeSpec(parts.first, parts.last, size);
}

/** What follows `bytes=` in a `Range` header (untrimmed), or undefined when it does not start so or is too long. */
function rangeSetOf(header: string | undefined): string | undefined {
  if (header === undefined || header.length > MAX_RANGE_HEADER_LENGTH) return undefined;
  // trimStart() removes exactly the characters `\s` matches. `\s*=` cannot backtrack far: `=` is not a space.
  const text = header.trimStart();
  const unit = /^bytes\s*=/i.exec(text);
  return unit ? text.slice(unit[0].length) : undefined;
}

const DIGITS = /^\d*$/;

/**
 * A range spec `<digits> <spaces> - <spaces> <digits>` with no space around it, split at its
 * dash; undefined when it is not one. Neither part holds a dash, so the dash is the first one.
 */
function firstAndLast(spec: string): { first: string; last: string } | undefined {
  const dash = spec.indexOf('-');
  if (dash < 0) return undefined;
  const first = spec.slice(0, dash).trimEnd();
  const last = spec.slice(dash + 1).trimStart();
  return DIGITS.test(first) && DIGITS.test(last) ? { first, last } : undefined;
}

/** At most this many ranges in one `Range` header are answered as ranges; more get the whole file (200). */
export const MAX_RANGES_PER_REQUEST = 64;

/**
 * The ranges a `Range` header asks for (RFC 9110 §14.1.2), sorted, with overlapping and adjacent
 * ones joined (§14.3 lets a server coalesce); `'unsatisfiable'` when none lies within the file;
 * `undefined` to send the whole file: no header, a malformed or invalid one, more than
 * `maxRanges` ranges, or one longer than `MAX_RANGE_HEADER_LENGTH` (a server may ignore a Range
 * header, §14.2).
 */
export function requestedRanges(
  header: string | undefined,
  size: number,
  maxRanges = MAX_RANGES_PER_REQUEST,
): { start: number; end: number }[] | 'unsatisfiable' | undefined {
  const set = rangeSetOf(header);
  if (set === undefined) return undefined;
  const specs = set
    .split(',')
    .map((spec) => spec.trim())
    .filter((spec) => spec !== '');
  if (specs.length === 0 || specs.length > maxRanges) return undefined;
  const ranges: { start: number; end: number }[] = [];
  for (const spec of specs) {
    const parts = firstAndLast(spec);
    if (!parts) return undefined;
    const range = rangeSpec(parts.first, parts.last, size);
    if (range === undefined) return undefined;
    if (range !== 'unsatisfiable') ranges.push(range);
  }
  if (ranges.length === 0) return 'unsatisfiable';
  ranges.sort((a, b) => a.start - b.start || a.end - b.end);
  const joined: { start: number; end: number }[] = [];
  for (const range of ranges) {
    const last = joined[joined.length - 1];
    if (last && range.start <= last.end + 1) last.end = Math.max(last.end, range.end);
    else joined.push({ ...range });
  }
  return joined;
}

/** One `first-last` range spec against a file of `size` bytes. */
function rangeSpec(first: string, last: string, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (first === '' && last === '') return undefined;
  if (first === '') {
    const suffix = Number(last);
    return suffix === 0 || size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) };
}
