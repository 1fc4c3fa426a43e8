/**
 * Vite empties `build.outDir` before each build (`build.emptyOutDir`, on by default), so bundles
 * published straight into it would be written again by every build. The plugin publishes into a
 * build cache instead, `<Vite's cacheDir>/awake-bundle/<key>/` (beside Vite's own caches, by
 * default `node_modules/.vite/`), which keeps its bundles from one build to the next: a publish
 * there writes only the bundles whose files changed (the CLI's rule, FORMAT.md "Command line").
 * The build's published folder is then made of hard links to the cached bundles (a copy where
 * the file system has no links) and the index, written last.
 *
 * The key is a digest of the asset folder and the publish options, so builds with other options
 * (a staging salt, another target) keep caches of their own and never prune each other's.
 */
import { createHash } from 'node:crypto';
import { copyFile, link, lstat, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { serializeIndex, type BundledIndex } from '../../core/format/project-index.js';
import { commitTemporary, temporaryName, writeFileAtomic } from '../../core/node/atomic-write.js';
import { INDEX_FILE_NAME } from '../../core/node/publish.js';

const BUNDLE_FILE = /^[0-9a-f]{64}\.awkb$/;

/** The cache folder for one asset folder and set of publish options. */
export function buildCacheFolder(cacheRoot: string, key: unknown): string {
  return join(cacheRoot, createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 16));
}

export interface PlaceSummary {
  /** Bundles linked (or copied) into the build's folder. */
  placed: number;
  /** Bundles the build's folder already held as the cached file itself (`emptyOutDir: false`). */
  alreadyThere: number;
}

/**
 * Places a publish of `index` in the folder `cached` into `target`: each bundle as a hard link to
 * the cached file, then the index (the publish's bytes: `serializeIndex`), written last so that
 * an interrupted build never leaves an index naming a missing bundle.
 */
export async function placePublished(cached: string, index: BundledIndex, target: string): Promise<PlaceSummary> {
  const summary: PlaceSummary = { placed: 0, alreadyThere: 0 };
  for (const bundle of index.bundles) {
    const from = join(cached, bundle.url);
    const to = join(target, bundle.url);
    if (await sameFile(from, to)) {
      summary.alreadyThere++;
      continue;
    }
    await mkdir(dirname(to), { recursive: true });
    await linkOrCopy(from, to);
    summary.placed++;
  }
  await writeFileAtomic(join(target, INDEX_FILE_NAME), serializeIndex(index));
  return summary;
}

async function sameFile(a: string, b: string): Promise<boolean> {
  try {
    const [first, second] = await Promise.all([stat(a), lstat(b)]);
    return second.isFile() && first.ino === second.ino && first.dev === second.dev;
  } catch {
    return false;
  }
}

/** A link (or copy) under a temporary name, renamed over whatever stood at `to`. */
async function linkOrCopy(from: string, to: string): Promise<void> {
  const temporary = temporaryName(to);
  try {
    await link(from, temporary);
  } catch (error) {
    // Another device, or a file system without hard links: the bytes are copied instead.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EMLINK') throw error;
    await copyFile(from, temporary);
  }
  try {
    await commitTemporary(temporary, to);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/**
 * Removes the cached bundles that `index` no longer names, in the folders that hold the ones it
 * does: unlike a host's folder (where players mid-load may still need them, so the CLI keeps
 * them), no one reads old bundles from the build cache.
 */
export async function pruneCache(cached: string, index: BundledIndex): Promise<number> {
  const named = new Set(index.bundles.map((bundle) => join(cached, bundle.url)));
  const folders = new Set([...named].map((path) => dirname(path)));
  let removed = 0;
  for (const folder of folders) {
    for (const name of await readdir(folder)) {
      const path = join(folder, name);
      if (!BUNDLE_FILE.test(name) || named.has(path)) continue;
      await rm(path, { force: true });
      removed++;
    }
  }
  return removed;
}
