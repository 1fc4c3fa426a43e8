/**
 * Publishing into a folder (SPEC §8): bundles named by SHA-256 under the out folder, only the
 * new ones written, and the index written last and atomically (temp file + rename), so an
 * interrupted publish never leaves an index that names a missing bundle.
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { unsafePathReason } from '../format/paths.js';
import { serializeIndex, type BundledIndex, type LooseFileEntry, type LooseIndex } from '../format/project-index.js';
import { BundleWriter, PublishInputError, type BundleWriterOptions, type FinishedBundle, type ReadProjectFile } from '../publish/bundle-writer.js';

export const INDEX_FILE_NAME = 'project.index.json';

export interface PublishProgress {
  bundlesDone: number;
  bundlesTotal: number;
  bytesDone: number;
  bytesTotal: number;
}

export interface PublishOptions extends BundleWriterOptions {
  looseIndex: LooseIndex;
  read: ReadProjectFile;
  outDir: string;
  onProgress?: (progress: PublishProgress) => void;
}

export interface PublishSummary {
  index: BundledIndex;
  indexPath: string;
  bundles: number;
  bytes: number;
  /** Bundles written by this publish: the upload a host needs. */
  newBundles: number;
  newBytes: number;
  /** Bundles the out folder already held. */
  existingBundles: number;
  existingBytes: number;
}

let temporaryCounter = 0;
function temporaryName(path: string): string {
  return `${path}.tmp-${process.pid}-${++temporaryCounter}`;
}

async function existingSize(path: string): Promise<number | undefined> {
  try {
    const info = await stat(path);
    return info.isFile() ? info.size : undefined;
  } catch {
    return undefined;
  }
}

/** Writes `bytes` to `path` through a temporary file and a rename. */
export async function writeFileAtomic(path: string, bytes: Uint8Array | string): Promise<void> {
  const temporary = temporaryName(path);
  try {
    await writeFile(temporary, bytes);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

async function writeStreamAtomic(chunks: AsyncIterable<Uint8Array>, directory: string): Promise<string> {
  const temporary = temporaryName(join(directory, '.incoming.awkb'));
  const handle = await open(temporary, 'w');
  try {
    for await (const chunk of chunks) await handle.write(chunk);
    await handle.close();
    return temporary;
  } catch (error) {
    await handle.close().catch(() => undefined);
    await rm(temporary, { force: true });
    throw error;
  }
}

export function checkBundleUrlPrefix(prefix: string): void {
  if (prefix === '') return;
  const reason = unsafePathReason(prefix.replace(/\/+$/, ''));
  if (reason !== undefined) throw new PublishInputError(`--url-prefix ${JSON.stringify(prefix)} must be a relative folder below the out folder: ${reason}`);
}

export async function publishToDirectory(options: PublishOptions): Promise<PublishSummary> {
  const writer = new BundleWriter(options);
  checkBundleUrlPrefix(writer.bundleUrlPrefix);
  const plans = writer.plan(options.looseIndex);
  const bytesTotal = plans.reduce((sum, plan) => sum + plan.dataBytes, 0);
  const bundleDir = join(options.outDir, ...writer.bundleUrlPrefix.split('/').filter(Boolean));
  await mkdir(bundleDir, { recursive: true });
  const summary = { bundles: 0, bytes: 0, newBundles: 0, newBytes: 0, existingBundles: 0, existingBytes: 0 };
  let bytesDone = 0;

  const store = async (bundle: FinishedBundle): Promise<void> => {
    let sha256: string;
    let temporary: string | undefined;
    if (bundle.kind === 'stream') {
      temporary = await writeStreamAtomic(bundle.chunks, bundleDir);
      sha256 = (await bundle.finished).sha256;
    } else sha256 = bundle.sha256;
    const path = join(options.outDir, writer.bundleUrl(sha256));
    const existing = await existingSize(path);
    summary.bundles++;
    summary.bytes += bundle.sizeBytes;
    if (existing === bundle.sizeBytes) {
      // Named by its SHA-256: a file of that name and size already holds these bytes.
      summary.existingBundles++;
      summary.existingBytes += bundle.sizeBytes;
      if (temporary) await rm(temporary, { force: true });
    } else {
      if (bundle.kind === 'stream') await rename(temporary!, path);
      else await writeFileAtomic(path, bundle.bytes);
      summary.newBundles++;
      summary.newBytes += bundle.sizeBytes;
    }
    bytesDone += plans[summary.bundles - 1]?.dataBytes ?? 0;
    options.onProgress?.({ bundlesDone: summary.bundles, bundlesTotal: plans.length, bytesDone, bytesTotal });
  };

  const index = await writer.write(options.looseIndex, options.read, store);
  const indexPath = join(options.outDir, INDEX_FILE_NAME);
  // Last, and atomically: the index appears only once every bundle it names is in place.
  await writeFileAtomic(indexPath, serializeIndex(index));
  return { index, indexPath, ...summary };
}

/** Reads project files from disk: `<root>/<path>`, or an explicit path per project path. */
export function diskReader(locate: (entry: LooseFileEntry) => string): ReadProjectFile {
  return (entry, { stream }) => {
    const path = locate(entry);
    return stream ? createReadStream(path, { highWaterMark: 1 << 20 }) : readFile(path);
  };
}

/**
 * Where a loose index's file lies on disk (SPEC §8): `<root>/<path>` when a root is given,
 * else its `url` resolved against the index file's own folder.
 */
export function looseFileLocator(indexFile: string, root?: string): (entry: LooseFileEntry) => string {
  if (root !== undefined) return (entry) => join(root, ...entry.path.split('/'));
  const base = pathToFileURL(join(dirname(indexFile), '/'));
  return (entry) => {
    const url = new URL(entry.url, base);
    if (url.protocol !== 'file:') throw new PublishInputError(`${entry.path}: url ${JSON.stringify(entry.url)} is not a local file; pass --root <folder>`, entry.path);
    return fileURLToPath(url);
  };
}
