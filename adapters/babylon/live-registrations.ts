/**
 * The live registrations, newest last, and which one a URL Babylon asks for maps to. What the
 * request hooks (hooks.ts), the XHR look-alike (bundle-request.ts) and the `awkb` plugin
 * (scene-loader-plugin.ts) use of a registration is named here, so they import this module and
 * not registration.ts, which adds and removes registrations: imports run one way, registration.ts
 * → hooks.ts → bundle-request.ts and scene-loader-plugin.ts → this module.
 */
import { absoluteUrl } from '../../core/page/project-urls.js';

export interface AwkbReadOptions {
  signal?: AbortSignal;
  /** Bytes of this file received so far, and its size; called at least once, at the end. */
  onProgress?: (loaded: number, total: number) => void;
}

/** What the hooks and the plugin use of a registration (an `AwkbRegistration`). */
export interface LiveRegistration {
  readonly source: { has(path: string): boolean };
  /** A URL loaded loose: warns of a root that would serve it, or of the listed path it is a slip from. */
  noticeLoose(url: URL): void;
  pathOf(url: string): string | undefined;
  urlOf(path: string): string;
  read(path: string, options?: AwkbReadOptions): Promise<Uint8Array>;
  objectUrl(path: string): Promise<string>;
  objectUrlInHand(path: string): string | undefined;
}

/** A URL's place in one live registration's index (`AwkbTarget`, as the hooks see it). */
export interface LiveTarget {
  registration: LiveRegistration;
  path: string;
  /** The absolute URL this path has below the root. */
  url: string;
}

/** Live registrations, newest last: a URL goes to the newest one whose index lists it. */
const active: LiveRegistration[] = [];

/** `registration` is live: URLs below its root go to it before older ones. */
export function addLiveRegistration(registration: LiveRegistration): void {
  active.push(registration);
}

/** `registration` is live no more. */
export function removeLiveRegistration(registration: LiveRegistration): void {
  const at = active.indexOf(registration);
  if (at >= 0) active.splice(at, 1);
}

/** A URL Babylon asks for loads loose: each registration hears of it, to warn of a `root` that would serve it or a path it is a slip from. */
export function noticeLoose(url: string): void {
  if (active.length === 0) return;
  const absolute = absoluteUrl(url);
  if (absolute) for (const registration of active) registration.noticeLoose(absolute);
}

/** The registration and path that a URL Babylon asks for maps to, newest registration first. */
export function targetOf(url: string): LiveTarget | undefined {
  for (let i = active.length - 1; i >= 0; i--) {
    const registration = active[i]!;
    const path = registration.pathOf(url);
    if (path !== undefined) return { registration, path, url: registration.urlOf(path) };
  }
  return undefined;
}

/** Like `targetOf`, and also a bare project path (`models/truck.gltf`), for the `awkb` plugin. */
export function targetOfUrlOrPath(urlOrPath: string): LiveTarget | undefined {
  const mapped = targetOf(urlOrPath);
  if (mapped) return mapped;
  for (let i = active.length - 1; i >= 0; i--) {
    const registration = active[i]!;
    if (registration.source.has(urlOrPath)) return { registration, path: urlOrPath, url: registration.urlOf(urlOrPath) };
  }
  return undefined;
}

/** Whether any registration is live (the permanent `awkb` plugin is inert otherwise). */
export function anyRegistration(): boolean {
  return active.length > 0;
}
