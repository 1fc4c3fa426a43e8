/**
 * `registerAwkb(Phaser)`: installs the adapter into one Phaser namespace, once. It registers the
 * `awkbIndex` file type (FileTypesManager, and the loader prototype for loaders that exist
 * already), wraps every file the loader is given so its load can come from a bundle, makes
 * the loader's progress monotonic, leaves the index file out of its file counts, and lets Video
 * game objects play videos from bundles. Phaser is always the caller's, never `window.Phaser`.
 */
import { importFirstLoadParts } from '../../core/read/open/open-source.js';
import { defineAwkbIndexFile } from './awkb-index-file.js';
import { countIndexFilesOut } from './file-counts.js';
import { gameStateOf } from './game-state.js';
import { LoadRun } from './load-run.js';
import type { PhaserFile, PhaserLoader, PhaserNamespace } from './phaser-shapes.js';
import { patchLoaderProgress } from './progress.js';
import { wrapFileLoad } from './serve-file.js';
import { patchVideoLoading } from './video.js';

const installed = new WeakSet<object>();

export function registerAwkb(phaser: PhaserNamespace): void {
  const proto = phaser.Loader.LoaderPlugin.prototype;
  if (installed.has(proto)) return;
  installed.add(proto);

  // The reader's lazily imported parts go out now, while the game boots (open-source.ts).
  importFirstLoadParts();
  const awkbIndex = defineAwkbIndexFile(phaser);
  phaser.Loader.FileTypesManager.register('awkbIndex', awkbIndex);
  proto.awkbIndex = awkbIndex;

  const { addFile, loadComplete, shutdown } = proto;
  proto.addFile = function (this: PhaserLoader, file: PhaserFile | PhaserFile[]) {
    for (const one of Array.isArray(file) ? file : [file]) wrapFileLoad(phaser, one);
    return addFile.call(this, file);
  };
  // A load ends complete, or cut short by its scene shutting down; the next one starts afresh.
  // Once complete, the sources post what they recorded when a development server asked them to.
  proto.loadComplete = function (this: PhaserLoader) {
    LoadRun.end(this);
    const result = loadComplete.apply(this, arguments);
    const game = this.systems?.game;
    if (game) gameStateOf(game)?.postRecordedLoads();
    return result;
  };
  proto.shutdown = function (this: PhaserLoader) {
    LoadRun.end(this);
    return shutdown.apply(this, arguments);
  };
  patchLoaderProgress(proto);
  countIndexFilesOut(proto);
  patchVideoLoading(phaser, (video) => (video.scene ? gameStateOf(video.scene.sys.game) : undefined));
}
