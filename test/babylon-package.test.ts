/**
 * `awake-bundle/babylon` as a package entry: it resolves by name with its types, never reaches
 * Phaser, and reaches Babylon only through deep `@babylonjs/core/...` modules (so a bundler keeps
 * only what the game uses); its modules have no side effects at import (STYLE.md).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { REPO } from './helpers/cli';

/** Every module the entry reaches inside dist/, and every bare specifier they import. */
function importGraph(entry: string): { files: string[]; bare: Set<string> } {
  const files: string[] = [];
  const bare = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (files.includes(file)) continue;
    files.push(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(
      /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g,
    )) {
      const specifier = match[1] ?? match[2] ?? match[3]!;
      if (specifier.startsWith('.')) queue.push(resolve(dirname(file), specifier));
      else bare.add(specifier);
    }
  }
  return { files, bare };
}

test('package.json exports awake-bundle/babylon with its type declarations', () => {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
  expect(pkg.exports['./babylon']).toEqual({ types: './dist/adapters/babylon/index.d.ts', default: './dist/adapters/babylon/index.js' });
  expect(existsSync(join(REPO, pkg.exports['./babylon'].types))).toBe(true);
  expect(pkg.peerDependenciesMeta['@babylonjs/core']).toEqual({ optional: true });
  expect(pkg.peerDependenciesMeta['@babylonjs/loaders']).toEqual({ optional: true });
});

test('the entry imports Babylon only through deep @babylonjs/core modules, and never Phaser', () => {
  const { files, bare } = importGraph(join(REPO, 'dist/adapters/babylon/index.js'));
  expect(files.some((file) => file.includes(`${join('dist', 'adapters', 'phaser')}`))).toBe(false);
  const babylon = [...bare].filter((specifier) => specifier.startsWith('@babylonjs/'));
  expect(babylon.length).toBeGreaterThan(0);
  for (const specifier of babylon) expect(specifier).toMatch(/^@babylonjs\/core\/.+\.js$/);
  // The rest is the core's own dependency.
  for (const specifier of bare) if (!specifier.startsWith('@babylonjs/')) expect(specifier).toMatch(/^@noble\/hashes\//);
  expect([...bare].some((specifier) => /phaser/i.test(specifier))).toBe(false);
});

test('it imports by its package name in Node without touching Babylon: registering is what installs hooks', () => {
  const script = [
    "const { registerAwkb, AWKB_EXTENSION } = await import('awake-bundle/babylon');",
    "const { WebRequest } = await import('@babylonjs/core/Misc/webRequest.js');",
    "const { SceneLoader } = await import('@babylonjs/core/Loading/sceneLoader.js');",
    "console.log(typeof registerAwkb, AWKB_EXTENSION, WebRequest.CustomRequestModifiers.length, SceneLoader.IsPluginForExtensionAvailable('.awkb'));",
  ].join('\n');
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: REPO, encoding: 'utf8' });
  expect(result.stderr).toBe('');
  expect(result.stdout.trim()).toBe('function .awkb 0 false');
});
