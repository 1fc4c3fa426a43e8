/**
 * `awake-bundle/webpack`: publish at build time with webpack 5, a loose index in development.
 *
 *   plugins: [new AwakeBundlePlugin({ assets: 'public/assets', output: 'published' })]
 *
 * - `webpack` (a build): once the compilation is emitted, the asset folder is published into
 *   `<output.path>/<output>` with the CLI's rules (integrations/build/publish-for-build.ts):
 *   byte for byte what `npx awake-bundle` writes, and bundles already there are not written
 *   again. It is written to disk directly, not as compilation assets, so a bundle never has to
 *   be held whole in memory and an unchanged one is never rewritten (`output.clean` keeps it).
 *   A publish that fails (an unsafe path, a link leaving the folder) fails the build with the
 *   CLI's message. The grouping defaults to `auto`, or to `awkb-loads.json` in webpack's
 *   `context` with the folder grouping for the rest (integrations/build/options.ts).
 * - `webpack serve`: nothing is published. The plugin adds its middleware to the dev server
 *   (through `devServer.setupMiddlewares`, which it wraps) and the server answers the same index
 *   URL with a loose (formatVersion 2) index of the asset folder, kept current as files change
 *   (integrations/build/loose-dev-index.ts). With webpack-dev-server's API, pass
 *   `setupMiddlewares: (middlewares, server) => plugin.setupMiddlewares(middlewares, server)`.
 *
 * Nothing here imports webpack: the compiler hands over its own (`compiler.webpack`). Nor
 * webpack-dev-server: 4.7+ and 5 (the peer range, each tested) both call `setupMiddlewares` with
 * the same list (4.0 to 4.6 had no `setupMiddlewares`).
 */
import type { Compilation, Compiler, WebpackError } from 'webpack';
import { UnsupportedOperationError } from '../../core/errors.js';
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
  type Middleware,
  type ResolvedBuildOptions,
} from '../build/shared.js';

export type { AwakeBundleBuildOptions } from '../build/shared.js';

export type AwakeBundlePluginOptions = AwakeBundleBuildOptions;

const PLUGIN_NAME = 'AwakeBundlePlugin';

/** A webpack-dev-server middleware entry (its `setupMiddlewares` list), as far as this plugin uses it. */
export type DevServerMiddleware = Middleware | { name?: string; path?: string; middleware: Middleware | unknown };

/** The dev server as `setupMiddlewares` receives it, as far as this plugin uses it. */
export interface DevServerLike {
  compiler?: Compiler | { compilers: Compiler[] };
}

type SetupMiddlewares = (middlewares: DevServerMiddleware[], devServer: DevServerLike) => DevServerMiddleware[];

export class AwakeBundlePlugin {
  private readonly options: AwakeBundleBuildOptions;
  private compiler?: Compiler;
  private devIndex?: LooseDevIndex;
  /** Each compilation's publish, once. */
  private readonly publishing = new WeakMap<Compilation, Promise<BuildPublishResult>>();

  constructor(options: AwakeBundlePluginOptions) {
    // Checked now, so a wrong option fails when the configuration loads, naming the option.
    resolveBuildOptions(options, process.cwd());
    this.options = { ...options };
  }

  /** The loose index the dev server answers with, once `setupMiddlewares` has run (for tests and tools). */
  get looseDevIndex(): LooseDevIndex | undefined {
    return this.devIndex;
  }

  apply(compiler: Compiler): void {
    this.compiler = compiler;
    this.wrapDevServerMiddlewares(compiler);
    compiler.hooks.thisCompilation.tap(PLUGIN_NAME, (compilation) => {
      this.keepPublishedOnClean(compilation);
      this.addPreloadLinks(compilation);
    });
    compiler.hooks.afterEmit.tapPromise(PLUGIN_NAME, (compilation) => this.publish(compilation));
    compiler.hooks.shutdown.tapPromise(PLUGIN_NAME, async () => {
      await this.devIndex?.close();
    });
  }

  /** Options resolved against the compiler's context (webpack's project root). */
  private resolved(compiler: Compiler, onWarning?: (message: string) => void): ResolvedBuildOptions {
    const resolved = resolveBuildOptions(this.options, compiler.context);
    return resolved.onWarning || !onWarning ? resolved : { ...resolved, onWarning };
  }

  /**
   * `webpack serve` makes its dev server from `compiler.options.devServer` after the plugins
   * are applied: the plugin's middleware goes in through the `setupMiddlewares` it finds there.
   */
  private wrapDevServerMiddlewares(compiler: Compiler): void {
    const devServer = (compiler.options as { devServer?: false | Record<string, unknown> }).devServer;
    if (devServer === false) return;
    const own = devServer?.setupMiddlewares as SetupMiddlewares | undefined;
    const setupMiddlewares: SetupMiddlewares = (middlewares, server) =>
      this.setupMiddlewares(own ? own(middlewares, server) : middlewares, server);
    (compiler.options as { devServer?: Record<string, unknown> }).devServer = { ...(devServer ?? {}), setupMiddlewares };
  }

  /**
   * Adds the loose index middleware to webpack-dev-server's list, ahead of the compiled output
   * and static files. Called by the dev server (see the top of this file); from then on this
   * compiler is in development and publishes nothing.
   */
  setupMiddlewares(middlewares: DevServerMiddleware[], _devServer?: DevServerLike): DevServerMiddleware[] {
    const compiler = this.compiler;
    if (!compiler)
      throw new UnsupportedOperationError(
        `${PLUGIN_NAME}: add the plugin to the webpack configuration's plugins before the dev server starts`,
      );
    if (!this.devIndex) {
      const logger = compiler.getInfrastructureLogger(PLUGIN_NAME);
      const resolved = this.resolved(compiler, (message) => logger.warn(message));
      this.devIndex = new LooseDevIndex(resolved, {
        base: devBase(compiler),
        onError: (error) => logger.error((error as Error)?.message ?? String(error)),
      });
    }
    const entry = { name: 'awake-bundle-loose-index', middleware: this.devIndex.middleware() };
    const at = middlewares.findIndex(
      (item) => typeof item === 'object' && item !== null && 'name' in item && item.name === 'webpack-dev-middleware',
    );
    return at < 0 ? [...middlewares, entry] : [...middlewares.slice(0, at), entry, ...middlewares.slice(at)];
  }

  /** `output.clean` removes what this compilation did not emit: the published folder (and the worker) stay. */
  private keepPublishedOnClean(compilation: Compilation): void {
    const { output } = resolveBuildOptions(this.options, compilation.compiler.context);
    const hooks = compilation.compiler.webpack.CleanPlugin?.getCompilationHooks?.(compilation);
    hooks?.keep.tap(PLUGIN_NAME, (path: string) => {
      const name = path.split('\\').join('/');
      if (name === output || name.startsWith(`${output}/`)) return true;
      return this.options.serviceWorker && name === SERVICE_WORKER_FILE ? true : undefined;
    });
  }

  /** In development (the dev server's middleware installed) nothing is published. */
  private isDevelopment(compiler: Compiler): boolean {
    if (this.devIndex) return true;
    // webpack-dev-server used without its setupMiddlewares reaching the plugin: still never publish into its output.
    return compiler.watchMode && process.env.WEBPACK_SERVE === 'true';
  }

  /**
   * With html-webpack-plugin in the build, the built page preloads the index and the first load's
   * bundles (integrations/build/preload.ts): the publish then starts when the HTML is made, and
   * `afterEmit` waits for that same publish.
   */
  private addPreloadLinks(compilation: Compilation): void {
    const compiler = compilation.compiler;
    const html = compiler.options.plugins.find(
      (plugin) =>
        typeof (plugin?.constructor as Partial<HtmlWebpackPluginClass> | undefined)?.getHooks === 'function' &&
        plugin?.constructor?.name === 'HtmlWebpackPlugin',
    );
    if (!html) return;
    const HtmlWebpackPlugin = html.constructor as unknown as HtmlWebpackPluginClass;
    HtmlWebpackPlugin.getHooks(compilation).alterAssetTagGroups.tapPromise(PLUGIN_NAME, async (data) => {
      if (this.isDevelopment(compiler)) return data;
      const published = await this.publishOnce(compilation).catch(() => undefined); // afterEmit reports the failure
      if (!published) return data;
      const { output } = this.resolved(compiler);
      const hrefs = preloadHrefs(
        published.summary.index,
        'project.index.json',
        `${publicPathOf(data.publicPath)}${output}/`,
        published.loads,
      );
      const links = preloadLinkAttributes(hrefs, 'anonymous').map((attributes) =>
        HtmlWebpackPlugin.createHtmlTagObject('link', attributes),
      );
      // At the end of the body, after the page's scripts (integrations/build/preload.ts, "After the scripts"), and the
      // head's first tag saying so.
      const marker = HtmlWebpackPlugin.createHtmlTagObject('meta', { ...PRELOAD_MARKER });
      return { ...data, headTags: [marker, ...data.headTags], bodyTags: [...data.bodyTags, ...links] };
    });
  }

  /** This compilation's publish, started once (by the HTML's preload links, or by `afterEmit`). */
  private publishOnce(compilation: Compilation): Promise<BuildPublishResult> {
    let publishing = this.publishing.get(compilation);
    if (!publishing) {
      const compiler = compilation.compiler;
      const resolved = this.resolved(compiler, (message) =>
        compilation.warnings.push(webpackError(compiler, `awake-bundle: warning: ${message}`)),
      );
      publishing = publishForBuild(resolved, compiler.outputPath);
      this.publishing.set(compilation, publishing);
    }
    return publishing;
  }

  private async publish(compilation: Compilation): Promise<void> {
    const compiler = compilation.compiler;
    if (this.isDevelopment(compiler)) {
      if (!this.devIndex)
        compilation.warnings.push(
          webpackError(
            compiler,
            `${PLUGIN_NAME}: webpack-dev-server runs, but its setupMiddlewares did not reach the plugin: nothing is published and no loose index is served. Pass setupMiddlewares: (middlewares, server) => plugin.setupMiddlewares(middlewares, server) to the dev server.`,
          ),
        );
      return;
    }
    const logger = compilation.getLogger(PLUGIN_NAME);
    try {
      const result = await this.publishOnce(compilation);
      const { summary } = result;
      logger.info(
        `published ${summary.index.files.length} files in ${summary.bundles} bundles to ${result.publishedDir}: ${result.writtenBundles.length} written, ${result.reusedBundles.length} already there`,
      );
    } catch (error) {
      // The CLI's own words: its errors name the path or option (SPEC §8).
      compilation.errors.push(webpackError(compiler, `awake-bundle: ${(error as Error)?.message ?? String(error)}`, error));
    }
  }
}

/** html-webpack-plugin's class, as far as this plugin uses it (it is never imported: its hooks are found on the instance in the build). */
interface HtmlWebpackPluginClass {
  getHooks(compilation: Compilation): {
    alterAssetTagGroups: {
      tapPromise(
        name: string,
        run: (data: {
          headTags: unknown[];
          bodyTags: unknown[];
          publicPath: string;
        }) => Promise<{ headTags: unknown[]; bodyTags: unknown[]; publicPath: string }>,
      ): void;
    };
  };
  createHtmlTagObject(tagName: string, attributes: Record<string, string | boolean>): unknown;
}

/** html-webpack-plugin's public path as a prefix: `auto` (and empty) is the page's own folder. */
function publicPathOf(publicPath: string): string {
  if (publicPath === 'auto' || publicPath === '') return '';
  return publicPath.endsWith('/') ? publicPath : `${publicPath}/`;
}

/** The dev server's public path: `output.publicPath` when it is an absolute path, else `/`. */
function devBase(compiler: Compiler): string {
  const publicPath = compiler.options.output.publicPath;
  return typeof publicPath === 'string' && publicPath.startsWith('/') ? publicPath : '/';
}

function webpackError(compiler: Compiler, message: string, cause?: unknown): WebpackError {
  const error = new compiler.webpack.WebpackError(message);
  if (cause !== undefined) (error as { cause?: unknown }).cause = cause;
  return error;
}

export default AwakeBundlePlugin;
