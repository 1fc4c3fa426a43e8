/**
 * The service worker's own synchronous SHA-256 and HMAC-SHA256 (adapters/service-worker/hash-sync.ts,
 * which its build uses in place of @noble/hashes): the same digests as `node:crypto` and noble for
 * every padding case (lengths around 55, 56, 64 and 119 bytes), long inputs, keys longer than a
 * block (hashed first, RFC 2104) and text that is not ASCII. Opaque ids (SPEC §4) depend on it.
 */
import { createHash, createHmac } from 'node:crypto';
import { hmacSha256Hex as swHmac, sha256HexSync as swSha256 } from '../adapters/service-worker/hash-sync.js';
import { hmacSha256Hex, sha256HexSync } from '../core/hash-noble.js';
import { seededBytes } from './helpers/trees.js';

const LENGTHS = [...Array.from({ length: 130 }, (_, i) => i), 191, 192, 255, 256, 1000, 4096, 65_537, 1_000_003];

test.each(LENGTHS)('SHA-256 of %i bytes: as node:crypto and noble', (length) => {
  const bytes = seededBytes(length, length + 1);
  const expected = createHash('sha256').update(bytes).digest('hex');
  expect(swSha256(bytes)).toBe(expected);
  expect(sha256HexSync(bytes)).toBe(expected);
});

test('SHA-256 of a view into a larger buffer hashes the view only', () => {
  const larger = seededBytes(500, 9);
  const view = larger.subarray(100, 300);
  expect(swSha256(view)).toBe(createHash('sha256').update(view).digest('hex'));
});

const KEYS = ['s', 'salt-of-the-project', 'k'.repeat(64), 'k'.repeat(65), 'ключ-ソルト-🔑', 'x'.repeat(300)];
const MESSAGES = ['', 'assets/a.png', 'levels/ünïcödé/マップ.json', 'p/'.repeat(200)];

test.each(KEYS.flatMap((key) => MESSAGES.map((message) => [key, message] as const)))(
  'HMAC-SHA256 under %j of %j: as node:crypto and noble',
  (key, message) => {
    const expected = createHmac('sha256', Buffer.from(key, 'utf8')).update(Buffer.from(message, 'utf8')).digest('hex');
    expect(swHmac(key, message)).toBe(expected);
    expect(hmacSha256Hex(key, message)).toBe(expected);
  },
);
