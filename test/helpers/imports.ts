/**
 * What a built module imports, read from its text (no module is loaded): the files it reaches
 * through relative imports, and the bare names (packages, `node:` built-ins) on the way. The
 * package tests use it to show an entry never reaches an engine or a bundler it must not load.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export function importGraph(file: string): { files: Set<string>; bare: Set<string> } {
  const files = new Set<string>();
  const bare = new Set<string>();
  const visit = (path: string) => {
    if (files.has(path)) return;
    files.add(path);
    const source = readFileSync(path, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    for (const match of source.matchAll(/(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\s*\(?\s*['"]([^'"]+)['"]/g)) {
      const specifier = match[1] ?? match[2]!;
      if (specifier.startsWith('.')) visit(resolve(dirname(path), specifier));
      else bare.add(specifier);
    }
  };
  visit(file);
  return { files, bare };
}
