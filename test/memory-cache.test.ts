import { MemoryCache } from '../core/cache/memory';
import { InvalidOptionError } from '../core/errors';

const key = (n: number) => n.toString(16).padStart(64, '0');
const bytesOf = (length: number, fill = length & 0xff) => new Uint8Array(length).fill(fill);

test('returns exactly the bytes put, as a copy of its own', async () => {
  const cache = new MemoryCache({ maxBytes: 1024 });
  const larger = Uint8Array.from({ length: 100 }, (_, i) => i);
  const view = larger.subarray(10, 20);
  await cache.put(key(1), view);
  larger.fill(0xee); // the caller reuses its buffer

  const got = await cache.get(key(1));
  expect(Array.from(got!)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  expect(got!.buffer.byteLength).toBe(10);
  got!.fill(0); // the caller scribbles on what it got
  expect(Array.from((await cache.get(key(1)))!)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  expect(cache.byteLength).toBe(10);
});

test('keeps a 0-byte entry, and misses what it never saw', async () => {
  const cache = new MemoryCache({ maxBytes: 16 });
  await cache.put(key(0), new Uint8Array(0));
  expect(await cache.get(key(0))).toEqual(new Uint8Array(0));
  expect(await cache.has(key(0))).toBe(true);
  expect(await cache.get(key(9))).toBeUndefined();
  expect(await cache.has(key(9))).toBe(false);
});

test('evicts the least recently used first; a get counts as a use', async () => {
  const cache = new MemoryCache({ maxBytes: 300 });
  await cache.put(key(1), bytesOf(100));
  await cache.put(key(2), bytesOf(100));
  await cache.put(key(3), bytesOf(100));
  await cache.get(key(1)); // 2 is now the least recently used
  expect(cache.keys()).toEqual([key(2), key(3), key(1)]);

  await cache.put(key(4), bytesOf(100));
  expect(cache.keys()).toEqual([key(3), key(1), key(4)]);
  expect(await cache.has(key(2))).toBe(false);

  await cache.put(key(5), bytesOf(150)); // needs two entries' room: 3 and 1 leave
  expect(cache.keys()).toEqual([key(4), key(5)]);
  expect(cache.byteLength).toBe(250);
});

test('putting a key again replaces it and makes it the most recent', async () => {
  const cache = new MemoryCache({ maxBytes: 200 });
  await cache.put(key(1), bytesOf(100, 1));
  await cache.put(key(2), bytesOf(100, 2));
  await cache.put(key(1), bytesOf(100, 1));
  await cache.put(key(3), bytesOf(100, 3));
  expect(cache.keys()).toEqual([key(1), key(3)]);
  expect(cache.byteLength).toBe(200);
});

test('an entry larger than maxBytes is not stored and evicts nothing', async () => {
  const cache = new MemoryCache({ maxBytes: 100 });
  await cache.put(key(1), bytesOf(60));
  await cache.put(key(2), bytesOf(101));
  expect(await cache.has(key(2))).toBe(false);
  expect(cache.keys()).toEqual([key(1)]);
});

test('delete and clear', async () => {
  const cache = new MemoryCache();
  await cache.put(key(1), bytesOf(10));
  await cache.put(key(2), bytesOf(20));
  await cache.delete(key(1));
  await cache.delete(key(7)); // absent: nothing to do
  expect(cache.keys()).toEqual([key(2)]);
  expect(cache.byteLength).toBe(20);
  await cache.clear();
  expect(cache.size).toBe(0);
  expect(cache.byteLength).toBe(0);
});

test('refuses a maxBytes that is not a number ≥ 0', () => {
  expect(() => new MemoryCache({ maxBytes: -1 })).toThrow(InvalidOptionError);
  expect(() => new MemoryCache({ maxBytes: Number.NaN })).toThrow(InvalidOptionError);
});
