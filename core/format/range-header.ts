/**
 * `Range` request headers (RFC 9110 §14) read against a file's size: what `serve` and the
 * service worker answer with 206, 416 or the whole file. No Node or DOM imports, so a browser
 * bundle (the service worker) takes it alone.
 */
/**
 * The one range a `Range` header asks for, `'unsatisfiable'`, or `undefined` to send the whole
 * file: no header, or a malformed, invalid or multi-range one (RFC 9110 §14.2 lets a server
 * ignore those). `requestedRanges` is the multi-range parser `serve` uses.
 */
export function requestedRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  const match = header === undefined ? null : /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match) return undefined;
  return rangeSpec(match[1] ?? '', match[2] ?? '', size);
}

/** At most this many ranges in one `Range` header are answered as ranges; more get the whole file (200). */
export const MAX_RANGES_PER_REQUEST = 64;

/**
 * The ranges a `Range` header asks for (RFC 9110 §14.1.2), sorted, with overlapping and adjacent
 * ones joined (§14.3 lets a server coalesce); `'unsatisfiable'` when none lies within the file;
 * `undefined` to send the whole file: no header, a malformed or invalid one, or more than
 * `maxRanges` ranges (a server may ignore a Range header, §14.2).
 */
export function requestedRanges(header: string | undefined, size: number, maxRanges = MAX_RANGES_PER_REQUEST): { start: number; end: number }[] | 'unsatisfiable' | undefined {
  const match = header === undefined ? null : /^\s*bytes\s*=(.*)$/is.exec(header);
  if (!match) return undefined;
  const specs = match[1]!.split(',').map((spec) => spec.trim()).filter((spec) => spec !== '');
  if (specs.length === 0 || specs.length > maxRanges) return undefined;
  const ranges: { start: number; end: number }[] = [];
  for (const spec of specs) {
    const parts = /^(\d*)\s*-\s*(\d*)$/.exec(spec);
    if (!parts) return undefined;
    const range = rangeSpec(parts[1] ?? '', parts[2] ?? '', size);
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
