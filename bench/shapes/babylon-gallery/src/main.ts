/**
 * bench/shapes.mjs's babylon-gallery: nine glTF and GLB models (6.5 MB) loaded at once, shown in a
 * row: six milk trucks (each its own buffer and texture; three in folders of their own, three whose
 * buffers and images are in shared `buffers/` and `textures/` folders), Cesium Man, the milk truck
 * GLB and the textured box. Its one added call, `registerAwkb` with only the index's URL (every
 * other option at its default), and the scene around the loads are bench/shapes/babylon-scene.ts's;
 * `?loose` leaves the call out (the same files as plain files under published/). Assets:
 * bench/shapes/stage.mjs, from the same list (models.json).
 */
import { ImportMeshAsync } from '@babylonjs/core/Loading/sceneLoader.js';
import { Vector3 } from '@babylonjs/core/Maths/math.vector.js';
import { runScene } from '../../babylon-scene';
import MODELS from '../models.json';

runScene({ alpha: -Math.PI / 2, radius: 24 }, async (scene) => {
  const models = await Promise.all(
    MODELS.map(async (model, i) => {
      const result = await ImportMeshAsync(`published/${model}`, scene);
      result.meshes[0]!.position = new Vector3((i - 4) * 4, 0, 0);
      result.animationGroups[0]?.play(true);
      return result;
    }),
  );
  return {
    status: `${models.length} models`,
    models: models.filter((model) => model.meshes.length > 0).length,
    meshes: scene.meshes.length,
  };
});
