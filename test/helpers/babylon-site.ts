/**
 * A published site for the Babylon adapter's browser tests: real models, textures and sounds from
 * examples/assets as loose files (`loose/`), the same files published by the CLI (`published/`),
 * the same with opaque ids (`opaque/`, an index that lists no paths), and a copy whose bundle
 * holding `gltf/BoxTextured/BoxTextured0.bin` is damaged (`damaged/`).
 *
 * `loose/gltf/Box Textured/Box Textured.gltf` is BoxTextured with spaces in its file names and
 * its uris percent-encoded (`Box%20Textured0.bin`), as an exporter writes them.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, temporaryDir } from './cli';
import { publishLooseFolder, type PublishedIndex } from './published-site';

export const BABYLON_PAGE = join(REPO, 'test', 'fixtures', 'babylon-page');
export const DAMAGED_MEMBER = 'gltf/BoxTextured/BoxTextured0.bin';
export const CUBE_FACES = ['px', 'py', 'pz', 'nx', 'ny', 'nz'];

export interface BabylonSite {
  dir: string;
  index: PublishedIndex;
}

const ASSETS = join(REPO, 'examples/assets');

/** The loose files (the test adds `textures/sky.env`, which Babylon in Chromium makes from the cube faces, before publishing). */
export function stageLoose(dir: string): string {
  const loose = join(dir, 'loose');
  cpSync(join(ASSETS, 'gltf'), join(loose, 'gltf'), { recursive: true });
  mkdirSync(join(loose, 'glb'), { recursive: true });
  cpSync(join(ASSETS, 'glb/CesiumMilkTruck.glb'), join(loose, 'glb/CesiumMilkTruck.glb'));
  cpSync(join(ASSETS, 'glb/LICENSE-CesiumMilkTruck.md'), join(loose, 'glb/LICENSE-CesiumMilkTruck.md'));
  const spaced = join(loose, 'gltf/Box Textured');
  mkdirSync(spaced, { recursive: true });
  const gltf = JSON.parse(readFileSync(join(ASSETS, 'gltf/BoxTextured/BoxTextured.gltf'), 'utf8'));
  gltf.buffers[0].uri = 'Box%20Textured0.bin';
  gltf.images[0].uri = 'Cesium%20Logo%20Flat.png';
  writeFileSync(join(spaced, 'Box Textured.gltf'), JSON.stringify(gltf, null, 2));
  cpSync(join(ASSETS, 'gltf/BoxTextured/BoxTextured0.bin'), join(spaced, 'Box Textured0.bin'));
  cpSync(join(ASSETS, 'gltf/BoxTextured/CesiumLogoFlat.png'), join(spaced, 'Cesium Logo Flat.png'));
  cpSync(join(ASSETS, 'gltf/BoxTextured/LICENSE-BoxTextured.md'), join(spaced, 'LICENSE-BoxTextured.md'));
  mkdirSync(join(loose, 'textures/cube'), { recursive: true });
  cpSync(join(ASSETS, 'images/kenney/coin.png'), join(loose, 'textures/coin.png'));
  // Six faces of one 128×128 image: the bundle holds the content once (SPEC §5).
  for (const face of CUBE_FACES) cpSync(join(ASSETS, 'images/kenney/particle.png'), join(loose, `textures/cube/sky_${face}.png`));
  cpSync(join(ASSETS, 'images/kenney/README-kenney-starter-kit-3d-platformer.md'), join(loose, 'textures/README-kenney.md'));
  mkdirSync(join(loose, 'audio'), { recursive: true });
  for (const file of ['kenney-platformer-kit/coin.ogg', 'superpowers/theme-4.ogg', 'arcade-kenney/laser1.wav'])
    cpSync(join(ASSETS, 'audio', file), join(loose, 'audio', file.split('/')[1]!));
  return loose;
}

/** Publishes `loose/` into `published/` (small bundles, so files spread over several) and a damaged copy. */
export function publishSite(dir: string): BabylonSite {
  return { dir, index: publishLooseFolder(dir, { targetMb: 0.25, salt: 'babylon-test', damagedMember: DAMAGED_MEMBER, damagedAt: 10 }) };
}

export function babylonSiteDir(): string {
  return temporaryDir('awkb-babylon-site-');
}
