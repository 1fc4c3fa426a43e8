/**
 * A page closed while the browser caches are writing (SPEC §7 "Cache"), in real Chromium and
 * Firefox ESR: the next page on the same origin and profile finds every entry whole or not at all.
 * `has()` never says yes to an entry that `get()` cannot return whole, and no 0-byte or partial
 * file stands under an entry's name.
 *
 * Two ways of closing mid-write, for each backend:
 * - held: the page's storage calls are made to stop half-way and never finish (OPFS: each
 *   writable takes half the bytes, then its write never settles; IndexedDB: the batch's
 *   transaction has every put done and is kept from committing; Cache Storage, whose put takes
 *   the bytes whole: each put handed to the browser, and the page never told it finished), and
 *   the page is closed once all of them are held. Nothing depends on timing.
 * - racing: 48 puts of 1 MiB, and the page closed as soon as the first one is stored, wherever
 *   the others are.
 *
 * OPFS writes each entry to a temporary file that is renamed to the entry's SHA-256 once whole;
 * a temporary left by a closed page is never an entry, and the next visit's cache removes it,
 * while one that a live page is still writing is kept. Cache Storage is safe because its put gets
 * the bytes whole: Firefox ESR keeps a streamed body that a page close cuts short as an entry.
 */
import type { Page } from 'puppeteer-core';
import { launchBrowser, startRepoServer, type LaunchedBrowser, type RepoServer, TESTED_BROWSERS } from './helpers/browser';

const BACKENDS = ['indexeddb', 'cache-storage', 'opfs'] as const;
type Backend = (typeof BACKENDS)[number];

/** What a page finds of one entry through the cache: whole (has, and get returns bytes of its SHA-256), absent, or anything else. */
type EntryState = 'whole' | 'absent' | 'has() but get() missing' | 'has() but get() wrong' | 'get() without has()';

/** One thing the store itself holds, read below the cache: its name, its size, and whether its bytes hash to its name. */
interface StoredItem {
  name: string;
  size: number;
  whole: boolean;
}

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  let server: RepoServer;
  let browser: LaunchedBrowser;

  beforeAll(async () => {
    server = await startRepoServer();
    browser = await launchBrowser({ kind });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /**
   * In a new page: makes `count` entries of random bytes of `size`, installs `hold` (if any), starts
   * putting them through `backend`'s cache `name` without waiting, and resolves with their keys.
   * The page counts in `globalThis.held` the writes its hold has stopped, and in
   * `globalThis.stored` the puts that resolved.
   */
  async function startPuts(
    backend: Backend,
    name: string,
    count: number,
    size: number,
    hold: 'held' | 'racing',
  ): Promise<{ page: Page; keys: string[] }> {
    const page = await browser.openHarness(server);
    const keys = await page.evaluate(
      async (backend, name, count, size, hold) => {
        const core = await harnessImport('/dist/core/internal.js');
        const state = globalThis as unknown as { held: number; stored: number };
        state.held = 0;
        state.stored = 0;
        const entries: [string, Uint8Array][] = [];
        for (let i = 0; i < count; i++) {
          const bytes = new Uint8Array(size);
          for (let offset = 0; offset < size; offset += 65536) crypto.getRandomValues(bytes.subarray(offset, offset + 65536));
          entries.push([await core.sha256Hex(bytes), bytes]);
        }
        const never = () => new Promise<never>(() => undefined);
        if (hold === 'held' && backend === 'opfs') {
          // Half the bytes reach the writable; the rest never come.
          const write = FileSystemWritableFileStream.prototype.write;
          FileSystemWritableFileStream.prototype.write = async function (this: FileSystemWritableFileStream, data: any) {
            await write.call(this, (data as Uint8Array<ArrayBuffer>).subarray(0, data.byteLength >> 1));
            state.held++;
            return never();
          };
        } else if (hold === 'held' && backend === 'cache-storage') {
          // Each put handed to the browser as the cache makes it, its answer never let through.
          const put = Cache.prototype.put;
          Cache.prototype.put = function (this: Cache, request: RequestInfo | URL, response: Response) {
            void put.call(this, request, response).catch(() => undefined);
            state.held++;
            return never();
          };
        } else if (hold === 'held' && backend === 'indexeddb') {
          // Every put of the batch done, then the transaction kept busy with key lookups, so it never commits.
          const put = IDBObjectStore.prototype.put;
          let done = 0;
          IDBObjectStore.prototype.put = function (this: IDBObjectStore, value: unknown, key?: IDBValidKey) {
            const request = put.call(this, value, key);
            request.addEventListener('success', () => {
              if (++done < count) return;
              const busy = () => void (this.getKey(key!).onsuccess = busy);
              busy();
              state.held = count;
            });
            return request;
          };
        }
        const cache = core.createBrowserCache(backend, { name });
        // The reader stores a bundle's members with one putMany; racing puts go one by one, so each can be seen to finish.
        if (hold === 'held') void cache.putMany(entries).catch(() => undefined);
        else
          for (const [key, bytes] of entries)
            void cache.put(key, bytes).then(
              () => state.stored++,
              () => undefined,
            );
        return entries.map(([key]) => key);
      },
      backend,
      name,
      count,
      size,
      hold,
    );
    return { page, keys };
  }

  /** In a new page on the same origin: each entry as the cache sees it, and what the store holds underneath. */
  async function nextVisit(
    backend: Backend,
    name: string,
    keys: string[],
  ): Promise<{ page: Page; states: EntryState[]; stored: StoredItem[] }> {
    const page = await browser.openHarness(server);
    const found = await page.evaluate(
      async (backend, name, keys) => {
        const core = await harnessImport('/dist/core/internal.js');
        const stored: { name: string; size: number; whole: boolean }[] = [];
        const item = async (name: string, bytes: Uint8Array) =>
          stored.push({ name, size: bytes.byteLength, whole: (await core.sha256Hex(bytes)) === name });
        // The store below the cache first, before any cache of this name is made (OPFS's cleans up).
        if (backend === 'opfs') {
          const folder = await (await navigator.storage.getDirectory()).getDirectoryHandle(name, { create: true });
          for await (const [itemName, handle] of folder.entries())
            await item(itemName, new Uint8Array(await (await (handle as FileSystemFileHandle).getFile()).arrayBuffer()));
        } else if (backend === 'cache-storage') {
          const cache = await caches.open(name);
          for (const request of await cache.keys())
            await item(request.url.split('/').pop()!, new Uint8Array(await (await cache.match(request))!.arrayBuffer()));
        } else {
          const store = await harnessImport('/dist/core/cache/idb-store.js');
          const access = { database: name, objectStore: 'entries' };
          const database: IDBDatabase = await store.openStore(access);
          const allKeys = await new Promise<IDBValidKey[]>((resolve, reject) => {
            const request = database.transaction(access.objectStore).objectStore(access.objectStore).getAllKeys();
            request.onsuccess = () => resolve(request.result);
            request.onerror = () => reject(request.error);
          });
          const values: Uint8Array[] = await store.getEntries(access, allKeys);
          for (const [i, key] of allKeys.entries()) await item(String(key), values[i]!);
        }
        const cache = core.createBrowserCache(backend, { name });
        const has: boolean[] = await cache.hasMany(keys);
        const got: (Uint8Array | undefined)[] = await cache.getMany(keys);
        const states: string[] = [];
        for (const [i, key] of keys.entries()) {
          const bytes = got[i];
          const whole = bytes !== undefined && (await core.sha256Hex(bytes)) === key;
          if (!has[i]) states.push(bytes === undefined ? 'absent' : 'get() without has()');
          else states.push(bytes === undefined ? 'has() but get() missing' : whole ? 'whole' : 'has() but get() wrong');
        }
        return { states, stored };
      },
      backend,
      name,
      keys,
    );
    return { page, states: found.states as EntryState[], stored: found.stored };
  }

  /** A temporary of an OPFS write: `<sha256>.<uuid>.partial`. */
  const isTemporary = (item: StoredItem) => /^[0-9a-f]{64}\.[0-9a-f-]{36}\.partial$/.test(item.name);

  describe.each(BACKENDS)('%s', (backend) => {
    test('a page closed with every write held half-way leaves no entry has() reports but get() cannot return whole, and no empty or partial file under an entry name', async () => {
      const name = `held-${backend}`;
      const count = 16;
      const { page, keys } = await startPuts(backend, name, count, 512 * 1024, 'held');
      await page.waitForFunction((count) => (globalThis as unknown as { held: number }).held >= count, {}, count);
      await page.close();

      const next = await nextVisit(backend, name, keys);
      expect(next.states.filter((state) => state !== 'whole' && state !== 'absent')).toEqual([]);
      // The bytes never all reached OPFS or a committed transaction: nothing of them is an entry.
      if (backend !== 'cache-storage') expect(next.states).toEqual(keys.map(() => 'absent'));
      // Underneath, besides whole entries, at most the temporaries of the writes that never finished.
      expect(next.stored.filter((item) => !isTemporary(item) && !item.whole)).toEqual([]);
      if (backend === 'opfs') expect(next.stored.filter(isTemporary)).toHaveLength(count);

      // The same entries put again, from the new page: stored whole.
      const again = await next.page.evaluate(
        async (backend, name, keys) => {
          const core = await harnessImport('/dist/core/internal.js');
          const cache = core.createBrowserCache(backend, { name });
          // Random bytes cannot be made again, so store bytes of other keys under these names: the cache does not verify.
          await cache.putMany(keys.map((key, i) => [key, new Uint8Array([i])]));
          return Array.from(await cache.getMany(keys), (bytes: Uint8Array | undefined) => (bytes ? Array.from(bytes) : 'missing'));
        },
        backend,
        name,
        keys,
      );
      expect(again).toEqual(keys.map((_, i) => [i]));
      await next.page.close();
    });

    test('a page closed while 48 puts of 1 MiB are under way leaves every entry whole or absent', async () => {
      const name = `racing-${backend}`;
      const { page, keys } = await startPuts(backend, name, 48, 1024 * 1024, 'racing');
      await page.waitForFunction(() => (globalThis as unknown as { stored: number }).stored >= 1);
      await page.close();

      const next = await nextVisit(backend, name, keys);
      await next.page.close();
      expect(next.states.filter((state) => state !== 'whole' && state !== 'absent')).toEqual([]);
      expect(next.states).toContain('whole'); // the one that had finished, at least
      expect(next.stored.filter((item) => !isTemporary(item) && !item.whole)).toEqual([]);
    });
  });

  test('opfs: the next visit removes the temporaries a closed page left, once no page is writing them', async () => {
    const name = 'left-temporaries';
    const { page, keys } = await startPuts('opfs', name, 4, 256 * 1024, 'held');
    await page.waitForFunction(() => (globalThis as unknown as { held: number }).held >= 4);
    await page.close();

    const next = await nextVisit('opfs', name, keys);
    expect(next.stored.filter(isTemporary)).toHaveLength(4);
    // The cache nextVisit made swept the folder, or is sweeping it; one made now, when the closed
    // page's locks are gone, sweeps again. The sweep runs beside the cache's calls: wait for it.
    await next.page.waitForFunction(async () => (await navigator.locks.query()).held!.length === 0);
    await next.page.evaluate(async (name) => {
      const core = await harnessImport('/dist/core/internal.js');
      await core.createBrowserCache('opfs', { name }).has('0'.repeat(64));
    }, name);
    // Until the folder is empty: a temporary left over fails the test by this wait's timeout.
    await next.page.waitForFunction(
      async (name) => {
        const folder = await (await navigator.storage.getDirectory()).getDirectoryHandle(name);
        for await (const _ of folder.keys()) return false;
        return true;
      },
      {},
      name,
    );
    await next.page.close();
  });
  test('opfs: a temporary another page is still writing is kept by the sweep, and becomes the entry once renamed', async () => {
    const name = 'live-temporary';
    // The writer: its bytes written and its writable closed, the rename held until released.
    const writer = await browser.openHarness(server);
    const key = await writer.evaluate(async (name) => {
      const core = await harnessImport('/dist/core/internal.js');
      const state = globalThis as unknown as { renaming: number; releaseRenames: () => void; put: Promise<string> };
      const released = new Promise<void>((resolve) => (state.releaseRenames = resolve));
      state.renaming = 0;
      const move = (FileSystemFileHandle.prototype as any).move;
      (FileSystemFileHandle.prototype as any).move = async function (this: FileSystemFileHandle, ...args: unknown[]) {
        state.renaming++;
        await released;
        return move.apply(this, args);
      };
      const bytes = new TextEncoder().encode('still being written');
      const key: string = await core.sha256Hex(bytes);
      state.put = core
        .createBrowserCache('opfs', { name })
        .put(key, bytes)
        .then(
          () => 'stored',
          (error: Error) => error.name,
        );
      return key;
    }, name);
    await writer.waitForFunction(() => (globalThis as unknown as { renaming: number }).renaming >= 1);

    // Another page's cache sweeps the folder: it asks for the temporary's lock, finds it held, keeps it.
    const other = await browser.openHarness(server);
    const during = await other.evaluate(
      async (name, key) => {
        const core = await harnessImport('/dist/core/internal.js');
        let answered!: () => void;
        const swept = new Promise<void>((resolve) => (answered = resolve));
        const request = LockManager.prototype.request as (...args: unknown[]) => Promise<unknown>;
        LockManager.prototype.request = function (this: LockManager, ...args: unknown[]) {
          const asked = request.apply(this, args);
          if ((args[1] as LockOptions | undefined)?.ifAvailable) void asked.finally(answered);
          return asked;
        } as typeof LockManager.prototype.request;
        const has: boolean = await core.createBrowserCache('opfs', { name }).has(key);
        await swept;
        const folder = await (await navigator.storage.getDirectory()).getDirectoryHandle(name);
        const names: string[] = [];
        for await (const itemName of folder.keys()) names.push(itemName);
        return { has, names };
      },
      name,
      key,
    );
    expect(during.has).toBe(false);
    expect(during.names).toEqual([expect.stringMatching(new RegExp(`^${key}\\.[0-9a-f-]{36}\\.partial$`))]);

    const put = await writer.evaluate(() => {
      const state = globalThis as unknown as { releaseRenames: () => void; put: Promise<string> };
      state.releaseRenames();
      return state.put;
    });
    expect(put).toBe('stored');
    const after = await other.evaluate(
      async (name, key) => {
        const core = await harnessImport('/dist/core/internal.js');
        return new TextDecoder().decode(await core.createBrowserCache('opfs', { name }).get(key));
      },
      name,
      key,
    );
    expect(after).toBe('still being written');
    await writer.close();
    await other.close();
  });

  test('cache-storage: a streamed body cut short by a page close is kept by Firefox ESR as a whole entry, by Chromium not at all (so CacheStorageCache.put hands over bytes, never a stream)', async () => {
    const name = 'streamed-bodies';
    const page = await browser.openHarness(server);
    await page.evaluate(async (name) => {
      const state = globalThis as unknown as { held: number };
      state.held = 0;
      const cache = await caches.open(name);
      for (let i = 0; i < 4; i++) {
        let pulls = 0;
        const body = new ReadableStream<Uint8Array>(
          {
            pull(controller) {
              if (pulls++ === 0) return controller.enqueue(new Uint8Array(64 * 1024).fill(i));
              state.held++;
              return new Promise<never>(() => undefined); // the rest never comes
            },
          },
          { highWaterMark: 0 },
        );
        void cache
          .put(`/streamed/${i}`, new Response(body, { headers: { 'Content-Type': 'application/octet-stream' } }))
          .catch(() => undefined);
      }
    }, name);
    await page.waitForFunction(() => (globalThis as unknown as { held: number }).held >= 4);
    await page.close();

    const next = await browser.openHarness(server);
    const kept = await next.evaluate(async (name) => {
      const cache = await caches.open(name);
      return Promise.all((await cache.keys()).map(async (request) => (await (await cache.match(request))!.arrayBuffer()).byteLength));
    }, name);
    await next.close();
    expect(kept).toEqual(kind === 'firefox' ? [65536, 65536, 65536, 65536] : []);
  });
});
