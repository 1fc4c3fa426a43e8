/**
 * One load of one Phaser loader, from its first bundled file to its `complete`. Each bundle it
 * needs is asked for once, through `prefetch` (so the load's byte progress is known, SPEC §7
 * "Prefetch"); the files of that bundle then read their members, joining that one request
 * (SPEC §7 "One request per bundle"). Files read as soon as the prefetch has been asked for,
 * so each gets its bytes once verified, not after the cache has stored them. A bundle that failed stays
 * failed for the rest of the load, so its later files fail without asking again.
 */
import type { AwkbGameState, ByteProgress, MountedIndex } from './game-state.js';
import type { PhaserFile, PhaserLoader } from './phaser-shapes.js';

interface BundleJob {
  /** Paths to prefetch: those asked for before the job started (the same tick). */
  paths: string[];
  started: boolean;
  /** Files waiting, with their sizes, for their per-file `fileprogress`. */
  files: Map<PhaserFile, number>;
  loadedBytes: number;
  totalBytes: number;
  /** Settles once the prefetch is asked for: reads then join its one request. */
  ready: Promise<void>;
  /** Settles when the prefetch has: the bundle verified and stored, or failed. */
  settled: Promise<void>;
  /** Why the bundle could not be had, once known. */
  failure?: { error: unknown };
}

const runs = new WeakMap<PhaserLoader, LoadRun>();

/** Files a loader may start at once during a run that serves files from bundles. */
const PARALLEL_FROM_BUNDLES = 4096;

export class LoadRun {
  private readonly jobs = new Map<string, BundleJob>();
  private readonly sharedReads = new Map<string, { waiting: number; bytes: Promise<Uint8Array> }>();

  /** The loader's own `maxParallelDownloads`, put back when the run ends. */
  private readonly parallelBefore: number;

  private constructor(private readonly loader: PhaserLoader, private readonly state: AwkbGameState) {
    // Phaser starts at most maxParallelDownloads (32) files, topped up once per game step
    // (LoaderPlugin#checkLoadQueue): 1,000 files served from memory would wait ~32 frames for
    // their turn. Files from bundles make no requests of their own, so the run lifts the limit;
    // loose files still go through the browser's own per-host limits.
    this.parallelBefore = loader.maxParallelDownloads;
    loader.maxParallelDownloads = Math.max(loader.maxParallelDownloads, PARALLEL_FROM_BUNDLES);
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
    if (run) loader.maxParallelDownloads = run.parallelBefore;
    runs.delete(loader);
  }

  /**
   * Reads `path` once its bundle (or loose file) is on its way for this load: one prefetch per
   * bundle, joined by every file that needs it; fails with that bundle's error.
   */
  async read(mounted: MountedIndex, path: string, file?: PhaserFile): Promise<Uint8Array> {
    // With range reads each file asks for its own member (SPEC §7 "Range reads"): no bundle job.
    const job = mounted.rangeReads ? undefined : this.jobFor(mounted, path, file);
    // Files of one load that need the same path (one image under two keys) share one read:
    // with no cache, a second read would fetch the bundle again. Each gets bytes of its own,
    // since decodeAudioData and texture uploads may take them over.
    const key = `${mounted.key}\n${path}`;
    let shared = this.sharedReads.get(key);
    if (!shared) {
      shared = { waiting: 0, bytes: this.readOnce(job, mounted, path) };
      this.sharedReads.set(key, shared);
    }
    shared.waiting++;
    try {
      const bytes = await shared.bytes;
      return shared.waiting > 1 ? bytes.slice() : bytes;
    } finally {
      if (--shared.waiting === 0 && this.sharedReads.get(key) === shared) this.sharedReads.delete(key);
    }
  }

  private async readOnce(job: BundleJob | undefined, mounted: MountedIndex, path: string): Promise<Uint8Array> {
    if (job) await job.ready;
    if (job?.failure) throw job.failure.error;
    try {
      return await mounted.source.read(path);
    } catch (error) {
      if (job) job.failure ??= { error };
      throw error;
    }
  }

  /** Fetches `paths` (the index's `prefetch` option) as part of this load; never rejects. */
  async prefetch(mounted: MountedIndex, paths: string[]): Promise<void> {
    await Promise.all(paths.map((path) => this.jobFor(mounted, path).settled));
  }

  private jobFor(mounted: MountedIndex, path: string, file?: PhaserFile): BundleJob {
    const entry = mounted.source.entry(path)!;
    const jobKey = `${mounted.key}\n${entry.bundle ?? `loose:${entry.sha256}`}`;
    let job = this.jobs.get(jobKey);
    if (!job) {
      let markReady!: () => void;
      let start!: () => void;
      const ready = new Promise<void>((resolve) => (markReady = resolve));
      const created: BundleJob = { paths: [], started: false, files: new Map(), loadedBytes: 0, totalBytes: 0, ready, settled: new Promise<void>((resolve) => (start = resolve)).then(() => this.start(mounted, created, markReady)) };
      job = created;
      this.jobs.set(jobKey, job);
      // Start on the next microtask: every file that Phaser starts in this tick joins the job.
      queueMicrotask(start);
    }
    if (!job.started) job.paths.push(path);
    if (file) job.files.set(file, entry.sizeBytes);
    return job;
  }

  private async start(mounted: MountedIndex, job: BundleJob, markReady: () => void): Promise<void> {
    job.started = true;
    const prefetching = mounted.source.prefetch(job.paths, {
      onProgress: (progress) => {
        job.loadedBytes = progress.loadedBytes;
        job.totalBytes = progress.totalBytes;
        for (const [file, size] of job.files) reportFileBytes(file, size, progress.totalBytes === 0 ? 1 : progress.loadedBytes / progress.totalBytes);
        this.state.reportProgress(this.progress(), this.loader);
      },
    });
    // A prefetch claims its bundles as soon as it is called: reads from now on join its requests
    // (or its cache reads) rather than start their own (IndexedAssetSource#prefetch).
    markReady();
    await prefetching.catch((error: unknown) => {
      job.failure ??= { error };
    }).finally(() => {
      job.files.clear();
    });
  }

  /** Bytes received and to receive over every bundle of this load. */
  progress(): ByteProgress {
    let loadedBytes = 0;
    let totalBytes = 0;
    for (const job of this.jobs.values()) {
      loadedBytes += job.loadedBytes;
      totalBytes += job.totalBytes;
    }
    return { loadedBytes, totalBytes };
  }
}

/**
 * Drives Phaser's `fileprogress` for a file served from a bundle: its share of the bundle's
 * download, in the file's own bytes (`file.bytesLoaded` / `file.bytesTotal`).
 */
export function reportFileBytes(file: PhaserFile, total: number, fraction: number): void {
  const loader = file.loader;
  if (!loader) return;
  file.bytesTotal = total;
  file.bytesLoaded = Math.round(total * Math.min(1, fraction));
  file.percentComplete = total === 0 ? 1 : file.bytesLoaded / total;
  loader.emit('fileprogress', file, file.percentComplete);
}
