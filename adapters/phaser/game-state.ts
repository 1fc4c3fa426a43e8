/**
 * What one game knows about its bundles: the indexes it loaded (each mounted at a root URL),
 * the indexes still opening (every file waits for them), and the object URLs that Phaser keeps
 * using after a load (HTML5 audio; videos, made when first played), revoked when their cache
 * entry goes or the game does.
 */
import type { IndexedAssetSource } from '../../core/internal.js';
import type { MountedSource } from '../../core/page/mount.js';
import type { PhaserEmitter, PhaserGame, PhaserLoader } from './phaser-shapes.js';
import { BundledVideos } from './video.js';

/** An index mounted in a game (core/page/mount.ts: its root, the wrong-root warning, the double-download watch), by registry key. */
export type MountedIndex = MountedSource & {
  /** The registry key the source is kept under. */
  readonly key: string;
  /** Files read their own member with a range request, not their whole bundle. */
  readonly rangeReads: boolean;
};

export interface ByteProgress {
  loadedBytes: number;
  totalBytes: number;
}

export type ByteProgressListener = (progress: ByteProgress, loader: PhaserLoader) => void;

const states = new WeakMap<PhaserGame, AwkbGameState>();

export class AwkbGameState {
  readonly mounts: MountedIndex[] = [];
  readonly progressListeners = new Set<ByteProgressListener>();
  /** Videos from bundles, read when a Video first loads them. */
  readonly videos = new BundledVideos(this);
  readonly #opening = new Set<Promise<unknown>>();
  /** Object URLs kept for a cache entry: cache → key → URL. */
  readonly #kept = new Map<PhaserEmitter, Map<string, string>>();

  readonly #game: PhaserGame;

  constructor(game: PhaserGame) {
    this.#game = game;
    game.events.once('destroy', () => this.#destroy());
  }

  /** Files wait for indexes still opening; undefined when none is. */
  indexesSettled(): Promise<unknown> | undefined {
    return this.#opening.size === 0 ? undefined : Promise.all(this.#opening);
  }

  /** `opening` must never reject: a failed index settles to undefined. */
  waitFor(opening: Promise<unknown>): void {
    this.#opening.add(opening);
    void opening.finally(() => this.#opening.delete(opening));
  }

  mount(mounted: MountedIndex): void {
    this.mounts.push(mounted);
  }

  /** The index holding the file at `url`, and its project path there. */
  find(url: URL): { mounted: MountedIndex; path: string } | undefined {
    for (const mounted of this.mounts) {
      const path = mounted.pathOf(url);
      if (path !== undefined) return { mounted, path };
    }
    return undefined;
  }

  /** A file at `url` loads loose: each index hears of it, to warn of a `root` that would serve it. */
  noticeLoose(url: URL): void {
    for (const mounted of this.mounts) mounted.noticeLoose(url);
  }

  /** A load of the game completed: each source posts its recorded loads, when a development server asked for them. */
  postRecordedLoads(): void {
    for (const mounted of this.mounts) void mounted.source.postRecordedLoads();
  }

  /** A source by registry key, or the first one mounted. */
  source(key?: string): IndexedAssetSource | undefined {
    return (key === undefined ? this.mounts[0] : this.mounts.find((m) => m.key === key))?.source;
  }

  reportProgress(progress: ByteProgress, loader: PhaserLoader): void {
    loader.emit('awkbprogress', progress, loader);
    for (const listener of this.progressListeners) listener(progress, loader);
  }

  /** Keeps `url` alive while `cache` holds `key` (Phaser's BaseCache emits `remove`). */
  keepUrl(cache: { events?: PhaserEmitter }, key: string, url: string): void {
    const events = cache.events;
    if (!events) return;
    let urls = this.#kept.get(events);
    if (!urls) {
      const byKey = new Map<string, string>();
      urls = byKey;
      this.#kept.set(events, byKey);
      events.on('remove', (_cache: unknown, removedKey: string) => {
        const removed = byKey.get(removedKey);
        if (removed !== undefined) {
          byKey.delete(removedKey);
          URL.revokeObjectURL(removed);
        }
      });
    }
    const previous = urls.get(key);
    if (previous !== undefined && previous !== url) URL.revokeObjectURL(previous);
    urls.set(key, url);
  }

  #destroy(): void {
    for (const urls of this.#kept.values()) for (const url of urls.values()) URL.revokeObjectURL(url);
    this.#kept.clear();
    this.videos.dispose();
    for (const mounted of this.mounts) mounted.unmount();
    this.mounts.length = 0;
    this.progressListeners.clear();
    states.delete(this.#game);
  }
}

export function gameStateOf(game: PhaserGame): AwkbGameState | undefined {
  return states.get(game);
}

export function ensureGameState(game: PhaserGame): AwkbGameState {
  let state = states.get(game);
  if (!state) {
    state = new AwkbGameState(game);
    states.set(game, state);
  }
  return state;
}
