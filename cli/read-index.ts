/** Reading a project index named on the command line: an http(s) URL, a file, or a published folder. */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AwakeError } from '../core/errors.js';
import { parseFetchedIndexJson, parseProjectIndexJson, type ProjectIndex } from '../core/format/project-index.js';
import { INDEX_FILE_NAME } from '../core/node/publish.js';
import { CommandFailure } from './usage.js';

const TIMEOUT_MS = 30_000;

export const isUrl = (source: string) => /^https?:\/\//i.test(source);

/** Index JSON from an http(s) URL (with its Content-Type), a file, or a published folder (its project.index.json). */
async function readIndexText(source: string): Promise<string | { text: string; contentType: string | null }> {
  if (isUrl(source)) {
    let response: Response;
    try {
      response = await fetch(source, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (error) {
      throw new CommandFailure(`${source}: cannot fetch: ${(error as Error).message}`);
    }
    if (!response.ok) throw new CommandFailure(`${source}: cannot fetch: HTTP ${response.status}`);
    return { text: await response.text(), contentType: response.headers.get('content-type') };
  }
  const isFolder = (await stat(source).catch(() => undefined))?.isDirectory() ?? false;
  const path = isFolder ? join(source, INDEX_FILE_NAME) : source;
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new CommandFailure(`${path}: cannot read: ${(error as Error).message}`);
  }
}

/** The index `source` names, checked; a failure is a `CommandFailure` naming the source (and the field). */
export async function loadIndex(source: string): Promise<ProjectIndex> {
  const read = await readIndexText(source);
  try {
    // An answer over HTTP may be a page instead (a single-page app's fallback): named as such.
    return typeof read === 'string' ? parseProjectIndexJson(read) : parseFetchedIndexJson(read.text, { contentType: read.contentType });
  } catch (error) {
    // The message names the field (files[3].sha256); the source goes in front once.
    if (error instanceof AwakeError) throw new CommandFailure(`${source}: ${error.message}`);
    throw error;
  }
}
