/**
 * The embedded static host behind `awake-bundle serve`: a folder over node:http with what a
 * reader relies on from a real host (Range, ETag/304, cache headers for bundles vs the index,
 * CORS), plus the things a developer wants to try locally before a CDN does them: a bearer
 * token, added latency, and seeded fault injection (SPEC §7 "Range reads", "Retries", "Tokens").
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { open, realpath, stat, type FileHandle } from 'node:fs/promises';
import { createServer, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, sep } from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidOptionError, ServeRootError } from '../errors.js';
import { unsafePathReason } from '../format/paths.js';
import { SHA256_HEX_DIGITS } from '../format/sha256.js';
import { contentTypeOf } from '../format/media-types.js';
import { requestedRanges } from '../format/range-header.js';

export { MAX_RANGE_HEADER_LENGTH, MAX_RANGES_PER_REQUEST, requestedRange, requestedRanges } from '../format/range-header.js';

/** One injected fault: an HTTP status (429, 503, …), a reset socket, or a body cut short. */
export interface FaultRule {
  fault: number | 'reset' | 'truncate';
  /** 0..1, drawn independently for each rule on every GET/HEAD that passed the token check. */
  probability: number;
}

export interface StaticServerOptions {
  /** The folder to serve; nothing outside it is ever read. */
  root: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1, so the folder is not offered to the network by accident. */
  host?: string;
  /** Delay before every response, preflights and errors included. */
  latencyMs?: number;
  /** The wait behind `latencyMs` (default a timer); injectable so tests need not wait. */
  delay?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Require `Authorization: Bearer <token>` (or `?token=<token>`) on GET and HEAD. */
  token?: string;
  faults?: FaultRule[];
  /** Makes the fault draws repeatable: the same seed gives the same faults to the nth request. */
  seed?: number;
  /** Called once per finished request with a one-line access log entry. */
  log?: (line: string) => void;
  /**
   * Origins, besides this machine's own, whose pages may read the answers (CORS): exact origins
   * such as `https://game.example:8443`, or `*` for any page (the folder is then readable by
   * every site open in the browser). By default only http(s) pages on 127.0.0.1, localhost and
   * [::1], any port, are allowed; any other page gets no Access-Control-Allow-Origin.
   */
  corsOrigins?: string[];
  /** A connection must send its request headers within this time (default 20 s), else 408 and closed. */
  headersTimeoutMs?: number;
  /** A whole request must arrive within this time (default 60 s). */
  requestTimeoutMs?: number;
  /** A connection with no traffic either way for this long is closed (default 120 s): a client that stops reading. */
  idleTimeoutMs?: number;
  /** How long a kept-alive connection may wait for its next request (default 5 s). */
  keepAliveTimeoutMs?: number;
}

export const DEFAULT_SERVER_TIMEOUTS = {
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 60_000,
  idleTimeoutMs: 120_000,
  keepAliveTimeoutMs: 5_000,
} as const;

export interface StaticServer {
  /** `http://<host>:<port>/`, with a trailing slash. */
  url: string;
  port: number;
  /** Stops listening, drops open connections and pending delayed responses. Idempotent. */
  close(): Promise<void>;
}

/** The Content-Type the server sends: one table with the reader's object URLs (core/format/media-types.ts). */
export function contentTypeFor(fileName: string): string {
  return contentTypeOf(fileName);
}

/** Bundles are named by their SHA-256, so they never change (SPEC §5); everything else may. */
export function cacheControlFor(fileName: string): string {
  return fileName.toLowerCase().endsWith('.awkb') ? 'public, max-age=31536000, immutable' : 'no-cache';
}

const ALLOWED_METHODS = 'GET, HEAD, OPTIONS';
const EXPOSED_HEADERS = 'Content-Length, Content-Range, ETag, Accept-Ranges, Retry-After';
/** Pages served from this machine: http(s) on a loopback name, any port. */
const LOOPBACK_ORIGIN = /^https?:\/\/(?:127\.0\.0\.1|localhost|\[::1\])(?::\d{1,5})?$/i;

/** Checks a `--cors` origin: `*`, or scheme://host[:port] with nothing after it. */
export function parseCorsOrigin(text: string): string {
  if (text === '*') return text;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidOptionError('corsOrigins', `expected an origin such as https://game.example:8443, or *, got ${JSON.stringify(text)}`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== text.replace(/\/$/, '').toLowerCase()) {
    throw new InvalidOptionError(
      'corsOrigins',
      `expected an origin (http or https scheme, host, optional port, no path), such as https://game.example:8443, got ${JSON.stringify(text)}`,
    );
  }
  return url.origin;
}

/**
 * The Access-Control-Allow-Origin for a request, or undefined for none: the folder is readable
 * by this machine's own pages, and by the origins the user listed (or every page with `*`).
 * The token, when there is one, travels in the Authorization header, never a cookie, so the
 * answer never needs Allow-Credentials.
 */
function allowedOrigin(origin: string | undefined, allowed: Set<string>): string | undefined {
  if (allowed.has('*')) return '*';
  if (origin === undefined) return undefined;
  return LOOPBACK_ORIGIN.test(origin) || allowed.has(origin.toLowerCase()) ? origin : undefined;
}
const PREFLIGHT_HEADERS = {
  'Access-Control-Allow-Methods': ALLOWED_METHODS,
  'Access-Control-Allow-Headers': 'Range, Authorization, If-None-Match, Content-Type',
  'Access-Control-Max-Age': '600',
};

/** Parses `429:0.1`, `reset:0.05` or `truncate:1` (the CLI's `--fail`); throws an InvalidOptionError (`faults`) saying what is wrong. */
export function parseFaultRule(text: string): FaultRule {
  const match = /^([^:]+):(.+)$/.exec(text);
  if (!match) throw new InvalidOptionError('faults', `expected <status|reset|truncate>:<probability>, got ${JSON.stringify(text)}`);
  const [, kind, probabilityText] = match as unknown as [string, string, string];
  const fault = /^\d+$/.test(kind) ? Number(kind) : kind;
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(probabilityText))
    throw new InvalidOptionError('faults', `fault probability must be a number from 0 to 1, got ${JSON.stringify(probabilityText)}`);
  const rule = { fault, probability: Number(probabilityText) } as FaultRule;
  checkFaultRule(rule);
  return rule;
}

function checkFaultRule({ fault, probability }: FaultRule): void {
  if (typeof fault === 'number' ? !(Number.isInteger(fault) && fault >= 400 && fault <= 599) : fault !== 'reset' && fault !== 'truncate') {
    throw new InvalidOptionError('faults', `unknown fault ${JSON.stringify(fault)}: use an HTTP status from 400 to 599, reset or truncate`);
  }
  if (!(probability >= 0 && probability <= 1))
    throw new InvalidOptionError('faults', `fault probability must be a number from 0 to 1, got ${String(probability)}`);
}

/** A token the server accepts (and `serve --token`): printable ASCII, no spaces, as a bearer header can carry. */
export const SERVER_TOKEN = /^[\x21-\x7e]+$/;

function checkOptions(options: StaticServerOptions): void {
  const { port = 0, latencyMs = 0, token, faults = [], seed } = options;
  for (const name of Object.keys(DEFAULT_SERVER_TIMEOUTS) as (keyof typeof DEFAULT_SERVER_TIMEOUTS)[]) {
    const value = options[name];
    if (value !== undefined && !(Number.isSafeInteger(value) && value > 0))
      throw new InvalidOptionError(name, `${name} must be a positive integer (milliseconds), got ${value}`);
  }
  const { headersTimeoutMs, requestTimeoutMs } = { ...DEFAULT_SERVER_TIMEOUTS, ...definedOnly(options) };
  if (headersTimeoutMs > requestTimeoutMs)
    throw new InvalidOptionError(
      'headersTimeoutMs',
      `headersTimeoutMs (${headersTimeoutMs}) must not exceed requestTimeoutMs (${requestTimeoutMs})`,
    );
  (options.corsOrigins ?? []).forEach(parseCorsOrigin);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new InvalidOptionError('port', `port must be an integer from 0 to 65535, got ${port}`);
  if (!(Number.isFinite(latencyMs) && latencyMs >= 0))
    throw new InvalidOptionError('latencyMs', `latencyMs must be a number ≥ 0, got ${latencyMs}`);
  if (token !== undefined && !SERVER_TOKEN.test(token))
    throw new InvalidOptionError('token', 'token must be non-empty printable ASCII without spaces');
  if (seed !== undefined && !Number.isSafeInteger(seed)) throw new InvalidOptionError('seed', `seed must be an integer, got ${seed}`);
  faults.forEach(checkFaultRule);
}

/** mulberry32: a tiny seedable generator; fault draws need repeatability, not quality. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draws every rule on every request, so the nth request's fate depends only on the seed and n. */
function faultDrawer(rules: FaultRule[], seed: number): () => FaultRule['fault'] | undefined {
  const random = seededRandom(seed);
  return () => {
    let chosen: FaultRule['fault'] | undefined;
    for (const rule of rules) {
      const hit = random() < rule.probability;
      if (hit && chosen === undefined) chosen = rule.fault;
    }
    return chosen;
  };
}

function sameSecret(candidate: string, secret: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(candidate), digest(secret));
}

function isAuthorized(request: IncomingMessage, query: URLSearchParams, token: string): boolean {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
  return [bearer, query.get('token') ?? undefined].some((candidate) => candidate !== undefined && sameSecret(candidate, token));
}

/** Splits a request target into its still-encoded path and its query; absolute-form targets lose their origin. */
function splitTarget(target: string): { rawPath: string; rawQuery: string } {
  const originForm = target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '');
  const queryStart = originForm.indexOf('?');
  return queryStart < 0
    ? { rawPath: originForm, rawQuery: '' }
    : { rawPath: originForm.slice(0, queryStart), rawQuery: originForm.slice(queryStart) };
}

type Resolved =
  { kind: 'file'; path: string; stats: Stats } | { kind: 'redirect'; location: string } | { kind: 'refused'; status: 400 | 403 | 404 };

/** The real path and stats of `path` when it exists inside `realRoot` (symbolic links followed). */
async function insideRoot(realRoot: string, path: string): Promise<{ path: string; stats: Stats } | 'missing' | 'outside'> {
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    return 'missing';
  }
  if (real !== realRoot && !real.startsWith(realRoot.endsWith(sep) ? realRoot : realRoot + sep)) return 'outside';
  return { path: real, stats: await stat(real) };
}

/**
 * Maps an encoded request path to a file under the root. Each segment is percent-decoded on its
 * own, so `%2F` cannot make a new segment, and the decoded path must be a safe project path
 * (SPEC §1); a symbolic link that leads outside the root is refused too.
 */
async function resolveRequestPath(realRoot: string, rawPath: string, rawQuery: string): Promise<Resolved> {
  if (!rawPath.startsWith('/')) return { kind: 'refused', status: 400 };
  const wantsFolder = rawPath.endsWith('/');
  let segments: string[];
  try {
    segments = rawPath
      .slice(1, wantsFolder ? -1 : undefined)
      .split('/')
      .map(decodeURIComponent);
  } catch {
    return { kind: 'refused', status: 400 };
  }
  const relative = segments.join('/');
  if (relative !== '' && (unsafePathReason(relative) !== undefined || segments.some((segment) => segment.includes('/'))))
    return { kind: 'refused', status: 403 };
  const found = await insideRoot(realRoot, join(realRoot, ...segments.filter((segment) => segment !== '')));
  if (found === 'missing') return { kind: 'refused', status: 404 };
  if (found === 'outside') return { kind: 'refused', status: 403 };
  if (found.stats.isFile()) return wantsFolder ? { kind: 'refused', status: 404 } : { kind: 'file', ...found };
  if (!found.stats.isDirectory()) return { kind: 'refused', status: 404 };
  const index = await insideRoot(realRoot, join(found.path, 'index.html'));
  if (typeof index === 'string' || !index.stats.isFile()) return { kind: 'refused', status: index === 'outside' ? 403 : 404 };
  // Without the slash, relative URLs inside index.html would resolve against the parent folder.
  if (!wantsFolder) return { kind: 'redirect', location: `${rawPath}/${rawQuery}` };
  return { kind: 'file', ...index };
}

const BUNDLE_FILE_NAME = new RegExp(`(?:^|[/\\\\])(${SHA256_HEX_DIGITS})\\.awkb$`);

export function entityTagFor(fileName: string, stats: Stats): string {
  const bundleName = BUNDLE_FILE_NAME.exec(fileName);
  if (bundleName) return `"${bundleName[1]}"`;
  return `"${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}"`;
}

function isNotModified(request: IncomingMessage, etag: string, modified: Date): boolean {
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    return ifNoneMatch.split(',').some((tag) => {
      const trimmed = tag.trim();
      return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
    });
  }
  const since = Date.parse(request.headers['if-modified-since'] ?? '');
  return Number.isFinite(since) && Math.floor(modified.getTime() / 1000) * 1000 <= since;
}

interface RequestRecord {
  outcome?: string;
  /** Body bytes when they differ from Content-Length (a truncated body). */
  bytes?: number;
  note: string[];
}

function sendStatus(request: IncomingMessage, response: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  const body = `${status} ${STATUS_CODES[status] ?? 'Error'}\n`;
  response.writeHead(status, {
    ...headers,
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'Cache-Control': 'no-store',
  });
  response.end(request.method === 'HEAD' ? undefined : body);
}

function resetConnection(request: IncomingMessage, record: RequestRecord): void {
  record.outcome = 'reset';
  record.note.push('fault reset');
  request.socket.resetAndDestroy();
}

/** After headers with the full Content-Length, sends half the body and closes the connection (and the file). */
function sendTruncated(response: ServerResponse, file: FileHandle, start: number, length: number, record: RequestRecord): void {
  const kept = Math.floor(length / 2);
  record.bytes = kept;
  record.note.push(`fault truncate: ${kept} of ${length} bytes`);
  response.flushHeaders();
  const closeConnection = () => void setImmediate(() => response.socket?.end());
  if (kept === 0) {
    void file.close();
    return closeConnection();
  }
  const source = file.createReadStream({ start, end: start + kept - 1 });
  source.on('error', () => response.destroy());
  response.on('close', () => source.destroy()); // and so the file is closed, also when the client left
  source.on('end', closeConnection);
  source.pipe(response, { end: false });
}

/**
 * Answers a GET or HEAD with a file as `serve` does: ETag and 304, Range (one or several),
 * Content-Type by `name` (default the file's own path). For servers of your own, such as the
 * build plugins' development middleware; the file is trusted (checked by the caller). The file
 * is opened once and everything in the answer comes from that one open file (its `fstat`, not
 * `stats`, which is only a hint kept for callers of old): a file renamed over `path` meanwhile is
 * sent whole, old or new, never one's headers with the other's bytes. A `path` that is no longer
 * a regular file answers 404.
 */
export async function sendFile(
  request: IncomingMessage,
  response: ServerResponse,
  file: { path: string; stats?: Stats; name?: string },
): Promise<void> {
  await serveFile(request, response, file, { followLink: true, truncate: false }, { note: [] });
}

/** O_NONBLOCK: a FIFO put in a file's place cannot hold the open (fstat then refuses it). */
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

async function serveFile(
  request: IncomingMessage,
  response: ServerResponse,
  file: { path: string; name?: string },
  how: { followLink: boolean; truncate: boolean },
  record: RequestRecord,
): Promise<void> {
  const name = file.name ?? file.path;
  let handle: FileHandle;
  try {
    // `serve` opens the real path it checked: a link put in its place since is not followed out of the root.
    handle = await open(file.path, OPEN_FLAGS | (how.followLink ? 0 : (constants.O_NOFOLLOW ?? 0)));
  } catch {
    return sendStatus(request, response, 404); // renamed away, or a link now, since it was resolved
  }
  let handedOver = false;
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return sendStatus(request, response, 404);
    handedOver = answerFromOpenFile(request, response, handle, stats, name, how.truncate, record);
  } finally {
    if (!handedOver) await handle.close();
  }
}

/**
 * The answer for one open file, every header from its `stats` (its fstat) and every byte from
 * `handle`. True when a body stream took the handle over (it closes it); false when the caller closes it.
 */
function answerFromOpenFile(
  request: IncomingMessage,
  response: ServerResponse,
  handle: FileHandle,
  stats: Stats,
  name: string,
  truncate: boolean,
  record: RequestRecord,
): boolean {
  const etag = entityTagFor(name, stats);
  const lastModified = stats.mtime.toUTCString();
  const headers: Record<string, string> = {
    ETag: etag,
    'Last-Modified': lastModified,
    'Cache-Control': cacheControlFor(name),
    'Accept-Ranges': 'bytes',
  };
  if (isNotModified(request, etag, stats.mtime)) {
    response.writeHead(304, headers);
    response.end();
    return false;
  }
  const ifRange = request.headers['if-range'];
  const rangeApplies = request.method === 'GET' && (ifRange === undefined || ifRange === etag || ifRange === lastModified);
  const ranges = rangeApplies ? requestedRanges(request.headers.range, stats.size) : undefined;
  if (ranges === 'unsatisfiable') {
    sendStatus(request, response, 416, { ...headers, 'Content-Range': `bytes */${stats.size}` });
    return false;
  }
  if (ranges && ranges.length > 1)
    return sendMultipart(request, response, { handle, size: stats.size, name }, ranges, headers, truncate, record);
  const range = ranges?.[0];
  const { start, end } = range ?? { start: 0, end: stats.size - 1 };
  const length = end - start + 1;
  if (range) {
    headers['Content-Range'] = `bytes ${start}-${end}/${stats.size}`;
    record.note.push(headers['Content-Range']);
  }
  response.writeHead(range ? 206 : 200, { ...headers, 'Content-Type': contentTypeFor(name), 'Content-Length': String(length) });
  if (request.method === 'HEAD' || length === 0) {
    response.end();
    return false;
  }
  // Only a body can be cut short; answers without one (HEAD, 304, errors) go out whole.
  if (truncate) {
    sendTruncated(response, handle, start, length, record);
    return true;
  }
  // A client that goes away mid-body is an ordinary event, not an error to report. The stream closes the handle.
  pipeline(handle.createReadStream({ start, end }), response, () => undefined);
  return true;
}

/** How much of a range each read of a multi-range answer takes. */
const READ_CHUNK_BYTES = 64 * 1024;

/**
 * Several ranges (RFC 9110 §14.6): a 206 `multipart/byteranges` body, each part with its
 * `Content-Type` and `Content-Range`, and an exact `Content-Length`. A truncate fault cuts the
 * body in half as it does a single range's.
 */
function sendMultipart(
  request: IncomingMessage,
  response: ServerResponse,
  file: { handle: FileHandle; size: number; name: string },
  ranges: { start: number; end: number }[],
  headers: Record<string, string>,
  truncate: boolean,
  record: RequestRecord,
): boolean {
  const { handle, size, name } = file;
  const boundary = `awake-${randomBytes(12).toString('hex')}`;
  const type = contentTypeFor(name);
  const heads = ranges.map(({ start, end }, i) =>
    Buffer.from(`${i === 0 ? '' : '\r\n'}--${boundary}\r\nContent-Type: ${type}\r\nContent-Range: bytes ${start}-${end}/${size}\r\n\r\n`),
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const length = heads.reduce((sum, head, i) => sum + head.length + (ranges[i]!.end - ranges[i]!.start + 1), tail.length);
  record.note.push(`${ranges.length} ranges`);
  response.writeHead(206, { ...headers, 'Content-Type': `multipart/byteranges; boundary=${boundary}`, 'Content-Length': String(length) });
  if (request.method === 'HEAD') {
    response.end();
    return false;
  }
  let budget = truncate ? Math.floor(length / 2) : length;
  if (truncate) {
    record.bytes = budget;
    record.note.push(`fault truncate: ${budget} of ${length} bytes`);
  }
  /** Up to `budget` bytes of `chunk`. */
  const within = (chunk: Buffer): Buffer => {
    const kept = chunk.subarray(0, Math.max(0, budget));
    budget -= kept.length;
    return kept;
  };
  async function* body(): AsyncGenerator<Buffer> {
    try {
      for (const [i, { start, end }] of ranges.entries()) {
        yield within(heads[i]!);
        // Each range is read from the one open file when its turn comes (by `read`: a read stream
        // per range would leave a listener on the handle each, past Node's warning at 10).
        for await (const data of readRange(handle, start, end)) {
          if (budget <= 0) return;
          yield within(data);
        }
      }
      if (budget > 0) yield within(tail);
    } finally {
      await handle.close();
    }
  }
  if (truncate) {
    const closeConnection = () => void setImmediate(() => response.socket?.end());
    void (async () => {
      try {
        for await (const chunk of body()) {
          if (response.destroyed) return;
          // A client gone away never drains: 'close' wakes the loop too.
          if (!response.write(chunk)) {
            await new Promise<void>((resume) => {
              const wake = () => {
                response.off('drain', wake);
                response.off('close', wake);
                resume();
              };
              response.on('drain', wake);
              response.on('close', wake);
            });
          }
        }
      } catch {
        return void response.destroy();
      }
      closeConnection();
    })();
    return true;
  }
  // The generator closes the handle; this too, for a response that ends before the body starts.
  pipeline(Readable.from(body()), response, () => void handle.close());
  return true;
}

interface ServerState {
  realRoot: string;
  corsOrigins: Set<string>;
  latencyMs: number;
  delay: (ms: number, signal: AbortSignal) => Promise<void>;
  token?: string;
  drawFault: () => FaultRule['fault'] | undefined;
  closing: AbortController;
}

async function handleRequest(request: IncomingMessage, response: ServerResponse, state: ServerState, record: RequestRecord): Promise<void> {
  const origin = allowedOrigin(request.headers.origin, state.corsOrigins);
  if (origin !== undefined) {
    response.setHeader('Access-Control-Allow-Origin', origin);
    response.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
  }
  // The answer depends on the Origin unless every origin gets `*`: a shared cache must know.
  if (origin !== '*') response.setHeader('Vary', 'Origin');
  response.setHeader('X-Content-Type-Options', 'nosniff');
  if (state.latencyMs > 0) await state.delay(state.latencyMs, state.closing.signal);
  if (request.method === 'OPTIONS') {
    response.writeHead(204, PREFLIGHT_HEADERS);
    return void response.end();
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') return sendStatus(request, response, 405, { Allow: ALLOWED_METHODS });
  const { rawPath, rawQuery } = splitTarget(request.url ?? '/');
  if (state.token !== undefined && !isAuthorized(request, new URLSearchParams(rawQuery), state.token))
    return sendStatus(request, response, 401, { 'WWW-Authenticate': 'Bearer' });
  const fault = state.drawFault();
  if (fault === 'reset') return resetConnection(request, record);
  if (typeof fault === 'number') {
    record.note.push(`fault ${fault}`);
    return sendStatus(request, response, fault, fault === 429 || fault === 503 ? { 'Retry-After': '1' } : {});
  }
  const resolved = await resolveRequestPath(state.realRoot, rawPath, rawQuery);
  if (resolved.kind === 'refused') return sendStatus(request, response, resolved.status);
  if (resolved.kind === 'redirect') return sendStatus(request, response, 301, { Location: resolved.location });
  await serveFile(request, response, resolved, { followLink: false, truncate: fault === 'truncate' }, record);
}

function accessLogLine(request: IncomingMessage, response: ServerResponse, record: RequestRecord, started: number): string {
  const time = new Date().toISOString().slice(11, 23);
  // A token in the query string stays out of the log.
  const target = (request.url ?? '').replace(/([?&]token=)[^&]*/gi, '$1***');
  const outcome = record.outcome ?? (response.headersSent ? String(response.statusCode) : 'aborted');
  const note = record.note.length > 0 ? ` (${record.note.join(', ')})` : '';
  const hasBody = response.headersSent && request.method !== 'HEAD' && response.statusCode !== 304;
  const bytes = record.bytes ?? (hasBody ? Number(response.getHeader('content-length') ?? 0) : 0);
  return `${time} ${request.method} ${target} ${outcome} ${bytes}B ${Math.round(performance.now() - started)}ms${note}`;
}

async function folderRealPath(root: string): Promise<string> {
  const info = await stat(root).catch(() => undefined);
  if (!info) throw new ServeRootError(`${root}: no such folder`, root);
  if (!info.isDirectory()) throw new ServeRootError(`${root}: not a folder`, root);
  return realpath(root);
}

function hostInUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function definedOnly<T extends object>(object: T): Partial<T> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** Serves `root` until `close()`; resolves once listening, with the URL to open. */
export async function startStaticServer(options: StaticServerOptions): Promise<StaticServer> {
  checkOptions(options);
  const { port = 0, host = '127.0.0.1', latencyMs = 0, faults = [], log } = options;
  const timeouts = { ...DEFAULT_SERVER_TIMEOUTS, ...definedOnly(options) };
  const state: ServerState = {
    realRoot: await folderRealPath(options.root),
    corsOrigins: new Set((options.corsOrigins ?? []).map(parseCorsOrigin)),
    latencyMs,
    delay: options.delay ?? ((ms, signal) => sleep(ms, undefined, { signal })),
    ...(options.token !== undefined ? { token: options.token } : {}),
    drawFault: faultDrawer(faults, options.seed ?? Math.floor(Math.random() * 2 ** 32)),
    closing: new AbortController(),
  };
  // Silent, slow and non-reading clients must not hold a connection forever (Node checks the
  // header and request deadlines every connectionsCheckingInterval; the idle timer is per socket).
  const server = createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.max(5, Math.min(1000, Math.floor(timeouts.headersTimeoutMs / 4))),
    },
    (request, response) => {
      const started = performance.now();
      const record: RequestRecord = { note: [] };
      if (log) response.on('close', () => log(accessLogLine(request, response, record, started)));
      handleRequest(request, response, state, record).catch(() => {
        if (state.closing.signal.aborted || response.headersSent) return void response.destroy();
        sendStatus(request, response, 500);
      });
    },
  );
  // With no 'timeout' listener, Node destroys a socket idle for this long.
  server.setTimeout(timeouts.idleTimeoutMs);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const actualPort = (server.address() as AddressInfo).port;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${hostInUrl(host)}:${actualPort}/`,
    port: actualPort,
    close() {
      closed ??= new Promise<void>((resolve) => {
        state.closing.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

/** Bytes `start`..`end` (inclusive) of an open file, 64 KiB at a time; ends early at the file's end. */
async function* readRange(handle: FileHandle, start: number, end: number): AsyncGenerator<Buffer> {
  for (let at = start; at <= end;) {
    const length = Math.min(READ_CHUNK_BYTES, end - at + 1);
    const { bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(length), 0, length, at);
    if (bytesRead === 0) return;
    yield buffer.subarray(0, bytesRead);
    at += bytesRead;
  }
}
