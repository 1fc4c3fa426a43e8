/**
 * The Babylon hooks, installed once while any registration lives and removed with the last one.
 * Checked against @babylonjs/core 9.35's shipped source:
 *
 * - `WebRequest.prototype.open`: every XHR Babylon makes goes through one `WebRequest` (scene
 *   files via `RequestFile`, glTF buffers and images via the loader's `_loadFile`, `.env`, KTX,
 *   legacy `Tools.LoadFile`). For a URL that maps into an index, its XHR is swapped for a
 *   `BundleRequest` that answers asynchronously from verified bundles: no network request.
 * - `WebRequest.CustomRequestModifiers`: with a modifier present, `LoadImage` loads ordinary
 *   URLs through `LoadFile` (XHR) instead of `img.src` (fileTools.pure.js), so `new Texture(url)`
 *   and `CubeTexture` faces reach the hook above. The modifier itself is synchronous: it can only
 *   hand out an object URL already made (a streaming sound's, below).
 * - `WebRequest.FetchAsync` (static, async): the v2 audio engine's static sounds fetch through it
 *   (audioUtils.js `_LoadArrayBufferFromUrlAsync`), and so does the legacy `Sound` (built on v2).
 * - `createStreamingSoundAsync` of each v2 audio engine (seen through `AudioEngineV2.Instances` and
 *   `OnAudioEngineV2CreatedObservable`): a streaming sound sets `audio.src` itself, synchronously,
 *   so its mapped URLs become object URLs of verified bytes before Babylon sees them.
 */
import { OnAudioEngineV2CreatedObservable, AudioEngineV2 } from '@babylonjs/core/AudioV2/abstractAudio/audioEngineV2.js';
import type { Observer } from '@babylonjs/core/Misc/observable.js';
import { WebRequest } from '@babylonjs/core/Misc/webRequest.js';
import { mediaTypeOf } from '../../core/format/media-types.js';
import { BundleRequest } from './bundle-request.js';
import { noticeLoose, targetOf } from './live-registrations.js';
import { registerAwkbScenePlugin } from './scene-loader-plugin.js';

type Open = (this: WebRequest, method: string, url: string, baseHeaders?: Record<string, string>) => void;
type FetchAsync = typeof WebRequest.FetchAsync;
type Modifier = (request: XMLHttpRequest, url: string) => string | void;
type StreamingSource = HTMLMediaElement | string | string[];

interface Installed {
  open: Open;
  fetchAsync: FetchAsync;
  ourOpen: Open;
  ourFetchAsync: FetchAsync;
  modifier: Modifier;
  engineObserver: Observer<AudioEngineV2> | null;
  engines: Set<AudioEngineV2>;
}

let installed: Installed | undefined;

export function installHooks(): void {
  registerAwkbScenePlugin();
  if (installed) return;
  const open = WebRequest.prototype.open as Open;
  const fetchAsync = WebRequest.FetchAsync;

  const ourOpen: Open = function (method, url, baseHeaders) {
    const get = method.toUpperCase() === 'GET';
    const target = get ? targetOf(cleanUrl(url)) : undefined;
    if (!target) {
      if (get) noticeLoose(cleanUrl(url));
      return open.call(this, method, url, baseHeaders);
    }
    const request = new BundleRequest(target);
    // WebRequest keeps its XHR in `_xhr` and its URL in `_requestURL` (webRequest.js); every getter reads them.
    const internals = this as unknown as { _xhr: unknown; _requestURL: string };
    internals._xhr = request;
    internals._requestURL = target.url;
    request.open();
  };
  const ourFetchAsync: FetchAsync = async (url, options = {}) => {
    const get = (options.method ?? 'GET').toUpperCase() === 'GET';
    const target = get ? targetOf(cleanUrl(url)) : undefined;
    if (!target) {
      if (get) noticeLoose(cleanUrl(url));
      return fetchAsync.call(WebRequest, url, options);
    }
    const bytes = await target.registration.read(target.path);
    return new Response(bytes as Uint8Array<ArrayBuffer>, {
      status: 200,
      headers: { 'Content-Type': mediaTypeOf(target.path), 'Content-Length': String(bytes.length) },
    });
  };
  const modifier: Modifier = (_request, url) => {
    const target = targetOf(cleanUrl(url));
    return target ? target.registration.objectUrlInHand(target.path) : undefined;
  };

  WebRequest.prototype.open = ourOpen;
  WebRequest.FetchAsync = ourFetchAsync;
  WebRequest.CustomRequestModifiers.push(modifier);
  const engines = new Set<AudioEngineV2>();
  for (const engine of AudioEngineV2.Instances) wrapStreaming(engine, engines);
  const engineObserver = OnAudioEngineV2CreatedObservable.add((engine) => wrapStreaming(engine, engines));
  installed = { open, fetchAsync, ourOpen, ourFetchAsync, modifier, engineObserver, engines };
}

export function removeHooks(): void {
  if (!installed) return;
  const { open, fetchAsync, ourOpen, ourFetchAsync, modifier, engineObserver, engines } = installed;
  // Put back only what is still ours; a hook someone installed over ours stays, and ours then passes everything on.
  if (WebRequest.prototype.open === ourOpen) WebRequest.prototype.open = open;
  if (WebRequest.FetchAsync === ourFetchAsync) WebRequest.FetchAsync = fetchAsync;
  const at = WebRequest.CustomRequestModifiers.indexOf(modifier);
  if (at >= 0) WebRequest.CustomRequestModifiers.splice(at, 1);
  OnAudioEngineV2CreatedObservable.remove(engineObserver);
  for (const engine of engines) delete (engine as Partial<Pick<AudioEngineV2, 'createStreamingSoundAsync'>>).createStreamingSoundAsync;
  installed = undefined;
}

/** An own `createStreamingSoundAsync` on the engine that maps URLs to object URLs first (deleting it restores the class's). */
function wrapStreaming(engine: AudioEngineV2, engines: Set<AudioEngineV2>): void {
  if (engines.has(engine)) return;
  engines.add(engine);
  const original = engine.createStreamingSoundAsync;
  engine.createStreamingSoundAsync = async function (name, source, options) {
    return original.call(this, name, await streamingSource(source), options);
  };
}

async function streamingSource(source: StreamingSource): Promise<StreamingSource> {
  if (typeof source === 'string') return objectUrlFor(source);
  if (Array.isArray(source)) return Promise.all(source.map(objectUrlFor));
  return source;
}

async function objectUrlFor(url: string): Promise<string> {
  const target = targetOf(cleanUrl(url));
  if (!target) noticeLoose(cleanUrl(url));
  return target ? target.registration.objectUrl(target.path) : url;
}

/** What Babylon's own cleaning leaves of a URL before the XHR sees it (WebRequest._CleanUrl). */
function cleanUrl(url: string): string {
  return url.replace('file:http:', 'http:').replace('file:https:', 'https:');
}
