/**
 * What a file that is not an AWKB bundle looks like, from its first bytes: inspect is handed a
 * PNG or an index now and then, and "bad magic 89504e47" alone leaves the reader to decode it.
 * Only a few common kinds of a game's assets (and the files that sit beside bundles) are known.
 */

const ascii = (text: string) => Array.from(text, (char) => char.charCodeAt(0));

const startsWith = (bytes: Uint8Array, prefix: readonly number[], at = 0) =>
  bytes.length >= at + prefix.length && prefix.every((byte, i) => bytes[at + i] === byte);

/** Signatures at the start of a file (RIFF and JSON, which need more than a prefix, are below). */
const MAGICS: [number[], string][] = [
  [[0x89, ...ascii('PNG\r\n\x1a\n')], 'a PNG image'],
  [[0xff, 0xd8, 0xff], 'a JPEG image'],
  [ascii('GIF87a'), 'a GIF image'],
  [ascii('GIF89a'), 'a GIF image'],
  [ascii('OggS'), 'an Ogg file (audio or video)'],
  [ascii('glTF'), 'a binary glTF model (.glb)'],
  [ascii('PK\x03\x04'), 'a ZIP archive'],
  [ascii('PK\x05\x06'), 'an empty ZIP archive'],
  [[0x1f, 0x8b], 'gzip-compressed data (a server or tool gzipped it?)'],
  [ascii('ID3'), 'an MP3 file'],
  [ascii('fLaC'), 'a FLAC audio file'],
  [ascii('wOFF'), 'a WOFF font'],
  [ascii('wOF2'), 'a WOFF2 font'],
];

/** `a PNG image`, `JSON text`…, or undefined when the start of `bytes` is none of the kinds known. */
export function fileKind(bytes: Uint8Array): string | undefined {
  for (const [magic, kind] of MAGICS) if (startsWith(bytes, magic)) return kind;
  if (startsWith(bytes, ascii('RIFF'))) {
    if (startsWith(bytes, ascii('WAVE'), 8)) return 'a WAV audio file';
    if (startsWith(bytes, ascii('WEBP'), 8)) return 'a WebP image';
    return 'a RIFF file';
  }
  const text = textStart(bytes);
  if (text === undefined) return undefined;
  if (/^[{[]/.test(text)) return /"formatVersion"/.test(text) ? 'a project index (JSON text)' : 'JSON text';
  if (/^<(!doctype html|html)/i.test(text)) return 'an HTML page';
  if (text.startsWith('<')) return 'markup (XML or HTML)';
  return 'text';
}

/** The first bytes as text without leading blanks (or a BOM), when they are printable UTF-8. */
function textStart(bytes: Uint8Array): string | undefined {
  let text: string;
  try {
    // The cut may split a character: a lone trailing fragment is dropped, not refused.
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, 256), { stream: true });
  } catch {
    return undefined;
  }
  const trimmed = text.replace(/^\uFEFF/, '').trimStart();
  // eslint-disable-next-line no-control-regex -- control characters (other than blanks) mean binary data
  return trimmed === '' || /[\x00-\x08\x0e-\x1f\x7f]/.test(trimmed) ? undefined : trimmed;
}

/** The first `count` bytes as hex pairs, `89 50 4e 47`. */
export function hexStart(bytes: Uint8Array, count = 8): string {
  return Array.from(bytes.subarray(0, count), (byte) => byte.toString(16).padStart(2, '0')).join(' ');
}
