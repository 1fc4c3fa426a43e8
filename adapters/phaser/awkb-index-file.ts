/**
 * The `awkbIndex` file type: `this.load.awkbIndex(key, url, options)`, its config-object form and
 * `type: 'awkbIndex'` in a pack file. It opens the index as soon as it is queued (so files that
 * wait for it never hold the loader's parallel slots against it), mounts it for the game, keeps
 * the source in the game registry under `key`, and fetches the `prefetch` list with it. It is
 * left out of the loader's file counts (file-counts.ts).
 */
import type { IndexedAssetSource } from '../../core/read/indexed-asset-source.js';
import { MountedSource, openMountedSource } from '../../core/page/mount.js';
import { markAdapterCall } from '../../core/page/user-timing.js';
import { indexFileAdded, indexFileEnding } from './file-counts.js';
import { holdFirstFrame } from './first-frame.js';
import { ensureGameState, type AwkbGameState, type MountedIndex } from './game-state.js';
import { LoadRun } from './load-run.js';
import type { AwkbIndexFileConfig, AwkbIndexOptions } from './options.js';
import type { PhaserLoader, PhaserNamespace } from './phaser-shapes.js';
import { absoluteUrl, asFolder, folderOf } from '../../core/page/project-urls.js';

export type AwkbIndexFactory = (
  this: PhaserLoader,
  key: string | AwkbIndexFileConfig | AwkbIndexFileConfig[],
  url?: string,
  options?: AwkbIndexOptions,
) => PhaserLoader;

export function defineAwkbIndexFile(phaser: PhaserNamespace): AwkbIndexFactory {
  const { Loader } = phaser;

  class AwkbIndexFile extends Loader.File {
    declare loader: PhaserLoader | null;
    declare key: string;
    declare state: number;
    declare data: unknown;
    declare error: unknown;
    readonly options: AwkbIndexOptions;
    private opening: Promise<IndexedAssetSource | undefined> | undefined;

    constructor(loader: PhaserLoader, key: string, url: string | undefined, options: AwkbIndexOptions) {
      super(loader, { type: 'awkbIndex', cache: false, extension: 'json', key, url });
      this.options = options;
    }

    /** A key already in the registry is a source loaded before: reused, never loaded again. */
    hasCacheConflict(): boolean {
      return this.loader!.systems!.game.registry.has(this.key);
    }

    open(state: AwkbGameState): void {
      const loader = this.loader!;
      const indexUrl = absoluteUrl(String(Loader.GetURL(this as never, loader.baseURL)))!;
      const root =
        this.options.root === undefined
          ? folderOf(indexUrl)
          : asFolder(absoluteUrl(String(Loader.GetURL({ url: phaserFileUrl(loader, this.options.root) }, loader.baseURL)))!);
      LoadRun.of(loader, state); // the load serves files from bundles from now on (see LoadRun)
      let mounted!: () => void;
      const started = new Promise<void>((resolve) => (mounted = resolve));
      this.opening = this.mount(state, loader, indexUrl, root, mounted).finally(mounted);
      state.waitFor(this.opening);
      // Before the game's first frame: that frame waits for this index and its first requests (first-frame.ts).
      const game = loader.systems?.game;
      const hold = this.options.holdFirstFrame;
      if (game && hold !== false) holdFirstFrame(game, started, typeof hold === 'number' ? hold : undefined);
    }

    /** `mounted` is called once the source serves the game's files (its `prefetch` load started, not ended). */
    private async mount(
      state: AwkbGameState,
      loader: PhaserLoader,
      indexUrl: URL,
      root: URL,
      mounted: () => void,
    ): Promise<IndexedAssetSource | undefined> {
      const { source: given, cache, fetch, rangeReads, neededBytes, prefetch, allowOrigins } = this.options;
      let source: IndexedAssetSource;
      try {
        source =
          given ??
          (await openMountedSource({
            indexUrl: indexUrl.href,
            ...(cache !== undefined ? { cache } : {}),
            ...(fetch ? { fetch } : {}),
            ...(rangeReads !== undefined ? { rangeReads } : {}),
            ...(neededBytes !== undefined ? { neededBytes } : {}),
            ...(allowOrigins ? { allowOrigins } : {}),
          }));
      } catch (error) {
        this.error = error;
        console.error(
          `awake-bundle: index "${this.key}" (${indexUrl.href}) was not loaded: ${error instanceof Error ? error.message : String(error)}`,
        );
        console.warn(`awake-bundle: without index "${this.key}", files load from their own URLs`);
        return undefined;
      }
      // A relative `root` resolves against the loader's baseURL and path: the warning suggests one that way.
      const relativeTo = absoluteUrl('./', absoluteUrl(loader.baseURL + loader.path)?.href);
      const mount: MountedIndex = Object.assign(
        new MountedSource(source, {
          root,
          owned: given === undefined,
          warnNearMisses: this.options.warnNearMisses,
          ...(relativeTo ? { relativeTo } : {}),
        }),
        {
          key: this.key,
          rangeReads: rangeReads === true,
        },
      );
      state.mount(mount);
      loader.systems?.game.registry.set(this.key, source);
      if (prefetch && prefetch.length > 0) {
        const paths = prefetch.flatMap((item) =>
          source.has(item) ? [item] : source.paths().filter((path) => path.startsWith(`${item.replace(/\/+$/, '')}/`)),
        );
        // A bundle that fails here fails its files when they load, naming the member; the index itself is fine.
        const prefetched = LoadRun.of(loader, state).prefetch(mount, paths);
        mounted();
        await prefetched;
      }
      return source;
    }

    load(): void {
      this.state = Loader.FILE_LOADING;
      void this.opening!.then((source) => {
        if (!this.loader) return;
        this.data = source;
        indexFileEnding(this.loader, source !== undefined);
        this.loader.nextFile(this as never, source !== undefined);
      });
    }

    onProcess(): void {
      this.state = Loader.FILE_PROCESSING;
      (this as unknown as { onProcessComplete(): void }).onProcessComplete();
    }

    /** The source went into the registry when it opened, for the files waiting on it. */
    addToCache(): void {}
  }

  return function awkbIndex(this: PhaserLoader, key, url, options) {
    markAdapterCall('awkbIndex');
    const configs: AwkbIndexFileConfig[] = Array.isArray(key)
      ? key
      : typeof key === 'object'
        ? [key]
        : [{ ...options, key, ...(url !== undefined ? { url } : {}) }];
    const game = this.systems!.game;
    for (const { key: fileKey, url: fileUrl, ...fileOptions } of configs) {
      const file = new AwkbIndexFile(this, fileKey, fileUrl, fileOptions);
      if (this.keyExists(file as never)) continue;
      const duringLoad = this.isLoading();
      this.addFile(file as never);
      indexFileAdded(this, duringLoad);
      file.open(ensureGameState(game));
    }
    return this;
  };
}

/** A URL as File.js stores it: the loader's `path` before a relative one. */
function phaserFileUrl(loader: PhaserLoader, url: string): string {
  return /^(?:blob:|data:|capacitor:\/\/|http:\/\/|https:\/\/|\/\/)/.test(url) ? url : loader.path + url;
}
