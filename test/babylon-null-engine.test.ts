/**
 * awake-bundle/babylon in Node with Babylon's NullEngine (no browser, no XMLHttpRequest): the
 * `awkb` scene-loader plugin reads a model from a published project on a real local server and
 * hands its bytes to the glTF loader; the result equals a load of the loose file's bytes.
 */
import { setTimeout as setTimeoutPromise } from 'node:timers/promises';
import '@babylonjs/loaders/glTF/index.js';
import { NullEngine } from '@babylonjs/core/Engines/nullEngine.js';
import { ImportMeshAsync, LoadAssetContainerAsync } from '@babylonjs/core/Loading/sceneLoader.js';
import type { AbstractMesh } from '@babylonjs/core/Meshes/abstractMesh.js';
import { Scene } from '@babylonjs/core/scene.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerAwkb, type AwkbRegistration } from '../adapters/babylon/index.js';
import { MemoryCache } from '../core/internal.js';
import { startStaticServer, type StaticServer } from '../core/node/index.js';
import { babylonSiteDir, publishSite, stageLoose } from './helpers/babylon-site';

let server: StaticServer;
let engine: NullEngine;
let dir: string;
const requested: string[] = [];

beforeAll(async () => {
  dir = babylonSiteDir();
  stageLoose(dir);
  publishSite(dir);
  server = await startStaticServer({ root: dir, log: (line) => requested.push(line) });
  engine = new NullEngine();
}, 60_000);

afterAll(async () => {
  engine?.dispose();
  // The XMLHttpRequest stand-in stays: Babylon aborts finished requests later, and jest gives each test file globals of its own.
  await server?.close();
});

const summary = (meshes: AbstractMesh[]) =>
  meshes.map((mesh) => ({
    name: mesh.name,
    vertices: mesh.getTotalVertices(),
    indices: mesh.getTotalIndices(),
    material: mesh.material?.name ?? null,
  }));

test('ImportMeshAsync and LoadAssetContainerAsync with pluginExtension .awkb load a .glb from bundles, as from its loose bytes', async () => {
  const looseScene = new Scene(engine);
  const loose = await ImportMeshAsync(new Uint8Array(readFileSync(join(dir, 'loose/glb/CesiumMilkTruck.glb'))), looseScene, {
    pluginExtension: '.glb',
  });
  let registration: AwkbRegistration | undefined;
  try {
    registration = await registerAwkb({ indexUrl: `${server.url}published/project.index.json` });
    const scene = new Scene(engine);
    const progress: number[] = [];
    const bundled = await ImportMeshAsync('glb/CesiumMilkTruck.glb', scene, {
      pluginExtension: '.awkb',
      onProgress: (event) => progress.push(event.loaded),
    });
    expect(summary(bundled.meshes)).toEqual(summary(loose.meshes));
    expect(bundled.meshes.length).toBeGreaterThan(1);
    expect(bundled.animationGroups.map((group) => group.name)).toEqual(loose.animationGroups.map((group) => group.name));
    expect(progress.at(-1)).toBe(readFileSync(join(dir, 'loose/glb/CesiumMilkTruck.glb')).length);
    const container = await LoadAssetContainerAsync(`${server.url}published/glb/CesiumMilkTruck.glb`, new Scene(engine), {
      pluginExtension: '.awkb',
    });
    expect(summary(container.meshes)).toEqual(summary(loose.meshes));
  } finally {
    registration?.dispose();
  }
  // The server's access log: the index and bundles, never a loose file.
  expect(requested.length).toBeGreaterThan(1);
  expect(requested.filter((line) => !/\/published\/(project\.index\.json|bundles\/[0-9a-f]{64}\.awkb)\b/.test(line))).toEqual([]);
});

test('a .gltf with separate .bin and texture loads from bundles: Babylon constructs an XMLHttpRequest, the adapter answers it', async () => {
  // Babylon's WebRequest constructs an XMLHttpRequest for every request, and Node has none; one
  // that refuses to be used shows that nothing reached the network.
  const scope = globalThis as { XMLHttpRequest?: unknown };
  scope.XMLHttpRequest = class {
    open(): never {
      throw new Error('this test has no network: the adapter should have answered');
    }
  };
  const registration = await registerAwkb({ indexUrl: `${server.url}published/project.index.json` });
  requested.length = 0;
  try {
    for (const options of [{ pluginExtension: '.awkb' }, {}]) {
      const url = options.pluginExtension
        ? 'gltf/Box Textured/Box Textured.gltf'
        : `${server.url}published/gltf/Box%20Textured/Box%20Textured.gltf`;
      const result = await ImportMeshAsync(url, new Scene(engine), options);
      expect(summary(result.meshes)).toEqual([
        { name: '__root__', vertices: 0, indices: 0, material: null },
        { name: 'node1', vertices: 24, indices: 36, material: 'Texture' },
      ]);
    }
  } finally {
    registration.dispose();
  }
  expect(requested.filter((line) => !/\/published\/(project\.index\.json|bundles\/[0-9a-f]{64}\.awkb)\b/.test(line))).toEqual([]);
});

test('dispose() aborts a load in flight: it rejects, saying the registration was disposed', async () => {
  // The index answers at once; the bundle is held by the server until the test has disposed.
  let requests = 0;
  let bundleAsked!: () => void;
  const bundleHeld = new Promise<void>((resolve) => (bundleAsked = resolve));
  const slow = await startStaticServer({
    root: dir,
    latencyMs: 60_000,
    delay: (ms, signal) => (++requests === 1 ? Promise.resolve() : (bundleAsked(), setTimeoutPromise(ms, undefined, { signal }))),
  });
  try {
    const registration = await registerAwkb({ indexUrl: `${slow.url}published/project.index.json`, cache: null });
    const loading = ImportMeshAsync('glb/CesiumMilkTruck.glb', new Scene(engine), { pluginExtension: '.awkb' }).then(
      () => 'loaded',
      (error: Error) => error.message,
    );
    await bundleHeld;
    registration.dispose();
    expect(await loading).toMatch(/disposed/);
  } finally {
    await slow.close();
  }
});

/**
 * A server over the published site whose first request (the index) answers at once and whose
 * later ones (bundles) wait until `release()`; `asked` resolves at the first of those.
 */
async function heldBundlesServer() {
  let requests = 0;
  let asked!: () => void;
  let release!: () => void;
  const bundleAsked = new Promise<void>((resolve) => (asked = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  const held = await startStaticServer({
    root: dir,
    latencyMs: 1,
    delay: () => (++requests === 1 ? Promise.resolve() : (asked(), released)),
    log: (line) => requested.push(line),
  });
  return { held, bundleAsked, release, bundleRequests: () => requests - 1 };
}

/** A cache whose writes start at once and end only when the test lets them. */
class HeldWrites extends MemoryCache {
  written = false;
  release!: () => void;
  readonly released = new Promise<void>((resolve) => (this.release = resolve));
  override async putMany(entries: readonly (readonly [string, Uint8Array])[]): Promise<void> {
    await this.released;
    await super.putMany(entries);
    this.written = true;
  }
}

// Issue 27, item 6 ("Start and tail"): the prefetch is one load the engine's own loads join, so
// Babylon parses the model as soon as its member passed, as it would a loose file, instead of
// starting its serial scene load after the prefetch's last byte.
test("prefetch: registerAwkb resolves while the prefetch is under way; the engine's load joins its bundle request, and `prefetched` settles once the files are verified and held, without waiting for the cache write", async () => {
  const { held, bundleAsked, release, bundleRequests } = await heldBundlesServer();
  const cache = new HeldWrites();
  let registration: AwkbRegistration | undefined;
  try {
    // Resolves with the bundle still held at the server (before, it waited for every byte: this test hung).
    registration = await registerAwkb({
      indexUrl: `${held.url}published/project.index.json`,
      cache,
      prefetch: ['glb/CesiumMilkTruck.glb'],
    });
    let prefetched = false;
    void registration.prefetched.then(() => (prefetched = true));
    await bundleAsked;
    expect(prefetched).toBe(false);
    const loading = ImportMeshAsync('glb/CesiumMilkTruck.glb', new Scene(engine), { pluginExtension: '.awkb' });
    release();
    const meshes = await loading;
    expect(meshes.meshes.length).toBeGreaterThan(1);
    await registration.prefetched;
    expect(cache.written).toBe(false); // settled while the write is held
    // One bundle request: the model's load joined the prefetch's.
    expect(bundleRequests()).toBe(1);
    cache.release();
    await registration.source.whenStored();
    expect(await cache.has(registration.source.entry('glb/CesiumMilkTruck.glb')!.sha256)).toBe(true);
  } finally {
    release();
    cache.release();
    registration?.dispose();
    await held.close();
  }
});

test('waitForPrefetch: registerAwkb resolves only once the prefetch is verified and held (not the cache write); the files then load from memory', async () => {
  const { held, bundleAsked, release, bundleRequests } = await heldBundlesServer();
  const cache = new HeldWrites();
  let registration: AwkbRegistration | undefined;
  try {
    let resolved = false;
    const registering = registerAwkb({
      indexUrl: `${held.url}published/project.index.json`,
      cache,
      prefetch: ['glb/CesiumMilkTruck.glb'],
      waitForPrefetch: true,
    }).then((opened) => ((resolved = true), opened));
    await bundleAsked;
    expect(resolved).toBe(false); // the bundle is held: the prefetch cannot have passed
    release();
    registration = await registering;
    expect(cache.written).toBe(false);
    const meshes = await ImportMeshAsync('glb/CesiumMilkTruck.glb', new Scene(engine), { pluginExtension: '.awkb' });
    expect(meshes.meshes.length).toBeGreaterThan(1);
    expect(bundleRequests()).toBe(1);
  } finally {
    release();
    cache.release();
    registration?.dispose();
    await held.close();
  }
});

test('prefetch of a path the index does not list: registerAwkb rejects naming it, before any bundle request', async () => {
  const { held, bundleRequests } = await heldBundlesServer();
  try {
    await expect(
      registerAwkb({
        indexUrl: `${held.url}published/project.index.json`,
        cache: null,
        prefetch: ['glb/CesiumMilkTruck.glb', 'glb/missing.glb'],
      }),
    ).rejects.toMatchObject({ name: 'AssetNotFoundError', message: expect.stringMatching(/prefetch: .*glb\/missing\.glb/) });
    expect(bundleRequests()).toBe(0);
  } finally {
    await held.close();
  }
});
