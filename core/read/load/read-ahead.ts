/**
 * Read-ahead of references: when the reader hands out a file that references
 * others (a glTF's buffers and images, a .glb's JSON chunk, an atlas's or bitmap font's pages, a
 * Tiled map's tilesets and images), it starts the loads of those files at once, before the engine
 * has parsed the file and asked for them: a model costs one round trip instead of two, something
 * loose files cannot do. The references are read by the one reference reader `--group auto`
 * uses (core/format/references.ts), part of the entry: a referrer handed out is read at once.
 *
 * Bounded: files the index lists only (never a URL outside it), each file read for references
 * once per source (a reference cycle ends there), at most `MAX_READ_AHEAD` files started per
 * referrer, and the reader never reads ahead of a file it read ahead (one level: what the
 * engine reads is what it parses). A Phaser pack is not read ahead: which of its sections a
 * scene loads is the game's choice (`load.pack(key, url, section)`), and the pack's loader
 * queues its files at once anyway.
 */
import type { IndexView } from '../open/index-view.js';
import * as references from './read-ahead-references.js';

/** Files started ahead of one referrer, at most. */
export const MAX_READ_AHEAD = 1000;

/** The extensions read ahead of: those `--group auto` reads (format/references.ts REFERRER_EXTENSIONS; a pack's `.json` is not read ahead of). */
const READ_AHEAD_EXTENSIONS = new Set(['gltf', 'glb', 'json', 'tmj', 'tsj', 'xml', 'fnt', 'tsx', 'tmx']);

export class ReadAhead {
  readonly #view: IndexView;
  readonly #start: (paths: string[]) => void;
  /** Files handed out (and so read for references, where they may name others), by path. */
  readonly #read = new Set<string>();
  /** Files the game has asked for (its reads started): a read-ahead leaves them to those reads. */
  readonly #asked = new Set<string>();
  /** Files started ahead: not read ahead of in turn. */
  readonly #ahead = new Set<string>();
  #listed: Set<string> | undefined;

  /** `start` begins the loads of listed paths (the source's prefetch that holds without pinning). */
  constructor(view: IndexView, start: (paths: string[]) => void) {
    this.#view = view;
    this.#start = start;
  }

  /** A file is being handed out: read it for references and start what it names, at once, before the caller has the bytes. */
  handingOut(path: string, bytes: Uint8Array): void {
    // Every file handed out is remembered: one the game has read already is never started ahead.
    const again = this.#read.has(path);
    this.#read.add(path);
    if (again || this.#ahead.has(path) || !READ_AHEAD_EXTENSIONS.has(extensionOf(path))) return;
    const named = references.namedFiles(path, bytes, (this.#listed ??= new Set(this.#view.paths())));
    const ahead = named.filter((target) => !this.#ahead.has(target) && !this.#read.has(target)).slice(0, MAX_READ_AHEAD);
    for (const target of ahead) this.#ahead.add(target);
    if (ahead.length > 0) this.#start(ahead);
  }

  /** The game asks for `path`: its read fetches or joins what it needs, the read-ahead no longer starts it. */
  asking(path: string): void {
    this.#asked.add(path);
  }

  /** Whether `path` is still worth starting ahead: neither asked for nor handed out by this source yet. */
  wanted(path: string): boolean {
    return !this.#asked.has(path) && !this.#read.has(path);
  }
}

const extensionOf = (path: string) => {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot < 0 ? '' : name.slice(dot + 1).toLowerCase();
};
