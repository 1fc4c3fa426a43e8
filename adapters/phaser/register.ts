/** `import 'awake-bundle/phaser'` installs the adapter into the `phaser` module the game imports. */
import * as Phaser from 'phaser';
import type { PhaserNamespace } from './phaser-shapes.js';
import { registerAwkb } from './install.js';

registerAwkb(Phaser as unknown as PhaserNamespace);
