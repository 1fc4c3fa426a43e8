/**
 * Development only (the build plugins' `recordLoads` option): `POST <base>__awake-bundle/loads`
 * takes a loads file (SPEC §6 "Loads", what `source.recordedLoads()` gives) and merges it into the
 * project's `awkb-loads.json` with `mergeLoads` (first use first), written atomically. The dev
 * index's answer names this URL in `X-Awake-Bundle-Loads` (see loose-dev-index.ts): that is how
 * the adapters know to post. Nothing of this exists in a build.
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PublishInputError } from '../../core/errors.js';
import { unsafePathReason } from '../../core/format/paths.js';
import { printable } from '../../core/format/printable.js';
import { writeFileAtomic } from '../../core/node/atomic-write.js';
import { mergeLoads, parseLoadsFile, type LoadsFile } from '../../core/publish/loads.js';

/** The endpoint's URL path below the dev server's base. */
export const LOADS_ENDPOINT_PATH = '__awake-bundle/loads';

/** A loads file lists paths; 8 MiB is some 100 000 of them, well past a real game. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/**
 * The loads file this endpoint writes is at most 16 MiB (some 400 000 path lines of 40 bytes),
 * far past what a real game records, so posts that never stop cannot fill the disk.
 */
const MAX_LOADS_FILE_BYTES = 16 * 1024 * 1024;

/** Strict: a byte that is not UTF-8 is refused, never read as U+FFFD (SPEC §6: UTF-8 JSON). */
const utf8 = new TextDecoder('utf-8', { fatal: true });

class Refusal extends Error {
  /** `logged`: also said on the dev server's console (the developer has to act). */
  constructor(readonly status: number, message: string, readonly logged = false) {
    super(message);
  }
}

export class LoadsEndpoint {
  /** Posts merge one after the other: each reads what the one before wrote. */
  private writing: Promise<unknown> = Promise.resolve();

  constructor(readonly file: string, private readonly onError: (error: unknown) => void) {}

  /** Answers one POST: 204 once merged and written, else 4xx/5xx with a line that says why. */
  async answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      checkRequest(request);
      const body = utf8Text(await readBody(request));
      if (body === undefined) throw new Refusal(400, 'the posted loads file is not UTF-8 text (SPEC §6: the loads file is UTF-8 JSON)');
      const posted = parseLoadsFile(body, 'posted to awake-bundle');
      checkPostedPaths(posted);
      const merged = this.writing.then(() => this.merge(posted));
      this.writing = merged.catch(() => undefined);
      await merged;
      response.writeHead(204, { 'Cache-Control': 'no-store' });
      response.end();
    } catch (error) {
      // 400: what was posted is not a loads file; 409: the loads file on disk is not one (it is left as it is).
      const status = error instanceof Refusal ? error.status : error instanceof PublishInputError ? (error.path === this.file ? 409 : 400) : 500;
      const body = `awake-bundle: ${(error as Error)?.message ?? String(error)}\n`;
      response.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': String(Buffer.byteLength(body)), 'Cache-Control': 'no-store' });
      response.end(body);
      if (status === 409 || status === 500 || (error instanceof Refusal && error.logged)) this.onError(error);
    }
  }

  /** The loads file with `posted` merged in, written only when that changed it, and only up to MAX_LOADS_FILE_BYTES. */
  private async merge(posted: LoadsFile): Promise<void> {
    const bytes = await readFile(this.file).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    // A file that is not a loads file (edited by hand, say) is named and left as it is.
    const text = bytes === undefined ? undefined : utf8Text(bytes);
    if (bytes !== undefined && text === undefined)
      throw new PublishInputError(`loads file ${this.file}: not UTF-8 text (SPEC §6: the loads file is UTF-8 JSON); it is left as it is`, this.file);
    const before: LoadsFile = text === undefined ? { formatVersion: 1, loads: [] } : parseLoadsFile(text, this.file);
    const after = `${JSON.stringify(mergeLoads(before, posted.loads), null, 2)}\n`;
    if (after === text) return;
    const size = Buffer.byteLength(after);
    if (size > MAX_LOADS_FILE_BYTES)
      throw new Refusal(
        413,
        `merging this post would make ${this.file} ${size} bytes, more than the ${MAX_LOADS_FILE_BYTES / 1024 / 1024} MiB (${MAX_LOADS_FILE_BYTES} bytes) this endpoint writes; the file is left as it is (to record afresh, remove it)`,
        true,
      );
    await writeFileAtomic(this.file, after);
  }
}

/**
 * Only a JSON post from the page's own origin: a page elsewhere cannot send `application/json`
 * without a preflight, and where the dev server answers every preflight (Vite's `server.cors:
 * true`) it still fails these checks: its Origin names another host, or is `null` (a sandboxed
 * frame, a file: page: no origin at all), and its Sec-Fetch-Site is `cross-site` or `same-site`.
 * Only `same-origin` passes that header: what a browser sends with a post from the server's own
 * page. `none` (a request the user made, not a page) is refused too: no adapter posts that way.
 * A request with neither header (Node, curl, a browser that sends no Fetch Metadata over plain
 * http to another host) is judged by what it sends.
 */
function checkRequest(request: IncomingMessage): void {
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) throw new Refusal(415, `post the loads file as application/json, not ${JSON.stringify(type)}`);
  const origin = request.headers.origin;
  if (origin === 'null') throw new Refusal(403, "loads are taken from the dev server's own pages, not from a page without an origin (Origin: null: a sandboxed frame or a file: page)");
  if (origin !== undefined) {
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host !== request.headers.host) throw new Refusal(403, `loads are taken from the dev server's own pages, not from ${printable(origin)}`);
  }
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin')
    throw new Refusal(403, `loads are taken from the dev server's own pages, not from a request the browser marks Sec-Fetch-Site: ${printable(site)}`);
}

/**
 * Every posted path is a safe project path (SPEC §1), as the adapters record only paths the
 * index lists: one that is not means the post is not the adapters' and it is refused whole,
 * naming the first such path, so nothing of it is written.
 */
function checkPostedPaths(posted: LoadsFile): void {
  for (const [i, load] of posted.loads.entries()) {
    for (const [k, path] of load.paths.entries()) {
      const reason = unsafePathReason(path);
      if (reason !== undefined)
        throw new Refusal(400, `loads[${i}].paths[${k}] ${shownPath(path)} ${reason} (SPEC §1: a project path); the post is refused, nothing of it written`);
    }
  }
}

/** A path for a message: escaped (printable), and cut to its first 100 characters with its length said. */
function shownPath(path: string): string {
  const characters = [...path];
  if (characters.length <= 100) return `"${printable(path)}"`;
  return `"${printable(characters.slice(0, 100).join(''))}…" (${characters.length} characters)`;
}

function utf8Text(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const declared = Number(request.headers['content-length']);
  if (declared > MAX_BODY_BYTES) throw new Refusal(413, `a loads file of ${declared} bytes is more than the ${MAX_BODY_BYTES} this endpoint takes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Refusal(413, `a loads file of more than ${MAX_BODY_BYTES} bytes is more than this endpoint takes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
