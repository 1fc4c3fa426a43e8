// bench/shapes.mjs's phaser-pack: built as bench/shapes/webpack.shared.cjs says (the awake-bundle plugin at its defaults, `loads: false`), its page from bench/shapes/phaser.html.
module.exports = require('../webpack.shared.cjs')(__dirname, 'phaser.html');
