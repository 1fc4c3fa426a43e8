/**
 * awake-bundle/phaser: Phaser 3.60+ and 4.x load a game's files from verified AWKB bundles.
 *
 *   import 'awake-bundle/phaser';                        // registers `this.load.awkbIndex`
 *   preload() {
 *     this.load.awkbIndex('assets', 'published/project.index.json');
 *     this.load.image('crate', 'published/assets/crate.png');   // now read from a bundle
 *   }
 */
import './register.js';
import './types.js';

export { registerAwkb } from './install.js';
export { AwkbPlugin, awkbSource, AWKB_PROGRESS } from './plugin.js';
export type { AwkbIndexOptions, AwkbIndexFileConfig } from './options.js';
export type { ByteProgress } from './game-state.js';
