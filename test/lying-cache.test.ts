/**
 * A cache that lies: `has()` says yes, `get()` finds nothing (another tab cleared it between the
 * two). The content is then simply not cached: every read fetches it, in every read mode (whole
 * bundles, delta reads, needed bytes, range reads, after a prefetch), and no read fails
 * (SPEC §7 "Cache"). The source remembers what it found missing: a plan that trusted the
 * cache's count would leave those contents out of every load.
 */
import { join } from 'node:path';
import { IndexedAssetSource, MemoryCache, type ContentCache } from '../core/internal.js';
import { startStaticServer, type StaticServer } from '../core/node/index.js';
import { runCli, temporaryDir } from './helpers/cli.js';
import { seededBytes, sha256Hex, writeTree } from './helpers/trees.js';

const FILES: Record<string, Uint8Array> = {};
for (let i = 0; i < 28; i++) FILES[`${['levels', 'ui', 'audio', 'maps'][i % 4]}/file-${i}.bin`] = seededBytes(3000 + i * 97, i + 1);

let root: string;
let server: StaticServer;

beforeAll(async () => {
  root = temporaryDir('awkb-lying-site-');
  const tree = temporaryDir('awkb-lying-tree-');
  writeTree(tree, FILES);
  const published = runCli([tree, '--out', join(root, 'site'), '--group', 'folder']);
  if (published.code !== 0) throw new Error(published.stderr);
  server = await startStaticServer({ root });
});
afterAll(() => server.close());

/** A cache whose counts come from a snapshot (it held everything) while its entries are gone. */
function lyingCache(): ContentCache & { gets: number } {
  const emptied = new MemoryCache();
  const cache = {
    gets: 0,
    get: async (sha256: string) => {
      cache.gets++;
      return emptied.get(sha256);
    },
    put: (sha256: string, bytes: Uint8Array) => emptied.put(sha256, bytes),
    has: async () => true,
    hasMany: async (shas: readonly string[]) => shas.map(() => true),
  };
  return cache;
}

const MODES = {
  'whole bundles (neededBytes off, deltaReads off)': { neededBytes: false, deltaReads: false },
  'delta reads (neededBytes off)': { neededBytes: false },
  'needed bytes (the default)': {},
  'range reads': { rangeReads: true },
} as const;

describe.each(Object.entries(MODES))('%s', (_, options) => {
  test('28 concurrent reads through a cache whose has() lies all get their verified bytes', async () => {
    const cache = lyingCache();
    const source = await IndexedAssetSource.open({ indexUrl: `${server.url}site/project.index.json`, cache, ...options });
    try {
      const paths = Object.keys(FILES);
      const results = await Promise.all(
        paths.map((path) =>
          source.read(path).then(
            (bytes) => sha256Hex(bytes),
            (error: Error) => `${error.name}: ${error.message}`,
          ),
        ),
      );
      expect(Object.fromEntries(paths.map((path, i) => [path, results[i]]))).toEqual(
        Object.fromEntries(paths.map((path) => [path, sha256Hex(FILES[path]!)])),
      );
    } finally {
      source.dispose();
    }
  });

  test('a prefetch of everything, then every read: all verified', async () => {
    const source = await IndexedAssetSource.open({ indexUrl: `${server.url}site/project.index.json`, cache: lyingCache(), ...options });
    try {
      const paths = Object.keys(FILES);
      await source.prefetch(paths);
      const results = await Promise.all(paths.map((path) => source.read(path).then(sha256Hex, (error: Error) => error.message)));
      expect(results).toEqual(paths.map((path) => sha256Hex(FILES[path]!)));
    } finally {
      source.dispose();
    }
  });

  test('reads one after another (each asks the cache first) all succeed too', async () => {
    const source = await IndexedAssetSource.open({ indexUrl: `${server.url}site/project.index.json`, cache: lyingCache(), ...options });
    try {
      for (const path of Object.keys(FILES).slice(0, 8)) expect(sha256Hex(await source.read(path))).toBe(sha256Hex(FILES[path]!));
    } finally {
      source.dispose();
    }
  });
});
