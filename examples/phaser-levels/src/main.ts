/**
 * The Phaser levels example: a game with two levels whose assets folder holds more than its first
 * scene loads, as a real game's does (the second level's map, sprites and sounds, spare formats,
 * @2x images; ../assets/SOURCES.md lists them). Level 1 loads its own files; level 2 loads the
 * rest when the player asks for it (a click on "NEXT LEVEL"). The loading code is ordinary Phaser
 * code; the one awake-bundle line is `this.load.awkbIndex`, and later scenes reuse its source.
 */
import * as Phaser from 'phaser';
import { AwkbPlugin, awkbSource, type ByteProgress } from 'awake-bundle/phaser';

const query = new URLSearchParams(location.search);
/** `?loose`: the same game from plain files under published/, no index (bench/engines.mjs puts them there). */
const LOOSE = query.has('loose');
/** `?neededBytes=off`: each bundle a load touches comes whole (test/browser-fetched-used.test.ts compares what that fetches). */
const INDEX_OPTIONS = query.get('neededBytes') === 'off' ? { neededBytes: false } : {};
/** The @2x images on high-density screens, as games pick them. */
const SCALE = window.devicePixelRatio >= 2 ? 2 : 1;
const hd = (path: string): string => (SCALE === 2 ? path.replace(/\.png$/, '@2x.png') : path);

type ExampleWindow = { exampleReady?: unknown; exampleLevel2Ready?: unknown; exampleStored?: Promise<unknown>; exampleLoads?: unknown };

/** A bar that follows bytes, not file counts: one bundle may hold a hundred small files. */
function progressBar(scene: Phaser.Scene, what: string): void {
  const { width, height } = scene.scale;
  scene.add.rectangle(width / 2, height / 2, 404, 28).setStrokeStyle(2, 0x9ad0ff);
  const bar = scene.add.rectangle(width / 2 - 200, height / 2, 0, 20, 0x9ad0ff).setOrigin(0, 0.5);
  const label = scene.add
    .text(width / 2, height / 2 + 32, `loading ${what}…`, { fontFamily: 'monospace', fontSize: '14px', color: '#cfe6ff' })
    .setOrigin(0.5, 0);
  scene.load.on('awkbprogress', ({ loadedBytes, totalBytes }: ByteProgress) => {
    bar.width = totalBytes === 0 ? 400 : (400 * loadedBytes) / totalBytes;
    label.setText(`${what}: ${(loadedBytes / 1024).toFixed(0)} / ${(totalBytes / 1024).toFixed(0)} KiB from bundles`);
  });
}

/** The 16 × 16 fixed-grid font, 15 cells a row from U+0020 (see ../../assets/SOURCES.md), once per game. */
function addRetroFont(scene: Phaser.Scene): void {
  if (scene.cache.bitmapFont.exists('retro')) return;
  scene.cache.bitmapFont.add(
    'retro',
    Phaser.GameObjects.RetroFont.Parse(scene, {
      image: 'retro',
      width: 16,
      height: 16,
      chars: Phaser.GameObjects.RetroFont.TEXT_SET1,
      charsPerRow: 15,
      'offset.x': 0,
      'offset.y': 0,
      'spacing.x': 0,
      'spacing.y': 0,
      lineSpacing: 0,
    }),
  );
}

function addMap(scene: Phaser.Scene, key: string): Phaser.Tilemaps.Tilemap {
  const map = scene.make.tilemap({ key });
  const tiles = map.addTilesetImage('kenney-tileset-64px-extruded', 'tiles')!;
  for (const name of ['Ground2', 'Ground', 'Lava']) map.createLayer(name, tiles, 0, 0)?.setScale(0.5);
  return map;
}

class LevelOne extends Phaser.Scene {
  constructor() {
    super('level-1');
  }

  preload(): void {
    progressBar(this, 'level 1');
    this.load.setPath('published/');
    if (!LOOSE) this.load.awkbIndex('assets', 'project.index.json', INDEX_OPTIONS);
    this.load.tilemapTiledJSON('level-1', 'maps/level-1.json');
    this.load.image('tiles', 'tiles/kenney-tileset-64px-extruded.png');
    this.load.atlas('emoji', 'sprites/emoji.png', 'sprites/emoji.json');
    this.load.spritesheet('player', hd('sprites/player.png'), {
      frameWidth: 32 * SCALE,
      frameHeight: 32 * SCALE,
      margin: SCALE,
      spacing: 2 * SCALE,
    });
    this.load.spritesheet('slime', hd('sprites/slime.png'), { frameWidth: 141 * SCALE, frameHeight: 107 * SCALE });
    this.load.image('retro', 'fonts/font-16x16.png');
    this.load.image('background', hd('images/background.png'));
    this.load.image('particle', hd('images/particle.png'));
    this.load.audio('theme', 'audio/theme-4.ogg');
    this.load.audio('coin', 'audio/coin.ogg');
    this.load.audio('laser', ['audio/laser1.ogg', 'audio/laser1.mp3']);
  }

  create(): void {
    this.add.image(0, 0, 'background').setOrigin(0).setDisplaySize(this.scale.width, this.scale.height).setAlpha(0.5);
    const map = addMap(this, 'level-1');
    addRetroFont(this);
    this.add.bitmapText(16, 12, 'retro', 'LEVEL 1');
    const next = this.add.bitmapText(this.scale.width - 16, 12, 'retro', 'NEXT LEVEL').setOrigin(1, 0);
    next.setInteractive({ useHandCursor: true }).on('pointerdown', () => this.scene.start('level-2'));

    this.anims.create({ key: 'run', frames: this.anims.generateFrameNumbers('player', { start: 8, end: 13 }), frameRate: 10, repeat: -1 });
    this.anims.create({ key: 'wobble', frames: this.anims.generateFrameNumbers('slime', { start: 0, end: 4 }), frameRate: 8, repeat: -1 });
    this.add
      .sprite(120, 250, 'player')
      .setScale(2 / SCALE)
      .play('run');
    this.add
      .sprite(520, 236, 'slime')
      .setScale(0.6 / SCALE)
      .play('wobble');
    const emoji = this.textures.get('emoji').getFrameNames();
    emoji.slice(0, 8).forEach((frame, i) => {
      const sprite = this.add.image(80 + i * 68, 110, 'emoji', frame).setScale(0.6);
      this.tweens.add({ targets: sprite, y: 130, duration: 600 + i * 60, yoyo: true, repeat: -1, ease: 'Sine.inOut' });
    });
    const sparks = this.add.particles(0, 0, 'particle', {
      speed: 120,
      scale: { start: 0.25 / SCALE, end: 0 },
      lifespan: 600,
      emitting: false,
      blendMode: 'ADD',
    });
    // Browsers start audio on a gesture only.
    this.input.on('pointerdown', (pointer: Phaser.Input.Pointer) => {
      sparks.explode(16, pointer.x, pointer.y);
      this.sound.play(pointer.x < this.scale.width / 2 ? 'coin' : 'laser');
      if (!this.sound.get('theme')) this.sound.add('theme', { loop: true, volume: 0.4 }).play();
    });

    this.game.events.once('postrender', () => {
      const source = awkbSource(this, 'assets');
      const page = window as unknown as ExampleWindow;
      // Settles when the cache has stored this load's bundles (bench/engines.mjs waits for it before a return visit).
      page.exampleStored = source?.whenStored();
      // What the loader asked the source for, by scene (test/browser-fetched-used.test.ts weighs it).
      page.exampleLoads = source?.recordedLoads();
      page.exampleReady = {
        level: 1,
        textures: ['tiles', 'emoji', 'player', 'slime', 'retro', 'background', 'particle'].filter((key) => this.textures.exists(key))
          .length,
        emojiFrames: emoji.length,
        mapLayers: map.layers.length,
        sounds: ['theme', 'coin', 'laser'].filter((key) => this.cache.audio.exists(key)).length,
        indexFiles: source?.index.files.length ?? 0,
      };
    });
  }
}

class LevelTwo extends Phaser.Scene {
  constructor() {
    super('level-2');
  }

  preload(): void {
    progressBar(this, 'level 2');
    this.load.setPath('published/');
    this.load.tilemapTiledJSON('level-2', 'maps/level-2.json');
    this.load.spritesheet('chest', 'sprites/chest.png', { frameWidth: 127, frameHeight: 88 });
    this.load.image('tyrannosaurus', 'sprites/tyrannosaurus-walk.gif');
    this.load.image('space', 'images/space-shooter-preview.png');
    this.load.audio('gun', 'audio/gun-1.ogg');
    this.load.audio('jump', ['audio/jump.ogg', 'audio/character-jump.mp3']);
    this.load.audio('hit', 'audio/4.wav');
  }

  create(): void {
    this.add.image(0, 0, 'space').setOrigin(0).setDisplaySize(this.scale.width, this.scale.height).setAlpha(0.4);
    const map = addMap(this, 'level-2');
    this.add.bitmapText(16, 12, 'retro', 'LEVEL 2');
    this.anims.create({
      key: 'open',
      frames: this.anims.generateFrameNumbers('chest', { start: 0, end: 5 }),
      frameRate: 6,
      repeat: -1,
      yoyo: true,
    });
    this.add.sprite(320, 236, 'chest').setScale(0.8).play('open');
    this.add.image(140, 230, 'tyrannosaurus').setScale(0.8);
    this.input.on('pointerdown', (pointer: Phaser.Input.Pointer) =>
      this.sound.play(pointer.x < this.scale.width / 3 ? 'gun' : pointer.x < (2 * this.scale.width) / 3 ? 'jump' : 'hit'),
    );
    this.game.events.once('postrender', () => {
      (window as unknown as ExampleWindow).exampleLevel2Ready = {
        level: 2,
        textures: ['chest', 'tyrannosaurus', 'space'].filter((key) => this.textures.exists(key)).length,
        mapLayers: map.layers.length,
        sounds: ['gun', 'jump', 'hit'].filter((key) => this.cache.audio.exists(key)).length,
      };
    });
  }
}

new Phaser.Game({
  type: Phaser.AUTO,
  parent: 'game',
  width: 640,
  height: 320,
  backgroundColor: '#14161a',
  pixelArt: true,
  plugins: { global: [{ key: 'awkb', plugin: AwkbPlugin, start: true }] },
  scene: [LevelOne, LevelTwo],
});
