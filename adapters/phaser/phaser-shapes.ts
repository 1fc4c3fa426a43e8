/**
 * The parts of Phaser's loader that the adapter touches, as Phaser 3.60+ and 4.x both have them
 * (src/loader/File.js, LoaderPlugin.js: the same structure in both). Typed structurally so one
 * build serves both majors; `Phaser` itself always comes from the caller's import, never a global.
 */
import type { IndexedAssetSource } from '../../core/internal.js';

export interface PhaserEmitter {
  on(event: string, listener: (...args: any[]) => void, context?: unknown): unknown;
  once(event: string, listener: (...args: any[]) => void, context?: unknown): unknown;
  off(event: string, listener?: (...args: any[]) => void, context?: unknown): unknown;
  emit(event: string, ...args: unknown[]): boolean;
}

export interface PhaserGame {
  registry: { get(key: string): unknown; set(key: string, value: unknown): unknown; has(key: string): boolean };
  events: PhaserEmitter;
  /** The game's time step (core/TimeStep.js): `running` once Game#start started it, `frame` counts its steps. */
  loop?: { running?: boolean; frame?: number };
  /** Null for a headless game. */
  renderer?: unknown;
  /** Game#step, one frame: bound into the loop by Game#start. */
  step?: (...args: unknown[]) => unknown;
}

export interface PhaserLoader extends PhaserEmitter {
  baseURL: string;
  path: string;
  totalToLoad: number;
  progress: number;
  maxParallelDownloads: number;
  /** The scene's systems; `settings.key` is the scene's key (Scenes/Settings.js, 3.60+ and 4.x). */
  systems: { game: PhaserGame; settings?: { key?: string } } | null;
  nextFile(file: PhaserFile, success: boolean): void;
  addFile(file: PhaserFile | PhaserFile[]): void;
  keyExists(file: PhaserFile): boolean;
  isLoading(): boolean;
}

export interface PhaserFile {
  loader: PhaserLoader | null;
  type: string;
  key: string;
  url: unknown;
  src: string;
  state: number;
  cache: { events?: PhaserEmitter } | false | null;
  xhrSettings: { responseType: XMLHttpRequestResponseType };
  xhrLoader: unknown;
  bytesLoaded: number;
  bytesTotal: number;
  percentComplete: number;
  data: unknown;
  /** Set by awake-bundle when serving the file from a bundle failed: the reader's error. */
  error?: unknown;
  load(): void;
  onLoad(xhr: unknown, event: unknown): void;
  onProcessComplete(): void;
  onProcessError(): void;
  destroy(): void;
}

/** A Video game object (src/gameobjects/video/Video.js, 3.60+ and 4.x). */
export interface PhaserVideo {
  scene: { sys: { game: PhaserGame; cache?: { video?: { events?: PhaserEmitter } } } } | null;
  video: HTMLVideoElement | null;
  /** The video cache key it loaded (Video#load sets it before loadHandler runs), '' for a URL. */
  cacheKey: string;
  /** Gives the element its source and starts loading it (Video#load, loadURL and changeSource call it). */
  loadHandler(url?: string | null, noAudio?: boolean, crossOrigin?: string, stream?: MediaStream): unknown;
  /** Stops the Video and emits its `error` event. */
  loadErrorHandler(event: unknown): void;
}

/** The slice of the Phaser namespace the adapter uses: from `import * as Phaser from 'phaser'`. */
export interface PhaserNamespace {
  Loader: {
    File: new (loader: any, fileConfig: any) => any;
    LoaderPlugin: { prototype: any };
    FileTypesManager: { register(key: string, factory: (...args: any[]) => unknown): void };
    GetURL(file: { url: unknown }, baseURL: string): string | false;
    FILE_PENDING: number;
    FILE_LOADING: number;
    FILE_LOADED: number;
    FILE_FAILED: number;
    FILE_PROCESSING: number;
    FILE_POPULATED: number;
    FILE_PENDING_DESTROY: number;
  };
  /** Absent from custom builds without it. */
  GameObjects?: { Video?: { prototype: unknown } };
}

export type { IndexedAssetSource };
