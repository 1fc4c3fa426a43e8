/**
 * `VerifiedCache` (core/read/state/verified-cache.ts) on its own: the content cache as the reader
 * sees it (SPEC §7 "Cache"). A cache is any object with `get` and `put`, so the reader must not
 * trust what it gives back: every entry is re-checked against its entry's size and SHA-256 when
 * read, and one that fails is dropped (deleted from the cache) and reported as absent. Reads made
 * in one microtask go to the cache as one batch. A cache that fails (throws, rejects) never fails
 * a read or a load: it answers "nothing" and the failure goes to `onCacheError` (SPEC §7 "Errors":
 * the reader goes on without it). The end-to-end tests see this only through a source; here the
 * real `MemoryCache` and small caches of our own (damaged bytes, failures, a `has` that lies) are
 * driven directly, hashed by the real `InThreadDigests` pool.
 */
import { createHash } from 'node:crypto';
import { MemoryCache, type ContentCache } from '../core/cache/index.js';
import type { Entry } from '../core/read/open/index-view.js';
import { VerifiedCache, type CacheErrorDetail } from '../core/read/state/verified-cache.js';
import { InThreadDigests } from '../core/read/workers/digest-jobs.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** `size` bytes that depend on `seed`. */
function bytesOf(size: number, seed: number): Uint8Array {
  return Uint8Array.from({ length: size }, (_, i) => (i * 31 + seed * 7) & 0xff);
}

/** Three contents and their index entries (members of one bundle). */
const CONTENTS = [bytesOf(100, 1), bytesOf(2000, 2), bytesOf(7, 3)];
const ENTRIES: Entry[] = CONTENTS.map((bytes, i) => ({
  path: `assets/file-${i}.bin`,
  sizeBytes: bytes.length,
  sha256: sha256(bytes),
  bundle: 'b'.repeat(64),
  offset: 100 + i * 3000,
}));
const [A, B, C] = ENTRIES as [Entry, Entry, Entry];
const [BYTES_A, BYTES_B, BYTES_C] = CONTENTS as [Uint8Array, Uint8Array, Uint8Array];
const entryOf = (sha: string): Entry => ENTRIES.find((entry) => entry.sha256 === sha)!;

const hex = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : Buffer.from(bytes).toString('hex'));
/** A cache's contents as hex, by key, to compare whole. */
const asHex = (found: Map<string, Uint8Array>) => Object.fromEntries([...found].map(([sha, bytes]) => [sha, hex(bytes)]));

/** The errors a VerifiedCache reported, with what it said of each. */
function errorLog() {
  const errors: { error: unknown; detail: CacheErrorDetail }[] = [];
  return { errors, onCacheError: (error: unknown, detail: CacheErrorDetail) => void errors.push({ error, detail }) };
}

function verified(cache: ContentCache | undefined, onCacheError?: (error: unknown, detail: CacheErrorDetail) => void) {
  return new VerifiedCache(cache, new InThreadDigests(), onCacheError, entryOf);
}

/** `MemoryCache`, counting the batch calls it gets. */
class CountingCache extends MemoryCache {
  readonly getManyCalls: string[][] = [];
  readonly hasManyCalls: string[][] = [];
  readonly deleted: string[] = [];
  override async getMany(sha256s: readonly string[]) {
    this.getManyCalls.push([...sha256s]);
    return super.getMany(sha256s);
  }
  override async hasMany(sha256s: readonly string[]) {
    this.hasManyCalls.push([...sha256s]);
    return super.hasMany(sha256s);
  }
  override async delete(sha256: string) {
    this.deleted.push(sha256);
    return super.delete(sha256);
  }
}

/**
 * A cache of our own, as a user might plug in: a plain map that hands out (and keeps) the very
 * arrays it holds (no `copiesBytes`), with single calls only, and failures on demand.
 */
class PlainCache implements ContentCache {
  readonly entries = new Map<string, Uint8Array>();
  /** Keys `has` says are present although `get` finds nothing (an entry evicted in between). */
  readonly phantom = new Set<string>();
  readonly calls: string[] = [];
  fail: Partial<Record<'get' | 'put' | 'has' | 'delete', 'throw' | 'reject'>> = {};

  #maybeFail(operation: 'get' | 'put' | 'has' | 'delete'): Promise<never> | undefined {
    this.calls.push(operation);
    const how = this.fail[operation];
    if (how === 'throw') throw new Error(`${operation} threw`);
    if (how === 'reject') return Promise.reject(new Error(`${operation} rejected`));
    return undefined;
  }

  get(sha256: string): Promise<Uint8Array | undefined> {
    return this.#maybeFail('get') ?? Promise.resolve(this.entries.get(sha256));
  }
  put(sha256: string, bytes: Uint8Array): Promise<void> {
    return this.#maybeFail('put') ?? Promise.resolve(void this.entries.set(sha256, bytes));
  }
  has(sha256: string): Promise<boolean> {
    return this.#maybeFail('has') ?? Promise.resolve(this.entries.has(sha256) || this.phantom.has(sha256));
  }
  delete(sha256: string): Promise<void> {
    return this.#maybeFail('delete') ?? Promise.resolve(void this.entries.delete(sha256));
  }
}

/** `bytes` with one byte changed (same size). */
function flipped(bytes: Uint8Array, at = 0): Uint8Array {
  const copy = bytes.slice();
  copy[at] = copy[at]! ^ 0x01;
  return copy;
}

describe('with no cache', () => {
  test('every question answers "nothing", and writes do nothing', async () => {
    const cache = verified(undefined);
    expect(cache.enabled).toBe(false);
    expect(cache.counts).toBe(false);
    expect(cache.needsCopies).toBe(false);
    expect(cache.workerStore()).toBeUndefined();
    expect(await cache.contains([A.sha256])).toBeUndefined();
    expect((await cache.getVerified([A, B])).size).toBe(0);
    expect(await cache.read(A)).toBeUndefined();
    await expect(cache.store([[A.sha256, BYTES_A]])).resolves.toBeUndefined();
    await expect(cache.whenStored()).resolves.toBeUndefined();
  });
});

describe('with a MemoryCache', () => {
  test('stores contents in one batch and gives them back verified, as copies of its own', async () => {
    const memory = new MemoryCache();
    const cache = verified(memory);
    expect(cache.enabled).toBe(true);
    expect(cache.counts).toBe(true);
    // MemoryCache copies what it is given: the reader need not.
    expect(cache.needsCopies).toBe(false);
    await cache.store([
      [A.sha256, BYTES_A],
      [C.sha256, BYTES_C],
    ]);
    expect(memory.keys().sort()).toEqual([A.sha256, C.sha256].sort());

    const found = await cache.getVerified([A, B, C]);
    expect(asHex(found)).toEqual({ [A.sha256]: hex(BYTES_A), [C.sha256]: hex(BYTES_C) });
    // What a caller got is its own: scribbling on it changes neither the cache nor the next read.
    found.get(A.sha256)!.fill(0);
    expect(hex(await cache.read(A))).toBe(hex(BYTES_A));
  });

  test('contains says which contents the cache holds, in one call, without reading them', async () => {
    const memory = new CountingCache();
    await memory.put(B.sha256, BYTES_B);
    const cache = verified(memory);
    const held = await cache.contains([A.sha256, B.sha256, C.sha256]);
    expect(held).toEqual(new Set([B.sha256]));
    expect(memory.hasManyCalls).toEqual([[A.sha256, B.sha256, C.sha256]]);
    expect(memory.getManyCalls).toEqual([]);
  });

  test('reads asked in one microtask go to the cache as one getMany; a read asked later is another batch', async () => {
    const memory = new CountingCache();
    await memory.putMany([
      [A.sha256, BYTES_A],
      [B.sha256, BYTES_B],
    ]);
    const cache = verified(memory);
    const together = [cache.read(A), cache.read(B), cache.read(C)];
    // The batch goes out in a microtask queued by the first read, before this one resumes.
    await Promise.resolve();
    const later = cache.read(B);
    const [a, b, c, b2] = await Promise.all([...together, later]);
    expect(memory.getManyCalls).toEqual([[A.sha256, B.sha256, C.sha256], [B.sha256]]);
    expect(hex(a)).toBe(hex(BYTES_A));
    expect(hex(b)).toBe(hex(BYTES_B));
    expect(c).toBeUndefined();
    expect(hex(b2)).toBe(hex(BYTES_B));
  });

  test('reads of one content in one batch ask for it once, and each reader owns its bytes', async () => {
    const memory = new CountingCache();
    await memory.put(A.sha256, BYTES_A);
    const cache = verified(memory);
    const [first, second, third] = await Promise.all([cache.read(A), cache.read(A), cache.read(A)]);
    expect(memory.getManyCalls).toEqual([[A.sha256]]);
    for (const bytes of [first, second, third]) expect(hex(bytes)).toBe(hex(BYTES_A));
    // Three buffers: a reader that scribbles on (or transfers) its bytes leaves the others alone.
    expect(new Set([first!.buffer, second!.buffer, third!.buffer]).size).toBe(3);
    first!.fill(0);
    expect(hex(second)).toBe(hex(BYTES_A));
    expect(hex(third)).toBe(hex(BYTES_A));
  });

  test('an entry whose bytes fail their SHA-256 is not handed out, and is deleted from the cache', async () => {
    const memory = new CountingCache();
    // The cache holds damaged bytes under A's name (same size), and good ones for B.
    await memory.put(A.sha256, flipped(BYTES_A, 50));
    await memory.put(B.sha256, BYTES_B);
    const cache = verified(memory);
    const found = await cache.getVerified([A, B]);
    expect(asHex(found)).toEqual({ [B.sha256]: hex(BYTES_B) });
    expect(memory.deleted).toEqual([A.sha256]);
    expect(memory.keys()).toEqual([B.sha256]);
    // The next look finds it absent, so the reader fetches it again (SPEC §7 "Cache").
    expect(await cache.contains([A.sha256, B.sha256])).toEqual(new Set([B.sha256]));
  });

  test('an entry of the wrong size is dropped as well, longer or shorter, without being hashed', async () => {
    const memory = new CountingCache();
    await memory.put(A.sha256, BYTES_A.subarray(0, BYTES_A.length - 1));
    await memory.put(C.sha256, new Uint8Array([...BYTES_C, 0]));
    await memory.put(B.sha256, BYTES_B);
    const pool = new InThreadDigests();
    const hashed: number[] = [];
    const digest = pool.digest.bind(pool);
    pool.digest = (job) => (hashed.push(...job.inputs.map((input) => input.length)), digest(job));
    const cache = new VerifiedCache(memory, pool, undefined, entryOf);
    expect(asHex(await cache.getVerified([A, B, C]))).toEqual({ [B.sha256]: hex(BYTES_B) });
    expect(memory.deleted.sort()).toEqual([A.sha256, C.sha256].sort());
    // Its size gave it away: only B's bytes were hashed.
    expect(hashed).toEqual([BYTES_B.length]);
  });

  test('a read of a damaged entry answers nothing (not an error) and drops it', async () => {
    const memory = new CountingCache();
    await memory.put(C.sha256, flipped(BYTES_C, 6));
    const { errors, onCacheError } = errorLog();
    const cache = verified(memory, onCacheError);
    expect(await cache.read(C)).toBeUndefined();
    expect(memory.size).toBe(0);
    // A damaged entry is the cache's normal business, not a failure of the cache.
    expect(errors).toEqual([]);
  });

  test("an entry that holds another entry's bytes is refused: the check is against the asked SHA-256", async () => {
    const memory = new MemoryCache();
    await memory.put(A.sha256, BYTES_C);
    await memory.put(C.sha256, BYTES_C);
    const wrongSize = await verified(memory).getVerified([A, C]);
    expect([...wrongSize.keys()]).toEqual([C.sha256]);
    // Same size, other content: only the hash can tell.
    const twin = bytesOf(BYTES_A.length, 99);
    await memory.put(A.sha256, twin);
    expect((await verified(memory).getVerified([A])).size).toBe(0);
    expect(await memory.has(A.sha256)).toBe(false);
  });

  test('a cache that holds nothing yet (holdsNothing) is not asked at all', async () => {
    const memory = new CountingCache();
    await memory.put(A.sha256, BYTES_A);
    let holdsNothing = true;
    let told = 0;
    Object.defineProperty(memory, 'holdsNothing', { get: () => holdsNothing });
    Object.assign(memory, { expectWrites: () => void ((holdsNothing = false), told++) });
    const cache = verified(memory);
    expect(await cache.contains([A.sha256])).toEqual(new Set());
    expect(await cache.read(A)).toBeUndefined();
    expect((await cache.getVerified([A])).size).toBe(0);
    expect(memory.hasManyCalls).toEqual([]);
    expect(memory.getManyCalls).toEqual([]);
    // A write tells the cache first; from then on it is asked.
    await cache.store([[B.sha256, BYTES_B]]);
    expect(told).toBe(1);
    expect(await cache.contains([A.sha256, B.sha256])).toEqual(new Set([A.sha256, B.sha256]));
    expect(hex(await cache.read(A))).toBe(hex(BYTES_A));
  });
});

describe('with a cache of our own', () => {
  test('single calls only: contains asks has per key, reads ask get per key, writes put per entry', async () => {
    const plain = new PlainCache();
    const cache = verified(plain);
    await cache.store([
      [A.sha256, BYTES_A.slice()],
      [B.sha256, BYTES_B.slice()],
    ]);
    expect(plain.calls).toEqual(['put', 'put']);
    expect(await cache.contains([A.sha256, C.sha256, B.sha256])).toEqual(new Set([A.sha256, B.sha256]));
    expect(asHex(await cache.getVerified([A, B, C]))).toEqual({ [A.sha256]: hex(BYTES_A), [B.sha256]: hex(BYTES_B) });
    expect(plain.calls.filter((call) => call === 'get')).toHaveLength(3);
  });

  test('a cache with get and put only counts nothing; contains then reads to answer', async () => {
    const stored = new Map<string, Uint8Array>([[A.sha256, BYTES_A.slice()]]);
    const minimal: ContentCache = {
      get: async (sha) => stored.get(sha),
      put: async (sha, bytes) => void stored.set(sha, bytes),
    };
    const cache = verified(minimal);
    expect(cache.counts).toBe(false);
    expect(cache.needsCopies).toBe(true);
    expect(await cache.contains([A.sha256, B.sha256])).toEqual(new Set([A.sha256]));
  });

  test('bytes from a cache that does not promise copies are copied before they are handed out', async () => {
    const plain = new PlainCache();
    const held = BYTES_B.slice();
    plain.entries.set(B.sha256, held);
    const cache = verified(plain);
    expect(cache.needsCopies).toBe(true);
    const got = (await cache.getVerified([B])).get(B.sha256)!;
    expect(hex(got)).toBe(hex(BYTES_B));
    expect(got.buffer).not.toBe(held.buffer);
    got.fill(0);
    // The cache's own array is untouched, and the next read still passes.
    expect(hex(held)).toBe(hex(BYTES_B));
    expect(hex(await cache.read(B))).toBe(hex(BYTES_B));
  });

  test('has() says present but get() finds nothing: the read answers nothing, nothing is deleted or reported', async () => {
    const plain = new PlainCache();
    plain.phantom.add(A.sha256);
    const { errors, onCacheError } = errorLog();
    const cache = verified(plain, onCacheError);
    expect(await cache.contains([A.sha256])).toEqual(new Set([A.sha256]));
    expect(await cache.read(A)).toBeUndefined();
    expect((await cache.getVerified([A])).size).toBe(0);
    expect(plain.calls).not.toContain('delete');
    expect(errors).toEqual([]);
  });

  test('a content a read found missing is not counted again, whatever has() says, until this source stores it', async () => {
    const plain = new PlainCache();
    plain.phantom.add(A.sha256);
    plain.phantom.add(B.sha256);
    const cache = verified(plain);
    expect(await cache.read(A)).toBeUndefined();
    // A plan that trusted has() would count A as cached and leave it out of every load.
    expect(await cache.contains([A.sha256, B.sha256])).toEqual(new Set([B.sha256]));
    await cache.store([[A.sha256, BYTES_A.slice()]]);
    expect(await cache.contains([A.sha256, B.sha256])).toEqual(new Set([A.sha256, B.sha256]));
    expect(hex(await cache.read(A))).toBe(hex(BYTES_A));
  });

  test('a read that began before a write of the same content does not count it missing', async () => {
    const plain = new PlainCache();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const get = plain.get.bind(plain);
    // The first get answers only once released (it finds nothing: the content is not stored yet).
    let first = true;
    plain.get = async (sha) => {
      if (!first) return get(sha);
      first = false;
      const answer = await get(sha);
      await held;
      return answer;
    };
    const cache = verified(plain);
    const reading = cache.getVerified([A]);
    await cache.store([[A.sha256, BYTES_A.slice()]]);
    release();
    expect((await reading).size).toBe(0);
    // The write came after the read began: the content is counted, and the next read finds it.
    expect(await cache.contains([A.sha256])).toEqual(new Set([A.sha256]));
    expect(hex(await cache.read(A))).toBe(hex(BYTES_A));
  });

  test("a damaged entry is deleted through the cache's own delete", async () => {
    const plain = new PlainCache();
    plain.entries.set(A.sha256, flipped(BYTES_A, 99));
    plain.entries.set(C.sha256, BYTES_C.slice());
    const cache = verified(plain);
    expect([...(await cache.getVerified([A, C])).keys()]).toEqual([C.sha256]);
    expect([...plain.entries.keys()]).toEqual([C.sha256]);
  });

  test('a damaged entry in a cache without delete is still refused, every time', async () => {
    const stored = new Map([[A.sha256, flipped(BYTES_A)]]);
    const noDelete: ContentCache = { get: async (sha) => stored.get(sha)?.slice(), put: async () => undefined };
    const cache = verified(noDelete);
    expect(await cache.read(A)).toBeUndefined();
    expect(await cache.read(A)).toBeUndefined();
    expect(stored.has(A.sha256)).toBe(true);
  });
});

describe('a failing cache: reported to onCacheError, never a failed read or load', () => {
  test.each(['throw', 'reject'] as const)(
    'get that fails (%s): reads answer nothing, the failure is reported once per batch',
    async (how) => {
      const plain = new PlainCache();
      plain.entries.set(A.sha256, BYTES_A.slice());
      plain.fail.get = how;
      const { errors, onCacheError } = errorLog();
      const cache = verified(plain, onCacheError);
      const [a, b] = await Promise.all([cache.read(A), cache.read(B)]);
      expect(a).toBeUndefined();
      expect(b).toBeUndefined();
      // One report for the batch, naming every key it asked for.
      expect(errors.map(({ detail }) => detail)).toEqual([{ operation: 'get', sha256s: [A.sha256, B.sha256] }]);
      expect((errors[0]!.error as Error).message).toBe(how === 'throw' ? 'get threw' : 'get rejected');
      expect((await cache.getVerified([A])).size).toBe(0);
      expect(errors).toHaveLength(2);
    },
  );

  test.each(['throw', 'reject'] as const)('has that fails (%s): contains answers undefined (not known), reported', async (how) => {
    const plain = new PlainCache();
    plain.fail.has = how;
    const { errors, onCacheError } = errorLog();
    const cache = verified(plain, onCacheError);
    expect(await cache.contains([A.sha256, C.sha256])).toBeUndefined();
    expect(errors.map(({ detail }) => detail)).toEqual([{ operation: 'has', sha256s: [A.sha256, C.sha256] }]);
  });

  test.each(['throw', 'reject'] as const)('put that fails (%s): store resolves, whenStored resolves, reported', async (how) => {
    const plain = new PlainCache();
    plain.fail.put = how;
    const { errors, onCacheError } = errorLog();
    const cache = verified(plain, onCacheError);
    await expect(
      cache.store([
        [A.sha256, BYTES_A.slice()],
        [B.sha256, BYTES_B.slice()],
      ]),
    ).resolves.toBeUndefined();
    await expect(cache.whenStored()).resolves.toBeUndefined();
    expect(errors.map(({ detail }) => detail)).toEqual([{ operation: 'put', sha256s: [A.sha256, B.sha256] }]);
  });

  test('delete that fails while dropping a damaged entry: reported, the good entries still come', async () => {
    const plain = new PlainCache();
    plain.entries.set(A.sha256, flipped(BYTES_A));
    plain.entries.set(B.sha256, BYTES_B.slice());
    plain.fail.delete = 'reject';
    const { errors, onCacheError } = errorLog();
    const cache = verified(plain, onCacheError);
    expect([...(await cache.getVerified([A, B])).keys()]).toEqual([B.sha256]);
    expect(errors.map(({ detail }) => detail)).toEqual([{ operation: 'delete', sha256s: [A.sha256] }]);
    // The damaged entry is still in the cache, but not counted as cached.
    expect(plain.entries.has(A.sha256)).toBe(true);
    expect(await cache.contains([A.sha256, B.sha256])).toEqual(new Set([B.sha256]));
  });

  test("a worker's write that fails (byWorker) is reported as a put, and tracked by whenStored", async () => {
    const plain = new PlainCache();
    const { errors, onCacheError } = errorLog();
    const cache = verified(plain, onCacheError);
    let fail!: (error: Error) => void;
    const byWorker = new Promise<void>((_, reject) => (fail = reject));
    let stored = false;
    const write = cache.store([[A.sha256, BYTES_A]], byWorker);
    void cache.whenStored().then(() => (stored = true));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(stored).toBe(false);
    fail(new Error('quota exceeded'));
    await expect(write).resolves.toBeUndefined();
    await cache.whenStored();
    expect(stored).toBe(true);
    // The worker made the write: the cache was not asked to put anything itself.
    expect(plain.calls).not.toContain('put');
    expect(errors.map(({ detail }) => detail)).toEqual([{ operation: 'put', sha256s: [A.sha256] }]);
  });

  test('an onCacheError that throws does not fail the read either', async () => {
    const plain = new PlainCache();
    plain.fail.get = 'reject';
    const cache = verified(plain, () => {
      throw new Error('listener broke');
    });
    expect(await cache.read(A)).toBeUndefined();
    expect((await cache.getVerified([A, B])).size).toBe(0);
  });

  test('without onCacheError: one console warning per source, however many failures', async () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const plain = new PlainCache();
      plain.fail = { get: 'reject', has: 'reject', put: 'reject' };
      const cache = verified(plain);
      await cache.read(A);
      await cache.contains([A.sha256]);
      await cache.store([[A.sha256, BYTES_A]]);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toContain('the cache failed to get 1 entry');
      // A second source warns once for itself.
      await verified(plain).read(B);
      expect(warn).toHaveBeenCalledTimes(2);
    } finally {
      warn.mockRestore();
    }
  });
});

describe('writes', () => {
  test('whenStored waits for every write started so far, including one started while waiting', async () => {
    const releases: (() => void)[] = [];
    const landed: string[] = [];
    const slow: ContentCache = {
      get: async () => undefined,
      put: (sha) =>
        new Promise<void>((resolve) =>
          releases.push(() => {
            landed.push(sha);
            resolve();
          }),
        ),
    };
    const cache = verified(slow);
    void cache.store([[A.sha256, BYTES_A]]);
    let settled = false;
    const waiting = cache.whenStored().then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(settled).toBe(false);
    // A second write starts while the first is pending; whenStored covers it too.
    void cache.store([[B.sha256, BYTES_B]]);
    releases[0]!();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(landed).toEqual([A.sha256]);
    expect(settled).toBe(false);
    releases[1]!();
    await waiting;
    expect(landed).toEqual([A.sha256, B.sha256]);
  });

  test('an empty write asks nothing of the cache', async () => {
    let told = 0;
    const plain = new PlainCache();
    Object.assign(plain, { expectWrites: () => void told++ });
    await verified(plain).store([]);
    expect(told).toBe(0);
    expect(plain.calls).toEqual([]);
  });
});
