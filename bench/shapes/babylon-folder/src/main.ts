/**
 * bench/shapes.mjs's babylon-folder: a Babylon scene whose `models/` folder holds eleven models
 * (16 MB) of which it loads one, the milk truck (its .gltf, buffer and JPEG, 0.45 MB); the ten
 * others (1.5 MB each) are for later. Its one added call is `registerAwkb` with only the index's
 * URL (every other option at its default, the browser cache included); `?loose` leaves it out
 * (the same files as plain files under published/). Assets: bench/shapes/stage.mjs.
 */
import { ArcRotateCamera } from '@babylonjs/core/Cameras/arcRotateCamera.js';
import { Engine } from '@babylonjs/core/Engines/engine.js';
import { HemisphericLight } from '@babylonjs/core/Lights/hemisphericLight.js';
import '@babylonjs/core/Loading/loadingScreen.js';
import { ImportMeshAsync } from '@babylonjs/core/Loading/sceneLoader.js';
import { Color4 } from '@babylonjs/core/Maths/math.color.js';
import { Vector3 } from '@babylonjs/core/Maths/math.vector.js';
import { Scene } from '@babylonjs/core/scene.js';
import '@babylonjs/loaders/glTF/index.js';
import { registerAwkb } from 'awake-bundle/babylon';

const LOOSE = new URLSearchParams(location.search).has('loose');

type BenchWindow = { exampleReady?: unknown; exampleStored?: Promise<unknown>; exampleSource?: unknown; exampleFailed?: unknown };

function status(text: string): void {
  document.getElementById('text')!.textContent = text;
}

async function main(): Promise<void> {
  const canvas = document.getElementById('scene') as HTMLCanvasElement;
  const engine = new Engine(canvas, true, { preserveDrawingBuffer: true });
  const scene = new Scene(engine);
  scene.clearColor = new Color4(0.11, 0.12, 0.14, 1);
  const camera = new ArcRotateCamera('camera', -Math.PI / 3, Math.PI / 2.6, 9, new Vector3(0, 1, 0), scene);
  camera.attachControl(canvas, true);
  new HemisphericLight('light', new Vector3(0.3, 1, 0.2), scene);

  const registration = LOOSE ? undefined : await registerAwkb({ indexUrl: 'published/project.index.json' });
  const truck = await ImportMeshAsync('published/models/CesiumMilkTruck.gltf', scene);
  truck.animationGroups[0]?.play(true);

  await scene.whenReadyAsync();
  engine.runRenderLoop(() => scene.render());
  window.addEventListener('resize', () => engine.resize());
  status('the milk truck, one model of the folder');
  // Settles when the cache has stored what the scene read (bench/shapes.mjs waits for it before a return visit).
  (window as BenchWindow).exampleStored = registration?.source.whenStored();
  // Its stats() (held bytes, loads in flight), which bench/shapes.mjs reads when whenStored() takes too long.
  (window as BenchWindow).exampleSource = registration?.source;
  (window as BenchWindow).exampleReady = {
    models: 1,
    meshes: truck.meshes.length,
    animations: scene.animationGroups.length,
    textures: scene.textures.length,
    indexFiles: registration?.source.index.files.length ?? 0,
  };
}

main().catch((error: unknown) => {
  status(`failed: ${error instanceof Error ? error.message : String(error)}`);
  (window as BenchWindow).exampleFailed = String(error);
  throw error;
});
