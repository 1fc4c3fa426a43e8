/**
 * `awake-bundle/phaser` as a package entry: exported with its types, marked as having side
 * effects (importing it registers the file type), and pulling in nothing but Phaser and the core.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './helpers/cli';
import { importGraph } from './helpers/imports';

const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));

test('the ./phaser export points at the built adapter and its declarations', () => {
  expect(pkg.exports['./phaser']).toEqual({ types: './dist/adapters/phaser/index.d.ts', default: './dist/adapters/phaser/index.js' });
  for (const file of Object.values<string>(pkg.exports['./phaser'])) expect(existsSync(join(REPO, file))).toBe(true);
  expect(pkg.peerDependencies.phaser).toBe('^3.60.0 || ^4.0.0');
  expect(pkg.peerDependenciesMeta.phaser.optional).toBe(true);
});

test('the modules that register the file type are listed as side effects', () => {
  expect(pkg.sideEffects).toEqual(expect.arrayContaining(['./dist/adapters/phaser/index.js', './dist/adapters/phaser/register.js']));
});

test('everything the adapter imports, followed through the core, is Phaser, the core or @noble/hashes: never Babylon', () => {
  const { bare } = importGraph(join(REPO, 'dist/adapters/phaser/index.js'));
  expect([...bare].filter((name) => name !== 'phaser' && !name.startsWith('@noble/hashes'))).toEqual([]);
  expect(bare.has('phaser')).toBe(true);
});
