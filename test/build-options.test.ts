/**
 * The build plugins' options (integrations/build/options.ts): the CLI's publish options under the
 * library's names, or under the CLI flags' names (`group`, `targetMb`), with the CLI's rules.
 */
import { resolveBuildOptions } from '../integrations/build/options.js';
import { InvalidOptionError } from '../core/errors.js';

const resolve = (options: Record<string, unknown>) => resolveBuildOptions({ assets: 'assets', ...options } as Parameters<typeof resolveBuildOptions>[0], '/game');

test('defaults: the CLI\'s (folder groups, depth 1, 16 MiB, bundles/, /project), published/ in the build output', () => {
  expect(resolve({})).toEqual({
    assets: '/game/assets',
    output: 'published',
    rootPath: '/project',
    settings: { grouping: 'folder', depth: 1, targetBundleBytes: 16 * 1048576, urlPrefix: 'bundles', allowCaseCollisions: false },
  });
});

test('the CLI flags\' names: group is grouping, targetMb is --target-mb (floor(n × 1,048,576) bytes)', () => {
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
