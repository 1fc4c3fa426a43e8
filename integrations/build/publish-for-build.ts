/**
 * Production builds: the asset folder published into the build output with the CLI's rules
 * (`publishFolder`, the CLI's own path for a folder), so the output is byte for byte what
 * `npx awake-bundle <assets> --out <output dir> <same flags>` writes (with the loads file:
 * `--loads <file>`), and bundles already there are not written again.
 */
import { realpath } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { InvalidOptionError } from '../../core/errors.js';
import { registerNodeHash } from '../../core/node/hash.js';
import { isInside } from '../../core/node/inside.js';
import { publishFolder } from '../../core/node/publish-folder.js';
import { readLoadsFile } from '../../core/node/publish-grouping.js';
import { writeFileAtomic, type PublishSummary } from '../../core/node/publish.js';
import { SERVICE_WORKER_FILE, serviceWorkerSource } from '../../core/node/service-worker-file.js';
import type { NamedLoad } from '../../core/publish/loads.js';
import { writerOptionsOf } from '../../core/publish/settings.js';
import type { ResolvedBuildOptions } from './options.js';

export interface BuildPublishResult {
  /** The folder the publish wrote into: `<outDir>/<output>`. */
  publishedDir: string;
  /** `<outDir>/<output>/project.index.json`. */
  indexPath: string;
  /** Bundle URLs (relative to the index) this build wrote: new ones, and damaged copies rewritten. */
  writtenBundles: string[];
  /** Bundle URLs the output already held with the right bytes: not written again. */
  reusedBundles: string[];
  /** `<outDir>/awake-bundle-sw.js`, when the service worker was asked for. */
  serviceWorkerPath?: string;
  /** The publish's own summary (counts, the index). */
  summary: PublishSummary;
  /** The loads the publish grouped by (the loads file's), if any: the first one is what the built page preloads. */
  loads?: NamedLoad[];
}

/** The real path of `path`, or `path` resolved when it does not exist yet. */
const realOrResolved = (path: string) => realpath(path).catch(() => resolve(path));

/**
 * Publishes `resolved.assets` into `<outDir>/<output>` as the CLI does. Throws the CLI's typed
 * errors (`PublishInputError` naming an unsafe or unreadable path, a link that leaves the folder,
 * paths that collide by case; `PublishOutputError` naming what is in the way). The build's
 * output folder (`outDir`, or `buildOutput` when the caller places the files there afterwards)
 * is left out of the input when it lies inside the asset folder.
 */
export async function publishForBuild(resolved: ResolvedBuildOptions, outDir: string, options: { buildOutput?: string } = {}): Promise<BuildPublishResult> {
  registerNodeHash(); // as awake-bundle/node does on import: node:crypto for every SHA-256
  // As the CLI's --loads: a loads file that is refused fails the build before anything is written.
  const loads = resolved.loadsFile !== undefined ? (await readLoadsFile(resolved.loadsFile)).loads : undefined;
  const publishedDir = join(resolve(outDir), ...resolved.output.split('/'));
  const assets = await realOrResolved(resolved.assets);
  // As the CLI's "--out is the input folder": everything would be left out of the input.
  if ((await realOrResolved(publishedDir)) === assets) {
    throw new InvalidOptionError('output', `awake-bundle: option output: ${publishedDir} is the asset folder itself: choose another output folder, such as "published"`);
  }
  // The build's output (outDir, or where the caller places the published files) is never an
  // asset, when it lies inside the asset folder; when it holds the asset folder, it stays in.
  const outputs = await Promise.all([outDir, options.buildOutput ?? outDir].map(realOrResolved));
  const buildOutputs = outputs.filter((output) => !isInside(assets, output));
  const writtenBundles: string[] = [];
  const reusedBundles: string[] = [];
  const summary = await publishFolder({
    folder: resolved.assets,
    // The output may lie inside the asset folder (SPEC §8: it is left out of the input).
    exclude: [publishedDir, ...buildOutputs],
    outDir: publishedDir,
    rootPath: resolved.rootPath,
    ...writerOptionsOf({ ...resolved.settings, ...(loads !== undefined ? { loads } : {}) }),
    ...(resolved.onWarning ? { onWarning: resolved.onWarning } : {}),
    onBundleStored: ({ url, written }) => (written ? writtenBundles : reusedBundles).push(url),
  });
  let serviceWorkerPath: string | undefined;
  if (resolved.serviceWorker) {
    serviceWorkerPath = join(resolve(outDir), SERVICE_WORKER_FILE);
    await writeFileAtomic(serviceWorkerPath, await serviceWorkerSource(resolved.serviceWorker.index));
  }
  return { publishedDir, indexPath: summary.indexPath, writtenBundles, reusedBundles, ...(serviceWorkerPath ? { serviceWorkerPath } : {}), summary, ...(loads ? { loads } : {}) };
}
