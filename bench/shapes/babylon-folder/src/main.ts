/**
 * bench/shapes.mjs's babylon-folder: a Babylon scene whose `models/` folder holds eleven models
 * (16 MB) of which it loads one, the milk truck (its .gltf, buffer and JPEG, 0.45 MB); the ten
 * others (1.5 MB each) are for later. Its one added call, `registerAwkb` with only the index's URL
 * (every other option at its default, the browser cache included), and the scene around the load
 * are bench/shapes/babylon-scene.ts's; `?loose` leaves the call out (the same files as plain files
 * under published/). Assets: bench/shapes/stage.mjs.
 */
import { ImportMeshAsync } from '@babylonjs/core/Loading/sceneLoader.js';
import { runScene } from '../../babylon-scene';

runScene({ alpha: -Math.PI / 3, radius: 9 }, async (scene) => {
  const truck = await ImportMeshAsync('published/models/CesiumMilkTruck.gltf', scene);
  truck.animationGroups[0]?.play(true);
  return { status: 'the milk truck, one model of the folder', models: 1, meshes: truck.meshes.length };
});
