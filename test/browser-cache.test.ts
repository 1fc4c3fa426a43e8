/**
 * The browser caches in real Chromium and Firefox ESR (through test/helpers/browser.ts): IndexedDBCache,
 * CacheStorageCache and OpfsCache round-trip bytes exactly and keep them across a page reload
 * and a browser restart; FallbackCache keeps a load going when storage refuses a put. The
 * IndexedDB store functions under IndexedDBCache (core/cache/idb-store.ts) are called directly too.
 */
import type { Page } from 'puppeteer-core';
import {
  createProfile,
  launchBrowser,
  reloadHarness,
  removeProfile,
  startRepoServer,
  type LaunchedBrowser,
  type RepoServer,
  TESTED_BROWSERS,
} from './helpers/browser';

const BACKENDS = ['indexeddb', 'cache-storage', 'opfs'] as const;

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  let server: RepoServer;
  let profile: string;
  let browser: LaunchedBrowser;
  let page: Page;

  beforeAll(async () => {
    server = await startRepoServer();
    profile = createProfile(kind); // ours, so the browser-restart test can launch on it again
    browser = await launchBrowser({ kind, userDataDir: profile });
    page = await browser.openHarness(server);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (profile) removeProfile(profile);
  });

  describe.each(BACKENDS)('%s', (backend) => {
    test('returns exactly the bytes put: a 0-byte entry, a view into a larger buffer, 300 KB', async () => {
      const result = await page.evaluate(async (backend) => {
        const core = await harnessImport('/dist/core/internal.js');
        const cache = core.createBrowserCache(backend, { name: 'round-trip' });
        const larger = Uint8Array.from({ length: 5000 }, (_, i) => (i * 13) & 0xff);
        const view = larger.subarray(1000, 1100);
        const big = Uint8Array.from({ length: 300_000 }, (_, i) => (i * 7 + (i >> 8)) & 0xff);
        const entries = [new Uint8Array(0), view, big];
        const keys: string[] = [];
        for (const bytes of entries) {
          const key: string = await core.sha256Hex(bytes);
          keys.push(key);
          await cache.put(key, bytes);
        }
        const expectedView = view.slice();
        larger.fill(0); // the caller reuses its buffer after the put

        const same = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && a.every((x, i) => x === b[i]);
        const got: Uint8Array[] = await Promise.all(keys.map((key) => cache.get(key)));
        const fresh = got.every(
          (bytes) => bytes instanceof Uint8Array && bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.byteLength,
        );
        got[2]!.fill(0); // the caller scribbles on what it got
        const again: Uint8Array = await cache.get(keys[2]);
        return {
          lengths: got.map((bytes) => bytes.byteLength),
          viewEqual: same(got[1]!, expectedView),
          bigEqual: same(again, big),
          fresh,
          missing: await cache.get('0'.repeat(64)),
        };
      }, backend);
      expect(result).toEqual({ lengths: [0, 100, 300_000], viewEqual: true, bigEqual: true, fresh: true, missing: undefined });
    });

    test('has, delete and clear', async () => {
      const result = await page.evaluate(async (backend) => {
        const core = await harnessImport('/dist/core/internal.js');
        const cache = core.createBrowserCache(backend, { name: 'has-delete' });
        // undefined inside an array comes back from the page as null, so say it in words.
        const read = async (key: string) => ((await cache.get(key)) === undefined ? 'missing' : 'present');
        const one = 'a1'.repeat(32);
        const two = 'b2'.repeat(32);
        await cache.put(one, new Uint8Array([1]));
        await cache.put(two, new Uint8Array([2, 2]));
        const before = [await cache.has(one), await cache.has(two)];
        await cache.delete(one);
        await cache.delete('c3'.repeat(32)); // absent: nothing to do
        const afterDelete = [await cache.has(one), await read(one), await cache.has(two)];
        await cache.clear();
        const afterClear = [await cache.has(two), await read(two)];
        await cache.put(one, new Uint8Array([3])); // usable again after clear
        return { before, afterDelete, afterClear, reused: Array.from(await cache.get(one)) };
      }, backend);
      expect(result).toEqual({
        before: [true, true],
        afterDelete: [false, 'missing', true],
        afterClear: [false, 'missing'],
        reused: [3],
      });
    });

    test('refuses a key that is not a lowercase hex SHA-256', async () => {
      const message = await page.evaluate(async (backend) => {
        const core = await harnessImport('/dist/core/internal.js');
        const cache = core.createBrowserCache(backend, { name: 'keys' });
        return cache.put('../escape', new Uint8Array(1)).then(
          () => 'stored',
          (error: Error) => error.name,
        );
      }, backend);
      expect(message).toBe('InvalidOptionError');
    });

    test('keeps entries across a page reload', async () => {
      const key = 'd4'.repeat(32);
      await page.evaluate(
        async (backend, key) => {
          const core = await harnessImport('/dist/core/internal.js');
          await core.createBrowserCache(backend, { name: 'reload' }).put(key, new Uint8Array([4, 5, 6]));
        },
        backend,
        key,
      );
      await reloadHarness(page);
      const got = await page.evaluate(
        async (backend, key) => {
          const core = await harnessImport('/dist/core/internal.js');
          return Array.from(await core.createBrowserCache(backend, { name: 'reload' }).get(key));
        },
        backend,
        key,
      );
      expect(got).toEqual([4, 5, 6]);
    });
  });

  test('every backend keeps its entries when the browser restarts on the same profile', async () => {
    const key = 'e5'.repeat(32);
    await page.evaluate(
      async (backends, key) => {
        const core = await harnessImport('/dist/core/internal.js');
        for (const backend of backends)
          await core.createBrowserCache(backend, { name: 'restart' }).put(key, new TextEncoder().encode(backend));
      },
      [...BACKENDS],
      key,
    );
    await browser.close(); // our profile: close() keeps it
    browser = await launchBrowser({ kind, userDataDir: profile });
    page = await browser.openHarness(server); // same server, same origin, same storage
    const got = await page.evaluate(
      async (backends, key) => {
        const core = await harnessImport('/dist/core/internal.js');
        const texts: string[] = [];
        for (const backend of backends)
          texts.push(new TextDecoder().decode(await core.createBrowserCache(backend, { name: 'restart' }).get(key)));
        return texts;
      },
      [...BACKENDS],
      key,
    );
    expect(got).toEqual([...BACKENDS]);
  });

  test('a put refused with QuotaExceededError goes to memory, and get still returns the bytes', async () => {
    const result = await page.evaluate(async () => {
      const core = await harnessImport('/dist/core/internal.js');
      const full = {
        get: async () => undefined,
        put: async () => {
          throw new DOMException('the disk is full', 'QuotaExceededError');
        },
      };
      const reported: string[] = [];
      const cache = new core.FallbackCache({
        primary: full,
        onError: (error: Error, operation: string) => reported.push(`${operation}: ${error.name}`),
      });
      const key = 'f6'.repeat(32);
      await cache.put(key, new Uint8Array([7, 8, 9])); // does not throw
      return { got: Array.from(await cache.get(key)), has: await cache.has(key), inMemory: await cache.memory.has(key), reported };
    });
    expect(result).toEqual({ got: [7, 8, 9], has: true, inMemory: true, reported: ['put: QuotaExceededError'] });
  });

  test('a get or has that fails in storage is a miss, not an error', async () => {
    const result = await page.evaluate(async () => {
      const core = await harnessImport('/dist/core/internal.js');
      const broken = {
        get: async () => {
          throw new DOMException('backing store gone', 'UnknownError');
        },
        put: async () => undefined,
        has: async () => {
          throw new DOMException('backing store gone', 'UnknownError');
        },
      };
      const cache = new core.FallbackCache({ primary: broken });
      return { got: (await cache.get('0'.repeat(64))) === undefined ? 'missing' : 'present', has: await cache.has('0'.repeat(64)) };
    });
    expect(result).toEqual({ got: 'missing', has: false });
  });

  /** In `on`: a 2 MB put through openBrowserCache over a 1 MB quota, and what came of it. */
  const putOverQuota = (on: Page, backend: string) =>
    on.evaluate(async (backend) => {
      const core = await harnessImport('/dist/core/internal.js');
      const reported: string[] = [];
      const cache = await core.openBrowserCache({
        name: 'quota',
        backends: [backend],
        onError: (error: Error) => reported.push(error.name),
      });
      // 2 MB of random bytes: over the 1 MB quota even where the store compresses values.
      const bytes = new Uint8Array(2 * 1024 * 1024);
      for (let offset = 0; offset < bytes.length; offset += 65536) crypto.getRandomValues(bytes.subarray(offset, offset + 65536));
      const key: string = await core.sha256Hex(bytes);
      await cache.put(key, bytes);
      const got: Uint8Array = await cache.get(key);
      return {
        backend: cache.primary.backend,
        equal: got.byteLength === bytes.byteLength && got.every((x, i) => x === bytes[i]),
        inMemory: await cache.memory.has(key),
        inStorage: await cache.primary.has(key),
        reported,
      };
    }, backend);

  /**
   * The error a full store reports: QuotaExceededError, except Firefox's Cache Storage, whose
   * `cache.put` rejects with an error named NS_ERROR_FILE_NO_DEVICE_SPACE. FallbackCache treats
   * every put error alike, so the entry is served from memory either way.
   */
  const quotaError = (backend: string) =>
    kind === 'firefox' && backend === 'cache-storage' ? 'NS_ERROR_FILE_NO_DEVICE_SPACE' : 'QuotaExceededError';

  if (kind === 'chromium') {
    // A 1 MB quota for this origin alone, set and lifted through CDP.
    test.each(BACKENDS)(
      'over a real quota (CDP Storage.overrideQuotaForOrigin), openBrowserCache with %s still serves the entry from memory',
      async (backend) => {
        const cdp = await page.createCDPSession();
        await cdp.send('Storage.overrideQuotaForOrigin', { origin: server.origin, quotaSize: 1024 * 1024 });
        try {
          expect(await putOverQuota(page, backend)).toEqual({
            backend,
            equal: true,
            inMemory: true,
            inStorage: false,
            reported: [quotaError(backend)],
          });
        } finally {
          await cdp.send('Storage.overrideQuotaForOrigin', { origin: server.origin });
          await cdp.detach();
        }
      },
    );
  } else {
    // WebDriver BiDi has no quota override: a second Firefox whose whole storage is limited to
    // 1 MB by a preference (dom.quotaManager.temporaryStorage.fixedLimit, in KB).
    describe('over a real quota (a Firefox limited to 1 MB of storage)', () => {
      let small: LaunchedBrowser;
      let smallPage: Page;
      beforeAll(async () => {
        small = await launchBrowser({ kind, firefoxPrefs: { 'dom.quotaManager.temporaryStorage.fixedLimit': 1024 } });
        smallPage = await small.openHarness(server);
      });
      afterAll(async () => {
        await small?.close();
      });
      test.each(BACKENDS)('openBrowserCache with %s still serves the entry from memory', async (backend) => {
        expect(await putOverQuota(smallPage, backend)).toEqual({
          backend,
          equal: true,
          inMemory: true,
          inStorage: false,
          reported: [quotaError(backend)],
        });
      });
    });
  }

  test('openBrowserCache uses the first backend that opens, and memory alone when none does', async () => {
    const result = await page.evaluate(async () => {
      const core = await harnessImport('/dist/core/internal.js');
      const preferred = await core.openBrowserCache();
      const chosen = await core.openBrowserCache({ backends: ['opfs', 'indexeddb'] });
      const none = await core.openBrowserCache({ backends: [] });
      const key = '07'.repeat(32);
      await none.put(key, new Uint8Array([1, 2]));
      return {
        preferred: preferred.primary.backend,
        defaultOrder: core.BROWSER_CACHE_PREFERENCE,
        chosen: chosen.primary.backend,
        none: none.primary === undefined,
        fromMemory: Array.from(await none.get(key)),
      };
    });
    expect(result.preferred).toBe(result.defaultOrder[0]);
    expect(result).toMatchObject({ chosen: 'opfs', none: true, fromMemory: [1, 2] });
  });

  describe('the IndexedDB store functions (core/cache/idb-store.js), as a worker would call them', () => {
    test('putEntries, getEntries and hasEntries round-trip bytes; each answer owns its buffer', async () => {
      const result = await page.evaluate(async () => {
        const store = await harnessImport('/dist/core/cache/idb-store.js');
        const access = { database: 'idb-store-round-trip', objectStore: 'entries' };
        const larger = Uint8Array.from({ length: 4000 }, (_, i) => (i * 11) & 0xff);
        const view = larger.subarray(500, 600); // IndexedDB would keep all 4000 bytes of its buffer
        const big = Uint8Array.from({ length: 300_000 }, (_, i) => (i * 7) & 0xff);
        const keys = ['a1'.repeat(32), 'b2'.repeat(32), 'c3'.repeat(32)];
        await store.putEntries(access, [
          [keys[0], new Uint8Array(0)],
          [keys[1], view],
          [keys[2], big],
        ]);
        const got: (Uint8Array | undefined)[] = await store.getEntries(access, [...keys, 'd4'.repeat(32)]);
        const owns = (bytes: Uint8Array) => bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
        return {
          lengths: got.slice(0, 3).map((bytes) => bytes!.byteLength),
          view: Array.from(got[1]!).every((x, i) => x === view[i]),
          big: got[2]!.every((x, i) => x === big[i]),
          own: got.slice(0, 3).every((bytes) => owns(bytes!)),
          missing: got[3] === undefined,
          has: await store.hasEntries(access, [keys[1], 'd4'.repeat(32), keys[0]]),
        };
      });
      expect(result).toEqual({ lengths: [0, 100, 300_000], view: true, big: true, own: true, missing: true, has: [true, false, true] });
    });

    test('an entry stored as a Blob, an ArrayBuffer or a view into a larger buffer reads back as a Uint8Array of its own', async () => {
      const result = await page.evaluate(async () => {
        const store = await harnessImport('/dist/core/cache/idb-store.js');
        const access = { database: 'idb-store-value-kinds', objectStore: 'entries' };
        const database: IDBDatabase = await store.openStore(access);
        // Written as another program might have (the reader's old worker stored ArrayBuffers too).
        const values: [string, unknown][] = [
          ['e5'.repeat(32), new Blob([new Uint8Array([1, 2, 3])])],
          ['f6'.repeat(32), new Uint8Array([4, 5, 6, 7]).buffer],
          ['07'.repeat(32), new Uint8Array([0, 8, 9, 0]).subarray(1, 3)],
          ['18'.repeat(32), 'not bytes'],
        ];
        await new Promise<void>((resolve, reject) => {
          const transaction = database.transaction(access.objectStore, 'readwrite');
          for (const [key, value] of values) transaction.objectStore(access.objectStore).put(value, key);
          transaction.oncomplete = () => resolve();
          transaction.onabort = () => reject(transaction.error);
        });
        const got: (Uint8Array | undefined)[] = await store.getEntries(
          access,
          values.map(([key]) => key),
        );
        return got.map((bytes) =>
          bytes === undefined
            ? 'missing'
            : {
                kind: bytes.constructor.name,
                bytes: Array.from(bytes),
                own: bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength,
              },
        );
      });
      expect(result).toEqual([
        { kind: 'Uint8Array', bytes: [1, 2, 3], own: true },
        { kind: 'Uint8Array', bytes: [4, 5, 6, 7], own: true },
        { kind: 'Uint8Array', bytes: [8, 9], own: true },
        'missing',
      ]);
    });

    test('the page can delete the database while a connection is open: versionchange closes it, the next call opens a new one', async () => {
      const result = await page.evaluate(async () => {
        const store = await harnessImport('/dist/core/cache/idb-store.js');
        const access = { database: 'idb-store-delete', objectStore: 'entries' };
        const key = '29'.repeat(32);
        await store.putEntries(access, [[key, new Uint8Array([1])]]);
        const first: IDBDatabase = await store.openStore(access);
        // 'blocked' would mean the connection stayed open: the delete would wait for it forever.
        const deleted = await new Promise<string>((resolve) => {
          const request = indexedDB.deleteDatabase(access.database);
          request.onblocked = () => resolve('blocked');
          request.onsuccess = () => resolve('deleted');
          request.onerror = () => resolve(`error ${request.error?.name}`);
        });
        if (deleted !== 'deleted') return { deleted }; // a new open would queue behind the delete
        const hasAfter: boolean[] = await store.hasEntries(access, [key]);
        await store.putEntries(access, [[key, new Uint8Array([2])]]);
        return {
          deleted,
          hasAfter,
          reopened: (await store.openStore(access)) !== first,
          got: Array.from((await store.getEntries(access, [key]))[0]),
        };
      });
      expect(result).toEqual({ deleted: 'deleted', hasAfter: [false], reopened: true, got: [2] });
    });
    test('a connection closed by whoever held it (closeStore, or close() on it) is replaced on the next call', async () => {
      const result = await page.evaluate(async () => {
        const store = await harnessImport('/dist/core/cache/idb-store.js');
        const access = { database: 'idb-store-closed', objectStore: 'entries' };
        const key = '3a'.repeat(32);
        await store.putEntries(access, [[key, new Uint8Array([5])]]);
        (await store.openStore(access)).close(); // still the shared connection: the next transaction finds it closed
        const afterClose = Array.from((await store.getEntries(access, [key]))[0]);
        store.closeStore(access);
        const afterCloseStore: boolean[] = await store.hasEntries(access, [key]);
        return { afterClose, afterCloseStore };
      });
      expect(result).toEqual({ afterClose: [5], afterCloseStore: [true] });
    });
  });

  describe('batches (every backend, and FallbackCache over IndexedDB)', () => {
    test('putMany, getMany and hasMany: one call for many entries, answers in the keys order, copies taken at once', async () => {
      const result = await page.evaluate(async () => {
        const core = await harnessImport('/dist/core/internal.js');
        const caches: [string, any][] = ['indexeddb', 'cache-storage', 'opfs'].map((backend) => [
          backend,
          core.createBrowserCache(backend, { name: 'batches' }),
        ]);
        caches.push(['fallback', await core.openBrowserCache({ name: 'batches-fallback' })]);
        const out: Record<string, unknown> = {};
        for (const [name, cache] of caches) {
          // 40 entries of 0–100 KB, more than one 1 MiB slice of puts.
          const entries: [string, Uint8Array][] = [];
          for (let i = 0; i < 40; i++) {
            const bytes = Uint8Array.from({ length: i * 2500 }, (_, j) => (i * 31 + j) & 0xff);
            entries.push([await core.sha256Hex(bytes), bytes]);
          }
          const expected = await Promise.all(entries.map(([, bytes]) => core.sha256Hex(bytes)));
          const writing = cache.putMany(entries);
          for (const [, bytes] of entries) bytes.fill(0); // the caller may reuse its buffers at once
          await writing;
          const keys = [...entries.map(([key]) => key), '0'.repeat(64)];
          const got: (Uint8Array | undefined)[] = await cache.getMany(keys);
          const hashes = await Promise.all(got.slice(0, -1).map((bytes) => core.sha256Hex(bytes!)));
          out[name] = {
            same: hashes.every((hash, i) => hash === expected[i]),
            missing: got.at(-1) === undefined,
            has: await cache.hasMany(keys.slice(-3)),
            copies: cache.copiesBytes === true,
          };
        }
        return out;
      });
      for (const name of ['indexeddb', 'cache-storage', 'opfs', 'fallback'])
        expect(result[name]).toEqual({ same: true, missing: true, has: [true, true, false], copies: true });
    });
  });
});
