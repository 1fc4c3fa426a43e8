/**
 * One load of one Phaser loader, from its first bundled file to its `complete`: each bundle it
 * needs is fetched once (SPEC §7 "One request per bundle"), through `prefetch`, so the load's byte
 * progress is known; files of a bundle wait for it and then read their member. A bundle that
 * failed stays failed for the rest of the load, so its files fail without asking again.
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
  done: Promise<void>;
}

const runs = new WeakMap<PhaserLoader, LoadRun>();

export class LoadRun {
  private readonly jobs = new Map<string, BundleJob>();

  private constructor(private readonly loader: PhaserLoader, private readonly state: AwkbGameState) {}

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
    runs.delete(loader);
  }

  /**
   * Resolves once the bundle (or loose file) holding `path` is verified and stored, so a read
   * needs no request; rejects with the reader's error for that bundle.
   */
  fetch(mounted: MountedIndex, path: string, file?: PhaserFile): Promise<void> {
    const entry = mounted.source.entry(path)!;
    const jobKey = `${mounted.key}\n${entry.bundle ?? `loose:${entry.sha256}`}`;
    let job = this.jobs.get(jobKey);
    if (!job) {
      let start!: () => void;
      const started = new Promise<void>((resolve) => (start = resolve));
      const created: BundleJob = { paths: [], started: false, files: new Map(), loadedBytes: 0, totalBytes: 0, done: started.then(() => this.prefetch(mounted, created)) };
      job = created;
      this.jobs.set(jobKey, job);
      // Start on the next microtask: every file that Phaser starts in this tick joins the job.
      queueMicrotask(start);
    }
    if (!job.started) job.paths.push(path);
    if (file) job.files.set(file, entry.sizeBytes);
    return job.done;
  }

  private async prefetch(mounted: MountedIndex, job: BundleJob): Promise<void> {
    job.started = true;
    try {
      await mounted.source.prefetch(job.paths, {
        onProgress: (progress) => {
          job.loadedBytes = progress.loadedBytes;
          job.totalBytes = progress.totalBytes;
          for (const [file, size] of job.files) reportFileBytes(file, size, progress.totalBytes === 0 ? 1 : progress.loadedBytes / progress.totalBytes);
          this.state.reportProgress(this.progress(), this.loader);
        },
      });
    } finally {
      job.files.clear();
    }
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
