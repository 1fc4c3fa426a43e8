/**
 * awake-bundle/babylon: Babylon's loads served from verified AWKB bundles.
 *
 *   import { registerAwkb } from 'awake-bundle/babylon';
 *   const awkb = await registerAwkb({ indexUrl: '/published/project.index.json' });
 *   await ImportMeshAsync('/published/models/truck.gltf', scene);   // no request but the bundle's
 *   awkb.dispose();                                                 // Babylon loads loose URLs again
 *
 * Imports Babylon only through deep `@babylonjs/core/...` paths, and never Phaser.
 */
export { registerAwkb, AwkbRegistration, type AwkbOptions, type AwkbTarget } from './registration.js';
export type { AwkbReadOptions } from './live-registrations.js';
export { AWKB_PLUGIN_NAME, AWKB_EXTENSION } from './scene-loader-plugin.js';
