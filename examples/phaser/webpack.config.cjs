// Builds the Phaser example: TypeScript through ts-loader, one bundle (main.js) beside index.html.
// `awake-bundle` resolves to this repository's build (dist/), as it would from node_modules.
const path = require('node:path');

const repo = path.resolve(__dirname, '../..');

module.exports = (env = {}) => ({
  mode: env.production ? 'production' : 'development',
  devtool: env.production ? false : 'source-map',
  context: __dirname,
  entry: './src/main.ts',
  output: { path: path.resolve(env.out ?? path.join(repo, 'build/phaser-example')), filename: 'main.js' },
  resolve: {
    extensions: ['.ts', '.js'],
    alias: {
      'awake-bundle/phaser$': path.join(repo, 'dist/adapters/phaser/index.js'),
      'awake-bundle$': path.join(repo, 'dist/core/index.js'),
    },
  },
  module: { rules: [{ test: /\.ts$/, loader: 'ts-loader', options: { configFile: path.join(__dirname, 'tsconfig.json'), transpileOnly: true } }] },
  performance: { hints: false },
  stats: 'errors-warnings',
});
