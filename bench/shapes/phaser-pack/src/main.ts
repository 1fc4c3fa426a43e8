/**
 * bench/shapes.mjs's phaser-pack: a game shaped like a Phaser 3 template's, whose first scene
 * loads a pack file (`this.load.pack`) that lists 19 small files in two sections (images,
 * spritesheets, an atlas, a bitmap font, JSON, sounds; 0.4 MB): start-up, not bytes, dominates.
 * The one awake-bundle line, `this.load.awkbIndex`, is bench/shapes/phaser-game.ts's
 * preloadPublished; `?loose` leaves it out (the same files as plain files under published/).
 * Assets: bench/shapes/stage.mjs (examples/assets/SOURCES.md).
 */
import * as Phaser from 'phaser';
import { preloadPublished, reportAtFirstFrame, startGame } from '../../phaser-game';

type PackEntry = { type: string; key: string };

/** Whether the pack's entry is in its cache (a texture, a sound, JSON, a font). */
function loaded(scene: Phaser.Scene, entry: PackEntry): boolean {
  switch (entry.type) {
    case 'audio':
      return scene.cache.audio.exists(entry.key);
    case 'json':
      return scene.cache.json.exists(entry.key);
    case 'bitmapFont':
      return scene.cache.bitmapFont.exists(entry.key) && scene.textures.exists(entry.key);
    default:
      return scene.textures.exists(entry.key);
  }
}

class Title extends Phaser.Scene {
  constructor() {
    super('title');
  }

  preload(): void {
    preloadPublished(this);
    this.load.pack('pack', 'assets/pack.json');
  }

  create(): void {
    const { width, height } = this.scale;
    this.add.image(0, 0, 'background').setOrigin(0).setDisplaySize(width, height).setAlpha(0.6);
    this.add
      .image(width / 2, height / 2, 'splash')
      .setScale(0.25)
      .setAlpha(0.5);
    const strings = this.cache.json.get('strings') as { title: string; hints: string[] };
    this.add.bitmapText(16, 12, 'retro', strings.title);
    this.add.image(520, 90, 'preview').setScale(0.35);
    this.add.image(90, 250, 'lamp').setScale(0.5);
    this.add.image(300, 250, 'rex');
    this.anims.create({ key: 'run', frames: this.anims.generateFrameNumbers('player', { start: 8, end: 13 }), frameRate: 10, repeat: -1 });
    this.anims.create({ key: 'wobble', frames: this.anims.generateFrameNumbers('slime', { start: 0, end: 4 }), frameRate: 8, repeat: -1 });
    this.add.sprite(200, 200, 'player').setScale(2).play('run');
    this.add.sprite(420, 236, 'slime').setScale(0.5).play('wobble');
    this.add.sprite(560, 250, 'chest', 0).setScale(0.5);
    const levels = this.cache.json.get('levels') as { levels: { spawns: { x: number; y: number; kind: string }[] }[] };
    for (const spawn of levels.levels[0]!.spawns.filter((s) => s.kind === 'coin')) this.add.image(spawn.x, spawn.y, 'coin').setScale(0.5);
    this.textures
      .get('emoji')
      .getFrameNames()
      .slice(0, 6)
      .forEach((frame, i) => this.add.image(60 + i * 60, 120, 'emoji', frame).setScale(0.5));
    this.add.particles(0, 0, 'particle', { speed: 80, lifespan: 500, emitting: false });

    reportAtFirstFrame(this, () => {
      const pack = this.cache.json.get('pack') as Record<string, { files: PackEntry[] }>;
      const entries = Object.values(pack).flatMap((section) => section.files);
      return {
        packEntries: entries.length,
        loaded: entries.filter((entry) => loaded(this, entry)).length,
        missing: entries.filter((entry) => !loaded(this, entry)).map((entry) => entry.key),
      };
    });
  }
}

startGame(Title, { pixelArt: true });
