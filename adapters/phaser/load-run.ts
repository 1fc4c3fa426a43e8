/**
 * One load of one Phaser loader, from its first bundled file to its `complete`: only the mapping
 * of core's `load` onto Phaser's events. Its reads are recorded under the scene's key (see
 * `IndexedAssetSource.recordedLoads`). The files Phaser starts in one tick (a scene's whole
 * preload, usually) are one `source.load`, whose byte total is fixed from its first event (SPEC
 * §7 "Byte progress"): `awkbprogress` sums the run's loads, `fileprogress` follows each file's
 * bytes, and each file reads its member as soon as it passed (SPEC §7 "Streamed members"), so
 * Phaser's `progress` moves while a bundle arrives. A bundle that failed stays failed for the
 * rest of the run, so its later files fail without asking again.
 */
import { DEFAULT_LOAD_NAME } from '../../core/read/load/load-names.js';
import type { AwkbGameState, ByteProgress, MountedIndex } from './game-state.js';
import type { PhaserFile, PhaserLoader } from './phaser-shapes.js';

/** The files of one tick for one index: one `source.load`. */
interface Batch {
  mounted: MountedIndex;
  paths: Set<string>;
  /** Files waiting, by path, for their `fileprogress`. */
  files: Map<string, PhaserFile[]>;
  loadedBytes: number;
  totalBytes: number;
  /** Settles once the load is asked for: reads then join its requests. */
  ready: Promise<void>;
  /** Settles when the load has: verified and stored, or failed. */
  settled: Promise<void>;
}

const runs = new WeakMap<PhaserLoader, LoadRun>();

/** Files a loader may start at once during a run that serves files from bundles. */
const PARALLEL_FROM_BUNDLES = 4096;

export class LoadRun {
  readonly #batches: Batch[] = [];
  /** The batch still gathering this tick's files, per index. */
  readonly #open = new Map<string, Batch>();
  /** The load of this run that brings each bundle (or loose file). */
  readonly #claimed = new Map<string, Batch>();
  /** Bundles (or loose files) that failed in this run, with why. */
  readonly #failed = new Map<string, unknown>();
  readonly #sharedReads = new Map<string, { waiting: number; bytes: Promise<Uint8Array> }>();

  /** The loader's own `maxParallelDownloads`, put back when the run ends. */
  readonly #parallelBefore: number;
  /** The load this run's reads are recorded under: its scene's key. */
  readonly #loadName: string;

  readonly #loader: PhaserLoader;
  readonly #state: AwkbGameState;

  private constructor(loader: PhaserLoader, state: AwkbGameState) {
    this.#loader = loader;
    this.#state = state;
    // Phaser starts at most maxParallelDownloads (32) files, topped up once per game step
    // (LoaderPlugin#checkLoadQueue): 1,000 files served from memory would wait ~32 frames for
    // their turn. Files from bundles make no requests of their own, so the run lifts the limit;
    // loose files still go through the browser's own per-host limits.
    this.#parallelBefore = loader.maxParallelDownloads;
    loader.maxParallelDownloads = Math.max(loader.maxParallelDownloads, PARALLEL_FROM_BUNDLES);
    this.#loadName = loader.systems?.settings?.key || DEFAULT_LOAD_NAME;
  }

  static of(loader: PhaserLoader, state: AwkbGameState): LoadRun {
    let run = runs.get(loader);
    if (!run) {
      run = new LoadRun(loader, state);
      runs.set(loader, run);
    }
    return run;
  }

  /** The loader finished: the next load starts a new run (and may retry a failed bundle). */
  static end(loader: PhaserLoader): void {
    const run = runs.get(loader);
    if (run) loader.maxParallelDownloads = run.#parallelBefore;
    runs.delete(loader);
  }

  /**
   * Reads `path` for `file`, joining this tick's load of its index (one request per bundle). A
   * file whose bundle an earlier load of this run brings reads it from there (its bytes counted
   * once in `awkbprogress`), with its own byte progress.
   */
  async read(mounted: MountedIndex, path: string, file?: PhaserFile): Promise<Uint8Array> {
    // With range reads each file asks for its own member (SPEC §7 "Range reads"): no load.
    const claimed = this.#claimed.get(this.#whereOf(mounted, path));
    const earlier = claimed !== undefined && claimed !== this.#open.get(mounted.key);
    const batch = mounted.rangeReads || earlier ? undefined : this.#batchFor(mounted, [path], file);
    const onProgress =
      earlier && file ? (loaded: number, total: number) => reportFileBytes(file, total, total === 0 ? 1 : loaded / total) : undefined;
    // Files of one load that need the same path (one image under two keys) share one read:
    // with no cache, a second read would fetch the bundle again. Each gets bytes of its own,
    // since decodeAudioData and texture uploads may take them over.
    const key = `${mounted.key}\n${path}`;
    let shared = this.#sharedReads.get(key);
    if (!shared) {
      shared = { waiting: 0, bytes: this.#readOnce(batch, mounted, path, onProgress) };
      this.#sharedReads.set(key, shared);
    }
    shared.waiting++;
    try {
      const bytes = await shared.bytes;
      return shared.waiting > 1 ? bytes.slice() : bytes;
    } finally {
      if (--shared.waiting === 0 && this.#sharedReads.get(key) === shared) this.#sharedReads.delete(key);
    }
  }

  async #readOnce(
    batch: Batch | undefined,
    mounted: MountedIndex,
    path: string,
    onProgress?: (loaded: number, total: number) => void,
  ): Promise<Uint8Array> {
    if (batch) await batch.ready;
    const where = this.#whereOf(mounted, path);
    if (this.#failed.has(where)) throw this.#failed.get(where);
    try {
      return await mounted.source.read(path, { loadName: this.#loadName, ...(onProgress ? { onProgress } : {}) });
    } catch (error) {
      if (!this.#failed.has(where)) this.#failed.set(where, error);
      throw error;
    }
  }

  /** Fetches `paths` (the index's `prefetch` option) as part of this load; never rejects. */
  async prefetch(mounted: MountedIndex, paths: string[]): Promise<void> {
    if (paths.length > 0) await this.#batchFor(mounted, paths).settled;
  }

  /** The bundle (or loose file) a path's bytes come from, within one index. */
  #whereOf(mounted: MountedIndex, path: string): string {
    const entry = mounted.source.entry(path)!;
    return `${mounted.key}\n${entry.bundle ?? `loose:${entry.sha256}`}`;
  }

  #batchFor(mounted: MountedIndex, paths: string[], file?: PhaserFile): Batch {
    let batch = this.#open.get(mounted.key);
    if (!batch) {
      let start!: () => void;
      let markReady!: () => void;
      const created: Batch = {
        mounted,
        paths: new Set(),
        files: new Map(),
        loadedBytes: 0,
        totalBytes: 0,
        ready: new Promise<void>((resolve) => (markReady = resolve)),
        settled: new Promise<void>((resolve) => (start = resolve)).then(() => this.#start(created, markReady)),
      };
      batch = created;
      this.#open.set(mounted.key, batch);
      this.#batches.push(batch);
      // Start on the next microtask: every file that Phaser starts in this tick joins the load.
      queueMicrotask(start);
    }
    for (const path of paths) {
      batch.paths.add(path);
      const where = this.#whereOf(mounted, path);
      if (!this.#claimed.has(where)) this.#claimed.set(where, batch);
    }
    if (file) {
      const files = batch.files.get(paths[0]!);
      if (files) files.push(file);
      else batch.files.set(paths[0]!, [file]);
    }
    return batch;
  }

  async #start(batch: Batch, markReady: () => void): Promise<void> {
    this.#open.delete(batch.mounted.key);
    const loading = batch.mounted.source.load(batch.paths, {
      loadName: this.#loadName,
      // Settled once verified and held (the index's `prefetch` option waits for it): not for the cache write.
      waitForCache: false,
      onProgress: (progress) => {
        batch.loadedBytes = progress.loadedBytes;
        batch.totalBytes = progress.totalBytes;
        this.#state.reportProgress(this.progress(), this.#loader);
      },
      onFileProgress: ({ path, loadedBytes, totalBytes }) => {
        for (const file of batch.files.get(path) ?? []) reportFileBytes(file, totalBytes, totalBytes === 0 ? 1 : loadedBytes / totalBytes);
      },
    });
    // A load claims its bundles as soon as it is called: reads from now on join its requests
    // (or its cache reads) rather than start their own.
    markReady();
    await loading.catch(() => undefined).finally(() => batch.files.clear());
  }

  /** Bytes received and to receive over every load of this run. */
  progress(): ByteProgress {
    let loadedBytes = 0;
    let totalBytes = 0;
    for (const batch of this.#batches) {
      loadedBytes += batch.loadedBytes;
      totalBytes += batch.totalBytes;
    }
    return { loadedBytes, totalBytes };
  }
}

/**
 * Drives Phaser's `fileprogress` for a file served from a bundle: how much of its own bytes
 * arrived (`file.bytesLoaded` / `file.bytesTotal`).
 */
export function reportFileBytes(file: PhaserFile, total: number, fraction: number): void {
  const loader = file.loader;
  if (!loader) return;
  const loaded = Math.round(total * Math.min(1, fraction));
  if (file.bytesTotal === total && file.bytesLoaded === loaded && loaded !== total) return;
  file.bytesTotal = total;
  file.bytesLoaded = loaded;
  file.percentComplete = total === 0 ? 1 : file.bytesLoaded / total;
  loader.emit('fileprogress', file, file.percentComplete);
}
