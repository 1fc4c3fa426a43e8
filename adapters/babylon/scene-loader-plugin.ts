/**
 * The `awkb` scene-loader plugin: `ImportMeshAsync(url, scene, { pluginExtension: '.awkb' })`
 * (and every other scene-loader call) loads the file through an index, then hands it to the
 * plugin of the file's own extension, as Babylon would have. `url` is a URL below a registered
 * root or a bare project path (`models/truck.gltf`); relative uris inside the file resolve
 * against its logical folder, so a `.gltf`'s buffers and textures come from the index too.
 *
 * Babylon keeps its plugins in a module-private table with no way to remove one
 * (`RegisterSceneLoaderPlugin`, sceneLoader.js), so the plugin is registered once and is inert
 * (it refuses loads, saying why) while no registration lives. Plugins are keyed by lowercase
 * extension; `.awkb` is never a file's own extension, so it takes nothing from another loader.
 */
import type { AssetContainer } from '@babylonjs/core/assetContainer.js';
import { GetRegisteredSceneLoaderPluginMetadata, RegisterSceneLoaderPlugin, SceneLoader } from '@babylonjs/core/Loading/sceneLoader.js';
import type {
  ISceneLoaderAsyncResult,
  ISceneLoaderPlugin,
  ISceneLoaderPluginAsync,
  ISceneLoaderPluginFactory,
  ISceneLoaderProgressEvent,
  SceneLoaderPluginOptions,
} from '@babylonjs/core/Loading/sceneLoader.js';
import type { IFileRequest } from '@babylonjs/core/Misc/fileRequest.js';
import type { LoadFileError } from '@babylonjs/core/Misc/fileTools.js';
import type { WebRequest } from '@babylonjs/core/Misc/webRequest.js';
import { Observable } from '@babylonjs/core/Misc/observable.js';
import type { Scene } from '@babylonjs/core/scene.js';
import { AssetNotFoundError, UnsupportedOperationError } from '../../core/errors.js';
import { anyRegistration, targetOfUrlOrPath, type LiveTarget } from './live-registrations.js';

export const AWKB_PLUGIN_NAME = 'awkb';
export const AWKB_EXTENSION = '.awkb';

type AnyPlugin = ISceneLoaderPlugin | ISceneLoaderPluginAsync;
type Progress = (event: ISceneLoaderProgressEvent) => void;
type MeshNames = string | readonly string[] | null | undefined;

let registered = false;

/** Registers the `awkb` plugin with Babylon's scene loader, once per page. */
export function registerAwkbScenePlugin(): void {
  if (registered) return;
  registered = true;
  const factory: ISceneLoaderPluginFactory = {
    name: AWKB_PLUGIN_NAME,
    extensions: { [AWKB_EXTENSION]: { isBinary: false } },
    createPlugin: (options) => new AwkbScenePlugin(options),
  };
  RegisterSceneLoaderPlugin(factory);
}

/** One load's plugin (Babylon makes one per load through the factory, with that load's `pluginOptions`). */
class AwkbScenePlugin implements ISceneLoaderPluginAsync {
  readonly name = AWKB_PLUGIN_NAME;
  readonly extensions = { [AWKB_EXTENSION]: { isBinary: false } };
  private readonly options: SceneLoaderPluginOptions;
  private inner: ISceneLoaderPluginAsync | undefined;
  private target: LiveTarget | undefined;
  private readonly controller = new AbortController();

  constructor(options: SceneLoaderPluginOptions) {
    this.options = options;
  }

  loadFile(
    scene: Scene,
    fileOrUrl: unknown,
    _rootUrl: string,
    onSuccess: (data: unknown) => void,
    onProgress?: Progress,
    _useArrayBuffer?: boolean,
    onError?: (request?: WebRequest, exception?: LoadFileError) => void,
  ): IFileRequest {
    const request: IFileRequest = { abort: () => this.controller.abort(), onCompleteObservable: new Observable<IFileRequest>() };
    this.loadData(scene, fileOrUrl, onProgress).then(
      (data) => {
        onSuccess(data);
        request.onCompleteObservable.notifyObservers(request);
      },
      (error) => onError?.(undefined, error as LoadFileError),
    );
    return request;
  }

  importMeshAsync(
    meshNames: MeshNames,
    scene: Scene,
    data: unknown,
    _rootUrl: string,
    onProgress?: Progress,
  ): Promise<ISceneLoaderAsyncResult> {
    const [inner, rootUrl, fileName] = this.handOver();
    return inner.importMeshAsync(meshNames, scene, data, rootUrl, onProgress, fileName);
  }

  loadAsync(scene: Scene, data: unknown, _rootUrl: string, onProgress?: Progress): Promise<void> {
    const [inner, rootUrl, fileName] = this.handOver();
    return inner.loadAsync(scene, data, rootUrl, onProgress, fileName);
  }

  loadAssetContainerAsync(scene: Scene, data: unknown, _rootUrl: string, onProgress?: Progress): Promise<AssetContainer> {
    const [inner, rootUrl, fileName] = this.handOver();
    return inner.loadAssetContainerAsync(scene, data, rootUrl, onProgress, fileName);
  }

  /** Reads the member and lets the plugin of its extension turn it into that plugin's data. */
  private async loadData(scene: Scene, fileOrUrl: unknown, onProgress: Progress | undefined): Promise<unknown> {
    if (!anyRegistration())
      throw new UnsupportedOperationError(
        'the awkb scene-loader plugin has no live registration: call registerAwkb() first (or again after dispose())',
      );
    if (typeof fileOrUrl !== 'string')
      throw new UnsupportedOperationError('the awkb scene-loader plugin loads a URL or a project path, not a File or bytes');
    const target = targetOfUrlOrPath(fileOrUrl);
    if (!target)
      throw new AssetNotFoundError(
        fileOrUrl,
        undefined,
        `${JSON.stringify(fileOrUrl)} is not below the root of any registered index, nor a path one lists`,
      );
    this.target = target;
    const extension = extensionOf(target.path);
    const metadata = GetRegisteredSceneLoaderPluginMetadata()
      .flatMap((plugin) => plugin.extensions)
      .find((entry) => entry.extension === extension);
    if (!metadata || extension === AWKB_EXTENSION)
      throw new UnsupportedOperationError(
        `no scene-loader plugin for ${extension} files (${target.path}); import it first, e.g. import '@babylonjs/loaders/glTF'`,
        { path: target.path },
      );
    const plugin = SceneLoader.GetPluginForExtension(extension) as AnyPlugin | ISceneLoaderPluginFactory;
    const inner = 'createPlugin' in plugin ? await plugin.createPlugin(this.options) : plugin;
    this.inner = asAsync(inner);
    // Observers (pluginOptions hooks, a glTF loader's observables) see the plugin that does the work, as in a direct load.
    SceneLoader.OnPluginActivatedObservable.notifyObservers(inner);
    const { registration, path } = target;
    const rootUrl = folderUrl(target.url);
    const signal = this.controller.signal;
    const report = onProgress ? (loaded: number, total: number) => onProgress({ lengthComputable: true, loaded, total }) : undefined;
    if (!metadata.isBinary && inner.loadFile && !inner.directLoad) {
      // A text format its plugin only loads by URL: the request hook serves that URL from the bundle.
      return callLoadFile(inner, scene, target.url, rootUrl, onProgress, false, fileNameOf(path));
    }
    const bytes = await registration.read(path, { signal, ...(report ? { onProgress: report } : {}) });
    if (metadata.isBinary)
      return inner.loadFile ? callLoadFile(inner, scene, bytes, rootUrl, undefined, true, fileNameOf(path)) : bytes.buffer;
    const text = new TextDecoder().decode(bytes);
    // The text itself, parsed as the plugin parses a `data:` source (a .gltf's JSON): no request, so this works in Node too.
    if (inner.directLoad && inner.canDirectLoad?.(text)) return inner.directLoad(scene, text);
    return text;
  }

  private handOver(): [ISceneLoaderPluginAsync, string, string] {
    // An internal assertion: Babylon parses only what loadData loaded, so a plain Error here is a bug.
    if (!this.inner || !this.target) throw new Error('internal: the awkb plugin was asked to parse data it did not load');
    return [this.inner, folderUrl(this.target.url), fileNameOf(this.target.path)];
  }
}

function callLoadFile(
  plugin: AnyPlugin,
  scene: Scene,
  data: string | Uint8Array,
  rootUrl: string,
  onProgress: Progress | undefined,
  binary: boolean,
  fileName: string,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    // The engine plugin's own failure, passed on as Babylon reports it (its exception, else a message).
    plugin.loadFile!(
      scene,
      data as string,
      rootUrl,
      resolve,
      onProgress,
      binary,
      (request?: { statusText?: string }, exception?: unknown) =>
        reject(exception ?? new Error(request?.statusText ?? `could not load ${fileName}`)),
      fileName,
    );
  });
}

/** Babylon's own adapter from a callback plugin to a promise one is private (sceneLoader.js `toAsyncPlugin`); this is the same. */
function asAsync(plugin: AnyPlugin): ISceneLoaderPluginAsync {
  if (!('importMesh' in plugin) && !('load' in plugin) && !('loadAssetContainer' in plugin)) return plugin as ISceneLoaderPluginAsync;
  const sync = plugin as ISceneLoaderPlugin;
  const run = <T>(invoke: (onError: (message: string, exception?: unknown) => void) => T): T => {
    let failure: { message: string; exception?: unknown } | undefined;
    const result = invoke((message, exception) => (failure = { message, exception }));
    // As above: the engine plugin's failure, not ours, so it keeps Babylon's shape.
    if (!result) throw failure?.exception ?? new Error(failure?.message ?? `${sync.name} could not load the file`);
    return result;
  };
  return {
    name: sync.name,
    extensions: sync.extensions,
    importMeshAsync: async (meshNames, scene, data, rootUrl) => {
      const meshes: never[] = [];
      const particleSystems: never[] = [];
      const skeletons: never[] = [];
      run((onError) => sync.importMesh(meshNames, scene, data, rootUrl, meshes, particleSystems, skeletons, onError));
      return {
        meshes,
        particleSystems,
        skeletons,
        animationGroups: [],
        transformNodes: [],
        geometries: [],
        lights: [],
        spriteManagers: [],
      };
    },
    loadAsync: async (scene, data, rootUrl) => void run((onError) => sync.load(scene, data, rootUrl, onError)),
    loadAssetContainerAsync: async (scene, data, rootUrl) => run((onError) => sync.loadAssetContainer(scene, data, rootUrl, onError)),
  };
}

function extensionOf(path: string): string {
  const name = fileNameOf(path);
  const dot = name.lastIndexOf('.');
  return dot < 0 ? '' : name.slice(dot).toLowerCase();
}

function fileNameOf(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function folderUrl(url: string): string {
  return url.slice(0, url.lastIndexOf('/') + 1);
}
