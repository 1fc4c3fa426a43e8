/**
 * What bench/shapes.mjs's Phaser games (phaser-audio, phaser-pack) share around their first
 * scene: the one awake-bundle line, `this.load.awkbIndex` (`?loose` leaves it out: the same files
 * as plain files under published/), the per-file hand-off record (bench/shapes/phaser-handoff.ts,
 * imported here before the game starts), what the bench reads of the page at the first frame,
 * and the game itself (640 × 320 in the page's #game, bench/shapes/phaser.html; the awkb plugin).
 */
import * as Phaser from 'phaser';
import { AwkbPlugin, awkbSource } from 'awake-bundle/phaser';
import { recordCompletes } from './phaser-handoff';

const LOOSE = new URLSearchParams(location.search).has('loose');

type BenchWindow = { exampleReady?: unknown; exampleStored?: Promise<unknown>; exampleSource?: unknown };

/** The start of the first scene's preload: the hand-off record, the published/ path, and (bundled) the index. */
export function preloadPublished(scene: Phaser.Scene): void {
  recordCompletes(scene.load);
  scene.load.setPath('published/');
  if (!LOOSE) scene.load.awkbIndex('assets', 'project.index.json');
}

/** At the first frame after `scene`'s create(): the bench's report (`counts()`, and the index's file count) and the source. */
export function reportAtFirstFrame(scene: Phaser.Scene, counts: () => Record<string, unknown>): void {
  scene.game.events.once('postrender', () => {
    const source = awkbSource(scene, 'assets');
    // Settles when the cache has stored this load's bundles (bench/shapes.mjs waits for it before a return visit).
    (window as BenchWindow).exampleStored = source?.whenStored();
    // Its stats() (held bytes, loads in flight), which bench/shapes.mjs reads when whenStored() takes too long.
    (window as BenchWindow).exampleSource = source;
    (window as BenchWindow).exampleReady = { ...counts(), indexFiles: source?.index.files.length ?? 0 };
  });
}

/** The game, its first scene `scene`; `config`, more of Phaser's game config. */
export function startGame(scene: Phaser.Types.Scenes.SceneType, config: Phaser.Types.Core.GameConfig = {}): Phaser.Game {
  return new Phaser.Game({
    type: Phaser.AUTO,
    parent: 'game',
    width: 640,
    height: 320,
    backgroundColor: '#14161a',
    ...config,
    plugins: { global: [{ key: 'awkb', plugin: AwkbPlugin, start: true }] },
    scene: [scene],
  });
}
