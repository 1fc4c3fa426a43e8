/**
 * Typed errors with a stable `code` (SPEC §7 "Errors"). Each is a small class with a literal
 * `name` and a literal `code`, so `instanceof`, `error.name` and `error.code` all work across
 * bundlers, and a `switch` on either narrows an `AnyAwakeError`. One code, one meaning: the
 * table in README.md ("Errors") lists them. Every error the library throws at a user is one of
 * these; a plain `Error` means an internal assertion failed (a bug), and its site says so.
 */
export type AwakeErrorCode =
  | 'E_UNSAFE_PATH'
  | 'E_INDEX_INVALID'
  | 'E_INDEX_VERSION'
  | 'E_INDEX_TOO_LARGE'
  | 'E_BUNDLE_FORMAT'
  | 'E_BUNDLE_INTEGRITY'
  | 'E_FILE_INTEGRITY'
  | 'E_MEMBER_DECODE'
  | 'E_NOT_FOUND'
  | 'E_UNSUPPORTED'
  | 'E_OPTION'
  | 'E_HTTP'
  | 'E_NETWORK'
  | 'E_TIMEOUT'
  | 'E_ABORTED'
  | 'E_READ_STALLED'
  | 'E_RANGE'
  | 'E_RESPONSE_SIZE'
  | 'E_ORIGIN'
  | 'E_TOKEN_ORIGIN'
  | 'E_PUBLISH_INPUT'
  | 'E_PUBLISH_OUTPUT'
  | 'E_SERVE_ROOT';

export interface AwakeErrorDetails {
  url?: string;
  path?: string;
  id?: string;
  cause?: unknown;
}

/**
 * The base of every awake-bundle error; `code` says which. Not thrown itself: catch it to take
 * them all, then narrow on `name` or `code` (see `AnyAwakeError`).
 */
export class AwakeError extends Error {
  override name: string = 'AwakeError';
  readonly code: AwakeErrorCode;
  readonly url?: string;
  readonly path?: string;
  readonly id?: string;

  constructor(code: AwakeErrorCode, message: string, details: AwakeErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    if (details.url !== undefined) this.url = details.url;
    if (details.path !== undefined) this.path = details.path;
    if (details.id !== undefined) this.id = details.id;
  }
}

/** Problems an `IndexValidationError` message shows; the rest are counted (a million bad entries must not build a 400 MB message). */
export const MAX_PROBLEMS_IN_MESSAGE = 20;
/** Problems an `IndexValidationError` keeps in `problems` (then only the first of each rule not met yet); `problemCount` counts them all. */
export const MAX_PROBLEMS_KEPT = 1000;

/**
 * An index (SPEC §2–3) that breaks one or more rules. `problems` names them in order (the first
 * `MAX_PROBLEMS_KEPT`, then the first of each rule not met before, so every broken rule is
 * named), `problemCount` counts every one; the message shows the first
 * `MAX_PROBLEMS_IN_MESSAGE` and the count of the rest, so its size does not grow with the index.
 */
export class IndexValidationError extends AwakeError {
  override readonly name = 'IndexValidationError' as const;
  declare readonly code: 'E_INDEX_INVALID';
  readonly problems: string[];
  readonly problemCount: number;
  constructor(problems: string[], details: AwakeErrorDetails = {}, problemCount = problems.length) {
    const shown = problems.slice(0, MAX_PROBLEMS_IN_MESSAGE);
    const rest = problemCount - shown.length;
    const more = rest > 0 ? `\n  … and ${rest} more problem${rest === 1 ? '' : 's'}` : '';
    super('E_INDEX_INVALID', `invalid project index${details.url ? ` ${details.url}` : ''}:\n  ${shown.join('\n  ')}${more}`, details);
    this.problems = problems;
    this.problemCount = problemCount;
  }
}

// Long enough for a whole SHA-256 in hex (64).
const PREVIEW_CHARACTERS = 80;
/** A bundle key (path or id) in a message: whole unless longer than any sensible path; a key may be 65,535 bytes (SPEC §1). */
export const KEY_PREVIEW_CHARACTERS = 256;

/**
 * A short description of any value, for messages: strings quoted and cut at `maxCharacters`,
 * arrays and objects by kind and size only. Never recursive, so a value nested 10⁵ deep or a
 * 100 MB string costs the message a few dozen bytes (JSON.stringify would overflow the stack
 * or copy it whole).
 */
export function previewValue(value: unknown, maxCharacters = PREVIEW_CHARACTERS): string {
  switch (typeof value) {
    case 'string': {
      if (value.length <= maxCharacters) return JSON.stringify(value);
      return `${JSON.stringify(value.slice(0, maxCharacters))}… (${value.length} characters)`;
    }
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value);
    case 'bigint':
      return `${value}n`;
    case 'object':
      if (value === null) return 'null';
      if (Array.isArray(value)) return `an array of ${value.length} item${value.length === 1 ? '' : 's'}`;
      return 'an object';
    default:
      return `a ${typeof value}`;
  }
}

/** An index whose `formatVersion` this reader does not know (SPEC §3). */
export class UnsupportedIndexVersionError extends AwakeError {
  override readonly name = 'UnsupportedIndexVersionError' as const;
  declare readonly code: 'E_INDEX_VERSION';
  readonly found: unknown;
  constructor(found: unknown, details: AwakeErrorDetails = {}) {
    super(
      'E_INDEX_VERSION',
      `unsupported project index formatVersion ${previewValue(found)}; this reader knows formatVersion 2 and 3`,
      details,
    );
    this.found = found;
  }
}

/**
 * A project index larger than `IndexedAssetSource.open`'s `maxIndexBytes`: its `Content-Length`
 * says so, or more bytes arrived, reading stopped there. Not retried: the same server would send
 * the same index. The message names the URL and the limit, and says to raise `maxIndexBytes`.
 */
export class IndexTooLargeError extends AwakeError {
  override readonly name = 'IndexTooLargeError' as const;
  declare readonly code: 'E_INDEX_TOO_LARGE';
  /** The limit the index passed: `maxIndexBytes`. */
  readonly maxBytes: number;
  /** The `Content-Length` the server sent, when that is what passed the limit. */
  readonly declaredBytes?: number;
  /** Bytes read before reading stopped, when the body itself ran over. */
  readonly receivedBytes?: number;
  /** `sizeError`: the transport's error for the index body, kept as `cause`; what it saw is copied. */
  constructor(url: string, maxBytes: number, sizeError?: ResponseSizeError) {
    const declared = sizeError?.declaredBytes;
    const received = sizeError?.receivedBytes;
    const what =
      declared !== undefined
        ? `its Content-Length says ${declared}`
        : received !== undefined
          ? `more arrived (${received} bytes read, reading stopped)`
          : 'it is larger';
    super(
      'E_INDEX_TOO_LARGE',
      `the project index ${url} is larger than maxIndexBytes (${maxBytes} bytes): ${what}; to read it, raise the maxIndexBytes option of IndexedAssetSource.open`,
      { url, ...(sizeError ? { cause: sizeError } : {}) },
    );
    this.maxBytes = maxBytes;
    if (declared !== undefined) this.declaredBytes = declared;
    if (received !== undefined) this.receivedBytes = received;
  }
}

export type BundlePart = 'header' | 'table' | 'members' | 'bundle';

/** Bytes that are not a well-formed AWKB v1 bundle (SPEC §5 reader checks). */
export class BundleFormatError extends AwakeError {
  override readonly name = 'BundleFormatError' as const;
  declare readonly code: 'E_BUNDLE_FORMAT';
  readonly part: 'header' | 'table';
  constructor(part: 'header' | 'table', message: string, details: AwakeErrorDetails = {}) {
    super('E_BUNDLE_FORMAT', `AWKB ${part}: ${message}`, details);
    this.part = part;
  }
}

/**
 * A bundle that does not match what the index says (SPEC §7 "Verified"): its size or SHA-256,
 * its table, or the named members. `damaged` lists every damaged member's path or id.
 */
export class BundleIntegrityError extends AwakeError {
  override readonly name = 'BundleIntegrityError' as const;
  declare readonly code: 'E_BUNDLE_INTEGRITY';
  readonly part: BundlePart;
  readonly damaged: string[];
  constructor(part: BundlePart, message: string, damaged: string[] = [], details: AwakeErrorDetails = {}) {
    super('E_BUNDLE_INTEGRITY', message, details);
    this.part = part;
    this.damaged = damaged;
  }
}

/** A loose file or a single member whose bytes do not match its index entry. */
export class FileIntegrityError extends AwakeError {
  override readonly name = 'FileIntegrityError' as const;
  declare readonly code: 'E_FILE_INTEGRITY';
  constructor(message: string, details: AwakeErrorDetails = {}) {
    super('E_FILE_INTEGRITY', message, details);
  }
}

/** Why an encoded member's stored bytes do not decode to its entry (SPEC §5a). */
export type MemberDecodeProblem =
  /** The `encoding` (a name in the index, a byte in a table) is none this reader knows. */
  | 'unknown-encoding'
  /** The stream would give more bytes than the listed size: refused before they are held (a bomb). */
  | 'too-long'
  /** The stream, or its stored bytes, ended before the listed size was reached. */
  | 'too-short'
  /** Stored bytes follow the end of the deflate stream. */
  | 'trailing-bytes'
  /** The stored bytes are not a valid stream of that encoding. */
  | 'corrupt';

/**
 * An encoded member (SPEC §5a) whose stored bytes do not decode to its listed size: an unknown
 * encoding, output past the listed size (refused before it is allocated), a stream that ends
 * short, bytes after the stream's end, or a broken stream. `key` names the member (path, or id),
 * `encoding` the encoding it claims, `problem` which of these it is. A decoded member that has
 * the listed size but another SHA-256 is a `FileIntegrityError` or `BundleIntegrityError`, as for
 * any member.
 */
export class MemberDecodeError extends AwakeError {
  override readonly name = 'MemberDecodeError' as const;
  declare readonly code: 'E_MEMBER_DECODE';
  readonly key: string;
  readonly encoding: string;
  readonly problem: MemberDecodeProblem;
  constructor(message: string, details: AwakeErrorDetails & { key: string; encoding: string; problem: MemberDecodeProblem }) {
    super('E_MEMBER_DECODE', message, details);
    this.key = details.key;
    this.encoding = details.encoding;
    this.problem = details.problem;
  }
}

/**
 * A project path (or, with opaque ids, an id) that the index does not list, or a URL that is
 * below no registered index's root. `path` names what was asked for; `url` the index.
 */
export class AssetNotFoundError extends AwakeError {
  override readonly name = 'AssetNotFoundError' as const;
  declare readonly code: 'E_NOT_FOUND';
  constructor(path: string, indexUrl?: string, message?: string) {
    super('E_NOT_FOUND', message ?? `${JSON.stringify(path)} is not in the project index${indexUrl ? ` ${indexUrl}` : ''}`, {
      path,
      ...(indexUrl ? { url: indexUrl } : {}),
    });
  }
}

/**
 * A call this source or registration cannot carry out as set up: `prefetchFolder` on an index
 * with opaque ids (they hide the folders), a Babylon load with no live `registerAwkb` or for a file
 * type no engine plugin is loaded for, a browser cache (IndexedDB, Cache Storage, OPFS) the page
 * does not have. Nothing is wrong with the bytes or the network.
 */
export class UnsupportedOperationError extends AwakeError {
  override readonly name = 'UnsupportedOperationError' as const;
  declare readonly code: 'E_UNSUPPORTED';
  constructor(message: string, details: AwakeErrorDetails = {}) {
    super('E_UNSUPPORTED', message, details);
  }
}

/**
 * An option or argument a program passed that cannot be right: a negative size, a key that is
 * not a SHA-256, a URL that is not absolute. `option` names it as the caller wrote it
 * (`retry.attempts`, `allowOrigins[1]`, `pendingBytes`). A programming error: fix the call.
 */
export class InvalidOptionError extends AwakeError {
  override readonly name = 'InvalidOptionError' as const;
  declare readonly code: 'E_OPTION';
  readonly option: string;
  constructor(option: string, message: string, details: AwakeErrorDetails = {}) {
    super('E_OPTION', message, details);
    this.option = option;
  }
}

/** A path that breaks SPEC §1. */
export class UnsafePathError extends AwakeError {
  override readonly name = 'UnsafePathError' as const;
  declare readonly code: 'E_UNSAFE_PATH';
  constructor(path: string, reason: string) {
    super('E_UNSAFE_PATH', `unsafe project path ${JSON.stringify(path)}: ${reason}`, { path });
  }
}

/**
 * The out folder of a publish cannot take the output (SPEC §8): a file where a folder must be,
 * a symbolic link that leads outside `--out`, a write that failed. `path` names the place.
 */
export class PublishOutputError extends AwakeError {
  override readonly name = 'PublishOutputError' as const;
  declare readonly code: 'E_PUBLISH_OUTPUT';
  constructor(message: string, path: string, cause?: unknown) {
    super('E_PUBLISH_OUTPUT', message, { path, ...(cause === undefined ? {} : { cause }) });
  }
}

/**
 * A publish input that does not match its loose index, or cannot be read (SPEC §8): a missing
 * or unreadable file, a size or SHA-256 that differs, a symbolic link that leaves the folder, an
 * empty folder. `path` names the file or folder.
 */
export class PublishInputError extends AwakeError {
  override readonly name = 'PublishInputError' as const;
  declare readonly code: 'E_PUBLISH_INPUT';
  constructor(message: string, path?: string, cause?: unknown) {
    super('E_PUBLISH_INPUT', message, { ...(path === undefined ? {} : { path }), ...(cause === undefined ? {} : { cause }) });
  }
}

/** The folder `serve` was asked to serve does not exist or is not a folder. `path` names it. */
export class ServeRootError extends AwakeError {
  override readonly name = 'ServeRootError' as const;
  declare readonly code: 'E_SERVE_ROOT';
  constructor(message: string, path: string) {
    super('E_SERVE_ROOT', message, { path });
  }
}

/** Options shared by the network errors (SPEC §7 "Retries"). */
export interface NetworkErrorDetails extends AwakeErrorDetails {
  /** How many requests were sent before giving up; 1 when the error was not retried. */
  attempts?: number;
}

/** A response with a status that is not a success (SPEC §7 "Retries": other 4xx fail at once). */
export class HttpError extends AwakeError {
  override readonly name = 'HttpError' as const;
  declare readonly code: 'E_HTTP';
  /** The HTTP status; 0 for a response the platform made opaque (a hidden redirect). */
  readonly status: number;
  readonly attempts: number;
  /** The wait a 429 or 503 asked for with `Retry-After`, in milliseconds, before any cap. */
  readonly retryAfterMs?: number;
  constructor(status: number, message: string, details: NetworkErrorDetails & { url: string; retryAfterMs?: number }) {
    super('E_HTTP', message, details);
    this.status = status;
    this.attempts = details.attempts ?? 1;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
  }
}

/** A request that failed below HTTP: fetch rejected, the connection was reset, or the body was cut short. */
export class NetworkError extends AwakeError {
  override readonly name = 'NetworkError' as const;
  declare readonly code: 'E_NETWORK';
  readonly attempts: number;
  constructor(message: string, details: NetworkErrorDetails & { url: string }) {
    super('E_NETWORK', message, details);
    this.attempts = details.attempts ?? 1;
  }
}

/** One attempt took longer than the transport's `timeoutMs`. */
export class RequestTimeoutError extends AwakeError {
  override readonly name = 'RequestTimeoutError' as const;
  declare readonly code: 'E_TIMEOUT';
  readonly attempts: number;
  readonly timeoutMs: number;
  constructor(timeoutMs: number, message: string, details: NetworkErrorDetails & { url: string }) {
    super('E_TIMEOUT', message, details);
    this.timeoutMs = timeoutMs;
    this.attempts = details.attempts ?? 1;
  }
}

/**
 * The caller stopped the work: its `AbortSignal` stopped a request or a wait between attempts,
 * or `dispose()` of the source (or of a Babylon registration) ended what was still pending and
 * refuses what comes after. `url` names the request or the index when there is one.
 */
export class RequestAbortedError extends AwakeError {
  override readonly name = 'RequestAbortedError' as const;
  declare readonly code: 'E_ABORTED';
  constructor(message: string, details: AwakeErrorDetails = {}) {
    super('E_ABORTED', message, details);
  }
}

/**
 * A read that went back to its start more often than `MAX_READ_RESTARTS`: each time,
 * the load it waited for ended without bringing its content, or a decision it waited on changed
 * course. Never expected: it names the path and the state the read was in, so that a read
 * resolves, fails typed, or waits on something named, and never spins.
 */
export class ReadStalledError extends AwakeError {
  override readonly name = 'ReadStalledError' as const;
  declare readonly code: 'E_READ_STALLED';
  /** The read's state when it gave up (`joining`, `deciding`, `fetching`, …). */
  readonly state: string;
  readonly restarts: number;
  constructor(message: string, details: AwakeErrorDetails & { state: string; restarts: number }) {
    super('E_READ_STALLED', message, details);
    this.state = details.state;
    this.restarts = details.restarts;
  }
}

/** A 206 answer to a range request that is not the range asked for (SPEC §7 "Range reads"). */
export class RangeResponseError extends AwakeError {
  override readonly name = 'RangeResponseError' as const;
  declare readonly code: 'E_RANGE';
  constructor(message: string, details: AwakeErrorDetails & { url: string }) {
    super('E_RANGE', message, details);
  }
}

/**
 * A response body that is not the size the caller expects: a `Content-Length` that says so, or
 * more bytes than expected (`expectedBytes`) or accepted (`maxBytes`), reading stopped there (SPEC
 * §7 "Verified"). Not retried: the same server would send the same body. The reader reports it as
 * the bundle's or file's integrity error, or for the index as `IndexTooLargeError`.
 */
export class ResponseSizeError extends AwakeError {
  override readonly name = 'ResponseSizeError' as const;
  declare readonly code: 'E_RESPONSE_SIZE';
  /** The bound the body passed: the request's `expectedBytes`, or its `maxBytes` when that is smaller. */
  readonly expectedBytes: number;
  /** The `Content-Length` the server sent, when that is what differs. */
  readonly declaredBytes?: number;
  /** Bytes read before reading stopped, when the body itself ran over. */
  readonly receivedBytes?: number;
  constructor(
    message: string,
    details: AwakeErrorDetails & { url: string; expectedBytes: number; declaredBytes?: number; receivedBytes?: number },
  ) {
    super('E_RESPONSE_SIZE', message, details);
    this.expectedBytes = details.expectedBytes;
    if (details.declaredBytes !== undefined) this.declaredBytes = details.declaredBytes;
    if (details.receivedBytes !== undefined) this.receivedBytes = details.receivedBytes;
  }
}

/**
 * A URL the reader will not fetch (SPEC §7 "Tokens"): not http(s), or on an origin that is
 * neither the index's nor in `allowOrigins`. The message says where it came from (`bundles[2].url`).
 */
export class OriginNotAllowedError extends AwakeError {
  override readonly name = 'OriginNotAllowedError' as const;
  declare readonly code: 'E_ORIGIN';
  constructor(message: string, details: AwakeErrorDetails & { url: string }) {
    super('E_ORIGIN', message, details);
  }
}

/**
 * A `tokenAuthorizedFetch` with no origin yet: made without `origin` and not bound by
 * `IndexedAssetSource.open` (or `bindTokenOrigin`), it sends nothing rather than guess.
 */
export class TokenOriginError extends AwakeError {
  override readonly name = 'TokenOriginError' as const;
  declare readonly code: 'E_TOKEN_ORIGIN';
  constructor(message: string, details: AwakeErrorDetails = {}) {
    super('E_TOKEN_ORIGIN', message, details);
  }
}

/** Every error class above, as one union: `switch (error.name)` or `(error.code)` narrows it. */
export type AnyAwakeError =
  | IndexValidationError
  | UnsupportedIndexVersionError
  | IndexTooLargeError
  | BundleFormatError
  | BundleIntegrityError
  | FileIntegrityError
  | MemberDecodeError
  | AssetNotFoundError
  | UnsupportedOperationError
  | InvalidOptionError
  | UnsafePathError
  | PublishInputError
  | PublishOutputError
  | ServeRootError
  | HttpError
  | NetworkError
  | RequestTimeoutError
  | RequestAbortedError
  | ReadStalledError
  | RangeResponseError
  | ResponseSizeError
  | OriginNotAllowedError
  | TokenOriginError;

/** True for any awake-bundle error; the type narrows to the union of them. */
export function isAwakeError(error: unknown): error is AnyAwakeError {
  return error instanceof AwakeError;
}
