// Builds the reader's Web Worker (core/read/worker-main.ts) into one minified classic script,
// from the same modules the page runs; scripts/postbuild.mjs then writes it into
// dist/core/read/worker-script.js as the text the page starts a `blob:` worker from.
const path = require('node:path');

const repo = path.resolve(__dirname, '..');

module.exports = {
  mode: 'production',
  target: 'webworker',
  devtool: false,
  context: repo,
  entry: './core/read/worker-main.ts',
  output: { path: path.join(repo, 'dist/.reader-worker'), filename: 'worker.js', iife: true },
  resolve: { extensions: ['.ts', '.js'], extensionAlias: { '.js': ['.ts', '.js'] } },
  module: { rules: [{ test: /\.ts$/, loader: 'ts-loader', options: { configFile: path.join(repo, 'tsconfig.json'), transpileOnly: true } }] },
  optimization: { minimize: true, splitChunks: false, runtimeChunk: false },
  performance: { hints: false },
  stats: 'errors-warnings',
};
