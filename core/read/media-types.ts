/** Media types by file extension, for object URLs handed to engines (SVG and audio care). */
const TYPES: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif', avif: 'image/avif',
  svg: 'image/svg+xml', ktx2: 'image/ktx2', basis: 'application/octet-stream', dds: 'image/vnd-ms.dds', env: 'application/octet-stream',
  ogg: 'audio/ogg', mp3: 'audio/mpeg', wav: 'audio/wav', m4a: 'audio/mp4', aac: 'audio/aac', opus: 'audio/ogg', flac: 'audio/flac', webm: 'video/webm', mp4: 'video/mp4',
  json: 'application/json', gltf: 'model/gltf+json', glb: 'model/gltf-binary', bin: 'application/octet-stream', babylon: 'application/json',
  txt: 'text/plain', xml: 'application/xml', fnt: 'application/xml', html: 'text/html', css: 'text/css', js: 'text/javascript', wasm: 'application/wasm',
};

export function mediaTypeOf(path: string): string {
  const dot = path.lastIndexOf('.');
  const extension = dot < 0 ? '' : path.slice(dot + 1).toLowerCase();
  return TYPES[extension] ?? 'application/octet-stream';
}
