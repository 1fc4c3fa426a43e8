// Builds the self-contained service worker dist/sw/awake-bundle-sw.js: TypeScript through
// ts-loader, target webworker, one classic script with no imports at run time, minified, with its
// source map beside it (dist/sw/awake-bundle-sw.js.map, not referenced from the script: `awake-bundle
// sw` and the build plugins prepend the index URL line, which would shift it). `npm run build`
// calls it from scripts/postbuild.mjs.
const path = require('node:path');
const { NormalModuleReplacementPlugin } = require('webpack');

const repo = path.resolve(__dirname, '../..');

/** Every import of the repository's `module` (a `.js` specifier, as core writes them) gets `file` of this folder instead. */
function standIn(module, file) {
  const target = path.join(repo, module);
  return new NormalModuleReplacementPlugin(new RegExp(`/${path.basename(module).replace('.', '\\.')}$`), (resource) => {
    if (path.resolve(resource.context, resource.request) === target) resource.request = path.join(__dirname, file);
  });
}

module.exports = {
  mode: 'production',
  target: 'webworker',
  devtool: 'hidden-source-map',
  context: repo,
  entry: './adapters/service-worker/worker-entry.ts',
  output: { path: path.join(repo, 'dist/sw'), filename: 'awake-bundle-sw.js', iife: true },
  resolve: { extensions: ['.ts', '.js'], extensionAlias: { '.js': ['.ts', '.js'] } },
  module: {
    rules: [
      {
        test: /\.ts$/,
        use: [
          path.join(__dirname, 'static-imports-loader.cjs'),
          { loader: 'ts-loader', options: { configFile: path.join(repo, 'tsconfig.json'), transpileOnly: true } },
        ],
      },
    ],
  },
  // A service worker has no Web Workers: the reader's pool there is the calling thread's
  // (adapters/service-worker/digest-pool.ts), not core/read/workers/digest-pool.ts's worker pool. It reads
  // no references ahead either (adapters/service-worker/no-read-ahead.ts), records no loads
  // (no-load-recorder.ts: the page's adapters post them), runs no transport attempts in workers
  // (no-elsewhere.ts for core/net/elsewhere.ts), and has no document: no preload links, no parse
  // to wait for, no index asked for early (no-page-preloads.ts for core/read/open/page-preloads.ts).
  // It hashes synchronously (opaque ids) with hash-sync.ts rather than @noble/hashes, 2.3 KB
  // gzipped smaller.
  plugins: [
    standIn('core/read/workers/digest-pool.js', 'digest-pool.ts'),
    standIn('core/read/load/read-ahead.js', 'no-read-ahead.ts'),
    standIn('core/read/load/load-recorder.js', 'no-load-recorder.ts'),
    standIn('core/read/open/page-preloads.js', 'no-page-preloads.ts'),
    standIn('core/net/elsewhere.js', 'no-elsewhere.ts'),
    standIn('core/hash-noble.js', 'hash-sync.ts'),
  ],
  optimization: { minimize: true, splitChunks: false, runtimeChunk: false },
  performance: { hints: false },
  stats: 'errors-warnings',
};
