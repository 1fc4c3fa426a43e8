/**
 * AWKB v1 (SPEC §5) as properties: decode(encode(x)) equals x for random members, a layout in
 * any data order can be recovered from its offsets, and random or mutated bytes only ever raise
 * the format error.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import {
  BundleFormatError,
  compareKeys,
  decodeBundle,
  encodeBundle,
  inDataOrder,
  layoutBundle,
  memberBytes,
  type BundleMemberInput,
} from '../core/internal.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Keys that are safe paths, with non-ASCII and astral (above U+FFFF) characters mixed in. */
const segment = fc
  .string({
    unit: fc.oneof(fc.constantFrom('a', 'b', 'Z', '-', ' ', 'é', 'Ａ', '😀', '𝄞', '\u{10ffff}'), fc.constantFrom('x', 'y')),
    minLength: 1,
    maxLength: 6,
  })
  .filter((s) => s !== '.' && s !== '..');
const key = fc.array(segment, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
const contents = fc.array(fc.uint8Array({ maxLength: 64 }), { minLength: 1, maxLength: 4 });

const members = fc
  .tuple(fc.uniqueArray(key, { minLength: 0, maxLength: 12 }), contents, fc.array(fc.nat(), { maxLength: 12 }))
  .map(([keys, pool, picks]) =>
    keys.map((k, i) => {
      const bytes = pool[(picks[i] ?? i) % pool.length]!;
      return { key: k, bytes, sha256: sha256(bytes) } satisfies BundleMemberInput;
    }),
  );

describe('encodeBundle / decodeBundle', () => {
  test('decode(encode(x)) gives back every member, its bytes and its hash', () => {
    fc.assert(
      fc.property(members, (input) => {
        const bytes = encodeBundle(input);
        const decoded = decodeBundle(bytes);
        const sorted = [...input].sort((a, b) => compareKeys(a.key, b.key));
        expect(decoded.records.map((r) => r.key)).toEqual(sorted.map((m) => m.key));
        for (const record of decoded.records) {
          const original = input.find((m) => m.key === record.key)!;
          expect(record.sha256).toBe(original.sha256);
          expect(Buffer.from(memberBytes(bytes, record)).equals(Buffer.from(original.bytes))).toBe(true);
        }
      }),
    );
  });

  test('each distinct content is stored once, and the file ends with the last content byte', () => {
    fc.assert(
      fc.property(members, (input) => {
        const bytes = encodeBundle(input);
        const decoded = decodeBundle(bytes);
        const distinct = new Map(input.map((m) => [m.sha256, m.bytes.length]));
        const dataBytes = [...distinct.values()].reduce((a, b) => a + b, 0);
        expect(bytes.length).toBe(decoded.dataStart + dataBytes);
      }),
    );
  });

  test('the same members in any order give the same bytes', () => {
    fc.assert(
      fc.property(members, fc.nat(), (input, seed) => {
        const shuffled = [...input].sort((a, b) =>
          sha256(new TextEncoder().encode(a.key + seed)) < sha256(new TextEncoder().encode(b.key + seed)) ? -1 : 1,
        );
        expect(Buffer.from(encodeBundle(shuffled)).equals(Buffer.from(encodeBundle(input)))).toBe(true);
      }),
    );
  });

  test('keys of ASCII and other BMP characters (no surrogates) sort and decode by their UTF-8 bytes too', () => {
    const bmpSegment = fc
      .string({ unit: fc.constantFrom('a', 'b', 'Z', '-', ' ', '~', 'é', 'ÿ', 'Ａ', '\ue000', '\uffee', 'x'), minLength: 1, maxLength: 6 })
      .filter((s) => s !== '.' && s !== '..');
    const bmpKey = fc.array(bmpSegment, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
    fc.assert(
      fc.property(fc.uniqueArray(bmpKey, { minLength: 1, maxLength: 16 }), fc.uint8Array({ maxLength: 8 }), (keys, bytes) => {
        const input = keys.map((k, i) => ({ key: k, bytes: bytes.subarray(0, i % (bytes.length + 1)), sha256: '' }));
        for (const member of input) member.sha256 = sha256(member.bytes);
        const encoded = encodeBundle(input);
        const decoded = decodeBundle(encoded);
        const byBytes = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
        expect(decoded.records.map((r) => r.key)).toEqual(byBytes);
        for (const record of decoded.records)
          expect(Buffer.from(memberBytes(encoded, record)).equals(Buffer.from(input.find((m) => m.key === record.key)!.bytes))).toBe(true);
        // The key bytes in the table are the keys' UTF-8, whichever way they were written.
        let at = 16;
        for (const key of byBytes) {
          const utf8 = Buffer.from(key, 'utf8');
          expect(Buffer.from(encoded.buffer, encoded.byteOffset, encoded.length).readUInt16BE(at)).toBe(utf8.length);
          expect(Buffer.from(encoded.subarray(at + 2, at + 2 + utf8.length)).equals(utf8)).toBe(true);
          at += 2 + utf8.length + 48;
        }
      }),
    );
  });

  test('two keys that differ only in their lone surrogates encode alike and are refused as one key', () => {
    const a = new Uint8Array([1]);
    // TextEncoder writes any lone surrogate as U+FFFD: the two keys have the same UTF-8 bytes.
    expect(() =>
      encodeBundle([
        { key: 'k\ud800', bytes: a, sha256: sha256(a) },
        { key: 'k\udc00', bytes: a, sha256: sha256(a) },
      ]),
    ).toThrow(/share the key/);
  });

  test('keys sort by UTF-8 bytes, not UTF-16: U+FF21 comes before U+1F600', () => {
    const a = new TextEncoder().encode('x');
    const bytes = encodeBundle([
      { key: '😀', bytes: a, sha256: sha256(a) },
      { key: 'Ａ', bytes: a, sha256: sha256(a) },
    ]);
    expect(decodeBundle(bytes).records.map((r) => r.key)).toEqual(['Ａ', '😀']);
    expect('😀' < 'Ａ').toBe(true); // JavaScript's UTF-16 order would put them the other way round
  });

  test('refuses two members with the same key', () => {
    const a = new Uint8Array([1]);
    expect(() =>
      encodeBundle([
        { key: 'k', bytes: a, sha256: sha256(a) },
        { key: 'k', bytes: a, sha256: sha256(a) },
      ]),
    ).toThrow(/share the key/);
  });

  test('reads a bundle that is a view into a larger buffer', () => {
    const a = new Uint8Array([1, 2, 3]);
    const bundle = encodeBundle([{ key: 'a', bytes: a, sha256: sha256(a) }]);
    const larger = new Uint8Array(bundle.length + 20);
    larger.set(bundle, 7);
    const view = larger.subarray(7, 7 + bundle.length);
    const decoded = decodeBundle(view);
    expect(Array.from(memberBytes(view, decoded.records[0]!))).toEqual([1, 2, 3]);
  });
});

describe('data order (SPEC §5 "Data order")', () => {
  test("layoutBundle with dataOrder 'given' places contents in the members' order, the table still in key order", () => {
    const spec = (key: string, content: string) => ({ key, sizeBytes: content.length, sha256: sha256(new TextEncoder().encode(content)) });
    const layout = layoutBundle([spec('c', 'ccc'), spec('e', ''), spec('a', 'a'), spec('b', 'ccc'), spec('d', '')], { dataOrder: 'given' });
    expect(layout.records.map((record) => record.key)).toEqual(['a', 'b', 'c', 'd', 'e']);
    const head = layout.head.length;
    // c first, then the empty e (at the end so far: where a starts), then a; b and d share c's and e's.
    expect(layout.records.map((record) => record.offset - head)).toEqual([3, 0, 0, 3, 3]);
    expect(layout.written.map((index) => layout.records[index]!.key)).toEqual(['c', 'e', 'a']);
    expect(layout.sizeBytes).toBe(head + 4);
  });

  test('inDataOrder recovers the data order from the offsets of any canonical layout', () => {
    fc.assert(
      fc.property(members, fc.array(fc.nat()), (list, shuffle) => {
        const given = [...list].sort((a, b) => (shuffle[list.indexOf(a)] ?? 0) - (shuffle[list.indexOf(b)] ?? 0));
        const specs = given.map(({ key, bytes, sha256 }) => ({ key, sizeBytes: bytes.length, sha256 }));
        const layout = layoutBundle(specs, { dataOrder: 'given' });
        const again = layoutBundle(inDataOrder(layout.records), { dataOrder: 'given' });
        expect(again.records).toEqual(layout.records);
        expect(again.sizeBytes).toBe(layout.sizeBytes);
      }),
    );
  });
});

describe('decodeBundle on hostile bytes', () => {
  function decodeOutcome(bytes: Uint8Array): 'ok' | 'format-error' {
    try {
      decodeBundle(bytes);
      return 'ok';
    } catch (error) {
      if (error instanceof BundleFormatError) return 'format-error';
      throw error; // anything else (RangeError, TypeError, out of memory) fails the property
    }
  }

  test('random bytes only ever raise BundleFormatError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        decodeOutcome(bytes);
      }),
      { numRuns: 2000 },
    );
  });

  test('random bytes behind a valid magic and version only ever raise BundleFormatError', () => {
    const head = new Uint8Array([0x41, 0x57, 0x4b, 0x42, 0, 1, 0, 0]);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (rest) => {
        const bytes = new Uint8Array(head.length + rest.length);
        bytes.set(head);
        bytes.set(rest, head.length);
        decodeOutcome(bytes);
      }),
      { numRuns: 2000 },
    );
  });

  test('mutated valid bundles decode or raise BundleFormatError, never anything else', () => {
    fc.assert(
      fc.property(
        members,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }),
        fc.nat(),
        (input, edits, cut) => {
          const bytes = encodeBundle(input);
          for (const [at, value] of edits) if (bytes.length > 0) bytes[at % bytes.length] = value;
          const truncated = cut % 3 === 0 ? bytes.subarray(0, cut % (bytes.length + 1)) : bytes;
          decodeOutcome(truncated);
        },
      ),
      { numRuns: 2000 },
    );
  });

  test('a huge member count or table size is refused without allocating from it', () => {
    const bytes = new Uint8Array(64);
    bytes.set([0x41, 0x57, 0x4b, 0x42, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 40]);
    expect(() => decodeBundle(bytes)).toThrow(/member count 4294967295 cannot fit/);
    bytes.set([0, 0, 0, 1, 0xff, 0xff, 0xff, 0xf0], 8);
    expect(() => decodeBundle(bytes)).toThrow(/table size 4294967280 runs past the end/);
  });

  test('an offset or size near 2^64 is refused, not wrapped', () => {
    const a = new Uint8Array([9]);
    const bytes = encodeBundle([{ key: 'a', bytes: a, sha256: sha256(a) }]);
    const view = new DataView(bytes.buffer);
    view.setBigUint64(16 + 2 + 1 + 8, 0xffffffffffffffffn); // size
    expect(() => decodeBundle(bytes)).toThrow(BundleFormatError);
  });
});

test('fromHex reads hex of either case and refuses anything else', async () => {
  const { fromHex, toHex } = await import('../core/internal.js');
  expect([...fromHex('00ff7A')]).toEqual([0, 255, 122]);
  expect(toHex(fromHex('DEADbeef'))).toBe('deadbeef');
  expect(fromHex('')).toHaveLength(0);
  for (const bad of ['abc', '0g', 'zz', 'é1', ' 1']) expect(() => fromHex(bad)).toThrow(/not a hex string/);
});
