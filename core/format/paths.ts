/** Project paths and key order (SPEC §1, and "key order" in the preamble). */
import { UnsafePathError } from '../errors.js';

const encoder = /* @__PURE__ */ new TextEncoder(); // pure: dropped where utf8() is not used (the reader's worker)
const MAX_KEY_BYTES = 0xffff;

export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Why `path` is not a safe project path, or `undefined` when it is (SPEC §1). */
export function unsafePathReason(path: unknown): string | undefined {
  if (typeof path !== 'string') return 'not a string';
  if (path.length === 0) return 'empty';
  if (path.includes('\\')) return 'contains a backslash';
  if (path.startsWith('/')) return 'starts with /';
  if (/^[A-Za-z]:/.test(path)) return 'starts with a drive prefix';
  for (const segment of path.split('/')) {
    if (segment === '') return 'has an empty segment';
    if (segment === '.' || segment === '..') return `has a "${segment}" segment`;
  }
  if (path.includes('\0')) return 'contains a NUL character';
  // In u-mode a surrogate pair is one code point, so this finds only lone surrogates,
  // which have no UTF-8 form.
  if (/[\uD800-\uDFFF]/u.test(path)) return 'is not well-formed Unicode (lone surrogate)';
  if (utf8(path).length > MAX_KEY_BYTES) return 'is longer than 65,535 UTF-8 bytes';
  return undefined;
}

export function isSafePath(path: unknown): path is string {
  return unsafePathReason(path) === undefined;
}

export function assertSafePath(path: string): void {
  const reason = unsafePathReason(path);
  if (reason !== undefined) throw new UnsafePathError(path, reason);
}

/**
 * Compares two strings by their UTF-8 bytes as unsigned bytes. That equals comparing by code
 * point, which differs from JavaScript's UTF-16 `<` above U+FFFF (a surrogate 0xD800 sorts
 * below U+E000..U+FFFF in UTF-16 but above them in UTF-8).
 */
export function compareKeys(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++; // skip the low surrogate of this pair
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Compares raw UTF-8 byte strings as unsigned bytes. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  }
  return a.length - b.length;
}

/** The URL of a loose file under `prefix` (SPEC §2): each segment through encodeURIComponent. */
export function looseFileUrl(path: string, prefix = 'files'): string {
  const encoded = path.split('/').map(encodeURIComponent).join('/');
  const trimmed = prefix.replace(/\/+$/, '');
  return trimmed === '' ? encoded : `${trimmed}/${encoded}`;
}

/**
 * The form under which a host that ignores case and Unicode normalization (macOS, Windows)
 * stores a path: `Art/Café.png` (NFC) and `art/cafe\u0301.png` (NFD) are one file there.
 */
export function foldedPath(path: string): string {
  return path.normalize('NFC').toLowerCase().normalize('NFC');
}

/**
 * Pairs of distinct paths that such a host cannot keep apart (FORMAT.md "Paths"): the same
 * folded form, or a file whose folded form is a folder of another path (`Level` and
 * `level/map.json`). Folders that differ only by case merge there without loss, so they pass.
 * Pairs come in key order of their first path.
 */
export function pathCollisions(paths: readonly string[]): [string, string][] {
  const files = new Map<string, string>();
  const collisions: [string, string][] = [];
  const sorted = [...paths].sort(compareKeys);
  for (const path of sorted) {
    const folded = foldedPath(path);
    const earlier = files.get(folded);
    if (earlier !== undefined && earlier !== path) collisions.push([earlier, path]);
    else files.set(folded, path);
  }
  for (const path of sorted) {
    const segments = foldedPath(path).split('/');
    for (let depth = 1; depth < segments.length; depth++) {
      const file = files.get(segments.slice(0, depth).join('/'));
      if (file !== undefined) collisions.push([file, path]);
    }
  }
  return collisions.sort((x, y) => compareKeys(x[0], y[0]) || compareKeys(x[1], y[1]));
}
