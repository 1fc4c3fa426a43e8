// The webpack config of each of bench/shapes.mjs's games (bench/shapes/<game>/webpack.config.cjs),
// built as examples/phaser and examples/babylon are: TypeScript through ts-loader, one bundle
// (main.js), index.html by html-webpack-plugin (so the awake-bundle plugin adds its preload links)
// from its engine's page (bench/shapes/babylon.html or phaser.html, the game's name filled in),
// and the game's assets folder (`env.assets`: staged by bench/shapes/stage.mjs) published into
// published/ by the awake-bundle webpack plugin at its defaults, what a new user gets: given only
// its folders, `loads: false` (no recorded loads: `--group auto`).
// `awake-bundle` resolves to this repository's build (dist/), as it would from node_modules.
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const HtmlWebpackPlugin = require('html-webpack-plugin');

const repo = path.resolve(__dirname, '../..');

/** The config of the game in `dir` (its src/main.ts), its page made from `page` (a file beside this one). */
module.exports =
  (dir, page) =>
  async (env = {}) => {
    if (!env.assets || !env.out)
      throw new Error(`${path.basename(dir)}: env.assets and env.out are needed (node bench/shapes.mjs builds it)`);
    // awake-bundle is ESM; a CommonJS config imports it (in a game: `await import('awake-bundle/webpack')`).
    const { AwakeBundlePlugin } = await import(pathToFileURL(path.join(repo, 'dist/integrations/webpack/index.js')).href);
    return {
      mode: env.production ? 'production' : 'development',
      devtool: env.production ? false : 'source-map',
      context: dir,
      entry: './src/main.ts',
      output: { path: path.resolve(env.out), filename: 'main.js' },
      resolve: {
        extensions: ['.ts', '.js'],
        alias: {
          'awake-bundle/phaser$': path.join(repo, 'dist/adapters/phaser/index.js'),
          'awake-bundle/babylon$': path.join(repo, 'dist/adapters/babylon/index.js'),
          'awake-bundle$': path.join(repo, 'dist/core/index.js'),
        },
      },
      module: {
        rules: [
          { test: /\.ts$/, loader: 'ts-loader', options: { configFile: path.join(__dirname, 'tsconfig.json'), transpileOnly: true } },
        ],
      },
      plugins: [
        new AwakeBundlePlugin({ assets: env.assets, output: 'published', loads: false }),
        new HtmlWebpackPlugin({
          template: path.join(__dirname, page),
          templateParameters: { game: path.basename(dir) },
          inject: 'body',
          scriptLoading: 'blocking',
        }),
      ],
      performance: { hints: false },
      stats: 'errors-warnings',
    };
  };
