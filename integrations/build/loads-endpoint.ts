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
import { writeFileAtomic } from '../../core/node/atomic-write.js';
import { mergeLoads, parseLoadsFile, type LoadsFile } from '../../core/publish/loads.js';

/** The endpoint's URL path below the dev server's base. */
export const LOADS_ENDPOINT_PATH = '__awake-bundle/loads';

/** A loads file lists paths; 8 MiB is some 100 000 of them, well past a real game. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

class Refusal extends Error {
  constructor(readonly status: number, message: string) {
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
      const posted = parseLoadsFile(await readBody(request), 'posted to awake-bundle');
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
      if (status === 409 || status === 500) this.onError(error);
    }
  }

  /** The loads file with `posted` merged in, written only when that changed it. */
  private async merge(posted: LoadsFile): Promise<void> {
    const text = await readFile(this.file, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    // A file that is not a loads file (edited by hand, say) is named and left as it is.
    const before: LoadsFile = text === undefined ? { formatVersion: 1, loads: [] } : parseLoadsFile(text, this.file);
    const after = `${JSON.stringify(mergeLoads(before, posted.loads), null, 2)}\n`;
    if (after !== text) await writeFileAtomic(this.file, after);
  }
}

/**
 * Only a JSON post from the page's own origin: a page elsewhere cannot send `application/json`
 * without a preflight the dev server does not answer, nor pass the Origin check.
 */
function checkRequest(request: IncomingMessage): void {
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) throw new Refusal(415, `post the loads file as application/json, not ${JSON.stringify(type)}`);
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== 'null') {
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host !== request.headers.host) throw new Refusal(403, `loads are taken from the dev server's own pages, not from ${origin}`);
  }
}

async function readBody(request: IncomingMessage): Promise<string> {
  const declared = Number(request.headers['content-length']);
  if (declared > MAX_BODY_BYTES) throw new Refusal(413, `a loads file of ${declared} bytes is more than the ${MAX_BODY_BYTES} this endpoint takes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Refusal(413, `a loads file of more than ${MAX_BODY_BYTES} bytes is more than this endpoint takes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
