/**
 * Publishing to a store other than the out folder: the project is published into a
 * local staging folder first (`publishToDirectory`, so every check and the incremental writing
 * stay in one place), then the staging folder is synced to a `PublishTarget`: bundles the target
 * lacks are uploaded, a few at a time, and the index goes last — a reader never sees an index
 * naming a bundle the target does not hold, and running the same publish again completes an
 * interrupted one (bundle names are SHA-256: the same inputs give the same names).
 */
import { constants, rmSync } from 'node:fs';
import { copyFile, lstat, mkdir, mkdtemp, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { InvalidOptionError, PublishOutputError } from '../errors.js';
import type { BundledIndex } from '../format/project-index.js';
import { nodeSha256 } from './hash.js';
import { processIsGone, temporaryName } from './atomic-write.js';
import { INDEX_FILE_NAME, publishToDirectory, writeFileAtomic, type PublishOptions, type PublishSummary } from './publish.js';

/** A bundle of the staged publish, as a target sees it. */
export interface TargetBundle {
  /** Where it goes, relative to the target's root: the index's bundle URL (`bundles/<sha256>.awkb`). */
  key: string;
  sha256: string;
  sizeBytes: number;
  /** The staged file holding its bytes. */
  file: string;
}

/**
 * A store a publish can upload to: a folder, S3, or your own. Keys are relative to the target's
 * root and use `/`; the index's key is `project.index.json` and bundle keys are the index's
 * bundle URLs, so a reader that fetches the index from the root finds every bundle beside it.
 */
export interface PublishTarget {
  /** Where the target is, for messages and summaries (`s3://bucket/prefix`, a folder path). */
  readonly location: string;
  /**
   * The keys of the bundles, of those given, that the target already holds in full. Names are
   * SHA-256, so an object of the right size under a bundle's name is that bundle; a target that
   * can check more (a stored checksum, the bytes themselves) should. One call per publish, with
   * every bundle of the index: a target can answer from one listing.
   */
  existing(bundles: readonly TargetBundle[]): Promise<Set<string>>;
  /** Stores a bundle. Readers must never see part of one: an object appears whole or not at all. */
  putBundle(bundle: TargetBundle): Promise<void>;
  /** Stores the index, after every bundle it names. */
  putIndex(key: string, bytes: Uint8Array): Promise<void>;
}

/** `Omit` over each member of a union, so `locate` or `read` (exactly one) survives. */
type WithoutOutDir<T> = T extends unknown ? Omit<T, 'outDir'> : never;

/** `publishToDirectory`'s options but the out folder (the staging folder takes its place), and the target's. */
export type PublishToTargetOptions = WithoutOutDir<PublishOptions> & TargetOptions;

interface TargetOptions {
  target: PublishTarget;
  /**
   * The local folder the project is published into before the upload: kept, and incremental
   * like any out folder. Default: a new temporary folder, removed when the publish ends.
   */
  stagingDir?: string;
  /** Plan only: publish into the staging folder and ask the target what it holds; upload nothing. */
  dryRun?: boolean;
  /** Bundles uploaded at once (default 4). */
  concurrency?: number;
  /** After each bundle upload. */
  onUpload?: (progress: UploadProgress) => void;
}

export interface UploadProgress {
  bundlesDone: number;
  bundlesTotal: number;
  bytesDone: number;
  bytesTotal: number;
}

export interface PublishToTargetSummary {
  index: BundledIndex;
  location: string;
  dryRun: boolean;
  /** The local publish, as `publishToDirectory` reported it. */
  staging: Omit<PublishSummary, 'index'> & { dir: string; kept: boolean };
  bundles: number;
  bytes: number;
  /** Bundles the target lacked: uploaded, or with `dryRun` to upload. */
  uploadedBundles: number;
  uploadedBytes: number;
  uploadedKeys: string[];
  /** Bundles the target already held: not sent. */
  skippedBundles: number;
  skippedBytes: number;
  /** The index's key; with `dryRun`, not uploaded. */
  indexKey: string;
  /** Temporary staging folders of earlier publishes whose process is gone, removed before this one (0 with `stagingDir`). */
  staleStagingFoldersRemoved: number;
}

export const DEFAULT_UPLOAD_CONCURRENCY = 4;

const liveStagingFolders = new Set<string>();

/**
 * A temporary staging folder is `awake-bundle-staging-<pid>-<threadId>-<start, ms since 1970>-<6
 * random characters>` in the OS temporary folder: the pid tells a later publish whether its
 * owner still runs (`removeStaleStagingFolders`), as for an out folder's temporary files.
 */
const STAGING_PREFIX = 'awake-bundle-staging-';
const STAGING_FOLDER = /^awake-bundle-staging-(\d+)-\d+-\d+-[0-9A-Za-z]{6}$/;

function newStagingFolder(): Promise<string> {
  return mkdtemp(join(tmpdir(), `${STAGING_PREFIX}${process.pid}-${threadId}-${Date.now()}-`));
}

/**
 * Removes, from `dir` (default the OS temporary folder), the temporary staging folders of
 * publishes whose process no longer runs (killed: a SIGKILL, a crash, a power cut), each a full
 * copy of a published project. A folder of a running process, this one's included (another
 * thread's), is left alone, and so are folders of other users and names this library does not
 * make. Returns how many were removed.
 */
export async function removeStaleStagingFolders(dir: string = tmpdir()): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const ownUser = process.getuid?.();
  let removed = 0;
  for (const name of names) {
    const match = STAGING_FOLDER.exec(name);
    if (!match || !processIsGone(Number(match[1]))) continue;
    const path = join(dir, name);
    const info = await lstat(path).catch(() => undefined);
    if (!info?.isDirectory() || (ownUser !== undefined && info.uid !== ownUser)) continue;
    // Best effort: another publish may be removing it too; what is left goes on a later run.
    if (
      await rm(path, { recursive: true, force: true }).then(
        () => true,
        () => false,
      )
    )
      removed++;
  }
  return removed;
}

/**
 * Removes the temporary staging folders of this process's running publishes at once: for a
 * signal handler (the CLI's SIGINT and SIGTERM), like removeOwnTemporaryFilesSync.
 */
export function removeOwnStagingFoldersSync(): void {
  for (const dir of liveStagingFolders) rmSync(dir, { recursive: true, force: true });
  liveStagingFolders.clear();
}

/** Publishes into a staging folder, then uploads what `target` lacks, the index last. */
export async function publishToTarget(options: PublishToTargetOptions): Promise<PublishToTargetSummary> {
  const { target, stagingDir, dryRun = false, concurrency = DEFAULT_UPLOAD_CONCURRENCY, onUpload, ...publishOptions } = options;
  const staleStagingFoldersRemoved = stagingDir === undefined ? await removeStaleStagingFolders() : 0;
  const dir = stagingDir ?? (await newStagingFolder());
  if (stagingDir === undefined) liveStagingFolders.add(dir);
  try {
    const { index, ...staged } = await publishToDirectory({ ...publishOptions, outDir: dir });
    const bundles: TargetBundle[] = index.bundles.map((bundle) => ({
      key: bundle.url,
      sha256: bundle.sha256,
      sizeBytes: bundle.sizeBytes,
      file: join(dir, ...bundle.url.split('/')),
    }));
    const existing = await target.existing(bundles);
    const missing = bundles.filter((bundle) => !existing.has(bundle.key));
    const sum = (list: TargetBundle[]) => list.reduce((total, bundle) => total + bundle.sizeBytes, 0);
    const summary: PublishToTargetSummary = {
      index,
      location: target.location,
      dryRun,
      staging: { ...staged, dir, kept: stagingDir !== undefined },
      bundles: bundles.length,
      bytes: sum(bundles),
      uploadedBundles: missing.length,
      uploadedBytes: sum(missing),
      uploadedKeys: missing.map((bundle) => bundle.key),
      skippedBundles: bundles.length - missing.length,
      skippedBytes: sum(bundles) - sum(missing),
      indexKey: INDEX_FILE_NAME,
      staleStagingFoldersRemoved,
    };
    if (dryRun) return summary;
    let bundlesDone = 0;
    let bytesDone = 0;
    await forEachAtMost(concurrency, missing, async (bundle) => {
      await target.putBundle(bundle);
      bundlesDone++;
      bytesDone += bundle.sizeBytes;
      onUpload?.({ bundlesDone, bundlesTotal: missing.length, bytesDone, bytesTotal: summary.uploadedBytes });
    });
    // Last: the index is uploaded only once every bundle it names is stored.
    await target.putIndex(INDEX_FILE_NAME, await readFile(join(dir, INDEX_FILE_NAME)));
    return summary;
  } finally {
    if (stagingDir === undefined) {
      await rm(dir, { recursive: true, force: true });
      liveStagingFolders.delete(dir);
    }
  }
}

/**
 * Runs `work` on each item, at most `limit` at once. The first failure stops new work from
 * starting; the ones running are awaited, then that failure is thrown.
 */
export async function forEachAtMost<T>(limit: number, items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  if (!(Number.isSafeInteger(limit) && limit >= 1))
    throw new InvalidOptionError('concurrency', `concurrency must be a positive integer, got ${limit}`);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.error;
}

/**
 * A local folder as a target: a mounted share, a folder a web server serves. A bundle counts as
 * held only when the file's bytes hash to its name; files are copied in through a temporary
 * name and renamed, so a reader sees a whole file or none.
 */
export class DirectoryPublishTarget implements PublishTarget {
  readonly location: string;

  constructor(readonly dir: string) {
    this.location = dir;
  }

  async existing(bundles: readonly TargetBundle[]): Promise<Set<string>> {
    const held = new Set<string>();
    await forEachAtMost(DEFAULT_UPLOAD_CONCURRENCY, bundles, async (bundle) => {
      if (await fileHashesTo(this.pathOf(bundle.key), bundle.sizeBytes, bundle.sha256)) held.add(bundle.key);
    });
    return held;
  }

  async putBundle(bundle: TargetBundle): Promise<void> {
    const path = this.pathOf(bundle.key);
    await makeParent(path);
    // A name publishToDirectory's clean-up knows (atomic-write.ts): a killed copy's leftover is removed later.
    const temporary = temporaryName(path);
    try {
      await copyFile(bundle.file, temporary, constants.COPYFILE_EXCL);
      await rename(temporary, path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw new PublishOutputError(`${path}: cannot copy the bundle in: ${(error as Error).message}`, path, error);
    }
    // A bundle's name never lies: what stands under it now must hash to it.
    if (!(await fileHashesTo(path, bundle.sizeBytes, bundle.sha256))) {
      throw new PublishOutputError(
        `${path}: after the copy, the file under this name does not hash to it (another writer changed it)`,
        path,
      );
    }
  }

  async putIndex(key: string, bytes: Uint8Array): Promise<void> {
    const path = this.pathOf(key);
    await makeParent(path);
    await writeFileAtomic(path, bytes);
  }

  private pathOf(key: string): string {
    return join(this.dir, ...key.split('/'));
  }
}

async function makeParent(path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
}

async function fileHashesTo(path: string, sizeBytes: number, sha256: string): Promise<boolean> {
  const info = await lstat(path).catch(() => undefined);
  if (!info?.isFile() || info.size !== sizeBytes) return false;
  const hash = nodeSha256();
  try {
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      for await (const chunk of handle.createReadStream({ autoClose: false })) hash.update(chunk as Buffer);
    } finally {
      await handle.close();
    }
  } catch {
    return false;
  }
  return hash.digestHex() === sha256;
}
