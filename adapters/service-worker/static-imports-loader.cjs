// For the service worker's build (webpack.config.cjs), which is one script: the core's on-demand
// `import('./x.js')`s (core/hash.ts, read/index-view.ts) load nothing later there, and webpack
// does not concatenate the modules around an `import()` (about 4 KB more minified). Each becomes a
// static namespace import, resolved at once.
// Left out, their imports reject (the 38 KB limit): the Cache Storage and OPFS caches (cache/browser-stores.ts, 1.0 KB), the
// fallbacks for a page where IndexedDB does not open: a service worker has IndexedDB wherever it
// has service workers, and where it does not open there, `openBrowserCache` keeps the cache in memory;
// and the AWKB decoder that says why a refused bundle's head or table is not the canonical one
// (read/structure.ts with format/awkb-decode.ts, 1.3 KB): there a refused bundle's error names the
// damaged members, or the part (header or table) its head differs in, without the decoder's detail.
const LEFT_OUT = new Set(['./browser-stores.js', './structure.js']);

module.exports = function staticImports(source) {
  const names = new Map();
  const body = source.replace(/\bimport\((['"])(\.{1,2}\/[^'"]+)\1\)/g, (_, quote, specifier) => {
    if (LEFT_OUT.has(specifier)) return `Promise.reject(new Error(${JSON.stringify(`${specifier} is left out of the service worker`)}))`;
    if (!names.has(specifier)) names.set(specifier, `staticImport${names.size}`);
    return `Promise.resolve(${names.get(specifier)})`;
  });
  const imports = [...names].map(([specifier, name]) => `import * as ${name} from ${JSON.stringify(specifier)};\n`);
  return imports.join('') + body;
};
