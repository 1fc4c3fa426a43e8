// bench/shapes.mjs's babylon-folder: built as bench/shapes/webpack.shared.cjs says (the awake-bundle plugin at its defaults, `loads: false`), its page from bench/shapes/babylon.html.
module.exports = require('../webpack.shared.cjs')(__dirname, 'babylon.html');
