/**
 * `awake-bundle/vite`: publish a game's assets as part of the Vite build it already runs.
 *
 *   // vite.config.mjs
 *   import { awakeBundle } from 'awake-bundle/vite';
 *   export default { plugins: [awakeBundle({ assets: 'assets', output: 'published' })] };
 *
 * - `vite build`: the assets folder is published with the CLI's rules and options into
 *   `<build.outDir>/<output>/` (`project.index.json`, `bundles/<sha256>.awkb`), byte-identical to
 *   `npx awake-bundle <assets> --out <build.outDir>/<output>`. Bundles whose files did not change
 *   are not written again (build-cache.ts says how, across Vite's emptying of the out folder).
 *   The grouping defaults to `auto`, or to `awkb-loads.json` in Vite's `root` with the folder
 *   grouping for the rest (integrations/build/options.ts).
 * - `vite` (the dev server): nothing is bundled; `<base><output>/project.index.json` answers a
 *   loose (formatVersion 2) index of the folder, current as files change, whose URLs the dev
 *   server serves. The game's loading code is the same in both.
 * - `serviceWorker: true`: `awake-bundle-sw.js` too, in both.
 *
 * Only Vite's types are imported: loading this module never loads Vite. Vite 5, 6, 7 and 8 (the
 * peer range, each tested): the hooks below exist in all of them; `this.environment` (Vite 6+) is
 * read only where it is defined, and Vite 5's `build.ssr` answers the same question without it.
 */
import { join, relative, resolve } from 'node:path';
import type { Plugin, ResolvedConfig } from 'vite';
import { InvalidOptionError } from '../../core/errors.js';
import { isInside } from '../../core/node/inside.js';
import { listFolderFiles } from '../../core/node/loose-index.js';
import { serviceWorkerSource } from '../../core/node/service-worker-file.js';
import {
  LooseDevIndex,
  PRELOAD_MARKER,
  preloadHrefs,
  preloadLinkAttributes,
  publishForBuild,
  resolveBuildOptions,
  SERVICE_WORKER_FILE,
  type AwakeBundleBuildOptions,
  type BuildPublishResult,
  type ResolvedBuildOptions,
} from '../build/shared.js';
import { buildCacheFolder, placePublished, pruneCache } from './build-cache.js';

export type { AwakeBundleBuildOptions } from '../build/shared.js';

/** The asset folder, `output`, the CLI's publish options, `serviceWorker` (integrations/build/options.ts), and one of Vite's own. */
export interface AwakeBundleViteOptions extends AwakeBundleBuildOptions {
  /**
   * An assets folder inside Vite's `publicDir` (`public/assets`) is copied by Vite into the build
   * as it is, so its files ship loose beside the bundles. `'warn'` (the default) says so in the
   * build's summary; `'fail'` fails `vite build` at once, before anything is built.
   */
  assetsInPublicDir?: 'warn' | 'fail';
}

export const PLUGIN_NAME = 'awake-bundle';

export function awakeBundle(viteOptions: AwakeBundleViteOptions): Plugin {
  const { assetsInPublicDir = 'warn', ...options } = viteOptions ?? ({} as AwakeBundleViteOptions);
  if (assetsInPublicDir !== 'warn' && assetsInPublicDir !== 'fail')
    throw new InvalidOptionError(
      'assetsInPublicDir',
      `${PLUGIN_NAME}: assetsInPublicDir must be "warn" or "fail", got ${JSON.stringify(assetsInPublicDir)}`,
    );
  let config: ResolvedConfig;
  let resolved: ResolvedBuildOptions;
  /** This build's publish into the build cache: started by the HTML (for its preload links) or by closeBundle. */
  let publishing: Promise<BuildPublishResult> | undefined;
  const publish = (outDir: string) => (publishing ??= publishIntoCache(config, outDir, resolved));
  const outDirOf = (environment: { config: { build: ResolvedConfig['build'] } } | undefined) =>
    resolve(config.root, (environment?.config.build ?? config.build).outDir);
  return {
    name: PLUGIN_NAME,
    configResolved(resolvedConfig) {
      config = resolvedConfig;
      // A wrong option fails `vite` and `vite build` at once, naming the option.
      resolved = resolveBuildOptions(options, config.root);
      const onWarning = resolved.onWarning ?? ((message: string) => config.logger.warn(`${PLUGIN_NAME}: warning: ${message}`));
      resolved = { ...resolved, onWarning };
      if (assetsInPublicDir === 'fail' && inPublicDir(config, resolved))
        throw new InvalidOptionError('assetsInPublicDir', publicDirMessage(config, resolved, 'fail'));
    },
    configureServer(server) {
      // Also answers the worker's URL with `serviceWorker`, so the page registers it in both modes.
      const dev = new LooseDevIndex(resolved, {
        base: config.base,
        onError: (error) => config.logger.error(`${PLUGIN_NAME}: ${(error as Error)?.message ?? String(error)}`),
      });
      server.middlewares.use(dev.middleware());
      server.httpServer?.once('close', () => void dev.close());
    },
    async buildStart() {
      publishing = undefined; // each build (a watch rebuild too) publishes afresh
      if (config.command !== 'build' || !this.meta.watchMode || !isClientBuild(config, this.environment)) return;
      // `vite build --watch`: a change in the assets folder rebuilds, and closeBundle publishes again.
      this.addWatchFile(resolved.assets);
      const files = await listFolderFiles(resolved.assets).catch(() => []); // closeBundle's publish names what is wrong
      for (const file of files) this.addWatchFile(file.absolutePath);
    },
    async generateBundle() {
      if (resolved.serviceWorker === undefined || !isClientBuild(config, this.environment)) return;
      // Emitted as a Vite asset: written into build.outDir with the build's other files.
      this.emitFile({ type: 'asset', fileName: SERVICE_WORKER_FILE, source: await serviceWorkerSource(resolved.serviceWorker.index) });
    },
    transformIndexHtml: {
      order: 'post',
      // The built page preloads the index and the first load's bundles (integrations/build/preload.ts).
      async handler() {
        if (config.command !== 'build') return undefined;
        const published = await publish(outDirOf(undefined)).catch(() => undefined); // closeBundle reports the failure
        if (!published) return undefined;
        const prefix = `${config.base}${resolved.output}/`;
        const hrefs = preloadHrefs(published.summary.index, 'project.index.json', prefix, published.loads);
        const links = preloadLinkAttributes(hrefs, '').map((attrs) => ({
          tag: 'link',
          attrs,
          injectTo: 'body' as const, // after the page's scripts (integrations/build/preload.ts, "After the scripts")
        }));
        return [{ tag: 'meta', attrs: { ...PRELOAD_MARKER }, injectTo: 'head-prepend' as const }, ...links];
      },
    },
    async closeBundle() {
      // Vite's dev server calls closeBundle too, when it closes: publishing is for `vite build`.
      const build = this.environment?.config.build ?? config.build;
      if (config.command !== 'build' || build.write === false || !isClientBuild(config, this.environment)) return;
      const outDir = outDirOf(this.environment);
      await placeIntoOutDir(config, outDir, resolved, await publish(outDir));
      // Said with the build's summary, after Vite's banner and its list of files, where it is seen.
      if (inPublicDir(config, resolved)) config.logger.warn(publicDirMessage(config, resolved, 'warn'));
    },
  };
}

/** The browser's build: not an SSR build, nor another Vite environment (Vite 6+) that is not the client's. */
function isClientBuild(config: ResolvedConfig, environment: { config: { consumer: string } } | undefined): boolean {
  if (environment !== undefined) return environment.config.consumer === 'client';
  return !config.build.ssr;
}

/**
 * Publishes into the build cache (then placed at `<outDir>/<output>` by `placeIntoOutDir`): the
 * build's outDir, when inside the asset folder, is left out of the input. The worker is emitted
 * through Vite (generateBundle).
 */
async function publishIntoCache(config: ResolvedConfig, outDir: string, options: ResolvedBuildOptions): Promise<BuildPublishResult> {
  const cache = buildCacheFolder(join(config.cacheDir, PLUGIN_NAME), {
    assets: options.assets,
    output: options.output,
    settings: options.settings,
    rootPath: options.rootPath,
  });
  return publishForBuild({ ...options, serviceWorker: undefined }, cache, { buildOutput: outDir });
}

async function placeIntoOutDir(
  config: ResolvedConfig,
  outDir: string,
  options: ResolvedBuildOptions,
  published: BuildPublishResult,
): Promise<void> {
  const target = join(outDir, options.output);
  const { index } = published.summary;
  await pruneCache(published.publishedDir, index);
  await placePublished(published.publishedDir, index, target);
  const written = published.writtenBundles.length;
  const reused = published.reusedBundles.length;
  config.logger.info(
    `${PLUGIN_NAME}: published ${relative(config.root, options.assets) || '.'} into ${relative(config.root, target)}: ` +
      `${plural(written + reused, 'bundle')}, ${written} written, ${reused} unchanged from the build cache`,
  );
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

/** Vite copies `publicDir` into the out folder as it is: assets kept there ship loose as well. */
function inPublicDir(config: ResolvedConfig, options: ResolvedBuildOptions): boolean {
  return config.command === 'build' && Boolean(config.publicDir) && isInside(options.assets, resolve(config.publicDir));
}

function publicDirMessage(config: ResolvedConfig, options: ResolvedBuildOptions, mode: 'warn' | 'fail'): string {
  const assets = relative(config.root, options.assets) || '.';
  const publicDir = relative(config.root, config.publicDir) || '.';
  const said =
    `the assets folder ${assets} lies inside Vite's publicDir (${publicDir}), so Vite also copies its files loose into the build; ` +
    `move it outside publicDir (e.g. assets/ beside public/, docs/phaser.md "The layout to use")`;
  return mode === 'fail'
    ? `${PLUGIN_NAME}: ${said}`
    : `${PLUGIN_NAME}: warning: ${said}, or set assetsInPublicDir: 'fail' to fail the build`;
}
