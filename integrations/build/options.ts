/**
 * The build plugins' options: the asset folder, where the published output goes inside the
 * build's output, and the command line's publish settings under the library's names
 * (core/publish/settings.ts), checked as the CLI checks its flags.
 *
 * One default differs from the CLI's: the grouping. A build groups each file with what
 * references it (`--group auto`), or, when the project root holds `awkb-loads.json`, by its
 * loads with the folder grouping for the rest (`--loads awkb-loads.json --group folder`).
 */
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { InvalidOptionError } from '../../core/errors.js';
import { unsafePathReason } from '../../core/format/paths.js';
import { DEFAULT_BUNDLE_URL_PREFIX, DEFAULT_TARGET_BUNDLE_BYTES } from '../../core/publish/plan.js';
import { LOADS_FILE_NAME } from '../../core/publish/loads.js';
import type { PublishSettings } from '../../core/publish/settings.js';
import { INDEX_FILE_NAME } from '../../core/node/publish.js';

export interface AwakeBundleBuildOptions {
  /** The asset folder: absolute, or relative to the project root (webpack's `context`, Vite's `root`). */
  assets: string;
  /**
   * The folder inside the build output that takes the published files (default `published`):
   * the game reads `${output}/project.index.json`, in production and in development.
   */
  output?: string;
  /**
   * `--group`: each file with what references it, the rest by folder (`auto`), a group per top
   * folder (`folder`), or one group for everything (`one`). Default `auto`; `folder` when a
   * loads file is used (see `loads`).
   */
  grouping?: 'folder' | 'one' | 'auto';
  /** The same as `grouping`, by the CLI flag's name. */
  group?: 'folder' | 'one' | 'auto';
  /** `--depth`: with `grouping` `folder` or `auto`, how many folder levels name a group (default 1). */
  depth?: number;
  /**
   * `--loads`: a loads file (SPEC §6), absolute or relative to the project root (webpack's
   * `context`, Vite's `root`); `grouping` groups the files its loads leave out. Default:
   * `awkb-loads.json` in the project root when it is there. `false`: no loads file.
   */
  loads?: string | false;
  /** `--target-mb` in bytes: the bundle size target (default 16 MiB). */
  targetBundleBytes?: number;
  /** The target as the CLI flag takes it: MiB, decimals allowed (`targetMb: 0.5` is `--target-mb 0.5`, floor(n × 1,048,576) bytes). */
  targetMb?: number;
  /** `--opaque-ids`: salted HMAC-SHA256 ids replace paths in the published index (needs `salt`). */
  opaqueIds?: boolean;
  /** `--salt`: the salt of the opaque ids. */
  salt?: string;
  /** `--url-prefix`: the folder of the bundle URLs, relative to the index (default `bundles`). */
  urlPrefix?: string;
  /** `--root-path`: the index's `rootPath` (default `/project`). */
  rootPath?: string;
  /** `--allow-case-collisions`: publish paths that differ only by case, with a warning each. */
  allowCaseCollisions?: boolean;
  /**
   * True: a member is stored deflate-raw where that saves at least 1 KiB and 5% (SPEC §5a, AWKB
   * version 2), the default (SPEC §8); false (`--no-compress`): every member as it is.
   */
  compress?: boolean;
  /**
   * Also emit the service worker, `awake-bundle-sw.js`, at the root of the build output (what
   * `awake-bundle sw` writes), with the index URL baked in: `${output}/project.index.json`
   * unless `index` says otherwise (relative to the worker's URL).
   */
  serviceWorker?: boolean | { index?: string };
  /** Warnings of a publish (case collisions let through); default: the plugin's logger. */
  onWarning?: (message: string) => void;
  /**
   * Development only: the dev server collects the loads the game records (docs/build-plugins.md "Record loads
   * in development"). Its index answer asks the adapters for them, and `POST
   * <base>__awake-bundle/loads` merges what they post into the loads file, first use first:
   * `true` for `awkb-loads.json` in the project root (webpack's `context`, Vite's `root`), or
   * that file's path (relative to the project root). Builds never serve this.
   */
  recordLoads?: boolean | string;
}

export interface ResolvedBuildOptions {
  /** The asset folder, absolute. */
  assets: string;
  /** A relative folder, `/`-separated, no trailing slash. */
  output: string;
  settings: PublishSettings;
  /** The loads file (absolute), read when the build publishes; its loads become `settings.loads`. */
  loadsFile?: string;
  rootPath: string;
  /** The worker's baked index URL, when the worker is emitted. */
  serviceWorker?: { index: string };
  onWarning?: (message: string) => void;
  /** With `recordLoads`: the loads file the dev server merges recorded loads into, absolute. */
  recordLoads?: { file: string };
}

const OPTION_NAMES = new Set(['assets', 'output', 'grouping', 'group', 'depth', 'loads', 'targetBundleBytes', 'targetMb', 'opaqueIds', 'salt', 'urlPrefix', 'rootPath', 'allowCaseCollisions', 'compress', 'serviceWorker', 'onWarning', 'recordLoads']);

/** Options that may also be given by the CLI flag's name: one name or the other, not both. */
function eitherName<T>(options: AwakeBundleBuildOptions, name: keyof AwakeBundleBuildOptions, flagName: keyof AwakeBundleBuildOptions): T | undefined {
  if (options[name] !== undefined && options[flagName] !== undefined) fail(flagName, `is ${name} by the CLI flag's name: give one of them`);
  return (options[name] ?? options[flagName]) as T | undefined;
}

/** `targetMb` as the CLI reads `--target-mb` (SPEC §8: floor(n × 1,048,576) bytes). */
function targetFromMb(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const bytes = typeof value === 'number' && Number.isFinite(value) ? Math.floor(value * 1048576) : Number.NaN;
  if (!(bytes >= 1) || !Number.isSafeInteger(bytes)) fail('targetMb', `must be a number of MiB above 0 (decimals allowed), got ${JSON.stringify(value)}`);
  return bytes;
}

function fail(option: string, message: string): never {
  throw new InvalidOptionError(option, `awake-bundle: option ${option}: ${message}`);
}

/** A relative folder under the build output or the index (`published`, `assets/bundles`). */
function relativeFolder(option: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') fail(option, `expected a folder name such as ${JSON.stringify(fallback)}, got ${typeof value}`);
  const trimmed = value.replace(/\/+$/, '');
  const reason = unsafePathReason(trimmed);
  if (reason !== undefined) fail(option, `${JSON.stringify(value)} must be a relative folder such as ${JSON.stringify(fallback)} (it ${reason})`);
  return trimmed;
}

function positiveInteger(option: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) fail(option, `must be a positive integer, got ${JSON.stringify(value)}`);
  return value;
}

function flag(option: string, value: unknown): boolean {
  if (value !== undefined && typeof value !== 'boolean') fail(option, `must be true or false, got ${JSON.stringify(value)}`);
  return value === true;
}

/**
 * Checks `options` and resolves the asset folder against `root` (the project root). Throws an
 * `InvalidOptionError` naming the option, with the rules of the CLI's flags (`salt` without
 * `opaqueIds`, `depth` with `grouping: 'one'`…).
 */
export function resolveBuildOptions(options: AwakeBundleBuildOptions, root: string): ResolvedBuildOptions {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError('options', 'awake-bundle: expected an options object such as { assets: "public/assets" }');
  const unknown = Object.keys(options).find((name) => !OPTION_NAMES.has(name));
  if (unknown !== undefined) fail(unknown, `unknown option; the options are ${[...OPTION_NAMES].join(', ')}`);
  if (typeof options.assets !== 'string' || options.assets === '') fail('assets', 'the asset folder is required, such as "assets"');
  const loadsFile = loadsOption(options.loads, root);
  const grouping = eitherName<string>(options, 'grouping', 'group') ?? (loadsFile !== undefined ? 'folder' : 'auto');
  if (grouping !== 'folder' && grouping !== 'one' && grouping !== 'auto') fail(options.group !== undefined ? 'group' : 'grouping', `must be "auto", "folder" or "one", got ${JSON.stringify(grouping)}`);
  if (options.depth !== undefined && grouping === 'one') fail('depth', 'applies to grouping "folder" or "auto", not "one"');
  const opaqueIds = flag('opaqueIds', options.opaqueIds);
  if (opaqueIds && (options.salt === undefined || options.salt === '')) fail('salt', 'opaqueIds needs a salt (a non-empty string)');
  if (options.salt !== undefined && !opaqueIds) fail('salt', 'is only used with opaqueIds: true');
  if (options.salt !== undefined && typeof options.salt !== 'string') fail('salt', `must be a string, got ${typeof options.salt}`);
  if (options.rootPath !== undefined && (typeof options.rootPath !== 'string' || options.rootPath.trim() === '')) fail('rootPath', 'must not be blank');
  if (options.onWarning !== undefined && typeof options.onWarning !== 'function') fail('onWarning', 'must be a function');
  if (options.targetBundleBytes !== undefined && options.targetMb !== undefined) fail('targetMb', 'is targetBundleBytes in MiB, as the CLI flag: give one of them');
  const settings: PublishSettings = {
    grouping,
    depth: positiveInteger('depth', options.depth, 1),
    targetBundleBytes: targetFromMb(options.targetMb) ?? positiveInteger('targetBundleBytes', options.targetBundleBytes, DEFAULT_TARGET_BUNDLE_BYTES),
    ...(opaqueIds ? { salt: options.salt! } : {}),
    urlPrefix: relativeFolder('urlPrefix', options.urlPrefix, DEFAULT_BUNDLE_URL_PREFIX),
    allowCaseCollisions: flag('allowCaseCollisions', options.allowCaseCollisions),
    ...(options.compress === undefined ? {} : { compress: flag('compress', options.compress) }),
  };
  const output = relativeFolder('output', options.output, 'published');
  return {
    assets: isAbsolute(options.assets) ? resolve(options.assets) : resolve(root, options.assets),
    output,
    settings,
    ...(loadsFile !== undefined ? { loadsFile } : {}),
    rootPath: options.rootPath ?? '/project',
    ...serviceWorkerOption(options.serviceWorker, output),
    ...(options.onWarning !== undefined ? { onWarning: options.onWarning } : {}),
    ...recordLoadsOption(options.recordLoads, root),
  };
}

/**
 * The loads file a build uses: the one `loads` names, else `awkb-loads.json` in the project root
 * when it is there (looked for as the options are resolved: at each webpack build, as Vite starts).
 */
function loadsOption(value: unknown, root: string): string | undefined {
  if (value === false) return undefined;
  if (value === undefined) {
    const beside = resolve(root, LOADS_FILE_NAME);
    return existsSync(beside) ? beside : undefined;
  }
  if (typeof value !== 'string' || value === '') fail('loads', `must be the path of a loads file (such as "${LOADS_FILE_NAME}") or false, got ${JSON.stringify(value)}`);
  return resolve(root, value);
}

function recordLoadsOption(value: AwakeBundleBuildOptions['recordLoads'], root: string): Pick<ResolvedBuildOptions, 'recordLoads'> {
  if (value === undefined || value === false) return {};
  if (value === true) return { recordLoads: { file: resolve(root, LOADS_FILE_NAME) } };
  if (typeof value !== 'string' || value.trim() === '') fail('recordLoads', `must be true, false or the loads file's path (such as ${JSON.stringify(LOADS_FILE_NAME)}), got ${JSON.stringify(value)}`);
  return { recordLoads: { file: isAbsolute(value) ? resolve(value) : resolve(root, value) } };
}

function serviceWorkerOption(value: AwakeBundleBuildOptions['serviceWorker'], output: string): Pick<ResolvedBuildOptions, 'serviceWorker'> {
  if (value === undefined || value === false) return {};
  if (value === true) return { serviceWorker: { index: `${output}/${INDEX_FILE_NAME}` } };
  if (typeof value !== 'object' || value === null) fail('serviceWorker', `must be true, false or { index }, got ${JSON.stringify(value)}`);
  if (value.index !== undefined && (typeof value.index !== 'string' || value.index.trim() === '')) fail('serviceWorker.index', 'must be a URL relative to the worker, such as "published/project.index.json"');
  return { serviceWorker: { index: value.index ?? `${output}/${INDEX_FILE_NAME}` } };
}
