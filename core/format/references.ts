/**
 * Which project files a file references (SPEC §6 "Groups", §8 `--group auto`), as far as the
 * formats below can be read: the one reference reader of the writer's `--group auto`
 * (core/publish/references.ts groups by it) and of the reader's read-ahead (core/read/load/read-ahead.ts
 * imports it on demand), so the browser build carries this and never the writer.
 * FORMAT.md "`--group auto` (§6, §8)" documents every format read here and every rule.
 *
 * A file that cannot be read as its format (bad JSON, a truncated .glb) references nothing: a
 * grouping never fails a publish.
 */
import { angelCodePageFiles, startsWithTag, withoutXmlComments, xmlAttributeValues, type ScanWork } from './markup-scan.js';

/** Counts the steps `referencesOf` takes (characters visited, references looked at): linear in the file's size. */
export type ReferenceWork = ScanWork;

/** The extensions of the files `--group auto` reads for references (case-insensitive). */
export const REFERRER_EXTENSIONS: readonly string[] = ['gltf', 'glb', 'json', 'tmj', 'tsj', 'xml', 'fnt', 'tsx', 'tmx'];

/** Referrers larger than this (a .glb: its JSON chunk) are not read: they reference nothing. */
export const REFERRER_READ_LIMIT_BYTES = 64 * 1024 * 1024;

const extensionOf = (path: string) =>
  path
    .slice(path.lastIndexOf('/') + 1)
    .split('.')
    .pop()!
    .toLowerCase();

/** Whether `--group auto` reads `path` for references (by its extension). */
export function mayReference(path: string): boolean {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return name.includes('.') && REFERRER_EXTENSIONS.includes(extensionOf(name));
}

/**
 * One reference as written in a file: the project paths it may name, most likely first. It
 * names the first of them the project lists, or nothing.
 */
type Reference = readonly (string | undefined)[];

/**
 * The project files that the file at `path`, holding `bytes`, references: listed paths only
 * (those in `listed`), each once, in the order the file names them, never `path` itself. For a
 * .glb, `bytes` may stop after its JSON chunk. Takes time linear in the size of `bytes`, which
 * `work`, when given, counts in steps.
 */
export function referencesOf(path: string, bytes: Uint8Array, listed: ReadonlySet<string>, work: ReferenceWork = { steps: 0 }): string[] {
  return fileReferences(path, bytes, listed, work).references;
}

/**
 * One section of a Phaser pack file (a top-level object with a `files` array; SPEC §6, FORMAT.md
 * "`--group auto`"): its key, and the listed files its entries name, each once, in their order.
 */
export interface PackSection {
  key: string;
  references: string[];
}

/**
 * What `collectReferences` gives and `groupByReferences` takes: each referring file's references
 * (`referencesOf`), and, in `sections`, the sections of each Phaser pack file one of whose
 * sections names a listed file, in the order Phaser's `addPack` visits them (the pack's key order).
 */
export type ReferenceMap = ReadonlyMap<string, readonly string[]> & {
  readonly sections?: ReadonlyMap<string, readonly PackSection[]>;
};

/** A file's references (`referencesOf`) and, for a Phaser pack file, its sections' (`PackSection`). */
export function fileReferences(
  path: string,
  bytes: Uint8Array,
  listed: ReadonlySet<string>,
  work: ReferenceWork,
): { references: string[]; sections: PackSection[] } {
  const found = new Set<string>(); // a Set keeps the first naming's place
  const target = (reference: Reference) => {
    work.steps += reference.length;
    const named = reference.find((candidate): candidate is string => candidate !== undefined && listed.has(candidate));
    return named !== undefined && named !== path ? named : undefined;
  };
  const read = readReferences(path, bytes, work);
  const sections = read.sections.map(({ key, references }) => {
    const named = new Set<string>();
    for (const reference of references) {
      const file = target(reference);
      if (file === undefined) continue;
      named.add(file);
      found.add(file);
    }
    return { key, references: [...named] };
  });
  for (const reference of read.references) {
    const file = target(reference);
    if (file !== undefined) found.add(file);
  }
  return { references: [...found], sections: sections.some((section) => section.references.length > 0) ? sections : [] };
}

/** A file's references as written: a Phaser pack's by section (named first), then every other shape's. */
interface ReadReferences {
  sections: { key: string; references: Reference[] }[];
  references: Reference[];
}

function readReferences(path: string, bytes: Uint8Array, work: ScanWork): ReadReferences {
  const folder = folderOf(path);
  const only = (references: Reference[]): ReadReferences => ({ sections: [], references });
  switch (extensionOf(path)) {
    case 'glb':
      return only(gltfReferences(glbJson(bytes), folder));
    case 'gltf':
      return only(gltfReferences(parseJson(bytes), folder));
    case 'json':
    case 'tmj':
    case 'tsj': {
      const json = parseJson(bytes);
      return isObject(json) ? { sections: phaserPackSections(json, folder), references: jsonReferences(json, folder, work) } : only([]);
    }
    case 'fnt': {
      const text = decodeText(bytes);
      if (text === undefined) return only([]);
      return only(startsWithTag(text, work) ? xmlReferences(text, folder, work) : angelCodeTextReferences(text, folder, work));
    }
    default: {
      const text = decodeText(bytes);
      return only(text === undefined ? [] : xmlReferences(text, folder, work));
    }
  }
}

// ---- paths and URLs ----

function folderOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash < 0 ? '' : path.slice(0, slash);
}

/** A scheme (`data:`, `http:`, `blob:`, a drive `C:`) or a site-absolute path: nothing a relative reference can map to a project path. */
const ABSOLUTE = /^(?:[A-Za-z][A-Za-z0-9+.-]*:|\/)/;

/**
 * `parts` joined and normalized as one relative path: empty and `.` segments dropped, `..`
 * taking back the segment before it. Undefined when `..` would leave the project root.
 */
function joinPaths(...parts: (string | undefined)[]): string | undefined {
  const segments: string[] = [];
  for (const part of parts) {
    if (part === undefined) return undefined;
    for (const segment of part.split('/')) {
      if (segment === '' || segment === '.') continue;
      if (segment !== '..') segments.push(segment);
      else if (segments.pop() === undefined) return undefined;
    }
  }
  return segments.length > 0 ? segments.join('/') : undefined;
}

/** A file name as a tool writes it (Tiled, TexturePacker, AngelCode): `\` read as `/`, used as written. */
function fileName(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const name = value.replace(/\\/g, '/');
  return ABSOLUTE.test(name) ? undefined : name;
}

/** A relative URL (glTF, Phaser): `\` read as `/`, query and fragment dropped, percent-decoded. */
function relativeUrl(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const url = value.replace(/\\/g, '/');
  if (ABSOLUTE.test(url)) return undefined;
  try {
    return decodeURIComponent(url.replace(/[?#][\s\S]*$/, ''));
  } catch {
    return undefined; // a malformed escape (`%zz`) names no file
  }
}

// ---- reading the bytes ----

function decodeText(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes); // drops a leading BOM
  } catch {
    return undefined;
  }
}

function parseJson(bytes: Uint8Array): unknown {
  const text = decodeText(bytes);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const GLB_MAGIC = 0x46546c67; // "glTF", little-endian
const GLB_JSON_CHUNK = 0x4e4f534a; // "JSON"

/** The JSON chunk of a binary glTF (glTF 2.0 §4.4: a 12-byte header, then the JSON chunk first), parsed. */
function glbJson(bytes: Uint8Array): unknown {
  if (bytes.length < 20) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== GLB_MAGIC || view.getUint32(4, true) !== 2 || view.getUint32(16, true) !== GLB_JSON_CHUNK)
    return undefined;
  const length = view.getUint32(12, true);
  if (20 + length > bytes.length) return undefined;
  return parseJson(bytes.subarray(20, 20 + length));
}

/** How many bytes of a .glb hold its header and JSON chunk (from its first 20 bytes), or undefined when it is not a glTF 2.0 binary. */
export function glbJsonEnd(head: Uint8Array): number | undefined {
  if (head.length < 20) return undefined;
  const view = new DataView(head.buffer, head.byteOffset, 20);
  if (view.getUint32(0, true) !== GLB_MAGIC || view.getUint32(16, true) !== GLB_JSON_CHUNK) return undefined;
  return 20 + view.getUint32(12, true);
}

// ---- formats ----

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);
const objects = (value: unknown): JsonObject[] => (Array.isArray(value) ? value.filter(isObject) : []);

/** glTF 2.0: `buffers[].uri` and `images[].uri`, relative to the .gltf (or .glb); `data:` URIs are not files. */
function gltfReferences(gltf: unknown, folder: string): Reference[] {
  if (!isObject(gltf)) return [];
  return [...objects(gltf.buffers), ...objects(gltf.images)].map((item) => [joinPaths(folder, relativeUrl(item.uri))]);
}

/**
 * Every JSON shape read but the Phaser pack (a file may match several; its pack sections are
 * `phaserPackSections`): atlas, multiatlas, audio sprite, bitmap font, Tiled map and tileset.
 */
function jsonReferences(json: JsonObject, folder: string, work: ScanWork): Reference[] {
  return [
    ...atlasReferences(json, folder),
    ...multiAtlasReferences(json, folder),
    ...audioSpriteReferences(json, folder),
    ...bitmapFontJsonReferences(json, folder),
    ...tiledReferences(json, folder, work),
  ];
}

/** A file name beside the referring file (`folder/name`). */
const beside = (folder: string, name: string | undefined): Reference => [joinPaths(folder, name)];

/** A URL the game loads through Phaser's loader path (usually the asset root), or else beside the referring file. */
const rootOrBeside = (folder: string, url: string | undefined): Reference => [joinPaths(url), joinPaths(folder, url)];

/** TexturePacker (and Aseprite) JSON, hash or array: `meta.image`, beside the JSON. */
function atlasReferences(json: JsonObject, folder: string): Reference[] {
  if (!isObject(json.meta) || json.frames === undefined) return [];
  return [beside(folder, fileName(json.meta.image))];
}

/** Phaser multiatlas (TexturePacker "Phaser 3"): `textures[].image`, URLs Phaser loads through its loader path. */
function multiAtlasReferences(json: JsonObject, folder: string): Reference[] {
  return objects(json.textures)
    .filter((texture) => typeof texture.image === 'string')
    .map((texture) => rootOrBeside(folder, relativeUrl(texture.image)));
}

/** An audio sprite's JSON (audiosprite's format, Phaser `audioSprite`): `resources[]`, URLs Phaser loads when no audio URL is given. */
function audioSpriteReferences(json: JsonObject, folder: string): Reference[] {
  if (!Array.isArray(json.resources) || !isObject(json.spritemap)) return [];
  return json.resources.map((resource) => rootOrBeside(folder, relativeUrl(resource)));
}

/** AngelCode BMFont as JSON (msdf-bmfont, bmfont2json): `pages[]`, beside the JSON. */
function bitmapFontJsonReferences(json: JsonObject, folder: string): Reference[] {
  if (!Array.isArray(json.pages) || !Array.isArray(json.chars)) return [];
  return json.pages.map((page) => beside(folder, fileName(page)));
}

/**
 * Tiled JSON, paths relative to the file: a map's `tilesets[].image` (embedded),
 * `tilesets[].source` (an external tileset, .tsx or .json) and image layers' `image` (group
 * layers included); a tileset's `image` and an image collection's `tiles[].image`.
 */
function tiledReferences(json: JsonObject, folder: string, work: ScanWork): Reference[] {
  const names: unknown[] = [];
  // Loops, not push(...items): a spread passes each item as an argument, and a tileset of
  // 200,000 tiles (or a map of as many layers) is past the engine's limit on arguments.
  const tileset = (set: JsonObject) => {
    names.push(set.image);
    for (const tile of objects(set.tiles)) names.push(tile.image);
  };
  if (Array.isArray(json.tilesets) && Array.isArray(json.layers)) {
    for (const set of objects(json.tilesets)) {
      names.push(set.source);
      tileset(set);
    }
    const layers = objects(json.layers);
    for (let layer = layers.pop(); layer !== undefined; layer = layers.pop()) {
      work.steps++;
      if (layer.type === 'imagelayer') names.push(layer.image);
      for (const inner of objects(layer.layers)) layers.push(inner);
    }
  } else if (json.type === 'tileset' || (typeof json.image === 'string' && json.tilewidth !== undefined)) {
    tileset(json);
  }
  return names.map((name) => beside(folder, fileName(name)));
}

/** Phaser's URL keys in a pack file's entries (its file types' config objects). */
const PACK_URL_KEYS = ['url', 'textureURL', 'atlasURL', 'fontDataURL', 'jsonURL', 'audioURL', 'normalMap'];

/**
 * A pack entry without a URL loads `<key>.<extension>` (Phaser's File): for each type, which URL
 * keys default so, the config key that overrides the extension, and its default.
 */
const PACK_DEFAULT_URLS: Record<string, readonly (readonly [urlKeys: readonly string[], extensionKey: string, extension: string])[]> = {
  image: [[['url'], 'extension', 'png']],
  spritesheet: [[['url'], 'extension', 'png']],
  json: [[['url'], 'extension', 'json']],
  pack: [[['url'], 'extension', 'json']],
  tilemapTiledJSON: [[['url'], 'extension', 'json']],
  text: [[['url'], 'extension', 'txt']],
  xml: [[['url'], 'extension', 'xml']],
  multiatlas: [[['url', 'atlasURL'], 'atlasExtension', 'json']],
  atlas: [
    [['textureURL'], 'textureExtension', 'png'],
    [['atlasURL'], 'atlasExtension', 'json'],
  ],
  bitmapFont: [
    [['textureURL'], 'textureExtension', 'png'],
    [['fontDataURL'], 'fontDataExtension', 'xml'],
  ],
};

/** The URL strings of one entry's value: a string, an array of strings, or `{ url }` objects (audio and video). */
function urlStrings(value: unknown): string[] {
  const items = Array.isArray(value) ? value : [value];
  return items.flatMap((item) => (typeof item === 'string' ? [item] : isObject(item) && typeof item.url === 'string' ? [item.url] : []));
}

/** Phaser's `setPath` and `setBaseURL`: a non-empty value ends with `/`. */
const withSlash = (value: string) => (value === '' || value.endsWith('/') ? value : `${value}/`);

/**
 * A Phaser pack file (LoaderPlugin#addPack): each section (a top-level object with a `files`
 * array) loads its entries at `baseURL + path + url`, where `path` and `baseURL` are the
 * section's or else the loader's. The loader's are taken to be the asset root; an absolute
 * `baseURL` (a CDN) is left out. Each URL is tried from the asset root, then beside the pack.
 * Sections come in the order `addPack` visits them: its `for…in`, the pack's key order.
 */
function phaserPackSections(json: JsonObject, folder: string): { key: string; references: Reference[] }[] {
  const sections: { key: string; references: Reference[] }[] = [];
  for (const [key, section] of Object.entries(json)) {
    if (!isObject(section) || !Array.isArray(section.files)) continue;
    const references: Reference[] = [];
    const baseURL = typeof section.baseURL === 'string' && !ABSOLUTE.test(section.baseURL) ? withSlash(section.baseURL) : '';
    const path = typeof section.path === 'string' ? withSlash(section.path) : '';
    for (const entry of objects(section.files)) {
      const type = typeof entry.type === 'string' ? entry.type : section.defaultType;
      for (const url of packEntryUrls(entry, typeof type === 'string' ? type : '')) {
        // Phaser prepends the path to a relative URL only (File: not to http(s)://, //, data:, blob:).
        references.push(rootOrBeside(folder, ABSOLUTE.test(url) ? undefined : relativeUrl(baseURL + path + url)));
      }
    }
    sections.push({ key, references });
  }
  return sections;
}

function packEntryUrls(entry: JsonObject, type: string): string[] {
  const urls = PACK_URL_KEYS.flatMap((key) => urlStrings(entry[key]));
  for (const [urlKeys, extensionKey, extension] of PACK_DEFAULT_URLS[type] ?? []) {
    if (urlKeys.some((key) => entry[key] !== undefined) || typeof entry.key !== 'string') continue;
    urls.push(`${entry.key}.${typeof entry[extensionKey] === 'string' ? entry[extensionKey] : extension}`);
  }
  return urls;
}

/** XML entities in an attribute value: the five named ones and numeric references. */
function decodeXmlEntities(value: string): string {
  const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
  return value.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_, name: string) => {
    if (!name.startsWith('#')) return named[name]!;
    const code = name[1] === 'x' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : '';
  });
}

/**
 * XML, paths relative to the file: AngelCode BMFont `<page file>`, a Starling/Sparrow atlas
 * (Phaser `atlasXML`) `<TextureAtlas imagePath>`, Tiled TMX/TSX `<tileset source>` and `<image source>`.
 * Scanned in linear time (markup-scan.ts): comments left out, then each element's tags.
 */
function xmlReferences(text: string, folder: string, work: ScanWork): Reference[] {
  const xml = withoutXmlComments(text, work);
  const names = [
    ...xmlAttributeValues(xml, 'page', 'file', work),
    ...xmlAttributeValues(xml, 'TextureAtlas', 'imagePath', work),
    ...xmlAttributeValues(xml, 'tileset', 'source', work),
    ...xmlAttributeValues(xml, 'image', 'source', work),
  ];
  return names.map((name) => beside(folder, fileName(decodeXmlEntities(name))));
}

/** AngelCode BMFont's text form (.fnt): `page id=0 file="font.png"` lines, beside the file. */
function angelCodeTextReferences(text: string, folder: string, work: ScanWork): Reference[] {
  return angelCodePageFiles(text, work).map((name) => beside(folder, fileName(name)));
}
