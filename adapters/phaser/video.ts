/**
 * Videos from bundles, read when a Video game object first loads them, not during `preload`.
 *
 * Phaser's VideoFile downloads nothing (3.60 to 4.x): its `load` completes at once and its cache
 * entry holds the file's URL; the Video game object gives that URL to its <video> element
 * (Video#load → loadHandler: `video.src = url; video.load()`), which streams the file when it
 * plays. The adapter leaves the VideoFile alone, so the loader completes without reading the
 * member, and reads it when a Video first loads that URL. An object URL cannot exist before its
 * bytes, so the element gets its source late: Phaser makes the element with the file's URL, the
 * adapter takes the `src` away before the element looks at it (its resource selection waits for
 * a stable state), and once the member is verified adds a <source> child with its object URL.
 * Adding a source child never runs the media load algorithm, so a `play()` asked for meanwhile is
 * not interrupted: the video plays once its source is in. Later Videos of the URL get the object
 * URL at once. (A MediaSource URL, the other way to hand out a URL before the bytes, needs the
 * codecs named and, for MP4, fragmented files.)
 */
import { absoluteUrl } from '../../core/page/project-urls.js';
import type { IndexedAssetSource } from '../../core/read/indexed-asset-source.js';
import type { PhaserEmitter, PhaserNamespace, PhaserVideo } from './phaser-shapes.js';

type VideoSource = string | Promise<string>;

/**
 * One game's videos from bundles, by the file's absolute URL: the read, then its object URL,
 * revoked when the video cache entry of that URL goes (`this.cache.video.remove(key)`) or the
 * game is destroyed.
 */
/** What the videos need of a game's state (game-state.ts `AwkbGameState`): the indexes mounted, and their opening. */
export interface VideoIndexes {
  indexesSettled(): Promise<unknown> | undefined;
  find(url: URL): { mounted: { source: IndexedAssetSource }; path: string } | undefined;
}

export class BundledVideos {
  readonly #byUrl = new Map<string, { objectUrl?: string; ready: Promise<string> }>();
  /** The URL of each video cache key a Video loaded (Phaser's `remove` event names the key alone). */
  readonly #urlOfKey = new Map<string, string>();
  #watching = false;

  constructor(private readonly state: VideoIndexes) {}

  /**
   * What the element should play for `url`: an object URL made before, a promise of one (or of
   * `url` itself, when the indexes still opening turn out not to list it), or `undefined` for a
   * URL no index lists.
   */
  sourceFor(url: string, from: { cacheKey?: string; cache?: { events?: PhaserEmitter } }): VideoSource | undefined {
    const absolute = absoluteUrl(url);
    if (!absolute) return undefined;
    if (from.cacheKey) this.#urlOfKey.set(from.cacheKey, absolute.href);
    this.#watch(from.cache);
    const known = this.#byUrl.get(absolute.href);
    if (known) return known.objectUrl ?? known.ready;
    const opening = this.state.indexesSettled();
    if (opening) return opening.then(() => this.#read(absolute) ?? url);
    return this.#read(absolute);
  }

  /** Reads the member `url` names, once; `undefined` when no index lists it. */
  #read(absolute: URL): Promise<string> | undefined {
    const known = this.#byUrl.get(absolute.href);
    if (known) return known.ready;
    const found = this.state.find(absolute);
    if (!found) return undefined;
    const entry: { objectUrl?: string; ready: Promise<string> } = { ready: Promise.resolve('') };
    const current = () => this.#byUrl.get(absolute.href) === entry;
    // Recorded as a load of its own: grouping by recorded loads keeps the video out of the
    // bundles that the scene's preload fetches.
    entry.ready = found.mounted.source
      .read(found.path, { loadName: `video:${found.path}` })
      .then((bytes) => {
        if (!current()) throw new Error('its video cache entry was removed while it was read');
        entry.objectUrl = URL.createObjectURL(new Blob([bytes as Uint8Array<ArrayBuffer>]));
        return entry.objectUrl;
      })
      .catch((error: unknown) => {
        if (current()) this.#byUrl.delete(absolute.href); // a later load tries again
        throw new Error(
          `awake-bundle: video ${found.path} (${absolute.href}) was not loaded: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      });
    this.#byUrl.set(absolute.href, entry);
    return entry.ready;
  }

  /** Forgets (and revokes) the object URL of a video cache entry removed. */
  #watch(videoCache?: { events?: PhaserEmitter }): void {
    if (this.#watching || !videoCache?.events) return;
    this.#watching = true;
    videoCache.events.on('remove', (_cache: unknown, key: string) => {
      const href = this.#urlOfKey.get(key);
      this.#urlOfKey.delete(key);
      if (href !== undefined) this.#forget(href);
    });
  }

  #forget(href: string): void {
    const entry = this.#byUrl.get(href);
    this.#byUrl.delete(href);
    if (entry?.objectUrl) URL.revokeObjectURL(entry.objectUrl);
  }

  dispose(): void {
    for (const href of [...this.#byUrl.keys()]) this.#forget(href);
    this.#urlOfKey.clear();
  }
}

/** The source each element waits for, so that a fill that comes after the Video loaded something else is dropped. */
const awaited = new WeakMap<HTMLMediaElement, Promise<string>>();

/** Makes Video game objects play files from bundles (see the header); once per Phaser namespace. */
export function patchVideoLoading(phaser: PhaserNamespace, stateOf: (video: PhaserVideo) => { videos: BundledVideos } | undefined): void {
  const proto = phaser.GameObjects?.Video?.prototype as PhaserVideo | undefined;
  if (!proto) return; // a custom build without Video
  const ownLoadHandler = proto.loadHandler;
  proto.loadHandler = function awkbLoadHandler(
    this: PhaserVideo,
    url?: string | null,
    noAudio?: boolean,
    crossOrigin?: string,
    stream?: MediaStream,
  ) {
    const state = stream || typeof url !== 'string' ? undefined : stateOf(this);
    const cache = this.scene?.sys.cache?.video;
    const source = state?.videos.sourceFor(url!, { ...(this.cacheKey ? { cacheKey: this.cacheKey } : {}), ...(cache ? { cache } : {}) });
    if (this.video) dropSources(this.video);
    if (source === undefined) return ownLoadHandler.apply(this, arguments as never);
    if (typeof source === 'string') return ownLoadHandler.call(this, source, noAudio, crossOrigin);
    const result = ownLoadHandler.call(this, url, noAudio, crossOrigin);
    const video = this.video!;
    // Before the element looks at its `src` (a stable state later), it has none: it waits.
    video.removeAttribute('src');
    video.load();
    awaited.set(video, source);
    source.then(
      (src) => {
        if (awaited.get(video) !== source || this.video !== video) return;
        awaited.delete(video);
        const child = document.createElement('source');
        child.src = src;
        child.dataset.awkb = '';
        video.appendChild(child);
      },
      (error: unknown) => {
        if (awaited.get(video) !== source || this.video !== video) return;
        awaited.delete(video);
        console.error(error instanceof Error ? error.message : String(error));
        // As an element that cannot load its file: Phaser's own handler stops the Video and emits `error`.
        this.loadErrorHandler(error);
      },
    );
    return result;
  };
}

/** Removes the sources the adapter gave an element before, and forgets a fill still to come. */
function dropSources(video: HTMLMediaElement): void {
  awaited.delete(video);
  for (const child of [...video.querySelectorAll('source[data-awkb]')]) child.remove();
}
