/**
 * Issue 21, "peer ranges": package.json's optional peers `vite` and `webpack-dev-server` are
 * exactly the majors the plugins are tested with (test/helpers/peer-versions.ts; the smoke tests in
 * test/vite-plugin.test.ts and test/webpack-plugin.test.ts run each), so npm resolves a project
 * with any of them without ERESOLVE (test/package.test.ts installs the packed package beside
 * Vite 5 and webpack-dev-server 4), and claims none it was not tested with.
 *
 * Ranges are checked with `semver` (npm's own range rules; a devDependency).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { REPO } from './helpers/cli';
import { installedVersion, TESTED_VITES, TESTED_WEBPACK_DEV_SERVERS } from './helpers/peer-versions';

interface Semver {
  satisfies(version: string, range: string): boolean;
  validRange(range: string): string | null;
  minVersion(range: string): { version: string } | null;
}
const semver = require('semver') as Semver;

const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
};

/** The majors a range admits, among 0 … 99. */
const majorsOf = (range: string) =>
  Array.from({ length: 100 }, (_, major) => major).filter((major) => semver.satisfies(`${major}.999.999`, range));

describe.each([
  ['vite', TESTED_VITES, '5.0.0'],
  // setupMiddlewares, through which the plugin adds its middleware, came in webpack-dev-server 4.7.0.
  ['webpack-dev-server', TESTED_WEBPACK_DEV_SERVERS, '4.7.0'],
] as const)('the peer %s', (name, tested, minimum) => {
  const range = pkg.peerDependencies[name]!;

  test('is an optional peer with a valid range', () => {
    expect(semver.validRange(range)).not.toBeNull();
    expect(pkg.peerDependenciesMeta[name]).toEqual({ optional: true });
  });

  test('admits each tested version, as installed here', () => {
    for (const [alias, major] of tested) {
      const version = installedVersion(alias);
      expect({ alias, major: Number(version.split('.')[0]) }).toEqual({ alias, major });
      expect({ alias, version, satisfies: semver.satisfies(version, range) }).toEqual({ alias, version, satisfies: true });
    }
  });

  test('admits exactly the tested majors, from the first version with the API the plugin uses', () => {
    expect(majorsOf(range)).toEqual(tested.map(([, major]) => major));
    expect(semver.minVersion(range)?.version).toBe(minimum);
  });

  test('each tested version is a devDependency (an alias such as "vite5": "npm:vite@^5.4.21", or the package itself)', () => {
    for (const [alias] of tested) {
      const declared = pkg.devDependencies[alias];
      expect({ alias, declared: declared === undefined ? undefined : alias === name || declared.startsWith(`npm:${name}@`) }).toEqual({
        alias,
        declared: true,
      });
    }
  });
});

/** Each Vite alias runs with its own esbuild and Rollup (or Rolldown), in the ranges it declares, not another Vite's. */
test.each(TESTED_VITES)('%s resolves the bundlers it declares, in their ranges', (alias) => {
  const manifest = JSON.parse(readFileSync(join(REPO, 'node_modules', alias, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  const requireFromVite = createRequire(join(REPO, 'node_modules', alias, 'package.json'));
  const bundlers = ['esbuild', 'rollup', 'rolldown'].filter((dependency) => manifest.dependencies[dependency] !== undefined);
  expect(bundlers.length).toBeGreaterThan(0);
  for (const dependency of bundlers) {
    const version = (requireFromVite(`${dependency}/package.json`) as { version: string }).version;
    expect({ dependency, version, satisfies: semver.satisfies(version, manifest.dependencies[dependency]!) }).toEqual({
      dependency,
      version,
      satisfies: true,
    });
  }
});
