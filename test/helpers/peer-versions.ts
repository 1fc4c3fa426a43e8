/**
 * The Vite and webpack-dev-server versions the build plugins are tested with, each installed in
 * this repository under a devDependency alias (`"vite5": "npm:vite@^5.4.21"`): package.json's
 * peer ranges are exactly these majors (test/peer-ranges.test.ts), and each one runs the
 * plugin's smoke test (test/vite-plugin.test.ts, test/webpack-plugin.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './cli';

/** [alias in node_modules, major]: what `vite` is in a user's project. */
export const TESTED_VITES: readonly (readonly [alias: string, major: number])[] = [
  ['vite5', 5],
  ['vite6', 6],
  ['vite7', 7],
  ['vite', 8],
];

/** [alias in node_modules, major]: what `webpack-dev-server` is in a user's project. */
export const TESTED_WEBPACK_DEV_SERVERS: readonly (readonly [alias: string, major: number])[] = [
  ['webpack-dev-server4', 4],
  ['webpack-dev-server', 5],
];

/** The version an alias installs (its package.json). */
export function installedVersion(alias: string): string {
  return JSON.parse(readFileSync(join(REPO, 'node_modules', alias, 'package.json'), 'utf8')).version;
}
