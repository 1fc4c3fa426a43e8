/**
 * What bench/shapes.mjs's Babylon games (babylon-folder, babylon-gallery) share around their
 * loads: the page's canvas and status line (bench/shapes/babylon.html), the scene, camera and
 * light, the one added call, `registerAwkb` with only the index's URL (every other option at its
 * default, the browser cache included; `?loose` leaves it out: the same files as plain files under
 * published/), and after the loads the first frame and what the bench reads of the page.
 */
import { ArcRotateCamera } from '@babylonjs/core/Cameras/arcRotateCamera.js';
import { Engine } from '@babylonjs/core/Engines/engine.js';
import { HemisphericLight } from '@babylonjs/core/Lights/hemisphericLight.js';
import '@babylonjs/core/Loading/loadingScreen.js';
import { Color4 } from '@babylonjs/core/Maths/math.color.js';
import { Vector3 } from '@babylonjs/core/Maths/math.vector.js';
import { Scene } from '@babylonjs/core/scene.js';
import '@babylonjs/loaders/glTF/index.js';
import { registerAwkb } from 'awake-bundle/babylon';

const LOOSE = new URLSearchParams(location.search).has('loose');

type BenchWindow = { exampleReady?: unknown; exampleStored?: Promise<unknown>; exampleSource?: unknown; exampleFailed?: unknown };

/** What a game's loads report: its status line, and the models and meshes it loaded. */
export type Loaded = { status: string; models: number; meshes: number };

function status(text: string): void {
  document.getElementById('text')!.textContent = text;
}

async function run(camera: { alpha: number; radius: number }, load: (scene: Scene) => Promise<Loaded>): Promise<void> {
  const canvas = document.getElementById('scene') as HTMLCanvasElement;
  const engine = new Engine(canvas, true, { preserveDrawingBuffer: true });
  const scene = new Scene(engine);
  scene.clearColor = new Color4(0.11, 0.12, 0.14, 1);
  new ArcRotateCamera('camera', camera.alpha, Math.PI / 2.6, camera.radius, new Vector3(0, 1, 0), scene).attachControl(canvas, true);
  new HemisphericLight('light', new Vector3(0.3, 1, 0.2), scene);

  const registration = LOOSE ? undefined : await registerAwkb({ indexUrl: 'published/project.index.json' });
  const loaded = await load(scene);

  await scene.whenReadyAsync();
  engine.runRenderLoop(() => scene.render());
  window.addEventListener('resize', () => engine.resize());
  status(loaded.status);
  // Settles when the cache has stored what the scene read (bench/shapes.mjs waits for it before a return visit).
  (window as BenchWindow).exampleStored = registration?.source.whenStored();
  // Its stats() (held bytes, loads in flight), which bench/shapes.mjs reads when whenStored() takes too long.
  (window as BenchWindow).exampleSource = registration?.source;
  (window as BenchWindow).exampleReady = {
    models: loaded.models,
    meshes: loaded.meshes,
    animations: scene.animationGroups.length,
    textures: scene.textures.length,
    indexFiles: registration?.source.index.files.length ?? 0,
  };
}

/**
 * Runs the game: the scene (its camera at `camera.alpha` around the scene's centre, `radius` away),
 * the index registered unless `?loose`, then `load(scene)`, the game's own loads; a failure is
 * shown in the status line and reported to the bench.
 */
export function runScene(camera: { alpha: number; radius: number }, load: (scene: Scene) => Promise<Loaded>): void {
  run(camera, load).catch((error: unknown) => {
    status(`failed: ${error instanceof Error ? error.message : String(error)}`);
    (window as BenchWindow).exampleFailed = String(error);
    throw error;
  });
}
