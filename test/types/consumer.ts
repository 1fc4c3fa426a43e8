// A game's code that uses every entry of the package, type-checked with the oldest TypeScript
// the README claims (test/types.test.ts). It is compiled, never run.
import { IndexedAssetSource, MemoryCache, sha256Hex } from 'awake-bundle';
import { publishToDirectory, startStaticServer } from 'awake-bundle/node';
import { BundleWriter, decodeBundle } from 'awake-bundle/format';
import * as Phaser from 'phaser';
import { awkbSource, registerAwkb as registerPhaser, type ByteProgress } from 'awake-bundle/phaser';
import { registerAwkb as registerBabylon } from 'awake-bundle/babylon';
import { createAwkbFetchHandler, installAwkbServiceWorker, type FetchEventLike } from 'awake-bundle/sw';
import { AwakeBundlePlugin, type AwakeBundlePluginOptions } from 'awake-bundle/webpack';
import { awakeBundle } from 'awake-bundle/vite';
import type { UserConfig } from 'vite';

export async function load(): Promise<Uint8Array> {
  const source = await IndexedAssetSource.open({ indexUrl: '/published/project.index.json', cache: new MemoryCache() });
  const bytes: Uint8Array = await source.read('images/coin.png');
  await sha256Hex(bytes);
  return bytes;
}

export const entries = [
  publishToDirectory,
  startStaticServer,
  registerPhaser,
  registerBabylon,
  installAwkbServiceWorker,
  BundleWriter,
  decodeBundle,
];

/** A worker of one's own: the handler answers what maps into the index, the rest falls through. */
export function onFetch(event: FetchEventLike): boolean {
  return createAwkbFetchHandler({ indexUrl: 'project.index.json', cache: null }).handleFetch(event);
}

/** A webpack configuration's plugin, with the CLI's publish options. */
const pluginOptions: AwakeBundlePluginOptions = {
  assets: 'public/assets',
  output: 'published',
  opaqueIds: true,
  salt: 'pepper',
  targetBundleBytes: 4 * 1024 * 1024,
  serviceWorker: true,
};
export const webpackPlugins = [new AwakeBundlePlugin(pluginOptions)];

/** A vite.config: the plugin is a Vite plugin, its options the CLI's publish options. */
export const viteConfig: UserConfig = {
  plugins: [
    awakeBundle({
      assets: 'assets',
      output: 'published',
      opaqueIds: true,
      salt: 'harbour',
      targetBundleBytes: 4 * 1024 * 1024,
      serviceWorker: true,
    }),
  ],
};

/**
 * `this.awkb` is there only when the game config installs the plugin: the type says so (a use
 * without `?.` does not compile); the loader's `awkbprogress` and `awkbSource` need no entry.
 */
export class PreloadScene extends Phaser.Scene {
  preload(): void {
    this.load.awkbIndex('assets', 'published/project.index.json');
    this.load.on('awkbprogress', ({ loadedBytes, totalBytes }: ByteProgress) => console.log(loadedBytes / totalBytes));
    const viaPlugin = this.awkb?.source('assets');
    const viaRegistry = awkbSource(this, 'assets');
    // @ts-expect-error this.awkb is undefined without the plugin's config entry
    this.awkb.source('assets');
    console.log(viaPlugin?.indexUrl, viaRegistry?.indexUrl);
  }
}
