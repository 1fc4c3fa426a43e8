/**
 * bench/shapes.mjs's phaser-audio: a game whose first scene's preload loads 38 sounds (8 music
 * tracks in Ogg Vorbis, 14 ambience loops in WAV, sound effects in Ogg, MP3 and WAV; 8 MB) and 4
 * images. Phaser decodes every sound in its loader (Web Audio's decodeAudioData), so the scene's
 * create() runs once all are decoded. The one awake-bundle line, `this.load.awkbIndex`, is
 * bench/shapes/phaser-game.ts's preloadPublished; `?loose` leaves it out (the same files as plain
 * files under published/). The list is audio-list.json, which bench/shapes/stage.mjs stages the
 * files from (examples/assets/SOURCES.md).
 */
import * as Phaser from 'phaser';
import { preloadPublished, reportAtFirstFrame, startGame } from '../../phaser-game';
import list from '../audio-list.json';

class Boot extends Phaser.Scene {
  constructor() {
    super('boot');
  }

  preload(): void {
    preloadPublished(this);
    for (const image of list.images) this.load.image(image.key, image.url);
    for (const sound of list.audio) this.load.audio(sound.key, sound.url);
  }

  create(): void {
    const { width, height } = this.scale;
    this.add.image(0, 0, 'background').setOrigin(0).setDisplaySize(width, height).setAlpha(0.6);
    this.add.image(width / 2, height / 2, 'splash').setScale(0.25);
    this.add.image(80, 80, 'coin');
    const sparks = this.add.particles(0, 0, 'particle', { speed: 120, lifespan: 600, emitting: false });
    // Browsers start audio on a gesture only.
    this.input.on('pointerdown', (pointer: Phaser.Input.Pointer) => {
      sparks.explode(12, pointer.x, pointer.y);
      this.sound.play(list.audio[Math.floor(Math.random() * list.audio.length)]!.key);
    });

    reportAtFirstFrame(this, () => ({
      textures: list.images.filter((image) => this.textures.exists(image.key)).length,
      sounds: list.audio.filter((sound) => this.cache.audio.exists(sound.key)).length,
      missing: list.audio.filter((sound) => !this.cache.audio.exists(sound.key)).map((sound) => sound.key),
    }));
  }
}

startGame(Boot);
