/** Reading a project index named on the command line: an http(s) URL, a file, or a published folder. */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AwakeError } from '../core/errors.js';
import { decodeIndexText } from '../core/format/index-text.js';
import { parseFetchedIndexJson, parseProjectIndexJson, type ProjectIndex } from '../core/format/project-index.js';
import { INDEX_FILE_NAME } from '../core/node/publish.js';
import { CommandFailure } from './usage.js';

const TIMEOUT_MS = 30_000;

export const isUrl = (source: string) => /^https?:\/\//i.test(source);

/** Index bytes from an http(s) URL (with its Content-Type), a file, or a published folder (its project.index.json). */
async function readIndexBytes(source: string): Promise<{ bytes: Uint8Array; contentType?: string | null }> {
  if (isUrl(source)) {
    let response: Response;
    try {
      response = await fetch(source, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (error) {
      throw new CommandFailure(`${source}: cannot fetch: ${(error as Error).message}`);
    }
    if (!response.ok) throw new CommandFailure(`${source}: cannot fetch: HTTP ${response.status}`);
    return { bytes: new Uint8Array(await response.arrayBuffer()), contentType: response.headers.get('content-type') };
  }
  const isFolder = (await stat(source).catch(() => undefined))?.isDirectory() ?? false;
  const path = isFolder ? join(source, INDEX_FILE_NAME) : source;
  try {
    return { bytes: await readFile(path) };
  } catch (error) {
    throw new CommandFailure(`${path}: cannot read: ${(error as Error).message}`);
  }
}

/** The index `source` names, checked; a failure is a `CommandFailure` naming the source (and the field). */
export async function loadIndex(source: string): Promise<ProjectIndex> {
  const read = await readIndexBytes(source);
  try {
    // Strict UTF-8 (decodeIndexText): an index whose paths are not is refused, naming the entry.
    const text = decodeIndexText(read.bytes);
    // An answer over HTTP may be a page instead (a single-page app's fallback): named as such.
    return read.contentType === undefined ? parseProjectIndexJson(text) : parseFetchedIndexJson(text, { contentType: read.contentType });
  } catch (error) {
    // The message names the field (files[3].sha256); the source goes in front once.
    if (error instanceof AwakeError) throw new CommandFailure(`${source}: ${error.message}`);
    throw error;
  }
}
