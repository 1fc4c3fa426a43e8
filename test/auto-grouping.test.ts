/**
 * `--group auto` (SPEC §6, §8; FORMAT.md "`--group auto`"): each file grouped with what
 * references it, as far as the writer reads references, the rest by folder. First the formats
 * (`referencesOf`), then the grouping's rules (`groupByReferences`), then the CLI on a tree made
 * of the example assets (examples/assets, the shared third-party files: glTF, GLB, atlas, tilemap,
 * audio, spritesheets, a bitmap font's page) with a Phaser pack file beside them.
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectReferences, groupByFolder, groupByReferences, mayReference, referencesOf } from '../core/internal.js';
import { listFolderFiles, publishFolder, readReferrerFile } from '../core/node/index.js';
import { REPO, runCli, temporaryDir } from './helpers/cli.js';
import { sha256Hex } from './helpers/trees.js';

const text = (value: unknown) => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));
const listing = (...paths: string[]) => new Set(paths);

describe('referencesOf: the formats read', () => {
  test('a .gltf: buffers[].uri and images[].uri, relative, percent-decoded, never data: or absolute URIs', () => {
    const gltf = {
      asset: { version: '2.0' },
      buffers: [{ uri: 'mesh%20data.bin' }, { uri: 'data:application/octet-stream;base64,AAAA' }, { uri: '../shared/anim.bin?v=2' }],
      images: [
        { uri: 'textures/wood.png' },
        { bufferView: 3, mimeType: 'image/png' },
        { uri: 'https://cdn.example/x.png' },
        { uri: '/abs.png' },
      ],
    };
    const listed = listing('models/crate/mesh data.bin', 'models/shared/anim.bin', 'models/crate/textures/wood.png', 'x.png', 'abs.png');
    expect(referencesOf('models/crate/crate.gltf', text(gltf), listed)).toEqual([
      'models/crate/mesh data.bin',
      'models/shared/anim.bin',
      'models/crate/textures/wood.png',
    ]);
  });

  test('a .glb: its JSON chunk, read as a .gltf (the bytes may stop after that chunk)', () => {
    const glb = readFileSync(join(REPO, 'examples/assets/glb/kenney-platformer-kit/coin.glb'));
    const listed = listing('glb/kenney-platformer-kit/Textures/colormap.png');
    expect(referencesOf('glb/kenney-platformer-kit/coin.glb', glb, listed)).toEqual(['glb/kenney-platformer-kit/Textures/colormap.png']);
    const jsonEnd = 20 + glb.readUInt32LE(12);
    expect(referencesOf('glb/kenney-platformer-kit/coin.glb', glb.subarray(0, jsonEnd), listed)).toEqual([
      'glb/kenney-platformer-kit/Textures/colormap.png',
    ]);
    expect(referencesOf('glb/kenney-platformer-kit/coin.glb', glb.subarray(0, jsonEnd - 1), listed)).toEqual([]);
  });

  test('atlas JSON meta.image and bitmap font JSON pages[] beside the JSON; multiatlas textures[].image and audio sprite resources[] from the root, else beside', () => {
    expect(
      referencesOf(
        'atlas/emoji/emoji.json',
        readFileSync(join(REPO, 'examples/assets/atlas/emoji/emoji.json')),
        listing('atlas/emoji/emoji.png'),
      ),
    ).toEqual(['atlas/emoji/emoji.png']);
    const multi = {
      textures: [
        { image: 'sheet-0.png', frames: [] },
        { image: 'sheet-1.png', frames: [] },
      ],
    };
    // Phaser loads a multiatlas's images through its loader path: the asset root, or else beside the JSON.
    expect(referencesOf('ui/sheets.json', text(multi), listing('ui/sheet-0.png', 'sheet-1.png', 'ui/sheet-1.png'))).toEqual([
      'ui/sheet-0.png',
      'sheet-1.png',
    ]);
    const sprite = { resources: ['sfx.ogg', 'sfx.mp3'], spritemap: { boom: { start: 0, end: 1 } } };
    expect(referencesOf('audio/sfx.json', text(sprite), listing('audio/sfx.ogg', 'audio/sfx.mp3'))).toEqual([
      'audio/sfx.ogg',
      'audio/sfx.mp3',
    ]);
    const font = { pages: ['font_0.png'], chars: [], info: {}, common: {} };
    expect(referencesOf('fonts/arial.json', text(font), listing('fonts/font_0.png'))).toEqual(['fonts/font_0.png']);
  });

  test('AngelCode bitmap fonts: <page file> in XML (.xml, .fnt), page lines in the text .fnt', () => {
    const xml =
      '<?xml version="1.0"?>\n<font><!-- <page id="9" file="old.png"/> --><pages><page id="0" file="gothic_0.png" /><page id=\'1\' file=\'gothic&amp;1.png\'/></pages></font>';
    const listed = listing('fonts/gothic_0.png', 'fonts/gothic&1.png', 'fonts/old.png');
    expect(referencesOf('fonts/gothic.xml', text(xml), listed)).toEqual(['fonts/gothic_0.png', 'fonts/gothic&1.png']);
    expect(referencesOf('fonts/gothic.fnt', text(xml), listed)).toEqual(['fonts/gothic_0.png', 'fonts/gothic&1.png']);
    const plain =
      'info face="Gothic" size=32\r\ncommon lineHeight=32 pages=2\r\npage id=0 file="gothic_0.png"\r\npage id=1 file=gothic_1.png\r\nchars count=0\r\n';
    expect(referencesOf('fonts/gothic.fnt', text(plain), listing('fonts/gothic_0.png', 'fonts/gothic_1.png'))).toEqual([
      'fonts/gothic_0.png',
      'fonts/gothic_1.png',
    ]);
  });

  test("Tiled: a JSON map's tilesets (embedded image, external source), image layers in groups; a .tsx's image; a TMX map; a Starling atlas", () => {
    expect(
      referencesOf(
        'tilemap/tilemaps/simple-map.json',
        readFileSync(join(REPO, 'examples/assets/tilemap/tilemaps/simple-map.json')),
        listing('tilemap/tilesets/kenney-tileset-64px-extruded.png'),
      ),
    ).toEqual(['tilemap/tilesets/kenney-tileset-64px-extruded.png']);
    const map = {
      type: 'map',
      tilesets: [
        { firstgid: 1, source: '../tilesets/dungeon.tsx' },
        { firstgid: 100, name: 'items', tiles: [{ id: 0, image: 'items/key.png' }] },
      ],
      layers: [
        { type: 'tilelayer', data: [] },
        { type: 'group', layers: [{ type: 'imagelayer', image: 'sky.png' }] },
      ],
    };
    const listed = listing('maps/tilesets/dungeon.tsx', 'maps/levels/items/key.png', 'maps/levels/sky.png', 'maps/tilesets/dungeon.png');
    expect(referencesOf('maps/levels/one.tmj', text(map), listed)).toEqual([
      'maps/tilesets/dungeon.tsx',
      'maps/levels/items/key.png',
      'maps/levels/sky.png',
    ]);
    const tsx =
      '<?xml version="1.0"?>\n<tileset version="1.10" name="dungeon" tilewidth="16"><image source="dungeon.png" width="256"/></tileset>';
    expect(referencesOf('maps/tilesets/dungeon.tsx', text(tsx), listed)).toEqual(['maps/tilesets/dungeon.png']);
    const tmx = '<map><tileset firstgid="1" source="../tilesets/dungeon.tsx"/><imagelayer><image source="sky.png"/></imagelayer></map>';
    expect(referencesOf('maps/levels/one.tmx', text(tmx), listed)).toEqual(['maps/tilesets/dungeon.tsx', 'maps/levels/sky.png']);
    const tileset = { type: 'tileset', image: '..\\tilesets\\dungeon.png', tilewidth: 16 };
    expect(referencesOf('maps/levels/dungeon.tsj', text(tileset), listed)).toEqual(['maps/tilesets/dungeon.png']);
    const starling = '<TextureAtlas imagePath="hud.png"><SubTexture name="a" x="0" y="0" width="1" height="1"/></TextureAtlas>';
    expect(referencesOf('ui/hud.xml', text(starling), listing('ui/hud.png'))).toEqual(['ui/hud.png']);
  });

  test("a Phaser pack file: url (string, array, {url} objects), textureURL, atlasURL, fontDataURL, normalMap, <key>.<extension>; the section's path and baseURL; root first, then beside the pack", () => {
    const pack = {
      meta: { app: 'Phaser Editor', version: '3' },
      boot: {
        files: [
          { type: 'image', key: 'logo', url: 'images/logo.png', normalMap: 'images/logo-n.png' },
          { type: 'audio', key: 'laser', url: ['audio/laser1.ogg', 'audio/laser1.mp3'] },
          { type: 'audio', key: 'jump', url: [{ type: 'mp3', url: 'audio/jump.mp3' }] },
          { type: 'atlas', key: 'emoji', textureURL: 'atlas/emoji.png', atlasURL: 'atlas/emoji.json' },
          { type: 'bitmapFont', key: 'gothic', textureURL: 'fonts/gothic.png', fontDataURL: 'fonts/gothic.xml' },
          { type: 'image', key: 'remote', url: 'https://cdn.example/remote.png' },
          { type: 'pack', key: 'level-1', url: 'level-1.json' },
        ],
      },
      level: {
        path: 'levels/one',
        defaultType: 'image',
        files: [
          { key: 'floor' },
          { key: 'wall', extension: 'jpg' },
          { type: 'tilemapTiledJSON', key: 'map' },
          { type: 'json', key: 'settings', url: { inline: true } },
        ],
      },
      cdn: { baseURL: 'https://cdn.example/game/', path: 'sounds', files: [{ type: 'audio', key: 'theme', url: 'theme.ogg' }] },
      relative: { baseURL: 'extra', files: [{ type: 'spritesheet', key: 'slime', url: 'slime.png' }] },
    };
    const listed = listing(
      'images/logo.png',
      'images/logo-n.png',
      'audio/laser1.ogg',
      'audio/laser1.mp3',
      'audio/jump.mp3',
      'atlas/emoji.png',
      'atlas/emoji.json',
      'fonts/gothic.png',
      'fonts/gothic.xml',
      'packs/level-1.json',
      'levels/one/floor.png',
      'levels/one/wall.jpg',
      'levels/one/map.json',
      'sounds/theme.ogg',
      'packs/extra/slime.png',
    );
    expect(referencesOf('packs/pack.json', text(pack), listed)).toEqual([
      'images/logo.png',
      'images/logo-n.png',
      'audio/laser1.ogg',
      'audio/laser1.mp3',
      'audio/jump.mp3',
      'atlas/emoji.png',
      'atlas/emoji.json',
      'fonts/gothic.png',
      'fonts/gothic.xml',
      'packs/level-1.json',
      'levels/one/floor.png',
      'levels/one/wall.jpg',
      'levels/one/map.json',
      'sounds/theme.ogg',
      'packs/extra/slime.png',
    ]);
  });

  test('a malformed referrer (bad JSON, not UTF-8, a truncated .glb) references nothing; so do other extensions', () => {
    const listed = listing('a.png');
    expect(referencesOf('bad.gltf', text('{"images": [{"uri": "a.png"}'), listed)).toEqual([]);
    expect(referencesOf('bad.json', new Uint8Array([0x7b, 0xff, 0x7d]), listed)).toEqual([]);
    expect(referencesOf('bad.glb', text('glTF'), listed)).toEqual([]);
    expect(
      referencesOf(
        'self.gltf',
        text({ images: [{ uri: 'self.gltf' }, { uri: 'a.png' }, { uri: './a.png' }] }),
        listing('a.png', 'self.gltf'),
      ),
    ).toEqual(['a.png']);
    expect(mayReference('scene.GLTF')).toBe(true);
    expect(mayReference('notes.txt')).toBe(false);
    expect(mayReference('json')).toBe(false);
  });
});

describe('groupByReferences: the rules', () => {
  test('a root takes everything it reaches, transitively; a file two roots reach goes with the first root in key order; the rest by the fallback', () => {
    const references = new Map([
      ['packs/title.json', ['atlas/ui.json', 'audio/theme.ogg']],
      ['atlas/ui.json', ['atlas/ui.png']],
      ['models/b.gltf', ['models/shared.png', 'models/b.bin']],
      ['models/a.gltf', ['models/shared.png', 'models/a.bin']],
    ]);
    const grouping = groupByReferences(references, groupByFolder(2));
    expect(['packs/title.json', 'atlas/ui.json', 'atlas/ui.png', 'audio/theme.ogg'].map((path) => grouping.groupOf(path))).toEqual(
      Array(4).fill('ref:packs/title.json'),
    );
    expect(grouping.groupOf('models/shared.png')).toBe('ref:models/a.gltf');
    expect(grouping.groupOf('models/b.bin')).toBe('ref:models/b.gltf');
    expect(grouping.groupOf('models/b.gltf')).toBe('ref:models/b.gltf');
    expect(grouping.groupOf('levels/one/map.bin')).toBe('folder:levels/one');
  });

  test('a cycle no root reaches is taken by its first member in key order; the same references in another order give the same groups', () => {
    const entries: [string, string[]][] = [
      ['b.json', ['a.json', 'c.png']],
      ['a.json', ['b.json']],
      ['d.json', ['b.json']],
    ];
    const forward = groupByReferences(new Map(entries));
    const backward = groupByReferences(new Map([...entries].reverse()));
    for (const path of ['a.json', 'b.json', 'c.png', 'd.json', 'e.png']) expect(backward.groupOf(path)).toBe(forward.groupOf(path));
    // d.json is a root (nobody references it): it reaches the cycle.
    expect(forward.groupOf('a.json')).toBe('ref:d.json');
    const cycle = groupByReferences(new Map(entries.slice(0, 2)));
    expect(['a.json', 'b.json', 'c.png'].map((path) => cycle.groupOf(path))).toEqual(['ref:a.json', 'ref:a.json', 'ref:a.json']);
    expect(cycle.groupOf('e.png')).toBe('folder:');
  });
});

describe('groupByReferences: a Phaser pack file, a group per section', () => {
  test("each section's group takes what it names and what that reaches; the pack goes with the first section; a file two sections name, with the first", () => {
    const references = Object.assign(
      new Map([
        ['packs/game.json', ['boot/logo.png', 'ui/button.png', 'level1/hero.json', 'level1/music.ogg']],
        ['level1/hero.json', ['level1/hero.png']],
      ]),
      {
        sections: new Map([
          [
            'packs/game.json',
            [
              { key: 'boot', references: ['boot/logo.png', 'ui/button.png'] },
              { key: 'level1', references: ['level1/hero.json', 'level1/music.ogg', 'ui/button.png'] },
            ],
          ],
        ]),
      },
    );
    const grouping = groupByReferences(references);
    const groups = (...paths: string[]) => paths.map((path) => grouping.groupOf(path));
    expect(groups('packs/game.json', 'boot/logo.png', 'ui/button.png')).toEqual(Array(3).fill('ref:packs/game.json#boot'));
    expect(groups('level1/hero.json', 'level1/hero.png', 'level1/music.ogg')).toEqual(Array(3).fill('ref:packs/game.json#level1'));
    expect(grouping.groupOf('level1/other.png')).toBe('folder:level1');
    // Without its sections, the same pack is one group, as a referrer of any other format.
    expect(groupByReferences(new Map(references)).groupOf('level1/hero.png')).toBe('ref:packs/game.json');
  });

  test("collectReferences reads the sections in the order Phaser's addPack visits them: array-index keys first, ascending, then the JSON's order", async () => {
    const pack = {
      meta: { app: 'Phaser Editor 2D' },
      title: { files: [{ type: 'image', key: 'title', url: 'title.png' }] },
      '10': { files: [{ type: 'image', key: 'ten', url: 'ten.png' }] },
      '2': { files: [{ type: 'image', key: 'two', url: 'two.png' }] },
      remote: { files: [{ type: 'image', key: 'cdn', url: 'https://cdn.example/cdn.png' }] },
    };
    const files = new Map([['pack.json', text(pack)], ...['title.png', 'ten.png', 'two.png'].map((path) => [path, text(path)] as const)]);
    const references = await collectReferences([...files.keys()], async (path) => files.get(path));
    expect(references.get('pack.json')).toEqual(['two.png', 'ten.png', 'title.png']);
    expect(references.sections.get('pack.json')).toEqual([
      { key: '2', references: ['two.png'] },
      { key: '10', references: ['ten.png'] },
      { key: 'title', references: ['title.png'] },
      { key: 'remote', references: [] },
    ]);
    const grouping = groupByReferences(references);
    expect(['pack.json', 'two.png', 'ten.png', 'title.png'].map((path) => grouping.groupOf(path))).toEqual([
      'ref:pack.json#2',
      'ref:pack.json#2',
      'ref:pack.json#10',
      'ref:pack.json#title',
    ]);
  });

  test('a JSON whose top-level `files` is an array (a section without its pack) is no pack: it references nothing, as before', async () => {
    const plain = { files: [{ type: 'image', key: 'logo', url: 'boot/logo.png' }] };
    const files = new Map([
      ['packs/plain.json', text(plain)],
      ['boot/logo.png', text('logo')],
    ]);
    const references = await collectReferences([...files.keys()], async (path) => files.get(path));
    expect([...references.keys()]).toEqual([]);
    expect(references.sections.size).toBe(0);
    const grouping = groupByReferences(references);
    expect([grouping.groupOf('packs/plain.json'), grouping.groupOf('boot/logo.png')]).toEqual(['folder:packs', 'folder:boot']);
  });
});

/** A game's pack: `boot` loads the preloader's two files, `level1` three (a multiatlas, whose PNG follows it, music, and boot's button again). */
const SECTIONED_PACK = {
  boot: {
    files: [
      { type: 'image', key: 'logo', url: 'boot/logo.png' },
      { type: 'image', key: 'button', url: 'ui/button.png' },
    ],
  },
  level1: {
    path: 'level1',
    files: [
      { type: 'multiatlas', key: 'hero', url: 'hero.json' },
      { type: 'audio', key: 'music', url: ['music.ogg'] },
      { type: 'image', key: 'button', url: '../ui/button.png' },
    ],
  },
};

/** A tree holding SECTIONED_PACK at packs/game.json, the files it names, and a file it does not. */
function sectionedTree(): string {
  const dir = temporaryDir('awkb-sections-');
  const files: Record<string, string> = {
    'packs/game.json': JSON.stringify(SECTIONED_PACK, null, 2),
    'boot/logo.png': 'logo',
    'ui/button.png': 'button',
    'level1/hero.json': JSON.stringify({ textures: [{ image: 'level1/hero.png', format: 'RGBA8888', frames: [] }] }),
    'level1/hero.png': 'hero',
    'level1/music.ogg': 'music',
    'level1/unused.png': 'unused',
  };
  for (const [path, contents] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), contents);
  }
  return dir;
}

describe('--group auto on a Phaser pack with sections', () => {
  const expectSections = (out: string) => {
    const bundle = bundleOf(out);
    const boot = ['packs/game.json', 'boot/logo.png', 'ui/button.png'];
    const level1 = ['level1/hero.json', 'level1/hero.png', 'level1/music.ogg'];
    expect({
      boot: new Set(boot.map((path) => bundle.get(path))).size,
      level1: new Set(level1.map((path) => bundle.get(path))).size,
    }).toEqual({
      boot: 1,
      level1: 1,
    });
    // Three bundles: boot's (with the pack and the shared button), level1's, and folder:level1 (what the pack does not name).
    expect(new Set([bundle.get('boot/logo.png'), bundle.get('level1/hero.json'), bundle.get('level1/unused.png')]).size).toBe(3);
  };

  test('the CLI: boot, with the pack and the file both sections name, in one bundle; level1 with its atlas image in another', () => {
    const out = join(temporaryDir(), 'published');
    const result = runCli([sectionedTree(), '--out', out, '--group', 'auto', '--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expectSections(out);
    expect(JSON.parse(result.stdout).bundles).toBe(3);
  });

  test('publishFolder (as the build plugins publish) does the same, byte for byte', async () => {
    const cli = join(temporaryDir(), 'cli');
    expect(runCli([sectionedTree(), '--out', cli, '--group', 'auto']).code).toBe(0);
    const library = join(temporaryDir(), 'library');
    await publishFolder({ folder: sectionedTree(), outDir: library, groupByReferences: true });
    expectSections(library);
    expect(snapshot(library)).toEqual(snapshot(cli));
  });
});

/** The example assets a game might ship, copied into a tree, and a Phaser pack file listing some of them. */
const EXAMPLE_FILES = [
  'gltf/BoxTextured/BoxTextured.gltf',
  'gltf/BoxTextured/BoxTextured0.bin',
  'gltf/BoxTextured/CesiumLogoFlat.png',
  'gltf/CesiumMilkTruck/CesiumMilkTruck.gltf',
  'gltf/CesiumMilkTruck/CesiumMilkTruck.jpg',
  'gltf/CesiumMilkTruck/CesiumMilkTruck_data.bin',
  'glb/CesiumMan.glb',
  'glb/kenney-platformer-kit/character.glb',
  'glb/kenney-platformer-kit/coin.glb',
  'glb/kenney-platformer-kit/Textures/colormap.png',
  'atlas/emoji/emoji.json',
  'atlas/emoji/emoji.png',
  'tilemap/tilemaps/simple-map.json',
  'tilemap/tilesets/kenney-tileset-64px-extruded.png',
  'spritesheet/superpowers/slime/sprite-sheet-141x107.png',
  'spritesheet/superpowers/chest/sprite-sheet-127x88.png',
  'bitmapfont/retrofont/font-16x16.png',
  'audio/arcade-kenney/laser1.ogg',
  'audio/arcade-kenney/laser1.mp3',
  'audio/kenney-platformer-kit/coin.ogg',
  'audio/superpowers/theme-4.ogg',
  'images/kenney/coin.png',
  'images/kenney/particle.png',
];

const PACK = {
  battle: {
    files: [
      {
        type: 'spritesheet',
        key: 'slime',
        url: 'spritesheet/superpowers/slime/sprite-sheet-141x107.png',
        frameConfig: { frameWidth: 141, frameHeight: 107 },
      },
      {
        type: 'spritesheet',
        key: 'chest',
        url: 'spritesheet/superpowers/chest/sprite-sheet-127x88.png',
        frameConfig: { frameWidth: 127, frameHeight: 88 },
      },
      { type: 'audio', key: 'laser', url: ['audio/arcade-kenney/laser1.ogg', 'audio/arcade-kenney/laser1.mp3'] },
      { type: 'image', key: 'font', url: 'bitmapfont/retrofont/font-16x16.png' },
    ],
  },
};

function exampleTree(order: string[] = EXAMPLE_FILES): string {
  const dir = temporaryDir('awkb-auto-');
  for (const path of order) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    copyFileSync(join(REPO, 'examples/assets', path), join(dir, path));
  }
  mkdirSync(join(dir, 'packs'));
  writeFileSync(join(dir, 'packs/battle.json'), JSON.stringify(PACK, null, 2));
  return dir;
}

/** Each file's bundle, by path. */
function bundleOf(out: string): Map<string, string> {
  const index = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8')) as { files: { path: string; bundle: string }[] };
  return new Map(index.files.map((file) => [file.path, file.bundle]));
}

function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()) {
    if (name.includes('.')) files[name] = sha256Hex(readFileSync(join(dir, name)));
  }
  return files;
}

describe('awake-bundle --group auto on the example assets', () => {
  test('each .gltf with its .bin and textures, a .glb with its texture, the atlas JSON with its PNG, the tilemap with its tileset, the pack with what it lists', () => {
    const out = join(temporaryDir(), 'published');
    const result = runCli([exampleTree(), '--out', out, '--group', 'auto', '--json']);
    expect(result.code).toBe(0);
    const bundle = bundleOf(out);
    const together = (paths: string[]) =>
      expect({ paths, bundles: new Set(paths.map((path) => bundle.get(path))).size }).toEqual({ paths, bundles: 1 });
    const apart = (a: string, b: string) => expect({ a, b, same: bundle.get(a) === bundle.get(b) }).toEqual({ a, b, same: false });
    together(['gltf/BoxTextured/BoxTextured.gltf', 'gltf/BoxTextured/BoxTextured0.bin', 'gltf/BoxTextured/CesiumLogoFlat.png']);
    together([
      'gltf/CesiumMilkTruck/CesiumMilkTruck.gltf',
      'gltf/CesiumMilkTruck/CesiumMilkTruck.jpg',
      'gltf/CesiumMilkTruck/CesiumMilkTruck_data.bin',
    ]);
    // The shared texture goes with the first of its referrers in key order: character.glb.
    together(['glb/kenney-platformer-kit/character.glb', 'glb/kenney-platformer-kit/Textures/colormap.png']);
    apart('glb/kenney-platformer-kit/coin.glb', 'glb/kenney-platformer-kit/character.glb');
    together(['atlas/emoji/emoji.json', 'atlas/emoji/emoji.png']);
    together(['tilemap/tilemaps/simple-map.json', 'tilemap/tilesets/kenney-tileset-64px-extruded.png']);
    together([
      'packs/battle.json',
      'spritesheet/superpowers/slime/sprite-sheet-141x107.png',
      'spritesheet/superpowers/chest/sprite-sheet-127x88.png',
      'audio/arcade-kenney/laser1.ogg',
      'audio/arcade-kenney/laser1.mp3',
      'bitmapfont/retrofont/font-16x16.png',
    ]);
    // No two models share a bundle; what nothing references stays in its folder's group.
    apart('gltf/BoxTextured/BoxTextured.gltf', 'gltf/CesiumMilkTruck/CesiumMilkTruck.gltf');
    apart('audio/kenney-platformer-kit/coin.ogg', 'audio/arcade-kenney/laser1.ogg');
    together(['audio/kenney-platformer-kit/coin.ogg', 'audio/superpowers/theme-4.ogg']);
    together(['images/kenney/coin.png', 'images/kenney/particle.png']);
    // folder:audio, folder:glb (CesiumMan.glb), folder:images, and a ref: group per root: the
    // atlas, character.glb, coin.glb, two .gltf, the pack, the tilemap.
    expect(JSON.parse(result.stdout).bundles).toBe(10);
  });

  test('deterministic: trees copied in other orders give identical bundles and index; --depth applies to the fallback', async () => {
    const outs = [join(temporaryDir(), 'a'), join(temporaryDir(), 'b')];
    expect(runCli([exampleTree(), '--out', outs[0]!, '--group', 'auto']).code).toBe(0);
    expect(runCli([exampleTree([...EXAMPLE_FILES].reverse()), '--out', outs[1]!, '--group', 'auto']).code).toBe(0);
    expect(snapshot(outs[1]!)).toEqual(snapshot(outs[0]!));

    // The library, as the CLI: groupByReferences over the folder grouping.
    const tree = exampleTree();
    const library = join(temporaryDir(), 'library');
    await publishFolder({ folder: tree, outDir: library, groupByReferences: true, grouping: groupByFolder(1) });
    expect(snapshot(library)).toEqual(snapshot(outs[0]!));

    const deep = join(temporaryDir(), 'deep');
    expect(runCli([tree, '--out', deep, '--group', 'auto', '--depth', '2']).code).toBe(0);
    const bundle = bundleOf(deep);
    expect(bundle.get('audio/kenney-platformer-kit/coin.ogg')).not.toBe(bundle.get('audio/superpowers/theme-4.ogg'));
    expect(bundle.get('gltf/BoxTextured/BoxTextured0.bin')).toBe(bundle.get('gltf/BoxTextured/BoxTextured.gltf'));
  });

  test("collectReferences with readReferrerFile reads each referrer's references from disk", async () => {
    const tree = exampleTree();
    const files = await listFolderFiles(tree);
    const onDisk = new Map(files.map((file) => [file.path, file.absolutePath]));
    const references = await collectReferences(
      files.map((file) => file.path),
      (path) => readReferrerFile(onDisk.get(path)!, path),
    );
    expect([...references.keys()].sort()).toEqual([
      'atlas/emoji/emoji.json',
      'glb/kenney-platformer-kit/character.glb',
      'glb/kenney-platformer-kit/coin.glb',
      'gltf/BoxTextured/BoxTextured.gltf',
      'gltf/CesiumMilkTruck/CesiumMilkTruck.gltf',
      'packs/battle.json',
      'tilemap/tilemaps/simple-map.json',
    ]);
    // A .glb is read up to the end of its JSON chunk only.
    const glb = await readReferrerFile(onDisk.get('glb/CesiumMan.glb')!, 'glb/CesiumMan.glb');
    const whole = readFileSync(onDisk.get('glb/CesiumMan.glb')!);
    expect(glb.length).toBe(20 + whole.readUInt32LE(12));
    expect(glb.length).toBeLessThan(whole.length);
  });

  test('a malformed referrer is no error: the publish goes on, the file grouped by folder', () => {
    const tree = exampleTree();
    writeFileSync(join(tree, 'gltf/BoxTextured/BoxTextured.gltf'), '{"buffers": [{"uri": "BoxTextured0.bin"}');
    const out = join(temporaryDir(), 'published');
    const result = runCli([tree, '--out', out, '--group', 'auto']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const bundle = bundleOf(out);
    // folder:gltf, with the files it no longer reaches; the other model keeps its own group.
    expect(bundle.get('gltf/BoxTextured/BoxTextured.gltf')).toBe(bundle.get('gltf/BoxTextured/BoxTextured0.bin'));
    expect(bundle.get('gltf/BoxTextured/BoxTextured.gltf')).not.toBe(bundle.get('gltf/CesiumMilkTruck/CesiumMilkTruck.gltf'));
  });
});
