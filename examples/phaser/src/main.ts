/**
 * The Phaser example: a small harbour scene whose every asset comes from verified AWKB bundles.
 * The loading code is ordinary Phaser code; the one awake-bundle line is `this.load.awkbIndex`.
 * Assets: ../assets (see ../assets/SOURCES.md for their authors and licenses).
 */
import * as Phaser from 'phaser';
import { AwkbPlugin, awkbSource, type ByteProgress } from 'awake-bundle/phaser';

/** `?loose`: the same game from plain files under published/, no index (bench/engines.mjs puts them there). */
const LOOSE = new URLSearchParams(location.search).has('loose');
/** `?video`: a video in preload too, played in the harbour (bench/engines.mjs builds a site whose assets hold video/intro.webm). */
const VIDEO = new URLSearchParams(location.search).has('video');

class Preload extends Phaser.Scene {
  constructor() {
    super('preload');
  }

  preload(): void {
    const { width, height } = this.scale;
    this.add.rectangle(width / 2, height / 2, 404, 28).setStrokeStyle(2, 0x9ad0ff);
    const bar = this.add.rectangle(width / 2 - 200, height / 2, 0, 20, 0x9ad0ff).setOrigin(0, 0.5);
    const label = this.add
      .text(width / 2, height / 2 + 32, 'opening the index…', { fontFamily: 'monospace', fontSize: '14px', color: '#cfe6ff' })
      .setOrigin(0.5, 0);
    // The bar follows bytes, not file counts: one bundle may hold a hundred small files.
    this.load.on('awkbprogress', ({ loadedBytes, totalBytes }: ByteProgress) => {
      bar.width = totalBytes === 0 ? 400 : (400 * loadedBytes) / totalBytes;
      label.setText(`${(loadedBytes / 1024).toFixed(0)} / ${(totalBytes / 1024).toFixed(0)} KiB from bundles`);
    });

    this.load.setPath('published/');
    if (!LOOSE) this.load.awkbIndex('assets', 'project.index.json');
    this.load.tilemapTiledJSON('map', 'tilemap/tilemaps/simple-map.json');
    this.load.image('tiles', 'tilemap/tilesets/kenney-tileset-64px-extruded.png');
    this.load.atlas('emoji', 'atlas/emoji/emoji.png', 'atlas/emoji/emoji.json');
    this.load.spritesheet('player', 'spritesheet/0x72-industrial-player-32px-extruded.png', {
      frameWidth: 32,
      frameHeight: 32,
      margin: 1,
      spacing: 2,
    });
    this.load.spritesheet('slime', 'spritesheet/superpowers/slime/sprite-sheet-141x107.png', { frameWidth: 141, frameHeight: 107 });
    this.load.image('retro', 'bitmapfont/retrofont/font-16x16.png');
    this.load.image('background', 'images/superpowers/background-1.png');
    this.load.image('particle', 'images/kenney/particle.png');
    this.load.audio('theme', 'audio/superpowers/theme-4.ogg');
    this.load.audio('coin', 'audio/kenney-platformer-kit/coin.ogg');
    this.load.audio('laser', ['audio/arcade-kenney/laser1.ogg', 'audio/arcade-kenney/laser1.mp3']);
    if (VIDEO) this.load.video('intro', 'video/intro.webm', true);
  }

  create(): void {
    this.scene.start('harbour');
  }
}

class Harbour extends Phaser.Scene {
  constructor() {
    super('harbour');
  }

  create(): void {
    this.add.image(0, 0, 'background').setOrigin(0).setDisplaySize(this.scale.width, this.scale.height).setAlpha(0.5);

    const map = this.make.tilemap({ key: 'map' });
    const tiles = map.addTilesetImage('kenney-tileset-64px-extruded', 'tiles')!;
    for (const name of ['Ground2', 'Ground', 'Lava']) map.createLayer(name, tiles, 0, 0)?.setScale(0.5);

    // A fixed-grid font: 16x16 cells, 15 a row, from U+0020 (see ../assets/SOURCES.md).
    this.cache.bitmapFont.add(
      'retro',
      Phaser.GameObjects.RetroFont.Parse(this, {
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
    this.add.bitmapText(16, 12, 'retro', 'AWAKE-BUNDLE: EVERY BYTE VERIFIED');

    this.anims.create({ key: 'run', frames: this.anims.generateFrameNumbers('player', { start: 8, end: 13 }), frameRate: 10, repeat: -1 });
    this.anims.create({ key: 'wobble', frames: this.anims.generateFrameNumbers('slime', { start: 0, end: 4 }), frameRate: 8, repeat: -1 });
    this.add.sprite(120, 250, 'player').setScale(2).play('run');
    this.add.sprite(520, 236, 'slime').setScale(0.6).play('wobble');

    const emoji = this.textures.get('emoji').getFrameNames();
    emoji.slice(0, 8).forEach((frame, i) => {
      const sprite = this.add.image(80 + i * 68, 110, 'emoji', frame).setScale(0.6);
      this.tweens.add({ targets: sprite, y: 130, duration: 600 + i * 60, yoyo: true, repeat: -1, ease: 'Sine.inOut' });
    });
    if (VIDEO) this.add.video(560, 280, 'intro').setDisplaySize(128, 72).play(true);
    const sparks = this.add.particles(0, 0, 'particle', {
      speed: 120,
      scale: { start: 0.25, end: 0 },
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
      // Settles when the cache has stored this load's bundles (bench/engines.mjs waits for it before a return visit).
      (window as unknown as { exampleStored?: Promise<unknown> }).exampleStored = source?.whenStored();
      (window as unknown as { exampleReady: unknown }).exampleReady = {
        textures: ['tiles', 'emoji', 'player', 'slime', 'retro', 'background', 'particle'].filter((key) => this.textures.exists(key))
          .length,
        emojiFrames: emoji.length,
        mapLayers: map.layers.length,
        sounds: ['theme', 'coin', 'laser'].filter((key) => this.cache.audio.exists(key)).length,
        indexFiles: source?.index.files.length ?? 0,
        ...(VIDEO ? { videos: this.cache.video.exists('intro') ? 1 : 0 } : {}),
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
  scene: [Preload, Harbour],
});
