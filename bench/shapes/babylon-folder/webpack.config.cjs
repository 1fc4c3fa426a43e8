module.exports = require('../webpack.shared.cjs')(__dirname);
