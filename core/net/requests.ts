/**
 * What one request of the transport asks for and hands back (SPEC §7 "Retries", "Range reads"):
 * the request options, the bound on a body, the fetched answer, the range answers and the
 * multipart allowances. A module of its own, below both `Transport` (transport.ts) and its range
 * requests (transport-ranges.ts, multipart.ts), so those import downward only; transport.ts
 * re-exports every name here that it exported before.
 */
import { InvalidOptionError } from '../errors.js';

export interface RequestOptions {
  /** Stops the request, or the wait before the next attempt, with an `E_ABORTED` error. */
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /**
   * Called as body bytes arrive. `totalBytes` is the Content-Length when the server sends one
   * (and no Content-Encoding). A retried request reports again from 0.
   */
  onProgress?: (receivedBytes: number, totalBytes: number | undefined) => void;
  /**
   * The body's size when the caller knows it (a bundle's listed size; for `getRange`, the whole
   * resource's, which bounds a 200 answer). A larger `Content-Length` fails at the headers, and
   * reading stops as soon as more bytes arrive: `ResponseSizeError`, not retried (SPEC §7
   * "Verified": a body cannot grow past what the index lists). A shorter body is handed over for
   * the caller's checks, which say what it lacks.
   */
  expectedBytes?: number;
  /** At most this many attempts for this request (default, and at most, the transport's `retry.attempts`). */
  attempts?: number;
  /**
   * This request's limit on one attempt going quiet, instead of the transport's `timeoutMs` (the
   * reader gives the index its own, shorter one); 0 means none.
   */
  timeoutMs?: number;
}

/** The most body bytes an attempt of a whole-body read may hold (`whole`). */
export interface BodyBound {
  whole?: number;
  /** `whole` is the caller's `maxBytes` (the most it accepts), not a size it expects: errors say so. */
  wholeIsMax?: boolean;
}

export interface Fetched {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
}

/**
 * Statuses that answer a request with a Range header by refusing ranges rather than the resource:
 * 403 (a host or CDN rule against Range), 416 (a range it will not satisfy), 501 (Range not
 * implemented). `getRange` and `streamRanges` hand them back as `refused`, unread and not retried,
 * for the caller to fetch the whole resource instead.
 */
export const RANGE_REFUSALS: ReadonlySet<number> = new Set([403, 416, 501]);

/** A host that would not serve the range(s) asked for: `status` was the answer (see `RANGE_REFUSALS`). */
export type RangeRefusal = { kind: 'refused'; status: number; reason: string };

/**
 * A range read's answer: the range asked for (206), the whole resource (200 from a server that
 * ignores ranges), or `refused` (a 403, 416 or 501: fetch the whole resource without Range).
 */
export type RangeResult = { kind: 'range'; bytes: Uint8Array } | { kind: 'whole'; bytes: Uint8Array } | RangeRefusal;

/**
 * Where a streamed range answer (`Transport.streamRanges`) puts its bytes: `data` as they arrive,
 * `offset` counting from the resource's first byte (views to copy before returning; gap bytes a
 * server sent between ranges come too); `finish` once the answer ended whole, resolving when the
 * receiver accepts it. One sink per attempt: a retried request starts a new one.
 */
export interface RangeSink {
  data(offset: number, bytes: Uint8Array): void;
  finish(): Promise<void>;
}

/**
 * A streamed range answer: `streamed` (every range asked for went to the sink); `whole`, the whole
 * resource (a 200 to one range: a server that ignores ranges), not given to the sink; or, `unsupported` (a 200 to several ranges, or one 206 range that does not cover them,
 * unread), for the caller to ask for them one by one, or `refused` (a 403, 416 or 501).
 */
export type StreamedRanges =
  { kind: 'streamed' } | { kind: 'whole'; bytes: Uint8Array } | { kind: 'unsupported'; reason: string } | RangeRefusal;

/** Most bytes of one part's header block in a `multipart/byteranges` answer (its lines and the blank line after them). */
export const MAX_PART_HEADER_BYTES = 4096;
/**
 * Bytes a `multipart/byteranges` answer may hold besides its data, per part: its header block (at
 * most `MAX_PART_HEADER_BYTES`: a server may add long headers to each part), its delimiter line
 * (`--`, a boundary of at most 70, a little transport padding, CRLF) and the CRLF after its data.
 */
export const MULTIPART_PART_ALLOWANCE = MAX_PART_HEADER_BYTES + 256;
/** And once: a preamble (the first delimiter must come within `MAX_PART_HEADER_BYTES`), the closing delimiter, an epilogue. */
export const MULTIPART_BODY_ALLOWANCE = MAX_PART_HEADER_BYTES + 1024;

/** `value` when it is a byte count (a safe integer ≥ 0), else `InvalidOptionError` naming it. */
export function checkedSize(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new InvalidOptionError(name, `${name} must be a safe integer ≥ 0, got ${value}`);
  return value;
}
