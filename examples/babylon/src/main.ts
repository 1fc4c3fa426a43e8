/**
 * A Babylon scene whose models, textures and sound come from AWKB bundles, verified byte by byte.
 * Its loading code is the ordinary Babylon code for files under `published/`: the one added call
 * is `registerAwkb`. Assets: examples/assets (licenses in examples/assets/SOURCES.md).
 */
import { ArcRotateCamera } from '@babylonjs/core/Cameras/arcRotateCamera.js';
import { Engine } from '@babylonjs/core/Engines/engine.js';
import { HemisphericLight } from '@babylonjs/core/Lights/hemisphericLight.js';
import '@babylonjs/core/Loading/loadingScreen.js';
import { AppendSceneAsync, ImportMeshAsync } from '@babylonjs/core/Loading/sceneLoader.js';
import { StandardMaterial } from '@babylonjs/core/Materials/standardMaterial.js';
import { Texture } from '@babylonjs/core/Materials/Textures/texture.js';
import { Color4 } from '@babylonjs/core/Maths/math.color.js';
import { Vector3 } from '@babylonjs/core/Maths/math.vector.js';
import { CreateGround } from '@babylonjs/core/Meshes/Builders/groundBuilder.js';
import { Scene } from '@babylonjs/core/scene.js';
import { CreateAudioEngineAsync } from '@babylonjs/core/AudioV2/webAudio/webAudioEngine.js';
import { CreateSoundAsync } from '@babylonjs/core/AudioV2/abstractAudio/audioEngineV2.js';
import '@babylonjs/loaders/glTF/index.js';
import { openBrowserCache } from 'awake-bundle';
import { registerAwkb } from 'awake-bundle/babylon';

/** `?loose`: the same scene from plain files under published/, no index (bench/engines.mjs puts them there). */
const LOOSE = new URLSearchParams(location.search).has('loose');

const SCENE_FILES = ['gltf/CesiumMilkTruck', 'glb/CesiumMan.glb', 'images/kenney/coin.png', 'audio/kenney-platformer-kit/coin.ogg'];

function status(text: string, fraction?: number): void {
  document.getElementById('text')!.textContent = text;
  if (fraction !== undefined) (document.querySelector('#bar > div') as HTMLElement).style.width = `${Math.round(fraction * 100)}%`;
}

async function main(): Promise<void> {
  const canvas = document.getElementById('scene') as HTMLCanvasElement;
  const engine = new Engine(canvas, true, { preserveDrawingBuffer: true });
  const scene = new Scene(engine);
  scene.clearColor = new Color4(0.11, 0.12, 0.14, 1);
  const camera = new ArcRotateCamera('camera', -Math.PI / 3, Math.PI / 2.6, 9, new Vector3(0, 1, 0), scene);
  camera.attachControl(canvas, true);
  new HemisphericLight('light', new Vector3(0.3, 1, 0.2), scene);

  // The one added call: URLs below published/ now load from its bundles (one request each).
  const registration = LOOSE
    ? undefined
    : await registerAwkb({
        indexUrl: 'published/project.index.json',
        cache: await openBrowserCache(),
        prefetch: SCENE_FILES,
        onPrefetchProgress: (p) =>
          status(
            `fetching bundles: ${(p.loadedBytes / 1024).toFixed(0)} / ${(p.totalBytes / 1024).toFixed(0)} KiB`,
            p.totalBytes ? p.loadedBytes / p.totalBytes : 1,
          ),
      });

  // Ordinary Babylon loading code, unchanged from a game that loads loose files.
  await AppendSceneAsync('published/gltf/CesiumMilkTruck/CesiumMilkTruck.gltf', scene);
  const man = await ImportMeshAsync('published/glb/CesiumMan.glb', scene);
  man.meshes[0]!.position = new Vector3(3, 0, 0);
  man.animationGroups[0]?.play(true);
  const ground = CreateGround('ground', { width: 12, height: 12 }, scene);
  const groundMaterial = new StandardMaterial('ground', scene);
  const coin = new Texture('published/images/kenney/coin.png', scene);
  coin.uScale = coin.vScale = 6;
  groundMaterial.diffuseTexture = coin;
  ground.material = groundMaterial;
  const audio = await CreateAudioEngineAsync();
  const sound = await CreateSoundAsync('coin', 'published/audio/kenney-platformer-kit/coin.ogg');
  canvas.addEventListener('pointerdown', () => void audio.unlockAsync().then(() => sound.play()));

  await scene.whenReadyAsync();
  engine.runRenderLoop(() => scene.render());
  window.addEventListener('resize', () => engine.resize());
  status('every file above came from verified bundles; click to hear the coin', 1);
  // Settles when the cache has stored the scene's bundles (bench/engines.mjs waits for it before a return visit).
  (window as { exampleStored?: Promise<unknown> }).exampleStored = registration?.source.whenStored();
  (window as { exampleReady?: unknown }).exampleReady = {
    meshes: scene.meshes.length,
    animations: scene.animationGroups.length,
    texture: coin.getSize(),
    soundMs: Math.round(sound.buffer.duration * 1000),
  };
}

main().catch((error: unknown) => {
  status(`failed: ${error instanceof Error ? error.message : String(error)}`);
  (window as { exampleFailed?: unknown }).exampleFailed = String(error);
  throw error;
});
