// Builds the Phaser levels example: TypeScript through ts-loader, one bundle (main.js) and
// index.html, and its own assets folder (./assets, more files than level 1 loads) published into
// published/ by the awake-bundle webpack plugin with its defaults: no loads file here, so
// `--group auto`, what a new project gets. `webpack serve` publishes nothing: the plugin serves a
// loose index of ./assets at the same URL, published/project.index.json.
// `awake-bundle` resolves to this repository's build (dist/), as it would from node_modules.
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const HtmlWebpackPlugin = require('html-webpack-plugin');

const repo = path.resolve(__dirname, '../..');

module.exports = async (env = {}) => {
  // awake-bundle is ESM; a CommonJS config imports it (in a game: `await import('awake-bundle/webpack')`).
  const { AwakeBundlePlugin } = await import(pathToFileURL(path.join(repo, 'dist/integrations/webpack/index.js')).href);
  return {
    mode: env.production ? 'production' : 'development',
    devtool: env.production ? false : 'source-map',
    context: __dirname,
    entry: './src/main.ts',
    output: { path: path.resolve(env.out ?? path.join(repo, 'build/phaser-levels-example')), filename: 'main.js' },
    resolve: {
      extensions: ['.ts', '.js'],
      alias: {
        'awake-bundle/phaser$': path.join(repo, 'dist/adapters/phaser/index.js'),
        'awake-bundle$': path.join(repo, 'dist/core/index.js'),
      },
    },
    module: {
      rules: [{ test: /\.ts$/, loader: 'ts-loader', options: { configFile: path.join(__dirname, 'tsconfig.json'), transpileOnly: true } }],
    },
    // env.assets: another assets folder (bench/engines.mjs publishes a changed copy as an update).
    // html-webpack-plugin writes index.html from this folder's (the script added at the end of the
    // body), so the awake-bundle plugin can add its preload link for the index
    // (docs/build-plugins.md, "Preload"): its request starts with the page.
    plugins: [
      new AwakeBundlePlugin({ assets: env.assets ?? './assets', output: 'published' }),
      new HtmlWebpackPlugin({ template: './index.html', inject: 'body', scriptLoading: 'blocking' }),
    ],
    // `webpack serve`: index.html and main.js from memory, published/ from the plugin.
    devServer: { static: { directory: __dirname, watch: false }, host: '127.0.0.1' },
    performance: { hints: false },
    stats: 'errors-warnings',
  };
};
