/**
 * The loader's `progress` as a player reads it: the share of files fully processed, never
 * lower than before, and 1 only when the whole load is done. Phaser's own figure,
 * `1 - (list + inflight) / totalToLoad` (LoaderPlugin#updateProgress), counts a file as done
 * before it is processed and drops when a pack or a multiatlas adds files mid-load.
 */
interface LoaderProgressState {
  totalToLoad: number;
  progress: number;
  emit(event: string, ...args: unknown[]): boolean;
}

const processed = new WeakMap<object, number>();

export function patchLoaderProgress(proto: Record<string, any>): void {
  const { start, fileProcessComplete, loadComplete } = proto;

  proto.start = function (this: LoaderProgressState) {
    processed.set(this, 0);
    this.progress = 0;
    return start.apply(this, arguments);
  };

  proto.updateProgress = function (this: LoaderProgressState) {
    const done = processed.get(this) ?? 0;
    const share = this.totalToLoad > 0 ? Math.min(done / this.totalToLoad, 1) : 0;
    // Below 1 until loadComplete says every file is processed.
    this.progress = Math.max(this.progress, Math.min(share, 0.999));
    this.emit('progress', this.progress);
  };

  proto.fileProcessComplete = function (this: LoaderProgressState & { isLoading(): boolean }, file?: { type?: string }) {
    // The index file is not one of the game's files (file-counts.ts): not in totalToLoad either.
    if (file?.type !== 'awkbIndex') processed.set(this, (processed.get(this) ?? 0) + 1);
    const result = fileProcessComplete.apply(this, arguments);
    if (this.isLoading?.()) (this as unknown as { updateProgress(): void }).updateProgress();
    return result;
  };

  proto.loadComplete = function (this: LoaderProgressState) {
    if (this.totalToLoad > 0 && this.progress < 1) {
      this.progress = 1;
      this.emit('progress', 1);
    }
    return loadComplete.apply(this, arguments);
  };
}
