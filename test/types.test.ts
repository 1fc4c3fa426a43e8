/**
 * The type declarations work for users on the oldest TypeScript the README claims (5.7): a game's
 * file that imports every entry of the package by name is type-checked against dist/*.d.ts with
 * `skipLibCheck: false`, so an error in our declarations fails here (5.6, for one, rejects
 * `Uint8Array<ArrayBuffer>` with TS2315).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { REPO, temporaryDir } from './helpers/cli';
import { TESTED_VITES } from './helpers/peer-versions';

const OLDEST_TYPESCRIPT = join(REPO, 'node_modules/typescript57/bin/tsc');

test('TypeScript 5.7 type-checks a consumer of awake-bundle, /node, /phaser, /babylon, /sw, /webpack and /vite', () => {
  const version = spawnSync(process.execPath, [OLDEST_TYPESCRIPT, '--version'], { encoding: 'utf8' });
  expect(version.stdout).toMatch(/^Version 5\.7\./);
  const result = spawnSync(process.execPath, [OLDEST_TYPESCRIPT, '-p', join(REPO, 'test/types/tsconfig.json')], {
    cwd: REPO,
    encoding: 'utf8',
  });
  const errors = result.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
  // Phaser 4's own declarations do not pass a full lib check (TS2526, TS2416 inside phaser.d.ts);
  // that is Phaser's, and users meet it with skipLibCheck. Every other error is ours.
  // (node_modules may be a link to another checkout's: its errors then name ../<checkout>/node_modules/phaser/.)
  const ours = errors.filter((line) => !/^(\.\.\/[^/]+\/)?node_modules\/phaser\//.test(line));
  expect(ours).toEqual([]);
}, 120_000);

/**
 * The peer range, in types: a user's `vite.config.ts` passing `awakeBundle()` to `defineConfig`
 * type-checks whichever Vite of the range (5, 6, 7, 8) the project installs as `vite`, since the
 * declarations name only Vite's `Plugin` type, which is then that Vite's. The package is a copy of
 * its declarations in the project's node_modules (a link would resolve `vite` from this
 * repository's real path, its own Vite 8).
 */
test.each(TESTED_VITES)(
  "TypeScript 5.7 type-checks a vite.config.ts with awakeBundle() against %s's types (Vite %d)",
  (alias) => {
    const dir = temporaryDir('awkb-vite-types-');
    const installed = join(dir, 'node_modules/awake-bundle');
    cpSync(join(REPO, 'dist'), join(installed, 'dist'), {
      recursive: true,
      filter: (source) => statSync(source).isDirectory() || source.endsWith('.d.ts'),
    });
    copyFileSync(join(REPO, 'package.json'), join(installed, 'package.json'));
    for (const [name, target] of [
      ['vite', alias],
      ['@types', '@types'],
      ['@noble', '@noble'],
    ])
      symlinkSync(join(REPO, 'node_modules', target), join(dir, 'node_modules', name), 'dir');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'a-vite-game', private: true, type: 'module' }));
    writeFileSync(
      join(dir, 'vite.config.ts'),
      [
        "import { defineConfig, type Plugin } from 'vite';",
        "import { awakeBundle } from 'awake-bundle/vite';",
        "const plugin: Plugin = awakeBundle({ assets: 'assets', output: 'published', recordLoads: true, serviceWorker: true });",
        "export default defineConfig({ base: '/game/', plugins: [plugin, awakeBundle({ assets: 'more' })] });",
        '',
      ].join('\n'),
    );
    // skipLibCheck: Vite's own declarations are checked by Vite, not here.
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM'],
          types: ['node'],
          strict: true,
          noEmit: true,
          skipLibCheck: true,
        },
        files: ['vite.config.ts'],
      }),
    );
    const result = spawnSync(process.execPath, [OLDEST_TYPESCRIPT, '-p', join(dir, 'tsconfig.json'), '--listFiles'], {
      cwd: dir,
      encoding: 'utf8',
    });
    rmSync(dir, { recursive: true, force: true }); // its links are removed, not followed
    expect(result.stdout.split('\n').filter((line) => /error TS\d+/.test(line))).toEqual([]);
    expect(result.status).toBe(0);
    // Every Vite declaration in the program is this Vite's.
    const vite = realpathSync(join(REPO, 'node_modules', alias)) + sep;
    const viteEntries = result.stdout
      .split('\n')
      .filter((line) => line.endsWith(`${sep}dist${sep}node${sep}index.d.ts`) && /[\\/]vite\d?[\\/]/.test(line));
    expect(viteEntries.length).toBeGreaterThan(0);
    expect(viteEntries.filter((file) => !file.startsWith(vite))).toEqual([]);
  },
  120_000,
);

/**
 * The README's Phaser and Babylon examples, each type-checked as a game's module of its own
 * (strict): every name they use is defined (a progress `bar`), and the Babylon calls they show
 * (`CreateAudioEngineAsync`, `CreateSoundAsync` with a URL below the root, as the Babylon sound
 * test plays them) exist with those arguments. Only a Babylon example's `scene` is declared.
 */
test("the README's and the guides' Phaser and Babylon examples type-check as written", () => {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const guides = {
    Phaser: readFileSync(join(REPO, 'docs/phaser.md'), 'utf8'),
    Babylon: readFileSync(join(REPO, 'docs/babylon.md'), 'utf8'),
  };
  const dir = join(REPO, 'build', 'readme-examples');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  for (const [section, preamble] of [
    ['Phaser', ''],
    ['Babylon', "import type { Scene } from '@babylonjs/core/scene.js';\ndeclare const scene: Scene;\n"],
  ] as const) {
    // Whole modules only: the blocks that start with their imports (fragments such as a lone preload() are left out).
    for (const [prefix, document] of [
      ['', guides[section]],
      ['readme-', readme],
    ] as const) {
      const blocks = codeBlocks(sectionOf(document, section)).filter((block) => block.startsWith('import '));
      expect(blocks.length).toBeGreaterThan(0);
      blocks.forEach((block, i) => {
        const file = `${prefix}${section.toLowerCase()}-${i + 1}.ts`;
        writeFileSync(join(dir, file), `${preamble}${block}\nexport {};\n`);
        files.push(file);
      });
    }
  }
  expect(files).toEqual(['phaser-1.ts', 'readme-phaser-1.ts', 'babylon-1.ts', 'babylon-2.ts', 'readme-babylon-1.ts']);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2022', 'DOM', 'DOM.Iterable'],
        types: [],
        strict: true,
        noEmit: true,
        skipLibCheck: true,
      },
      files,
    }),
  );
  const result = spawnSync(process.execPath, [OLDEST_TYPESCRIPT, '-p', join(dir, 'tsconfig.json')], { cwd: REPO, encoding: 'utf8' });
  expect(result.stdout.split('\n').filter((line) => /error TS\d+/.test(line))).toEqual([]);
  expect(result.status).toBe(0);
}, 120_000);

/** The text of a document's `## <name>` section, up to the next `## ` heading. */
function sectionOf(readme: string, name: string): string {
  const start = readme.indexOf(`\n## ${name}\n`);
  expect(start).toBeGreaterThanOrEqual(0);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

function codeBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}
