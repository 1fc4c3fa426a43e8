/**
 * The project index: formatVersion 2 (loose files, SPEC §2) and 3 (bundles, SPEC §3). Parsing
 * checks every rule and names every broken one; `serializeIndex` writes the canonical JSON.
 */
import { IndexValidationError, MAX_PROBLEMS_KEPT, previewValue, UnsupportedIndexVersionError, type AwakeErrorDetails } from '../errors.js';
import { SHA256_HEX } from './sha256.js';
import { compareKeys, unsafePathReason } from './paths.js';
import type { MemberEncoding } from './awkb.js';

/** The one algorithm of opaque path ids (SPEC §4); computing them is format/ids.ts. */
export const PATH_ID_ALGORITHM = 'hmac-sha256';

export interface PathIds {
  algorithm: typeof PATH_ID_ALGORITHM;
  salt: string;
}

export interface LooseFileEntry {
  path: string;
  sizeBytes: number;
  sha256: string;
  url: string;
}

export interface LooseIndex {
  formatVersion: 2;
  rootPath: string;
  files: LooseFileEntry[];
}

export interface BundleEntry {
  sha256: string;
  sizeBytes: number;
  url: string;
}

/** A formatVersion 3 entry: keyed by `path` or `id`; located by `url` or by `bundle` + `offset`. */
export interface BundledFileEntry {
  path?: string;
  id?: string;
  sizeBytes: number;
  sha256: string;
  url?: string;
  bundle?: string;
  offset?: number;
  /** An encoded member's stored bytes in its bundle (SPEC §5a); `sizeBytes` and `sha256` are of its decoded bytes. */
  storedBytes?: number;
  /** Present exactly when `storedBytes` is, only on a member. */
  encoding?: MemberEncoding;
}

export interface BundledIndex {
  formatVersion: 3;
  rootPath: string;
  pathIds?: PathIds;
  bundles: BundleEntry[];
  files: BundledFileEntry[];
}

export type ProjectIndex = LooseIndex | BundledIndex;

export const KNOWN_FORMAT_VERSIONS = [2, 3] as const;

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isSize(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

/**
 * Every problem is counted; the first `MAX_PROBLEMS_KEPT` are kept, and after them the first
 * one of each rule not met yet, so every broken rule stays named (SPEC §2) however many entries
 * break the same one. A rule is the place without its indices (`files[].sizeBytes`): `where`
 * never holds text from the index, so there are few rules.
 */
class Problems {
  readonly list: string[] = [];
  count = 0;
  readonly #rules = new Set<string>();
  add(where: string, what: string): void {
    this.count++;
    const rule = where.replace(/\[\d+\]/g, '[]');
    if (this.list.length < MAX_PROBLEMS_KEPT || !this.#rules.has(rule)) this.list.push(`${where} ${what}`);
    this.#rules.add(rule);
  }
  error(details: AwakeErrorDetails): IndexValidationError {
    return new IndexValidationError(this.list, details, this.count);
  }
}

export interface ParseIndexOptions {
  /** Named in errors: where the index came from. */
  url?: string;
  /**
   * The most bytes a file (its `sizeBytes`, an encoded member's `storedBytes`) or a bundle may
   * list, for a reader that holds each in one buffer (`MAX_READ_BYTES`): a larger one is a
   * problem naming it. Without it sizes are bounded by the format alone (SPEC §2: 2^53 − 1), as
   * for publishing and checking an index, which hold no file whole.
   */
  maxReadBytes?: number;
}

/**
 * The most bytes the reader holds in one buffer (a file it hands over as one `Uint8Array`, a
 * bundle a host answers whole): 4 GiB, the longest `Uint8Array` Node 20 makes (V8's limit
 * there; Chromium and Firefox ESR on 64-bit Linux allocate 8 GiB at most, a 32-bit browser 2).
 * A file listed larger cannot be read everywhere the package runs, and no game tab holds one, so
 * the reader refuses its index at open, naming the file, rather than fail its read with an
 * allocation error, or retry that as a network failure. (An AWKB offset or size field is 64 bits
 * and a JSON number is exact to 2^53 − 1: those bound the format, not what one buffer holds.)
 */
export const MAX_READ_BYTES = 2 ** 32;

/**
 * Checks an index object (as parsed from JSON) against SPEC §2–3 and returns it typed. A
 * formatVersion other than 2 or 3 throws `UnsupportedIndexVersionError`; any other broken rule
 * throws one `IndexValidationError` that lists them all.
 */
export function parseProjectIndex(value: unknown, options: ParseIndexOptions = {}): ProjectIndex {
  const details = options.url === undefined ? {} : { url: options.url };
  if (!isObject(value)) throw new IndexValidationError(['index is not a JSON object'], details);
  const version = value.formatVersion;
  if (version !== 2 && version !== 3) throw new UnsupportedIndexVersionError(version, details);
  const problems = new Problems();
  if (typeof value.rootPath !== 'string' || value.rootPath.trim() === '') problems.add('rootPath', 'must be a non-blank string');
  if (!Array.isArray(value.files)) {
    problems.add('files', 'must be an array');
    throw problems.error(details);
  }
  if (version === 2) checkLooseFiles(value.files, problems);
  else checkBundledIndex(value, value.files, problems);
  if (options.maxReadBytes !== undefined) checkReadableSizes(value, options.maxReadBytes, problems);
  if (problems.count > 0) throw problems.error(details);
  return value as unknown as ProjectIndex;
}

/** Parses index JSON text; bad JSON is an `IndexValidationError` too. */
export function parseProjectIndexJson(text: string, options: ParseIndexOptions = {}): ProjectIndex {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new IndexValidationError([`not valid JSON: ${(error as Error).message}`], {
      ...(options.url === undefined ? {} : { url: options.url }),
      cause: error,
    });
  }
  return parseProjectIndex(value, options);
}

/**
 * Parses index JSON fetched over HTTP. An answer that is a page instead (`Content-Type:
 * text/html`, or a body that starts with `<`), such as a single-page app's fallback for a path it
 * does not have, is named as such, rather than as JSON with an unexpected `<`. A good index
 * labelled text/html is still a good index.
 */
export function parseFetchedIndexJson(
  text: string,
  { contentType, ...options }: ParseIndexOptions & { contentType: string | null },
): ProjectIndex {
  try {
    return parseProjectIndexJson(text, options);
  } catch (error) {
    const type = contentType?.split(';')[0]!.trim().toLowerCase() ?? '';
    const page = type === 'text/html' || /^[\s\uFEFF]*</.test(text);
    if (!(error instanceof IndexValidationError && error.cause instanceof SyntaxError && page)) throw error;
    const answered = type === '' ? 'markup (a body that starts with "<")' : type;
    const problem = `the server answered ${answered} instead of a project index: is there an index at this URL? (a single-page app's server answers a path it does not have with its page)`;
    throw new IndexValidationError([problem], { ...(options.url === undefined ? {} : { url: options.url }), cause: error.cause });
  }
}

/**
 * Sizes past `max`, what a reader can hold in one buffer (`ParseIndexOptions.maxReadBytes`), each
 * named with its place and its file (or bundle). Sizes that are not sizes were named already.
 */
function checkReadableSizes(index: Json, max: number, problems: Problems): void {
  for (const list of ['files', 'bundles'] as const) {
    const entries = index[list];
    if (Array.isArray(entries))
      entries.forEach((entry, i) => {
        for (const field of ['sizeBytes', 'storedBytes'] as const) {
          const size = isObject(entry) && entry[field];
          if (isSize(size) && size > max)
            problems.add(
              `${list}[${i}].${field}`,
              `${size} (${previewValue(entry.path ?? entry.id ?? entry.sha256)}) is more than a reader can hold in one buffer (${max} bytes)`,
            );
        }
      });
  }
}

function checkCommonEntryFields(entry: Json, where: string, problems: Problems): void {
  if (!isSize(entry.sizeBytes)) problems.add(`${where}.sizeBytes`, 'must be a non-negative integer no larger than 2^53 − 1');
  if (typeof entry.sha256 !== 'string' || !SHA256_HEX.test(entry.sha256))
    problems.add(`${where}.sha256`, 'must be 64 lowercase hex digits');
}

function checkPath(entry: Json, where: string, problems: Problems): void {
  const reason = unsafePathReason(entry.path);
  if (reason !== undefined) problems.add(`${where}.path`, `${previewValue(entry.path)} is not a safe path: ${reason}`);
}

function checkUniqueKeys(keys: (string | undefined)[], field: string, problems: Problems): void {
  const firstIndex = new Map<string, number>();
  keys.forEach((key, i) => {
    if (key === undefined) return;
    const first = firstIndex.get(key);
    if (first === undefined) firstIndex.set(key, i);
    else problems.add(`files[${i}].${field}`, `${previewValue(key)} repeats files[${first}].${field}`);
  });
}

/** Checks each entry of `files` with `check`, which returns the entry's key; then that keys are unique. */
function checkEntries(files: unknown[], field: 'path' | 'id', problems: Problems, check: (entry: Json, where: string) => unknown): void {
  const keys = files.map((entry, i) => {
    const where = `files[${i}]`;
    if (!isObject(entry)) {
      problems.add(where, 'must be an object');
      return undefined;
    }
    const key = check(entry, where);
    return typeof key === 'string' ? key : undefined;
  });
  checkUniqueKeys(keys, field, problems);
}

function checkLooseFiles(files: unknown[], problems: Problems): void {
  checkEntries(files, 'path', problems, (entry, where) => {
    checkPath(entry, where, problems);
    checkCommonEntryFields(entry, where, problems);
    if (!isNonEmptyString(entry.url)) problems.add(`${where}.url`, 'must be a non-empty string');
    for (const field of ['storedBytes', 'encoding'] as const)
      if (entry[field] !== undefined) problems.add(`${where}.${field}`, 'must be absent: only a bundle member is encoded (SPEC §5a)');
    return entry.path;
  });
}

function checkBundledIndex(index: Json, files: unknown[], problems: Problems): void {
  const usesIds = index.pathIds !== undefined;
  if (usesIds) {
    const pathIds = index.pathIds;
    if (!isObject(pathIds)) problems.add('pathIds', 'must be an object');
    else {
      if (pathIds.algorithm !== PATH_ID_ALGORITHM)
        problems.add('pathIds.algorithm', `must be "${PATH_ID_ALGORITHM}", found ${previewValue(pathIds.algorithm)}`);
      if (!isNonEmptyString(pathIds.salt)) problems.add('pathIds.salt', 'must be a non-empty string');
    }
  }
  const bundleSizes = new Map<string, number>();
  const bundleUse = new Map<string, number>();
  const bundlePosition = new Map<string, number>();
  if (!Array.isArray(index.bundles)) problems.add('bundles', 'must be an array');
  else {
    index.bundles.forEach((bundle, i) => {
      const where = `bundles[${i}]`;
      if (!isObject(bundle)) return problems.add(where, 'must be an object');
      if (typeof bundle.sha256 !== 'string' || !SHA256_HEX.test(bundle.sha256))
        problems.add(`${where}.sha256`, 'must be 64 lowercase hex digits');
      else if (bundleSizes.has(bundle.sha256)) problems.add(`${where}.sha256`, `${bundle.sha256} is listed twice`);
      if (!isSize(bundle.sizeBytes)) problems.add(`${where}.sizeBytes`, 'must be a non-negative integer no larger than 2^53 − 1');
      if (!isNonEmptyString(bundle.url)) problems.add(`${where}.url`, 'must be a non-empty string');
      if (typeof bundle.sha256 === 'string' && !bundleSizes.has(bundle.sha256)) {
        bundleSizes.set(bundle.sha256, isSize(bundle.sizeBytes) ? bundle.sizeBytes : Number.NaN);
        bundleUse.set(bundle.sha256, 0);
        bundlePosition.set(bundle.sha256, i);
      }
    });
  }

  checkEntries(files, usesIds ? 'id' : 'path', problems, (entry, where) => {
    if (usesIds) {
      if (entry.path !== undefined) problems.add(`${where}.path`, 'must be absent when pathIds is set (ids replace paths)');
      if (typeof entry.id !== 'string' || !SHA256_HEX.test(entry.id))
        problems.add(`${where}.id`, 'must be 64 lowercase hex digits when pathIds is set');
    } else {
      if (entry.id !== undefined) problems.add(`${where}.id`, 'must be absent without pathIds');
      checkPath(entry, where, problems);
    }
    checkCommonEntryFields(entry, where, problems);
    const hasUrl = entry.url !== undefined;
    const hasBundle = entry.bundle !== undefined || entry.offset !== undefined;
    if (hasUrl && hasBundle) problems.add(where, 'has both url and bundle/offset; an entry is either a loose file or a member');
    else if (hasUrl) {
      if (!isNonEmptyString(entry.url)) problems.add(`${where}.url`, 'must be a non-empty string');
      for (const field of ['storedBytes', 'encoding'] as const)
        if (entry[field] !== undefined)
          problems.add(`${where}.${field}`, 'must be absent on a loose file: only a bundle member is encoded (SPEC §5a)');
    } else if (entry.bundle === undefined || entry.offset === undefined) {
      problems.add(where, 'needs either url, or both bundle and offset');
    } else {
      checkMemberPlacement(entry, where, bundleSizes, bundleUse, problems);
    }
    return usesIds ? entry.id : entry.path;
  });
  for (const [sha256, uses] of bundleUse) {
    if (uses === 0)
      problems.add(
        `bundles[${bundlePosition.get(sha256)}]`,
        `${previewValue(sha256)} holds no entry; every listed bundle must hold at least one`,
      );
  }
}

function checkMemberPlacement(
  entry: Json,
  where: string,
  bundleSizes: Map<string, number>,
  bundleUse: Map<string, number>,
  problems: Problems,
): void {
  const bundle = entry.bundle;
  if (typeof bundle !== 'string' || !bundleSizes.has(bundle)) {
    problems.add(`${where}.bundle`, `${previewValue(bundle)} names no listed bundle`);
    return;
  }
  bundleUse.set(bundle, bundleUse.get(bundle)! + 1);
  const encoded = checkEncoding(entry, where, problems);
  if (!isSize(entry.offset)) return problems.add(`${where}.offset`, 'must be a non-negative integer');
  const bundleSize = bundleSizes.get(bundle)!;
  // An encoded member's stored range is what lies in the bundle (SPEC §5a); its decoded size may exceed it.
  const [field, span] = encoded ? (['storedBytes', entry.storedBytes as number] as const) : (['sizeBytes', entry.sizeBytes] as const);
  if (encoded === false) return; // named by checkEncoding
  if (isSize(span) && Number.isFinite(bundleSize) && entry.offset + span > bundleSize) {
    problems.add(
      `${where}.offset`,
      `${entry.offset} + ${field} ${span} lies outside bundle ${bundle.slice(0, 12)}… of ${bundleSize} bytes`,
    );
  }
}

/**
 * A member's `storedBytes` and `encoding` (SPEC §5a): both or neither, a known encoding, a size.
 * True when the member is encoded and both are good; false when either is present but broken.
 */
function checkEncoding(entry: Json, where: string, problems: Problems): boolean | undefined {
  const hasStored = entry.storedBytes !== undefined;
  const hasEncoding = entry.encoding !== undefined;
  if (!hasStored && !hasEncoding) return undefined;
  let good = true;
  if (hasStored !== hasEncoding) {
    problems.add(
      hasStored ? `${where}.encoding` : `${where}.storedBytes`,
      `must be given with ${hasStored ? 'storedBytes' : 'encoding'} (an encoded member has both)`,
    );
    good = false;
  }
  if (hasEncoding && !MEMBER_ENCODING_NAMES.includes(entry.encoding as string)) {
    problems.add(
      `${where}.encoding`,
      `${previewValue(entry.encoding)} is not an encoding this reader knows (${MEMBER_ENCODING_NAMES.join(', ')})`,
    );
    good = false;
  }
  if (hasStored && !isSize(entry.storedBytes)) {
    problems.add(`${where}.storedBytes`, 'must be a non-negative integer no larger than 2^53 − 1');
    good = false;
  }
  return good;
}

/** The `encoding` values of SPEC §5a this implementation reads (kept here, not imported: the index needs no AWKB code). */
const MEMBER_ENCODING_NAMES: readonly string[] = ['deflate-raw'] satisfies readonly MemberEncoding[];

/** The key an entry is looked up by: its path, or its id when ids replace paths. */
export function entryKey(entry: { path?: string; id?: string }): string {
  return entry.path ?? entry.id!;
}

/**
 * Canonical JSON (SPEC §2–3): keys in the order the SPEC shows, `files` sorted by key in key
 * order, two-space indent, final newline. Unknown fields are dropped.
 */
export function serializeIndex(index: ProjectIndex): string {
  const files = [...index.files].sort((a, b) => compareKeys(entryKey(a), entryKey(b)));
  let canonical: unknown;
  if (index.formatVersion === 2) {
    canonical = {
      formatVersion: 2,
      rootPath: index.rootPath,
      files: (files as LooseFileEntry[]).map(({ path, sizeBytes, sha256, url }) => ({ path, sizeBytes, sha256, url })),
    };
  } else {
    canonical = {
      formatVersion: 3,
      rootPath: index.rootPath,
      ...(index.pathIds ? { pathIds: { algorithm: index.pathIds.algorithm, salt: index.pathIds.salt } } : {}),
      bundles: index.bundles.map(({ sha256, sizeBytes, url }) => ({ sha256, sizeBytes, url })),
      files: (files as BundledFileEntry[]).map((entry) => ({
        ...(entry.path !== undefined ? { path: entry.path } : { id: entry.id }),
        sizeBytes: entry.sizeBytes,
        sha256: entry.sha256,
        ...(entry.url !== undefined ? { url: entry.url } : { bundle: entry.bundle, offset: entry.offset }),
        // SPEC §5a: after `offset`, an encoded member's stored size and encoding.
        ...(entry.url === undefined && entry.encoding !== undefined ? { storedBytes: entry.storedBytes, encoding: entry.encoding } : {}),
      })),
    };
  }
  return `${JSON.stringify(canonical, null, 2)}\n`;
}
