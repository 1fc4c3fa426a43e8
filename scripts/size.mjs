// What each entry adds to a game: bundles a one-line module that imports the built entry, as a
// game's bundler would (esbuild, minified, browser, ESM, the engines external, code splitting):
// `export * from <entry>` (everything), and the import the docs show (a game's own),
// and prints the minified and minified+gzipped (zlib level 9) bytes of what loads with the game
// and of what the core imports on demand, with the biggest inputs of the former (BENCHMARKS.md,
// "Size"). The service worker is measured as shipped (dist/sw/awake-bundle-sw.js, minified).
// `npm run size` builds first; `node scripts/size.mjs --json` prints the measures for test/size.test.ts.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import path from 'node:path';
import { build } from 'esbuild';

const REPO = fileURLToPath(new URL('..', import.meta.url));

/**
 * The entries a game or a site imports. Each is measured as `export * from <entry>` (everything
 * it exports), and, where the docs show one, as the import the docs show (`typical`: `<entry>`
 * stands for the built file), which is what a game that copies them loads.
 */
export const ENTRIES = [
  {
    name: 'core',
    importPath: 'awake-bundle',
    file: 'dist/core/index.js',
    typical: "export { IndexedAssetSource, openBrowserCache } from '<entry>';", // docs/reader.md
  },
  { name: 'phaser', importPath: 'awake-bundle/phaser', file: 'dist/adapters/phaser/index.js', typical: "import '<entry>';" }, // README.md
  {
    name: 'babylon',
    importPath: 'awake-bundle/babylon',
    file: 'dist/adapters/babylon/index.js',
    typical: "export { registerAwkb } from '<entry>';", // README.md, docs/babylon.md (the game calls it)
  },
  { name: 'sw', importPath: 'awake-bundle/sw', file: 'dist/sw/awake-bundle-sw.js', prebuilt: true },
];

const ENGINES = ['phaser', '@babylonjs/*'];

function gzipBytes(text) {
  return gzipSync(text, { level: 9 }).length;
}

/**
 * The minified bundle of `export * from <entry>`, split as a game's bundler splits it: what loads
 * with the game (the entry and the chunks it imports statically) apart from what the core imports
 * on demand (`import()`: opaque ids, the no-WebCrypto hash, …), with the inputs of the former by
 * bytes in the output.
 */
async function bundleEntry(entry, repo, contents = `export * from ${JSON.stringify(path.join(repo, entry.file))};`) {
  const result = await build({
    entryPoints: ['size-entry'],
    plugins: [
      {
        name: 'size-entry',
        setup(builder) {
          builder.onResolve({ filter: /^size-entry$/ }, () => ({ path: 'size-entry', namespace: 'size-entry' }));
          builder.onLoad({ filter: /.*/, namespace: 'size-entry' }, () => ({
            contents,
            resolveDir: repo,
            loader: 'js',
          }));
        },
      },
    ],
    absWorkingDir: repo, // the metafile's paths are relative to it
    bundle: true,
    splitting: true,
    outdir: path.join(repo, '.size-out'),
    minify: true,
    platform: 'browser',
    format: 'esm',
    external: ENGINES,
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const texts = new Map(result.outputFiles.map((output) => [path.relative(repo, output.path), output.text]));
  const outputs = result.metafile.outputs;
  // The one-line module's own output: each \`import()\` target is an entry point of its own too.
  const entryOutput = Object.keys(outputs).find((name) => outputs[name].entryPoint === 'size-entry:size-entry');
  if (entryOutput === undefined) throw new Error(`esbuild made no output for the size entry of ${entry.importPath}`);
  const eager = new Set();
  const visit = (name) => {
    if (eager.has(name)) return;
    eager.add(name);
    for (const imported of outputs[name].imports) if (imported.kind === 'import-statement' && !imported.external) visit(imported.path);
  };
  visit(entryOutput);
  const inputs = new Map();
  for (const name of eager) {
    for (const [input, { bytesInOutput }] of Object.entries(outputs[name].inputs))
      inputs.set(input, (inputs.get(input) ?? 0) + bytesInOutput);
  }
  // esbuild cuts what the entry and its `import()`s share into chunks of their own; webpack and
  // Rollup (Vite) put it in the entry's chunk, which has loaded first: so the chunks that load with
  // the game are measured as one file. Each on-demand chunk loads apart.
  const eagerText = [...eager].map((name) => texts.get(name)).join('\n');
  const sizesOf = (names) =>
    names
      .map((name) => texts.get(name))
      .reduce((sum, text) => ({ min: sum.min + Buffer.byteLength(text), gzip: sum.gzip + gzipBytes(text) }), { min: 0, gzip: 0 });
  return {
    min: Buffer.byteLength(eagerText),
    gzip: gzipBytes(eagerText),
    lazy: sizesOf(Object.keys(outputs).filter((name) => name.endsWith('.js') && !eager.has(name))),
    inputs: [...inputs]
      .map(([input, bytes]) => ({ input, bytes }))
      .filter(({ bytes }) => bytes > 0)
      .sort((a, b) => b.bytes - a.bytes),
  };
}

/**
 * Measures every entry of the built package under `repo` (its dist must exist): `min` and `gzip`
 * are what loads with the game (the chunks that load with it as one file, gzipped); `lazy` what
 * loads on demand; `typical` the same two for the import the docs show, where there is one.
 * @returns {Promise<{ name: string, importPath: string, min: number, gzip: number, lazy: { min: number, gzip: number }, typical?: { code: string, min: number, gzip: number }, inputs: { input: string, bytes: number }[] }[]>}
 */
export async function measureEntries(repo = REPO) {
  const measures = [];
  for (const entry of ENTRIES) {
    if (entry.prebuilt) {
      const text = readFileSync(path.join(repo, entry.file), 'utf8');
      measures.push({
        name: entry.name,
        importPath: entry.importPath,
        min: Buffer.byteLength(text),
        gzip: gzipBytes(text),
        lazy: { min: 0, gzip: 0 },
        inputs: [],
      });
    } else {
      const measure = { name: entry.name, importPath: entry.importPath, ...(await bundleEntry(entry, repo)) };
      if (entry.typical) {
        const code = entry.typical.replace('<entry>', entry.importPath);
        const typical = await bundleEntry(entry, repo, entry.typical.replace("'<entry>'", JSON.stringify(path.join(repo, entry.file))));
        measure.typical = { code, min: typical.min, gzip: typical.gzip };
      }
      measures.push(measure);
    }
  }
  return measures;
}

const kilobytes = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;

function printMeasures(measures, top) {
  console.log('entry                  min         min+gzip    on demand (min+gzip)');
  for (const { importPath, min, gzip, lazy } of measures) {
    console.log(
      `${importPath.padEnd(22)} ${kilobytes(min).padStart(9)}   ${kilobytes(gzip).padStart(9)}   ${lazy.gzip ? kilobytes(lazy.gzip).padStart(9) : '        -'}`,
    );
  }
  console.log(`\n${'the import the docs show'.padEnd(68)} ${'min'.padStart(9)}   ${'min+gzip'.padStart(9)}`);
  for (const { typical } of measures) {
    if (typical) console.log(`${typical.code.padEnd(68)} ${kilobytes(typical.min).padStart(9)}   ${kilobytes(typical.gzip).padStart(9)}`);
  }
  for (const { importPath, inputs } of measures) {
    if (inputs.length === 0 || top === 0) continue;
    console.log(`\n${importPath}: the ${top} biggest inputs that load with the game (minified bytes)`);
    for (const { input, bytes } of inputs.slice(0, top)) {
      console.log(`  ${kilobytes(bytes).padStart(9)}  ${input.replace(/^.*?node_modules\//, 'node_modules/')}`);
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const measures = await measureEntries();
  if (process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify(measures)}\n`);
  } else {
    const topArgument = process.argv.find((argument) => argument.startsWith('--top='));
    printMeasures(measures, topArgument ? Number(topArgument.slice('--top='.length)) : 12);
  }
}
