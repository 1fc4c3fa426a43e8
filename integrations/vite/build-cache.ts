/**
 * Vite empties `build.outDir` before each build (`build.emptyOutDir`, on by default), so bundles
 * published straight into it would be written again by every build. The plugin publishes into a
 * build cache instead (`<Vite's cacheDir>/awake-bundle/`, beside Vite's own caches), which keeps
 * its bundles from one build to the next: a publish there writes only the bundles whose files
 * changed (the CLI's rule, FORMAT.md "Command line"). The build's own published folder is then
 * made of hard links to the cached bundles (a copy where the file system has no links), and a
 * copy of the index, written last.
 */
import { copyFile, link, lstat, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { BundledIndex } from '../../core/format/project-index.js';
import { commitTemporary, temporaryName, writeFileAtomic } from '../../core/node/atomic-write.js';
import { INDEX_FILE_NAME } from '../../core/node/publish.js';

const BUNDLE_FILE = /^[0-9a-f]{64}\.awkb$/;

export interface LinkSummary {
  /** Bundles linked (or copied) into the build's folder. */
  placed: number;
  /** Bundles the build's folder already held as the cached file itself (`emptyOutDir: false`). */
  alreadyThere: number;
}

/**
 * Places the published folder `cached` (its index and the bundles that index names) into
 * `target`: each bundle as a hard link to the cached file, the index as a copy, written last so
 * that an interrupted build never leaves an index naming a missing bundle.
 */
export async function placePublished(cached: string, target: string): Promise<LinkSummary> {
  const indexBytes = await readFile(join(cached, INDEX_FILE_NAME));
  const index = JSON.parse(indexBytes.toString('utf8')) as BundledIndex;
  const summary: LinkSummary = { placed: 0, alreadyThere: 0 };
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
  await writeFileAtomic(join(target, INDEX_FILE_NAME), indexBytes);
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
 * Removes the cached bundles that the cached index no longer names, in the folders that hold
 * the ones it does: unlike a host's folder (where players mid-load may still need them, so the
 * CLI keeps them), no one reads old bundles from the build cache.
 */
export async function pruneCache(cached: string): Promise<number> {
  const index = JSON.parse(await readFile(join(cached, INDEX_FILE_NAME), 'utf8')) as BundledIndex;
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
