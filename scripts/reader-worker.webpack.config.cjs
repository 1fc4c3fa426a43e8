// Builds the reader's Web Worker (core/read/worker-main.ts) into one minified classic script,
// from the same modules the page runs, with the service worker's build settings; scripts/postbuild.mjs
// then writes it into dist/core/read/worker-script.js as the text the page starts a `blob:` worker from.
const path = require('node:path');
const serviceWorker = require('../adapters/service-worker/webpack.config.cjs');

module.exports = {
  ...serviceWorker,
  devtool: false,
  entry: './core/read/worker-main.ts',
  output: { path: path.join(serviceWorker.context, 'dist/.reader-worker'), filename: 'worker.js', iife: true },
  optimization: { ...serviceWorker.optimization, minimize: true },
};
