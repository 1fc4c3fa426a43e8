/**
 * Media types by file extension: one table for the object URLs handed to engines (SVG and audio
 * care about the Blob's type) and for the local server's Content-Type (core/node/server.ts).
 * It lives in format/ so that the server takes it without importing the reader.
 */
const TYPES: Record<string, string> = {
  awkb: 'application/octet-stream',
  bin: 'application/octet-stream',
  basis: 'application/octet-stream',
  env: 'application/octet-stream',
  json: 'application/json',
  map: 'application/json',
  babylon: 'application/json',
  html: 'text/html',
  htm: 'text/html',
  js: 'text/javascript',
  mjs: 'text/javascript',
  cjs: 'text/javascript',
  css: 'text/css',
  txt: 'text/plain',
  csv: 'text/csv',
  xml: 'application/xml',
  // BMFont descriptors come as text or XML; engines fetch them as text either way.
  fnt: 'text/plain',
  atlas: 'text/plain',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  avif: 'image/avif',
  gif: 'image/gif',
  svg: 'image/svg+xml',
  ico: 'image/x-icon',
  ktx2: 'image/ktx2',
  dds: 'image/vnd-ms.dds',
  glb: 'model/gltf-binary',
  gltf: 'model/gltf+json',
  ogg: 'audio/ogg',
  opus: 'audio/ogg',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  m4a: 'audio/mp4',
  aac: 'audio/aac',
  flac: 'audio/flac',
  mp4: 'video/mp4',
  webm: 'video/webm',
  wasm: 'application/wasm',
  woff: 'font/woff',
  woff2: 'font/woff2',
  ttf: 'font/ttf',
  otf: 'font/otf',
};

/** The media type of a file by its extension, `application/octet-stream` when unknown. */
export function mediaTypeOf(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  const extension = dot < 0 ? '' : name.slice(dot + 1).toLowerCase();
  return TYPES[extension] ?? 'application/octet-stream';
}

/** An HTTP Content-Type: the media type, with `charset=utf-8` for text. */
export function contentTypeOf(path: string): string {
  const type = mediaTypeOf(path);
  return type.startsWith('text/') || type === 'application/json' || type === 'application/xml' ? `${type}; charset=utf-8` : type;
}
