/**
 * The loader's file counts leave the `awkbIndex` file out: it is the adapter's, not one of the
 * game's files, so a scene reports the same counts loose and from bundles (`totalToLoad`, and
 * `totalComplete` and `totalFailed`, which Phaser's `complete` event passes). Its own events
 * (`load`, `filecomplete`, or `loaderror` for an index that failed) still fire.
 *
 * Phaser counts a file in `totalToLoad` when a load starts with it queued (LoaderPlugin#start:
 * the list's size, then the `start` event at once) or when it is added during a load
 * (LoaderPlugin#addFile), and in `totalComplete` or `totalFailed` as it ends (LoaderPlugin#nextFile).
 */
import type { PhaserEmitter, PhaserLoader } from './phaser-shapes.js';

const INDEX_TYPE = 'awkbIndex';

interface CountedLoader extends PhaserLoader {
  list: { getArray?(): { type: string }[] } & Iterable<{ type: string }>;
  totalComplete: number;
  totalFailed: number;
  isLoading(): boolean;
}

/** Patches LoaderPlugin#start: the index files queued come off `totalToLoad` before its `start` event. */
export function countIndexFilesOut(proto: { start(this: CountedLoader, ...args: unknown[]): unknown }): void {
  const start = proto.start;
  proto.start = function (this: CountedLoader, ...args: unknown[]) {
    const queued = indexFilesIn(this);
    if (queued === 0) return start.apply(this, args);
    // Phaser sets totalToLoad to the list's size and emits `start` straight after: the count is
    // corrected as that event goes out, so its listeners see the game's files only.
    const emit = this.emit;
    const own = Object.getOwnPropertyDescriptor(this, 'emit');
    const restore = () => (own ? Object.defineProperty(this, 'emit', own) : delete (this as Partial<PhaserEmitter>).emit);
    this.emit = function (this: CountedLoader, event: string, ...rest: unknown[]) {
      if (event === 'start') {
        restore();
        this.totalToLoad -= queued;
      }
      return emit.call(this, event, ...rest);
    };
    try {
      return start.apply(this, args);
    } finally {
      restore();
    }
  };
}

/** An index file was just added to `loader`: added during a load, Phaser counted it. */
export function indexFileAdded(loader: PhaserLoader, duringLoad: boolean): void {
  if (duringLoad) loader.totalToLoad--;
}

/** An index file is about to end (`loader.nextFile`), which counts it: uncounted ahead. */
export function indexFileEnding(loader: PhaserLoader, success: boolean): void {
  const counted = loader as CountedLoader;
  if (success) counted.totalComplete--;
  else counted.totalFailed--;
}

function indexFilesIn(loader: CountedLoader): number {
  const files = typeof loader.list.getArray === 'function' ? loader.list.getArray() : [...loader.list];
  return files.filter((file) => file.type === INDEX_TYPE).length;
}
