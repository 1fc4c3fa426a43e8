// Builds the reader's Web Worker (core/read/workers/worker-main.ts) into one minified classic script,
// from the same modules the page runs, with the service worker's build settings; scripts/postbuild.mjs
// then writes it into dist/core/read/workers/worker-script.js as the text the page starts a `blob:` worker from.
const path = require('node:path');
const webpack = require('webpack');
const serviceWorker = require('../adapters/service-worker/webpack.config.cjs');

module.exports = {
  ...serviceWorker,
  devtool: false,
  entry: './core/read/workers/worker-main.ts',
  // asyncChunks: false: a `blob:` worker has no URL to load chunks from; the `import()`s stay inline.
  output: { path: path.join(serviceWorker.context, 'dist/.reader-worker'), filename: 'worker.js', iife: true, asyncChunks: false },
  // Without the service worker's static-imports loader: the worker leaves hash-noble out (below).
  module: {
    rules: [
      {
        test: /\.ts$/,
        loader: 'ts-loader',
        options: { configFile: path.join(serviceWorker.context, 'tsconfig.json'), transpileOnly: true },
      },
    ],
  },
  optimization: { ...serviceWorker.optimization, minimize: true },
  // core/hash-noble.ts (noble's SHA-256) is hash.ts's fallback where WebCrypto is missing; the
  // page trusts a worker only once its ping says it has WebCrypto, so the worker leaves it out.
  // core/read/verify/structure.ts (the AWKB decoder and its messages) says why a bundle failed: the worker
  // refuses a head that is not the canonical one and the page says why (stream-check.ts
  // `deferredJudge`), so the worker, which never calls verifyBundle nor judgedError, leaves it out.
  plugins: [new webpack.IgnorePlugin({ resourceRegExp: /\/(hash-noble|structure)\.js$/ })],
};
