// Writes examples/phaser-levels/assets/ from the shared examples/assets: byte copies of the files
// the game uses (renamed into a game's own layout: maps/, tiles/, sprites/, images/, fonts/,
// audio/), their license files, and the few modified copies SOURCES.md lists (the two level maps,
// the @2x images). Run once; its output is committed (`node examples/phaser-levels/make-assets.mjs`).
// Deterministic: the same input gives the same bytes.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32, deflateSync, inflateSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const from = join(here, '..', 'assets');
const to = join(here, 'assets');

/** Byte copies: this game's path ← the shared collection's path. */
const COPIES = {
  'tiles/kenney-tileset-64px-extruded.png': 'tilemap/tilesets/kenney-tileset-64px-extruded.png',
  'tiles/LICENSE-phaser-3-tilemap-blog-posts.md': 'tilemap/LICENSE-phaser-3-tilemap-blog-posts.md',
  'maps/LICENSE-phaser-3-tilemap-blog-posts.md': 'tilemap/LICENSE-phaser-3-tilemap-blog-posts.md',
  'sprites/player.png': 'spritesheet/0x72-industrial-player-32px-extruded.png',
  'sprites/slime.png': 'spritesheet/superpowers/slime/sprite-sheet-141x107.png',
  'sprites/chest.png': 'spritesheet/superpowers/chest/sprite-sheet-127x88.png',
  'sprites/tyrannosaurus-walk.gif': 'images/superpowers/tyrannosaurus-walk.gif',
  'sprites/emoji.png': 'atlas/emoji/emoji.png',
  'sprites/emoji.json': 'atlas/emoji/emoji.json',
  'sprites/LICENSE-phaser-3-tilemap-blog-posts.md': 'spritesheet/LICENSE-phaser-3-tilemap-blog-posts.md',
  'sprites/LICENSE-superpowers-asset-packs.txt': 'spritesheet/superpowers/LICENSE-superpowers-asset-packs.txt',
  'images/background.png': 'images/superpowers/background-1.png',
  'images/particle.png': 'images/kenney/particle.png',
  'images/space-shooter-preview.png': 'images/superpowers/space-shooter-preview.png',
  'images/splash-screen.png': 'images/kenney/splash-screen.png',
  'images/LICENSE-superpowers-asset-packs.txt': 'images/superpowers/LICENSE-superpowers-asset-packs.txt',
  'images/README-kenney-starter-kit-3d-platformer.md': 'images/kenney/README-kenney-starter-kit-3d-platformer.md',
  'fonts/font-16x16.png': 'bitmapfont/retrofont/font-16x16.png',
  'fonts/LICENSE-superpowers-asset-packs.txt': 'bitmapfont/retrofont/LICENSE-superpowers-asset-packs.txt',
  'audio/theme-4.ogg': 'audio/superpowers/theme-4.ogg',
  'audio/gun-1.ogg': 'audio/superpowers/gun-1.ogg',
  'audio/4.wav': 'audio/superpowers/4.wav',
  'audio/LICENSE-superpowers-asset-packs.txt': 'audio/superpowers/LICENSE-superpowers-asset-packs.txt',
  'audio/coin.ogg': 'audio/kenney-platformer-kit/coin.ogg',
  'audio/jump.ogg': 'audio/kenney-platformer-kit/jump.ogg',
  'audio/README-kenney-starter-kit-3d-platformer.md': 'audio/kenney-platformer-kit/README-kenney-starter-kit-3d-platformer.md',
  'audio/laser1.ogg': 'audio/arcade-kenney/laser1.ogg',
  'audio/laser1.mp3': 'audio/arcade-kenney/laser1.mp3',
  'audio/laser1.wav': 'audio/arcade-kenney/laser1.wav',
  'audio/LICENSE-arcade-sounds.txt': 'audio/arcade-kenney/LICENSE-arcade-sounds.txt',
  'audio/character-jump.mp3': 'audio/brizzle-bash/character-jump.mp3',
  'audio/README-brizzle-bash-audio.md': 'audio/brizzle-bash/README-brizzle-bash-audio.md',
};

/** Twice the size, nearest neighbour: this game's path ← the copy above it scales. */
const DOUBLED = {
  'sprites/player@2x.png': 'sprites/player.png',
  'sprites/slime@2x.png': 'sprites/slime.png',
  'images/background@2x.png': 'images/background.png',
  'images/particle@2x.png': 'images/particle.png',
};

const MAP = 'tilemap/tilemaps/simple-map.json';
/** The map's tileset image, as Tiled wrote it (escaped slashes), and where it is in this layout. */
const TILESET_IMAGE = [
  '"image":"..\\/tilesets\\/kenney-tileset-64px-extruded.png"',
  '"image":"..\\/tiles\\/kenney-tileset-64px-extruded.png"',
];

function write(path, bytes) {
  mkdirSync(dirname(join(to, path)), { recursive: true });
  writeFileSync(join(to, path), bytes);
}

// ---------------------------------------------------------------------------------------------
// PNG, 8-bit RGBA, not interlaced (every image doubled here is one): decode, double, encode

const PNG_SIGNATURE = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]);

function chunks(png) {
  if (!png.subarray(0, 8).equals(PNG_SIGNATURE)) throw new Error('not a PNG');
  const list = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at);
    list.push({ type: png.toString('latin1', at + 4, at + 8), data: png.subarray(at + 8, at + 8 + length) });
    at += 12 + length;
  }
  return list;
}

const paeth = (a, b, c) => {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
};

/** The pixels of an 8-bit RGBA PNG: { width, height, rgba } (rows of width × 4 bytes). */
function decodePng(png) {
  const list = chunks(png);
  const header = list.find((chunk) => chunk.type === 'IHDR').data;
  const width = header.readUInt32BE(0);
  const height = header.readUInt32BE(4);
  if (header[8] !== 8 || header[9] !== 6 || header[12] !== 0) throw new Error('only 8-bit RGBA, not interlaced');
  const filtered = inflateSync(Buffer.concat(list.filter((chunk) => chunk.type === 'IDAT').map((chunk) => chunk.data)));
  const stride = width * 4;
  const rgba = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const type = filtered[y * (stride + 1)];
    const line = filtered.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const left = x >= 4 ? rgba[y * stride + x - 4] : 0;
      const up = y > 0 ? rgba[(y - 1) * stride + x] : 0;
      const upLeft = x >= 4 && y > 0 ? rgba[(y - 1) * stride + x - 4] : 0;
      const predictor = [0, left, up, (left + up) >> 1, paeth(left, up, upLeft)][type];
      rgba[y * stride + x] = (line[x] + predictor) & 0xff;
    }
  }
  return { width, height, rgba };
}

function pngChunk(type, data) {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), 8 + data.length);
  return out;
}

/** An 8-bit RGBA PNG, each row filtered as libpng's default does: the filter with the least sum of |bytes|. */
function encodePng({ width, height, rgba }) {
  const stride = width * 4;
  const rows = [];
  for (let y = 0; y < height; y++) {
    let best;
    for (let type = 0; type <= 4; type++) {
      const line = Buffer.alloc(stride + 1);
      line[0] = type;
      let sum = 0;
      for (let x = 0; x < stride; x++) {
        const left = x >= 4 ? rgba[y * stride + x - 4] : 0;
        const up = y > 0 ? rgba[(y - 1) * stride + x] : 0;
        const upLeft = x >= 4 && y > 0 ? rgba[(y - 1) * stride + x - 4] : 0;
        const predictor = [0, left, up, (left + up) >> 1, paeth(left, up, upLeft)][type];
        line[x + 1] = (rgba[y * stride + x] - predictor) & 0xff;
        sum += line[x + 1] < 128 ? line[x + 1] : 256 - line[x + 1];
      }
      if (!best || sum < best.sum) best = { line, sum };
    }
    rows.push(best.line);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 6, 0, 0, 0], 8);
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(Buffer.concat(rows), { level: 9 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

function doubled({ width, height, rgba }) {
  const out = Buffer.alloc(width * height * 16);
  for (let y = 0; y < height * 2; y++)
    for (let x = 0; x < width * 2; x++)
      rgba.copy(out, (y * width * 2 + x) * 4, ((y >> 1) * width + (x >> 1)) * 4, ((y >> 1) * width + (x >> 1)) * 4 + 4);
  return { width: width * 2, height: height * 2, rgba: out };
}

// ---------------------------------------------------------------------------------------------
// The maps: level 1 is the shared map with its tileset where this layout keeps it; level 2 the
// same map mirrored left to right (each layer's rows reversed), written as Tiled writes (its layout)

function levelOneMap(text) {
  if (!text.includes(TILESET_IMAGE[0])) throw new Error(`${MAP}: no ${TILESET_IMAGE[0]}`);
  return text.replace(TILESET_IMAGE[0], TILESET_IMAGE[1]);
}

function levelTwoMap(text) {
  const map = JSON.parse(text);
  let out = text;
  for (const layer of map.layers) {
    const rows = [];
    for (let y = 0; y < layer.height; y++) rows.push(layer.data.slice(y * layer.width, (y + 1) * layer.width).reverse());
    const before = `"data":[${layer.data.join(', ')}]`;
    if (!out.includes(before)) throw new Error(`${MAP}: layer ${layer.name}'s data is not written as expected`);
    out = out.replace(before, `"data":[${rows.flat().join(', ')}]`);
  }
  return out;
}

// Everything but SOURCES.md (written by hand) is this script's.
for (const name of existsSync(to) ? readdirSync(to) : [])
  if (name !== 'SOURCES.md') rmSync(join(to, name), { recursive: true, force: true });
for (const [path, source] of Object.entries(COPIES)) {
  mkdirSync(dirname(join(to, path)), { recursive: true });
  copyFileSync(join(from, source), join(to, path));
}
for (const [path, source] of Object.entries(DOUBLED)) write(path, encodePng(doubled(decodePng(readFileSync(join(to, source))))));
const map = readFileSync(join(from, MAP), 'utf8');
write('maps/level-1.json', levelOneMap(map));
write('maps/level-2.json', levelOneMap(levelTwoMap(map)));
console.log(`wrote ${Object.keys(COPIES).length + Object.keys(DOUBLED).length + 2} files into ${to} (SOURCES.md is written by hand)`);
