// The assets folders of bench/shapes.mjs's games, staged at build time from examples/assets (a
// byte copy of ../shared/assets), each source folder's licence and notice files kept beside what
// was taken from it. Copies that must be distinct files (so that neither the index nor a cache
// shares them) are made distinct as a game's own exports would be, each still a file its engine
// takes: a glTF buffer padded with seeded bytes (as test/browser-adapter-races.test.ts does), a
// JPEG with bytes after its end-of-image marker, an Ogg stream with another serial number on
// every page (the pages' CRCs recomputed), an MP3 with an ID3v1 tag. The long WAVs of
// phaser-audio are made here: the two short WAVs' samples, again and again at changing gains,
// over a low seeded noise floor (as a recording has), so that deflate saves about what it saves
// on real PCM.
import { createCipheriv, createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
/** examples/assets; ../shared/assets holds the same files (checked byte for byte when it is there). */
export const SOURCE_ASSETS = join(ROOT, 'examples', 'assets');

/** The bytes bench code and tests share: AES-128-CTR of zeros under a key from the seed (test/helpers/trees.ts seededBytes). */
export function seededBytes(size, seed) {
  const key = createHash('sha256').update(`seed:${seed}`).digest().subarray(0, 16);
  return createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(size));
}

const source = (path) => join(SOURCE_ASSETS, ...path.split('/'));
const readSource = (path) => readFileSync(source(path));

/** Writes `bytes` at `path` below `root`, making its folders. */
function put(root, path, bytes) {
  const to = join(root, ...path.split('/'));
  mkdirSync(dirname(to), { recursive: true });
  writeFileSync(to, bytes);
}

const LICENCE = /^(LICENSE|README|readme)[-.]/;

/** The licence and notice files of the source folder `from` (relative to examples/assets), copied into `to` below `root`. */
function putLicences(root, from, to = from) {
  for (const name of readdirSync(source(from)))
    if (LICENCE.test(name)) put(root, `${to ? `${to}/` : ''}${name}`, readSource(`${from ? `${from}/` : ''}${name}`));
}

/**
 * Copies `path` (relative to examples/assets) to `to` below `root`, with the licence files of its
 * folder and of each folder above it (examples/assets/atlas/ holds the emoji atlas's), each into
 * the matching folder above `to`.
 */
function copyWithLicences(root, path, to = path) {
  put(root, to, readSource(path));
  for (let from = dirname(path), into = dirname(to); from !== '.'; from = dirname(from), into = dirname(into))
    putLicences(root, from, into === '.' ? '' : into);
}

/** An empty folder for a stage, with examples/assets/SOURCES.md (every file's source and licence) at its top. */
function fresh(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  put(dir, 'SOURCES.md', readSource('SOURCES.md'));
}

// ---------------------------------------------------------------------------------------------
// Distinct copies

/** Ogg's page checksum: CRC-32, polynomial 0x04c11db7, MSB first, no reflection, 0 in and out. */
const OGG_CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let j = 0; j < 8; j++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

function oggCrc(bytes) {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) ^ OGG_CRC_TABLE[((crc >>> 24) ^ byte) & 0xff]) >>> 0;
  return crc;
}

/** The Ogg file `bytes` with every page's stream serial number `serial` and its CRC recomputed (checked against the original's first). */
export function withOggSerial(bytes, serial) {
  const out = Buffer.from(bytes);
  for (let at = 0; at < out.length;) {
    if (out.toString('latin1', at, at + 4) !== 'OggS') throw new Error(`not an Ogg page at byte ${at}`);
    const segments = out[at + 26];
    let body = 0;
    for (let i = 0; i < segments; i++) body += out[at + 27 + i];
    const end = at + 27 + segments + body;
    const stored = out.readUInt32LE(at + 22);
    out.writeUInt32LE(0, at + 22);
    if (oggCrc(out.subarray(at, end)) !== stored) throw new Error(`Ogg page at byte ${at}: its CRC does not check`);
    out.writeUInt32LE(serial >>> 0, at + 14);
    out.writeUInt32LE(oggCrc(out.subarray(at, end)), at + 22);
    at = end;
  }
  return out;
}

/** The MP3 `bytes` with an ID3v1 tag at its end (decoders skip it): title `title`. */
export function withId3v1(bytes, title) {
  const tag = Buffer.alloc(128);
  tag.write('TAG', 0, 'latin1');
  tag.write(title.slice(0, 30), 3, 'latin1');
  tag.write('awake-bundle bench', 33, 'latin1');
  tag[127] = 255;
  return Buffer.concat([bytes, tag]);
}

/** The 16-bit mono PCM samples of a WAV file (checks it is one at 44.1 kHz). */
function pcmOf(bytes, what) {
  if (bytes.toString('latin1', 0, 4) !== 'RIFF' || bytes.toString('latin1', 8, 12) !== 'WAVE') throw new Error(`${what}: not a WAV`);
  let format;
  for (let at = 12; at + 8 <= bytes.length;) {
    const id = bytes.toString('latin1', at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === 'fmt ')
      format = {
        tag: bytes.readUInt16LE(at + 8),
        channels: bytes.readUInt16LE(at + 10),
        rate: bytes.readUInt32LE(at + 12),
        bits: bytes.readUInt16LE(at + 22),
      };
    if (id === 'data') {
      if (!format || format.tag !== 1 || format.channels !== 1 || format.rate !== 44100 || format.bits !== 16)
        throw new Error(`${what}: not 16-bit mono PCM at 44.1 kHz (${JSON.stringify(format)})`);
      const samples = new Int16Array(size >> 1);
      for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(at + 8 + 2 * i);
      return samples;
    }
    at += 8 + size + (size & 1);
  }
  throw new Error(`${what}: no data chunk`);
}

/** A 16-bit mono 44.1 kHz WAV of `samples`. */
function wavOf(samples) {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + samples.length * 2, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(44100, 24);
  header.writeUInt32LE(88200, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(samples.length * 2, 40);
  return Buffer.concat([header, Buffer.from(samples.buffer, samples.byteOffset, samples.length * 2)]);
}

/**
 * A WAV of about `bytes`: the clips one after another, each at a gain of its own (from the
 * seed), with 20–120 ms between them, all over seeded noise of ±64 (−54 dBFS).
 */
export function ambienceWav(clips, bytes, seed) {
  const length = Math.floor((bytes - 44) / 2);
  const random = seededBytes(length * 2 + 4096, seed);
  const out = new Int16Array(length);
  for (let i = 0; i < length; i++) out[i] = (random.readInt16LE(2 * i) >> 9) | 0;
  let at = 0;
  for (let k = 0; at < length; k++) {
    const clip = clips[k % clips.length];
    const gain = 0.3 + (0.7 * random[(length * 2 + k) % random.length]) / 255;
    for (let i = 0; i < clip.length && at + i < length; i++)
      out[at + i] = Math.max(-32768, Math.min(32767, Math.round(out[at + i] + clip[i] * gain)));
    at += clip.length + Math.round(44.1 * (20 + (100 * random[(length * 2 + 2048 + k) % random.length]) / 255));
  }
  return wavOf(out);
}

// ---------------------------------------------------------------------------------------------
// (a) babylon-folder

/**
 * `models/`: the milk truck (its .gltf, buffer and 2048² JPEG, 0.45 MB) and ten rocks of 1.5 MB
 * it never loads: BoxTextured's .gltf with its buffer at `rock-<i>.bin` (1,536 KiB of seeded
 * bytes, seeds 900–909, as stageFolderOfModels), the box's texture beside them (the rocks' one
 * image: a folder whose glTF files reference a missing file is not one a game ships).
 */
export function stageBabylonFolder(dir) {
  fresh(dir);
  for (const file of ['CesiumMilkTruck.gltf', 'CesiumMilkTruck.jpg', 'CesiumMilkTruck_data.bin'])
    put(dir, `models/${file}`, readSource(`gltf/CesiumMilkTruck/${file}`));
  putLicences(dir, 'gltf/CesiumMilkTruck', 'models');
  put(dir, 'models/CesiumLogoFlat.png', readSource('gltf/BoxTextured/CesiumLogoFlat.png'));
  putLicences(dir, 'gltf/BoxTextured', 'models');
  const box = JSON.parse(readSource('gltf/BoxTextured/BoxTextured.gltf').toString('utf8'));
  for (let i = 0; i < 10; i++) {
    const bin = seededBytes(1536 * 1024, 900 + i);
    const gltf = structuredClone(box);
    gltf.buffers[0] = { ...gltf.buffers[0], uri: `rock-${i}.bin`, byteLength: bin.length };
    put(dir, `models/rock-${i}.gltf`, JSON.stringify(gltf));
    put(dir, `models/rock-${i}.bin`, bin);
  }
}

// ---------------------------------------------------------------------------------------------
// (b) phaser-pack

export const PACK_FILE = join(HERE, 'phaser-pack', 'pack.json');

/** The pack's entries (every section's files). */
export function packEntries() {
  const pack = JSON.parse(readFileSync(PACK_FILE, 'utf8'));
  return Object.entries(pack)
    .filter(([name]) => name !== 'meta')
    .flatMap(([, section]) => section.files);
}

/** AngelCode BMFont XML for the 16 × 16 retro font (15 glyphs a row from U+0020, 95 glyphs), as test/fixtures/phaser/make-fixtures.mjs writes it. */
function retroFontXml() {
  const glyphs = Array.from(
    { length: 95 },
    (_, i) =>
      `    <char id="${32 + i}" x="${(i % 15) * 16}" y="${Math.floor(i / 15) * 16}" width="16" height="16" xoffset="0" yoffset="0" xadvance="16" page="0" chnl="15"/>`,
  );
  return `<?xml version="1.0"?>\n<font>\n  <info face="retrofont" size="16" bold="0" italic="0" charset="" unicode="1" stretchH="100" smooth="0" aa="1" padding="0,0,0,0" spacing="0,0"/>\n  <common lineHeight="16" base="16" scaleW="240" scaleH="128" pages="1" packed="0"/>\n  <pages>\n    <page id="0" file="font-16x16.png"/>\n  </pages>\n  <chars count="95">\n${glyphs.join('\n')}\n  </chars>\n</font>\n`;
}

/** The game's data files (written here: a game's own JSON). */
const PACK_DATA = {
  'assets/data/levels.json': {
    levels: Array.from({ length: 12 }, (_, i) => ({
      id: i + 1,
      name: `Level ${i + 1}`,
      par: 30 + i * 7,
      spawns: Array.from({ length: 4 }, (_, j) => ({
        x: 40 + ((i * 97 + j * 53) % 560),
        y: 60 + ((i * 31 + j * 71) % 220),
        kind: ['coin', 'slime', 'chest', 'emoji'][j],
      })),
    })),
  },
  'assets/data/strings.json': {
    title: 'AWAKE-BUNDLE: A PACK FILE',
    start: 'CLICK TO START',
    credits: 'Art: Kenney, Pixel-boy, 0x72, Twemoji. Sound: Kenney, acebrian, Sparklin Labs.',
    hints: ['Collect the coins.', 'Avoid the slime.', 'Open the chests.'],
  },
};

/**
 * `assets/`: pack.json (bench/shapes/phaser-pack/pack.json) and what it lists, each at
 * `assets/<its path in examples/assets>` with its folder's licences, the retro font's BMFont XML
 * and the game's two data files (written here).
 */
export function stagePhaserPack(dir) {
  fresh(dir);
  put(dir, 'assets/pack.json', readFileSync(PACK_FILE));
  const urls = packEntries().flatMap((entry) => [entry.url, entry.textureURL, entry.atlasURL, entry.fontDataURL].flat().filter(Boolean));
  for (const url of urls) {
    if (!url.startsWith('assets/')) throw new Error(`pack.json: ${url} is not below assets/`);
    if (PACK_DATA[url]) put(dir, url, `${JSON.stringify(PACK_DATA[url], null, 1)}\n`);
    else if (url === 'assets/bitmapfont/retrofont/retrofont.xml') put(dir, url, retroFontXml());
    else copyWithLicences(dir, url.slice('assets/'.length), url);
  }
}

// ---------------------------------------------------------------------------------------------
// (c) phaser-audio

export const AUDIO_LIST = join(HERE, 'phaser-audio', 'audio-list.json');
export const audioList = () => JSON.parse(readFileSync(AUDIO_LIST, 'utf8'));

/**
 * `audio/` (every file of bench/shapes/phaser-audio/audio-list.json, made as its `make` says:
 * `copy`, `ogg-serial` (a distinct serial number), `id3` (an ID3v1 tag) or `ambience` (a WAV of
 * `bytes` from the two short WAVs)) and `images/`, each folder with the licences of what it came from.
 */
export function stagePhaserAudio(dir) {
  fresh(dir);
  const { audio, images } = audioList();
  const clips = ['audio/superpowers/4.wav', 'audio/arcade-kenney/laser1.wav'].map((path) => pcmOf(readSource(path), path));
  const licenceFolders = new Map();
  audio.forEach((entry, i) => {
    const from = readSource(entry.from);
    const bytes =
      entry.make === 'copy'
        ? from
        : entry.make === 'ogg-serial'
          ? withOggSerial(from, 0x5eed0000 + i)
          : entry.make === 'id3'
            ? withId3v1(from, entry.key)
            : entry.make === 'ambience'
              ? ambienceWav(clips, entry.bytes, 700 + i)
              : undefined;
    if (!bytes) throw new Error(`audio-list.json: ${entry.key}: no way to make ${entry.make}`);
    put(dir, entry.url, bytes);
    const sources = entry.make === 'ambience' ? ['audio/superpowers', 'audio/arcade-kenney'] : [dirname(entry.from)];
    for (const folder of sources) licenceFolders.set(`${folder}→${dirname(entry.url)}`, [folder, dirname(entry.url)]);
  });
  for (const [from, to] of licenceFolders.values()) putLicences(dir, from, to);
  for (const image of images) copyWithLicences(dir, image.url);
}

// ---------------------------------------------------------------------------------------------
// (d) babylon-gallery

/** The gallery's nine models, as test/browser-adapter-races.test.ts stageBabylon lays them out: babylon-gallery/models.json, which its page loads. */
export const GALLERY_MODELS = JSON.parse(readFileSync(join(HERE, 'babylon-gallery', 'models.json'), 'utf8'));

/**
 * Nine models, 6.5 MB (stageBabylon's): six copies of the milk truck, each with its buffer padded
 * to 600 KB of its own bytes and a 300 KB JPEG (the 227 × 150 StainedGlassLamp screenshot, bytes
 * after its end make it distinct: six 2048² decodes on SwiftShader would cost seconds), three in
 * folders of their own and three at the top whose buffers and images are in `buffers/` and
 * `textures/`; the two .glb files; the textured box.
 */
export function stageBabylonGallery(dir) {
  fresh(dir);
  const truck = JSON.parse(readSource('gltf/CesiumMilkTruck/CesiumMilkTruck.gltf').toString('utf8'));
  const truckBin = readSource('gltf/CesiumMilkTruck/CesiumMilkTruck_data.bin');
  const truckJpg = readSource('images/StainedGlassLamp/screenshot-x150.jpg');
  let models = 0;
  const truckAt = (gltfPath, bin, jpg) => {
    const folder = gltfPath.includes('/') ? gltfPath.slice(0, gltfPath.lastIndexOf('/') + 1) : '';
    const padded = Buffer.concat([truckBin, seededBytes(600 * 1024 - truckBin.length, models)]);
    const gltf = structuredClone(truck);
    gltf.buffers[0] = { ...gltf.buffers[0], uri: bin, byteLength: padded.length };
    gltf.images[0] = { ...gltf.images[0], uri: jpg };
    put(dir, gltfPath, JSON.stringify(gltf));
    put(dir, folder + bin, padded);
    put(dir, folder + jpg, Buffer.concat([truckJpg, seededBytes(300 * 1024 - truckJpg.length, 100 + models)]));
    const at = folder.replace(/\/$/, '');
    putLicences(dir, 'gltf/CesiumMilkTruck', at);
    putLicences(dir, 'images/StainedGlassLamp', jpg.includes('/') ? `${folder}${dirname(jpg)}` : at);
    models++;
  };
  for (let i = 1; i <= 3; i++) truckAt(`truck-${i}/truck.gltf`, 'truck.bin', 'truck.jpg');
  for (const name of ['truck-4', 'truck-5', 'ship']) truckAt(`${name}.gltf`, `buffers/${name}.bin`, `textures/${name}.jpg`);
  for (const glb of ['CesiumMan.glb', 'CesiumMilkTruck.glb']) put(dir, `glb/${glb}`, readSource(`glb/${glb}`));
  for (const name of ['LICENSE-CesiumMan.md', 'LICENSE-CesiumMilkTruck.md']) put(dir, `glb/${name}`, readSource(`glb/${name}`));
  for (const name of readdirSync(source('gltf/BoxTextured'))) put(dir, `box/${name}`, readSource(`gltf/BoxTextured/${name}`));
}

/** Each game's stage. */
export const STAGES = {
  'babylon-folder': stageBabylonFolder,
  'phaser-pack': stagePhaserPack,
  'phaser-audio': stagePhaserAudio,
  'babylon-gallery': stageBabylonGallery,
};
