/**
 * Read-ahead of references (issue 27, item 3): when the reader hands out a file that references
 * others (a glTF's buffers and images, a .glb's JSON chunk, an atlas's or bitmap font's pages, a
 * Tiled map's tilesets and images), it starts the loads of those files at once, before the engine
 * has parsed the file and asked for them: a model costs one round trip instead of two, something
 * loose files cannot do. The references are read by the one reference reader `--group auto`
 * uses (core/format/references.ts), imported with read-ahead-references.ts the first time a file
 * that may reference others is handed out, so a game that reads none carries none of it.
 *
 * Bounded: files the index lists only (never a URL outside it), each file read for references
 * once per source (a reference cycle ends there), at most `MAX_READ_AHEAD` files started per
 * referrer, and the reader never reads ahead of a file it read ahead (one level: what the
 * engine reads is what it parses). A Phaser pack is not read ahead: which of its sections a
 * scene loads is the game's choice (`load.pack(key, url, section)`), and the pack's loader
 * queues its files at once anyway.
 */
import type { IndexView } from './index-view.js';

/** Files started ahead of one referrer, at most. */
export const MAX_READ_AHEAD = 1000;

/** The extensions read ahead of: those `--group auto` reads (format/references.ts REFERRER_EXTENSIONS; a pack's `.json` is not read ahead of). */
const READ_AHEAD_EXTENSIONS = new Set(['gltf', 'glb', 'json', 'tmj', 'tsj', 'xml', 'fnt', 'tsx', 'tmx']);

type References = typeof import('./read-ahead-references.js');

let referenceReader: Promise<References | undefined> | undefined;

/** The reference reader (read-ahead-references.ts), imported once per page; `undefined` if its chunk cannot be imported. */
export function importReferenceReader(): Promise<References | undefined> {
  return (referenceReader ??= import('./read-ahead-references.js').catch(() => undefined));
}

export class ReadAhead {
  readonly #view: IndexView;
  readonly #start: (paths: string[]) => void;
  /** Files handed out (and so read for references, where they may name others), by path. */
  readonly #read = new Set<string>();
  /** Files started ahead: not read ahead of in turn. */
  readonly #ahead = new Set<string>();
  #listed: Set<string> | undefined;
  #loading: Promise<References | undefined> | undefined;
  #loaded: References | undefined;

  /** `start` begins the loads of listed paths (the source's prefetch that holds without pinning). */
  constructor(view: IndexView, start: (paths: string[]) => void) {
    this.#view = view;
    this.#start = start;
    // The reference reader is imported as the source opens, where its index lists a file it
    // reads, so that it is in by the time such a file is handed out (while the first bundles
    // download, not after: issue 27 item 6's tail).
    for (const path of view.paths()) {
      if (!READ_AHEAD_EXTENSIONS.has(extensionOf(path))) continue;
      void this.#import();
      break;
    }
  }

  #import(): Promise<References | undefined> {
    return (this.#loading ??= importReferenceReader());
  }

  /**
   * A file is being handed out: read it for references and start what it names. Synchronous on
   * the caller's bytes once the reference reader is imported; before, on a copy of what it needs
   * (a .glb's head and JSON chunk), since the caller owns the bytes once handed out.
   */
  handingOut(path: string, bytes: Uint8Array): void {
    const extension = extensionOf(path);
    // Every file handed out is remembered: one the game has read already is never started ahead.
    const again = this.#read.has(path);
    this.#read.add(path);
    if (again || this.#ahead.has(path) || !READ_AHEAD_EXTENSIONS.has(extension)) return;
    if (this.#loaded) return this.#follow(this.#loaded, path, bytes);
    const copy = bytes.slice(0, extension === 'glb' ? glbHead(bytes) : bytes.length);
    void this.#import().then((loaded) => {
      if (!loaded) return;
      this.#loaded = loaded;
      this.#follow(loaded, path, copy);
    });
  }

  /** Whether `path` is still worth starting ahead: not handed out by this source yet. */
  wanted(path: string): boolean {
    return !this.#read.has(path);
  }

  #follow(references: References, path: string, bytes: Uint8Array): void {
    const named = references.namedFiles(path, bytes, (this.#listed ??= new Set(this.#view.paths())));
    const ahead = named.filter((target) => !this.#ahead.has(target) && !this.#read.has(target)).slice(0, MAX_READ_AHEAD);
    for (const target of ahead) this.#ahead.add(target);
    if (ahead.length > 0) this.#start(ahead);
  }
}

const extensionOf = (path: string) => {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot < 0 ? '' : name.slice(dot + 1).toLowerCase();
};

/** The bytes of a .glb its header and JSON chunk take (its first 20 bytes say), or all when it is not one. */
function glbHead(bytes: Uint8Array): number {
  if (bytes.length < 20) return bytes.length;
  const view = new DataView(bytes.buffer, bytes.byteOffset, 20);
  return view.getUint32(0, true) === 0x46546c67 ? Math.min(bytes.length, 20 + view.getUint32(12, true)) : bytes.length;
}
