/**
 * Development: no bundling. A loose (formatVersion 2, SPEC §2) index of the asset folder at the
 * URL the published index has in production, listing every file with its size and SHA-256 and a
 * URL this same middleware serves, so the game's code is the same in both modes.
 *
 * Each file is hashed once per change: hashes are kept by project path with the file's size,
 * mtime, ctime, inode and real path; every index request lists the folder again and stats each
 * file (cheap), so a change is never missed, and `fs.watch` drops the hashes of what it reports
 * (a rewrite that keeps size and mtime). Listing the folder again also applies publish's safety
 * rules on every request: an unsafe name or a link leaving the folder is named, not served.
 *
 * With `recordLoads`, the index's answer also carries `X-Awake-Bundle-Loads: <base>__awake-bundle/loads`,
 * the URL where the adapters post the loads they recorded (loads-endpoint.ts).
 */
import { createHash } from 'node:crypto';
import { watch, type FSWatcher, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sep } from 'node:path';
import { InvalidOptionError } from '../../core/errors.js';
import { looseFileUrl } from '../../core/format/paths.js';
import { serializeIndex, type LooseFileEntry, type LooseIndex } from '../../core/format/project-index.js';
import { hashFile, listFolderFiles, type FolderFile } from '../../core/node/loose-index.js';
import { projectPathOf } from '../../core/page/project-urls.js';
import { checkPathCollisions, INDEX_FILE_NAME } from '../../core/node/publish.js';
import { sendFile } from '../../core/node/server.js';
import { SERVICE_WORKER_FILE, serviceWorkerSource } from '../../core/node/service-worker-file.js';
import { LOADS_ENDPOINT_HEADER } from '../../core/read/load/load-recorder.js';
import { LoadsEndpoint, LOADS_ENDPOINT_PATH } from './loads-endpoint.js';
import type { ResolvedBuildOptions } from './options.js';

/** The loose files' URL prefix, relative to the index (FORMAT.md "Loose index from a folder"). */
export const LOOSE_FILES_PREFIX = 'files';
/** The origin request paths are resolved against to map them to project paths (only the path matters). */
const LOCAL = 'http://localhost';
/** Files stat'ed or hashed at once. */
const PARALLEL = 8;

export interface LooseDevIndexOptions {
  /** The public base path the dev server serves the site under (webpack `publicPath`, Vite `base`); default `/`. */
  base?: string;
  /** Where a failure to answer (an unsafe path, a link leaving the folder) is reported besides the 500 answer; default console.error. */
  onError?: (error: unknown) => void;
  /** fs.watch the asset folder (default true); the stat check on each index request works without it. */
  watch?: boolean;
}

/** A connect/express middleware, as webpack-dev-server and Vite take them. */
export type Middleware = (request: IncomingMessage, response: ServerResponse, next: (error?: unknown) => void) => void;

interface KnownHash {
  /** What the hash was computed for: size, mtime, ctime, inode and real path. */
  key: string;
  sha256: string;
  sizeBytes: number;
}

const keyOf = (file: FolderFile, info: Stats) => `${info.size}:${info.mtimeMs}:${info.ctimeMs}:${info.ino}:${file.absolutePath}`;

function normalizedBase(base: string | undefined): string {
  if (base === undefined || base === '' || base === './') return '/';
  const path = /^[a-z][a-z\d+.-]*:\/\//i.test(base) ? new URL(base).pathname : base;
  if (!path.startsWith('/')) throw new InvalidOptionError('base', `awake-bundle: option base: expected a path such as "/" or "/game/", got ${JSON.stringify(base)}`);
  return path.endsWith('/') ? path : `${path}/`;
}

export class LooseDevIndex {
  /** The index's URL path, e.g. `/published/project.index.json`. */
  readonly indexUrlPath: string;
  /** The folder URL path the files are served under, e.g. `/published/files/`. */
  readonly filesUrlPath: string;
  /** The service worker's URL path, when the worker is asked for. */
  readonly serviceWorkerUrlPath?: string;
  /** With `recordLoads`: the URL path the recorded loads are posted to, e.g. `/__awake-bundle/loads`. */
  readonly loadsUrlPath?: string;
  private readonly loads?: LoadsEndpoint;
  private readonly hashes = new Map<string, KnownHash>();
  /** The folder's last listing, by project path: the files this middleware serves. */
  private listing = new Map<string, FolderFile>();
  private readonly watcher?: FSWatcher;
  private hashed = 0;
  private readonly onError: (error: unknown) => void;

  constructor(private readonly resolved: ResolvedBuildOptions, options: LooseDevIndexOptions = {}) {
    const base = normalizedBase(options.base);
    this.indexUrlPath = `${base}${resolved.output}/${INDEX_FILE_NAME}`;
    this.filesUrlPath = `${base}${resolved.output}/${LOOSE_FILES_PREFIX}/`;
    if (resolved.serviceWorker) this.serviceWorkerUrlPath = `${base}${SERVICE_WORKER_FILE}`;
    this.onError = options.onError ?? ((error) => console.error(`awake-bundle: ${(error as Error)?.message ?? String(error)}`));
    if (resolved.recordLoads) {
      this.loadsUrlPath = `${base}${LOADS_ENDPOINT_PATH}`;
      this.loads = new LoadsEndpoint(resolved.recordLoads.file, this.onError);
    }
    if (options.watch !== false) this.watcher = this.watchAssets();
  }

  /** How many files have been hashed so far: once per file and change, however many requests. */
  get filesHashed(): number {
    return this.hashed;
  }

  /** Recursive fs.watch where the platform has it; without it the stat check alone keeps the index current. */
  private watchAssets(): FSWatcher | undefined {
    try {
      const watcher = watch(this.resolved.assets, { recursive: true, persistent: false }, (_event, name) => this.forget(name === null ? undefined : String(name)));
      watcher.on('error', () => {
        this.hashes.clear();
        watcher.close();
      });
      return watcher;
    } catch {
      return undefined;
    }
  }

  /** Drops the hashes of `name` (a path below the asset folder) and of everything below it; all of them when unknown. */
  private forget(name: string | undefined): void {
    if (name === undefined) return this.hashes.clear();
    const path = name.split(sep).join('/');
    for (const known of this.hashes.keys()) {
      if (known === path || known.startsWith(`${path}/`)) this.hashes.delete(known);
    }
  }

  /** The asset folder's loose index now: listed and stat'ed again, hashing only what changed. */
  async index(): Promise<LooseIndex> {
    const files = await listFolderFiles(this.resolved.assets);
    checkPathCollisions(files.map((file) => file.path), { allowCaseCollisions: this.resolved.settings.allowCaseCollisions, ...(this.resolved.onWarning ? { onWarning: this.resolved.onWarning } : {}) });
    this.listing = new Map(files.map((file) => [file.path, file]));
    const entries: LooseFileEntry[] = new Array(files.length);
    let next = 0;
    const lane = async () => {
      while (next < files.length) {
        const i = next++;
        entries[i] = await this.entryOf(files[i]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, files.length) }, lane));
    for (const path of this.hashes.keys()) if (!this.listing.has(path)) this.hashes.delete(path);
    return { formatVersion: 2, rootPath: this.resolved.rootPath, files: entries };
  }

  private async entryOf(file: FolderFile): Promise<LooseFileEntry> {
    const url = looseFileUrl(file.path, LOOSE_FILES_PREFIX);
    // The listing's own stat (taken by this request's listing), else one of our own.
    const key = keyOf(file, file.stats ?? (await stat(file.absolutePath)));
    const known = this.hashes.get(file.path);
    if (known?.key === key) return { path: file.path, sizeBytes: known.sizeBytes, sha256: known.sha256, url };
    const digest = await hashFile(file.absolutePath);
    this.hashed++;
    // Kept only when the file did not change while it was read: else the next request hashes it again.
    const after = await stat(file.absolutePath).catch(() => undefined);
    if (after && keyOf(file, after) === key && after.size === digest.sizeBytes) this.hashes.set(file.path, { key, ...digest });
    else this.hashes.delete(file.path);
    return { path: file.path, sizeBytes: digest.sizeBytes, sha256: digest.sha256, url };
  }

  /**
   * Answers GET and HEAD of the index URL, of the files it lists and (with `serviceWorker`) of the
   * worker, and (with `recordLoads`) POST of recorded loads; passes every other request to `next`.
   */
  middleware(): Middleware {
    return (request, response, next) => {
      const method = request.method ?? 'GET';
      const pathname = (request.url ?? '/').split(/[?#]/, 1)[0]!;
      if (this.loads && pathname === this.loadsUrlPath && method === 'POST') return void this.loads.answer(request, response);
      const ours = pathname === this.indexUrlPath || pathname.startsWith(this.filesUrlPath) || pathname === this.serviceWorkerUrlPath;
      if (!ours || (method !== 'GET' && method !== 'HEAD')) return next();
      this.answer(request, response, pathname).catch((error: unknown) => {
        this.onError(error);
        if (response.headersSent) return void response.destroy();
        const body = `awake-bundle: ${(error as Error)?.message ?? String(error)}\n`;
        response.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': String(Buffer.byteLength(body)), 'Cache-Control': 'no-store' });
        response.end(method === 'HEAD' ? undefined : body);
      });
    };
  }

  private async answer(request: IncomingMessage, response: ServerResponse, pathname: string): Promise<void> {
    if (pathname === this.indexUrlPath) {
      // The ask: adapters post their recorded loads to this URL (relative URLs resolve against the index's).
      const ask: Record<string, string> = this.loadsUrlPath ? { [LOADS_ENDPOINT_HEADER]: this.loadsUrlPath } : {};
      return sendText(request, response, serializeIndex(await this.index()), 'application/json; charset=utf-8', ask);
    }
    if (pathname === this.serviceWorkerUrlPath) return sendText(request, response, await serviceWorkerSource(this.resolved.serviceWorker!.index), 'text/javascript; charset=utf-8');
    const path = projectPathOf(new URL(pathname, LOCAL), new URL(this.filesUrlPath, LOCAL));
    // Only a file the folder's listing holds is served: nothing outside it, nothing the safety rules refuse.
    let file = path === undefined ? undefined : this.listing.get(path);
    if (path !== undefined && file === undefined) {
      await this.index(); // a file asked for before the index that lists it
      file = this.listing.get(path);
    }
    const stats = file && (await stat(file.absolutePath).catch(() => undefined));
    if (!file || !stats?.isFile()) return sendNotFound(request, response);
    return sendFile(request, response, { path: file.absolutePath, stats, name: file.path });
  }

  /** Stops watching the asset folder. */
  async close(): Promise<void> {
    this.watcher?.close();
  }
}

function sendText(request: IncomingMessage, response: ServerResponse, text: string, type: string, extra: Record<string, string> = {}): void {
  const etag = `"${createHash('sha256').update(text).digest('hex').slice(0, 32)}"`;
  const headers = { ETag: etag, 'Cache-Control': 'no-cache', 'Content-Type': type, ...extra };
  if (request.headers['if-none-match']?.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)) {
    response.writeHead(304, headers);
    return void response.end();
  }
  response.writeHead(200, { ...headers, 'Content-Length': String(Buffer.byteLength(text)) });
  response.end(request.method === 'HEAD' ? undefined : text);
}

function sendNotFound(request: IncomingMessage, response: ServerResponse): void {
  const body = '404 Not Found\n';
  response.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': String(body.length), 'Cache-Control': 'no-store' });
  response.end(request.method === 'HEAD' ? undefined : body);
}
