/**
 * Loads (SPEC §6 "Loads"): what one scene, level or screen reads, in order, and the grouping that
 * puts each file with the first load that lists it. The loads file, `awkb-loads.json`, is what the
 * adapters record in development (`source.recordedLoads()`) and what `--loads` reads.
 */
import { PublishInputError } from '../errors.js';
import type { Grouping } from './grouping.js';
import { groupByFolder } from './grouping.js';

/** One named load: the paths it reads, first use first (a path may repeat). */
export interface NamedLoad {
  name: string;
  paths: string[];
}

/** The loads file's JSON (`awkb-loads.json`). */
export interface LoadsFile {
  formatVersion: 1;
  loads: NamedLoad[];
}

export const LOADS_FILE_NAME = 'awkb-loads.json';

/**
 * The loads file's text, checked (SPEC §6): formatVersion 1, a `loads` array of `{ name, paths }`
 * with unique non-empty names and string paths. Anything else is refused with a
 * `PublishInputError` that names `file` and the field.
 */
export function parseLoadsFile(text: string, file: string): LoadsFile {
  const refuse = (why: string): never => {
    throw new PublishInputError(`loads file ${file}: ${why}`, file);
  };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return refuse(`not valid JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return refuse('not a JSON object; expected {"formatVersion": 1, "loads": [...]}');
  const record = value as { formatVersion?: unknown; loads?: unknown };
  if (record.formatVersion !== 1)
    return refuse(`formatVersion is ${JSON.stringify(record.formatVersion)}; this writer reads formatVersion 1`);
  if (!Array.isArray(record.loads)) return refuse('"loads" must be an array of {"name": "...", "paths": [...]}');
  const names = new Set<string>();
  const loads = record.loads.map((load: unknown, i: number): NamedLoad => {
    if (typeof load !== 'object' || load === null || Array.isArray(load))
      return refuse(`loads[${i}] must be an object with "name" and "paths"`);
    const { name, paths } = load as { name?: unknown; paths?: unknown };
    if (typeof name !== 'string' || name === '')
      return refuse(`loads[${i}].name must be a non-empty string${name === undefined ? ' (it is missing)' : ''}`);
    if (names.has(name)) return refuse(`loads[${i}].name ${JSON.stringify(name)} is used by an earlier load; names are unique`);
    names.add(name);
    if (!Array.isArray(paths)) return refuse(`loads[${i}].paths must be an array of paths`);
    paths.forEach((path, k) => {
      if (typeof path !== 'string') refuse(`loads[${i}].paths[${k}] must be a string, got ${JSON.stringify(path)}`);
    });
    return { name, paths: paths as string[] };
  });
  return { formatVersion: 1, loads };
}

/**
 * SPEC §6 `byLoads(loads, fallback = byFolder(1))`: a file's group is `load:` + the name of the
 * first load that lists it (a file two levels share goes with the first); a file no load lists
 * keeps `fallback`'s group. A load group's files go in first-use order (SPEC §6 "Order"): the
 * order in which the loads, taken in turn, first list them.
 */
export function byLoads(loads: readonly NamedLoad[], fallback: Grouping = groupByFolder(1)): Grouping {
  const first = new Map<string, { load: string; use: number }>();
  for (const load of loads) for (const path of load.paths) if (!first.has(path)) first.set(path, { load: load.name, use: first.size });
  return {
    groupOf(path) {
      const listed = first.get(path);
      return listed === undefined ? fallback.groupOf(path) : `load:${listed.load}`;
    },
    firstUse(path) {
      return first.get(path)?.use; // a file the fallback groups: key order
    },
  };
}

/** The paths `loads` lists that `listed` (the index's paths) lacks, each with the first load that names it: for the warnings SPEC §6 asks for. */
export function unlistedLoadPaths(loads: readonly NamedLoad[], listed: ReadonlySet<string>): { path: string; load: string }[] {
  const seen = new Set<string>();
  const unlisted: { path: string; load: string }[] = [];
  for (const load of loads) {
    for (const path of load.paths) {
      if (listed.has(path) || seen.has(path)) continue;
      seen.add(path);
      unlisted.push({ path, load: load.name });
    }
  }
  return unlisted;
}

/**
 * Merges recorded loads into `into` (SPEC §6 order: first use first): a load already there keeps
 * its place and gains the paths it did not list yet, in the order they came; a new load goes last.
 */
export function mergeLoads(into: LoadsFile, recorded: readonly NamedLoad[]): LoadsFile {
  const loads = into.loads.map((load) => ({ name: load.name, paths: [...load.paths] }));
  const byName = new Map(loads.map((load) => [load.name, load]));
  for (const load of recorded) {
    const existing = byName.get(load.name);
    if (!existing) {
      const added = { name: load.name, paths: [...new Set(load.paths)] };
      loads.push(added);
      byName.set(load.name, added);
      continue;
    }
    const known = new Set(existing.paths);
    for (const path of load.paths) {
      if (known.has(path)) continue;
      known.add(path);
      existing.paths.push(path);
    }
  }
  return { formatVersion: 1, loads };
}
