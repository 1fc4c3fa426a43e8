/**
 * The build plugins' options (integrations/build/options.ts): the CLI's publish options under the
 * library's names, or under the CLI flags' names (`group`, `targetMb`), with the CLI's rules; the
 * grouping defaults to `auto`, or to the loads file beside the config with the folder grouping.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveBuildOptions } from '../integrations/build/options.js';
import { InvalidOptionError } from '../core/errors.js';
import { temporaryDir } from './helpers/cli.js';

const resolve = (options: Record<string, unknown>) =>
  resolveBuildOptions({ assets: 'assets', ...options } as Parameters<typeof resolveBuildOptions>[0], '/game');

test("defaults: the CLI's but the grouping (auto: by references, else folders; depth 1, 16 MiB, bundles/, /project; not yet compressed), published/ in the build output", () => {
  expect(resolve({})).toEqual({
    assets: '/game/assets',
    output: 'published',
    rootPath: '/project',
    settings: { grouping: 'auto', depth: 1, targetBundleBytes: 16 * 1048576, urlPrefix: 'bundles', allowCaseCollisions: false },
  });
});

test('awkb-loads.json in the project root is the loads file, with the folder grouping for the rest, unless told otherwise', () => {
  const root = temporaryDir('awkb-build-loads-');
  expect(resolveBuildOptions({ assets: 'assets' }, root)).not.toHaveProperty('loadsFile');
  writeFileSync(join(root, 'awkb-loads.json'), '{"formatVersion": 1, "loads": []}');
  expect(resolveBuildOptions({ assets: 'assets' }, root)).toMatchObject({
    loadsFile: join(root, 'awkb-loads.json'),
    settings: { grouping: 'folder' },
  });
  expect(resolveBuildOptions({ assets: 'assets', grouping: 'auto', depth: 2 }, root)).toMatchObject({
    loadsFile: join(root, 'awkb-loads.json'),
    settings: { grouping: 'auto', depth: 2 },
  });
  const without = resolveBuildOptions({ assets: 'assets', loads: false }, root);
  expect(without).not.toHaveProperty('loadsFile');
  expect(without.settings.grouping).toBe('auto');
  // Another file, relative to the project root (it is read when the build publishes).
  expect(resolve({ loads: 'scenes/loads.json', group: 'one' })).toMatchObject({
    loadsFile: '/game/scenes/loads.json',
    settings: { grouping: 'one' },
  });
  expect(resolve({ loads: '/elsewhere/loads.json' }).loadsFile).toBe('/elsewhere/loads.json');
});

test("the CLI flags' names: group is grouping, targetMb is --target-mb (floor(n × 1,048,576) bytes)", () => {
  expect(resolve({ group: 'one', targetMb: 0.5 }).settings).toEqual(resolve({ grouping: 'one', targetBundleBytes: 524288 }).settings);
  expect(resolve({ targetMb: 0.0625 }).settings.targetBundleBytes).toBe(65536);
});

test.each([
  [{ grouping: 'one', group: 'one' }, 'group'],
  [{ targetBundleBytes: 1000, targetMb: 1 }, 'targetMb'],
  [{ targetMb: 0 }, 'targetMb'],
  [{ targetMb: 1e-7 }, 'targetMb'], // under one byte, as --target-mb 0.0000001
  [{ targetMb: '4' }, 'targetMb'],
  [{ group: 'flat' }, 'group'],
  [{ grouping: 'flat' }, 'grouping'],
  [{ salt: 'x' }, 'salt'],
  [{ opaqueIds: true }, 'salt'],
  [{ grouping: 'one', depth: 2 }, 'depth'],
  [{ loads: '' }, 'loads'],
  [{ loads: true }, 'loads'],
  [{ target: 4 }, 'target'],
])('%j fails naming %s', (options, option) => {
  let thrown: unknown;
  try {
    resolve(options);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(InvalidOptionError);
  expect((thrown as InvalidOptionError).message).toContain(`option ${option}:`);
});
