/**
 * Serving one Phaser file from a bundle. Every file the loader is given has its `load` wrapped
 * (LoaderPlugin#addFile): when its URL maps into a loaded index, the file's bytes come from the
 * verified bundle instead of the network; otherwise it runs its own `load` untouched.
 *
 * Two ways in, chosen by what the file's own `load` would do (File.js, filetypes/*.js):
 * - it would use XHR (Phaser's File#load on a pending file): it gets a finished "XHR" whose
 *   response has the type its `xhrSettings.responseType` asks for, then Phaser's `onLoad` runs
 *   and the file processes as if downloaded;
 * - it loads by URL (ImageFile#loadImage, HTML5AudioFile, FontFile): its URL becomes an object
 *   URL of the verified bytes and its own `load` runs. HTML5 audio keeps using that URL, so it
 *   lives while its cache entry does; the others' is revoked once processed.
 * A VideoFile downloads nothing during preload, so it is left alone: its Video game object reads
 * the member when it first loads it (video.ts).
 */
import { mediaTypeOf } from '../../core/format/media-types.js';
import { absoluteUrl } from '../../core/page/project-urls.js';
import { gameStateOf, type AwkbGameState, type MountedIndex } from './game-state.js';
import { LoadRun, reportFileBytes } from './load-run.js';
import type { PhaserFile, PhaserNamespace } from './phaser-shapes.js';

const wrapped = new WeakSet<PhaserFile>();

/** Makes `file` load from a bundle when its URL is in an index (called for every added file). */
export function wrapFileLoad(phaser: PhaserNamespace, file: PhaserFile): void {
  if (wrapped.has(file) || file.type === 'awkbIndex' || file.type === 'video') return;
  wrapped.add(file);
  const ownLoad = file.load;
  file.load = function awkbLoad(this: PhaserFile) {
    const game = this.loader?.systems?.game;
    const state = game ? gameStateOf(game) : undefined;
    if (!state) return ownLoad.call(this);
    const settled = state.indexesSettled();
    // Nothing opening: decide now, so a game without bundles loads exactly as before.
    if (!settled) return route(phaser, this, state, ownLoad);
    void settled.then(() => route(phaser, this, state, ownLoad));
  };
}

function route(phaser: PhaserNamespace, file: PhaserFile, state: AwkbGameState, ownLoad: () => void): void {
  const loader = file.loader;
  if (!loader) return; // the game was destroyed while the index was opening
  const src = typeof file.url === 'string' ? phaser.Loader.GetURL(file, loader.baseURL) : false;
  const url = src ? absoluteUrl(src) : undefined;
  const found = url ? state.find(url) : undefined;
  if (!found) {
    if (url) state.noticeLoose(url);
    return ownLoad.call(file);
  }
  void serve(phaser, file, state, found.mounted, found.path, ownLoad);
}

async function serve(
  phaser: PhaserNamespace,
  file: PhaserFile,
  state: AwkbGameState,
  mounted: MountedIndex,
  path: string,
  ownLoad: () => void,
): Promise<void> {
  const { Loader } = phaser;
  const loadsByXhr = ownLoad === Loader.File.prototype.load && file.state === Loader.FILE_PENDING;
  const loader = file.loader!;
  if (loadsByXhr) {
    file.state = Loader.FILE_LOADING;
    file.src = String(Loader.GetURL(file, loader.baseURL));
  }
  let bytes: Uint8Array;
  try {
    bytes = await LoadRun.of(loader, state).read(mounted, path, file);
  } catch (error) {
    return fail(phaser, file, path, error);
  }
  if (!file.loader) return;
  reportFileBytes(file, bytes.length, 1);
  if (loadsByXhr) {
    const xhr = finishedXhr(file.src, file.xhrSettings.responseType, bytes, path);
    file.xhrLoader = xhr;
    file.onLoad(xhr, { target: xhr });
  } else {
    file.url = objectUrlFor(phaser, file, state, bytes, path);
    ownLoad.call(file);
  }
}

/** What Phaser's XHRLoader would have left on the file (File#onLoad reads status and response). */
function finishedXhr(responseURL: string, responseType: XMLHttpRequestResponseType, bytes: Uint8Array, path: string) {
  const base = { status: 200, readyState: 4, responseURL, responseType };
  switch (responseType) {
    case 'blob':
      return { ...base, response: new Blob([bytes as Uint8Array<ArrayBuffer>], { type: mediaTypeOf(path) }) };
    case 'arraybuffer':
      // decodeAudioData detaches what it is given: the reader hands each caller its own bytes.
      return { ...base, response: ownBuffer(bytes) };
    case 'json': {
      const text = new TextDecoder().decode(bytes);
      return { ...base, response: JSON.parse(text), responseText: text };
    }
    default: {
      const text = new TextDecoder().decode(bytes);
      return { ...base, response: text, responseText: text };
    }
  }
}

/** The bytes' own ArrayBuffer when they span all of it, else a copy of just them. */
function ownBuffer(bytes: Uint8Array): ArrayBuffer {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  return whole ? (bytes.buffer as ArrayBuffer) : bytes.slice().buffer;
}

function objectUrlFor(phaser: PhaserNamespace, file: PhaserFile, state: AwkbGameState, bytes: Uint8Array, path: string): string {
  const url = URL.createObjectURL(new Blob([bytes as Uint8Array<ArrayBuffer>], { type: mediaTypeOf(path) }));
  let revoked = false;
  const revoke = () => {
    if (!revoked) URL.revokeObjectURL(url);
    revoked = true;
  };
  const keeps = file.type === 'audio';
  // Called for every file when its load ends (LoaderPlugin#loadComplete), failed or not.
  const ownDestroy = file.destroy;
  file.destroy = function () {
    const completed = this.state === phaser.Loader.FILE_PENDING_DESTROY;
    if (keeps && completed && this.cache) state.keepUrl(this.cache, this.key, url);
    else revoke();
    return ownDestroy.call(this);
  };
  if (!keeps) {
    for (const name of ['onProcessComplete', 'onProcessError'] as const) {
      const own = file[name];
      file[name] = function () {
        own.call(this);
        revoke();
      };
    }
  }
  return url;
}

/**
 * A file whose bytes could not be had fails as Phaser files fail: `loaderror`, no retry (the
 * reader already retried what is safe to retry), the error on `file.error` and in the console.
 */
function fail(phaser: PhaserNamespace, file: PhaserFile, path: string, error: unknown): void {
  const loader = file.loader;
  if (!loader) return; // the game was destroyed mid-load: nobody is waiting for this file
  file.error = error;
  console.error(
    `awake-bundle: ${file.type} "${file.key}" (${path}) was not loaded: ${error instanceof Error ? error.message : String(error)}`,
  );
  file.state = phaser.Loader.FILE_FAILED;
  loader.nextFile(file, false);
}
