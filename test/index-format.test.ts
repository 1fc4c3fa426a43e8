/** Project indexes (SPEC §2–3), paths (§1) and opaque ids (§4). */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import {
  compareKeys,
  decodeIndexText,
  IndexValidationError,
  isSafePath,
  looseFileUrl,
  opaqueId,
  parseProjectIndex,
  parseProjectIndexJson,
  serializeIndex,
  UnsupportedIndexVersionError,
  type BundledIndex,
  type LooseIndex,
} from '../core/internal.js';
import { invalidUtf8At } from '../core/format/index-text.js';

const hex = (c: string) => c.repeat(64);

function loose(files: LooseIndex['files']): LooseIndex {
  return { formatVersion: 2, rootPath: '/project', files };
}

function problemsOf(value: unknown): string[] {
  try {
    parseProjectIndex(value);
  } catch (error) {
    if (error instanceof IndexValidationError) return error.problems;
    throw error;
  }
  return [];
}

describe('paths (SPEC §1)', () => {
  test.each(['a', 'a/b.png', 'späce name.txt', 'Ａ/😀', '.hidden/x', 'a..b'])('%s is safe', (path) => {
    expect(isSafePath(path)).toBe(true);
  });
  test.each(['', '/a', 'a\\b', 'C:/x', 'c:x', 'a//b', 'a/', './a', 'a/./b', '../a', 'a/..', '\ud800x'])('%j is unsafe', (path) => {
    expect(isSafePath(path)).toBe(false);
  });
  test('a path longer than 65,535 UTF-8 bytes is unsafe', () => {
    expect(isSafePath('é'.repeat(32768))).toBe(false);
    expect(isSafePath('a'.repeat(65535))).toBe(true);
  });
  test('compareKeys orders by UTF-8 bytes', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        const bytes = Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
        expect(Math.sign(compareKeys(a, b))).toBe(bytes);
      }),
    );
  });
  test('loose URLs encode each segment', () => {
    expect(looseFileUrl('assets/späce name.txt')).toBe('files/assets/sp%C3%A4ce%20name.txt');
    expect(looseFileUrl('a/#?.txt', 'cdn/files/')).toBe('cdn/files/a/%23%3F.txt');
  });
});

describe('opaque ids (SPEC §4)', () => {
  test('match HMAC-SHA256 from node:crypto, for non-ASCII salts and paths', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (salt, path) => {
        expect(opaqueId(salt, path)).toBe(createHmac('sha256', Buffer.from(salt, 'utf8')).update(Buffer.from(path, 'utf8')).digest('hex'));
      }),
    );
  });
  test('known vector', () => {
    expect(opaqueId('sält', 'assets/harbor/tex/t0.png')).toBe('0ce7f2e5174b2eccf4726425ebff720a0088dc961880b1482e14804e82ac02e1');
  });
  test('an empty salt is refused', () => {
    expect(() => opaqueId('', 'a')).toThrow(/non-empty salt/);
  });
});

describe('parseProjectIndex', () => {
  test('accepts a good loose index', () => {
    const index = loose([{ path: 'a.txt', sizeBytes: 1, sha256: hex('a'), url: 'files/a.txt' }]);
    expect(parseProjectIndex(index)).toBe(index);
  });

  test('names every broken rule of a loose index, with its place', () => {
    const problems = problemsOf({
      formatVersion: 2,
      rootPath: '  ',
      files: [
        { path: '../a', sizeBytes: -1, sha256: hex('A'), url: '' },
        { path: 'b', sizeBytes: 2 ** 53, sha256: 'abc', url: 'files/b' },
        { path: 'b', sizeBytes: 1.5, sha256: hex('b') },
      ],
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^rootPath /),
        expect.stringMatching(/^files\[0\]\.path "\.\.\/a" is not a safe path/),
        expect.stringMatching(/^files\[0\]\.sizeBytes /),
        expect.stringMatching(/^files\[0\]\.sha256 /),
        expect.stringMatching(/^files\[0\]\.url /),
        expect.stringMatching(/^files\[1\]\.sizeBytes /),
        expect.stringMatching(/^files\[1\]\.sha256 /),
        expect.stringMatching(/^files\[2\]\.sizeBytes /),
        expect.stringMatching(/^files\[2\]\.url /),
        expect.stringMatching(/^files\[2\]\.path "b" repeats files\[1\]\.path/),
      ]),
    );
    expect(problems).toHaveLength(10);
  });

  test.each([1, 4, '3', null, undefined])('refuses formatVersion %p naming it and the known versions', (version) => {
    expect(() => parseProjectIndex({ formatVersion: version, rootPath: '/p', files: [] })).toThrow(UnsupportedIndexVersionError);
    expect(() => parseProjectIndex({ formatVersion: version, rootPath: '/p', files: [] })).toThrow(
      new RegExp(`formatVersion ${JSON.stringify(version) ?? 'undefined'}.*2 and 3`),
    );
  });

  test('bad JSON is an index error', () => {
    expect(() => parseProjectIndexJson('{')).toThrow(IndexValidationError);
  });

  const bundle = { sha256: hex('b'), sizeBytes: 100, url: `bundles/${hex('b')}.awkb` };

  test('accepts a bundled index with members and a loose entry', () => {
    const index: BundledIndex = {
      formatVersion: 3,
      rootPath: '/p',
      bundles: [bundle],
      files: [
        { path: 'a', sizeBytes: 10, sha256: hex('1'), bundle: hex('b'), offset: 90 },
        { path: 'z', sizeBytes: 5, sha256: hex('2'), url: 'files/z' },
      ],
    };
    expect(parseProjectIndex(index)).toBe(index);
  });

  test('names every broken rule of a bundled index', () => {
    const problems = problemsOf({
      formatVersion: 3,
      rootPath: '/p',
      pathIds: { algorithm: 'md5', salt: '' },
      bundles: [bundle, { sha256: hex('c'), sizeBytes: 10, url: 'x' }],
      files: [
        { path: 'a', sizeBytes: 10, sha256: hex('1'), bundle: hex('b'), offset: 95 },
        { id: hex('2'), sizeBytes: 1, sha256: hex('1'), bundle: hex('d'), offset: 0 },
        { id: hex('3'), sizeBytes: 1, sha256: hex('1'), url: 'u', bundle: hex('b'), offset: 0 },
        { id: hex('4'), sizeBytes: 1, sha256: hex('1') },
      ],
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^pathIds\.algorithm /),
        expect.stringMatching(/^pathIds\.salt /),
        expect.stringMatching(/^files\[0\]\.path must be absent/),
        expect.stringMatching(/^files\[0\]\.id /),
        expect.stringMatching(/^files\[0\]\.offset 95 \+ sizeBytes 10 lies outside/),
        expect.stringMatching(/^files\[1\]\.bundle .* names no listed bundle/),
        expect.stringMatching(/^files\[2\] has both url and bundle/),
        expect.stringMatching(/^files\[3\] needs either url, or both bundle and offset/),
        expect.stringMatching(/^bundles\[1\] .* holds no entry/),
      ]),
    );
  });

  test('ids without pathIds, and paths mixed with ids, are refused', () => {
    const problems = problemsOf({
      formatVersion: 3,
      rootPath: '/p',
      bundles: [],
      files: [{ id: hex('1'), sizeBytes: 1, sha256: hex('1'), url: 'u' }],
    });
    expect(problems).toEqual([expect.stringMatching(/^files\[0\]\.id must be absent/), expect.stringMatching(/^files\[0\]\.path /)]);
  });
});

describe('serializeIndex', () => {
  test('writes keys in SPEC order, files sorted by UTF-8 key, two-space indent and a final newline', () => {
    const text = serializeIndex({
      files: [
        { url: 'files/%F0%9F%98%80', sha256: hex('1'), sizeBytes: 1, path: '😀' },
        { url: 'files/%EF%BC%A1', sha256: hex('2'), sizeBytes: 2, path: 'Ａ' },
      ],
      rootPath: '/project',
      formatVersion: 2,
    } as LooseIndex);
    expect(text.endsWith('}\n')).toBe(true);
    const parsed = JSON.parse(text);
    expect(Object.keys(parsed)).toEqual(['formatVersion', 'rootPath', 'files']);
    expect(Object.keys(parsed.files[0])).toEqual(['path', 'sizeBytes', 'sha256', 'url']);
    expect(parsed.files.map((f: { path: string }) => f.path)).toEqual(['Ａ', '😀']);
    expect(text).toContain('\n  "files": [\n    {\n      "path"');
  });
});

/**
 * Hostile indexes: a value nested 10⁵ levels deep, or a million broken
 * entries, is refused with the typed error, and the error's message stays small.
 */
describe('hostile indexes', () => {
  const DEPTH = 100_000;
  function deeplyNested(): unknown {
    let value: unknown = [];
    for (let i = 0; i < DEPTH; i++) value = [value];
    return value;
  }
  const bundle = { sha256: hex('b'), sizeBytes: 100, url: `bundles/${hex('b')}.awkb` };
  const member = { path: 'a', sizeBytes: 10, sha256: hex('1'), bundle: hex('b'), offset: 90 };

  function refusal(value: unknown): Error {
    try {
      parseProjectIndex(value);
    } catch (error) {
      return error as Error;
    }
    throw new Error('the index was accepted');
  }

  test.each([
    [
      'files[0].path',
      () => ({ formatVersion: 2, rootPath: '/p', files: [{ path: deeplyNested(), sizeBytes: 1, sha256: hex('1'), url: 'u' }] }),
    ],
    [
      'files[1].path',
      () => ({
        formatVersion: 2,
        rootPath: '/p',
        files: [
          { path: 'x', sizeBytes: 1, sha256: hex('1'), url: 'u' },
          { path: deeplyNested(), sizeBytes: 1, sha256: hex('1'), url: 'u' },
        ],
      }),
    ],
    [
      'pathIds.algorithm',
      () => ({
        formatVersion: 3,
        rootPath: '/p',
        pathIds: { algorithm: deeplyNested(), salt: 's' },
        bundles: [bundle],
        files: [{ ...member, path: undefined, id: hex('2') }],
      }),
    ],
    ['files[0].bundle', () => ({ formatVersion: 3, rootPath: '/p', bundles: [bundle], files: [{ ...member, bundle: deeplyNested() }] })],
  ])('a value nested 10⁵ deep in %s is an IndexValidationError naming the field', (where, build) => {
    const error = refusal(build());
    expect(error).toBeInstanceOf(IndexValidationError);
    expect(error.message).toContain(where);
    expect(error.message).toContain('an array');
    expect(error.message.length).toBeLessThan(2000);
  });

  test('a formatVersion nested 10⁵ deep is an UnsupportedIndexVersionError', () => {
    const error = refusal({ formatVersion: deeplyNested(), rootPath: '/p', files: [] });
    expect(error).toBeInstanceOf(UnsupportedIndexVersionError);
    expect(error.message).toMatch(/formatVersion an array of 1 item.*2 and 3/);
  });

  test('index JSON text nested 10⁵ deep is an index error, never a RangeError', () => {
    const deep = `${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`;
    for (const text of [
      deep,
      `{"formatVersion":2,"rootPath":"/p","files":[{"path":${deep}}]}`,
      `{"formatVersion":${deep}}`,
      '['.repeat(DEPTH),
    ]) {
      expect(() => parseProjectIndexJson(text)).toThrow(
        expect.objectContaining({ code: expect.stringMatching(/^E_INDEX_(INVALID|VERSION)$/) }),
      );
    }
  });

  test('a long string value is previewed, not copied whole into the message', () => {
    const path = `${'x'.repeat(5_000_000)}\\`;
    const error = refusal({ formatVersion: 2, rootPath: '/p', files: [{ path, sizeBytes: 1, sha256: hex('1'), url: 'u' }] });
    expect(error).toBeInstanceOf(IndexValidationError);
    expect(error.message).toMatch(/files\[0\]\.path "x+"… \(5000001 characters\) is not a safe path: contains a backslash/);
    expect(error.message.length).toBeLessThan(2000);
  });

  test('a rule first broken after thousands of problems is still named in `problems`', () => {
    const files = Array.from({ length: 3000 }, (_, i) => ({ path: `f${i}`, sizeBytes: -1, sha256: hex('1'), url: 'u' }));
    files.push({ path: 'last', sizeBytes: 1, sha256: 'not hex', url: 'u' });
    const error = refusal({ formatVersion: 2, rootPath: '/p', files }) as IndexValidationError;
    expect(error.problemCount).toBe(3001);
    expect(error.problems).toHaveLength(1001);
    expect(error.problems[1000]).toBe('files[3000].sha256 must be 64 lowercase hex digits');
  });

  test('a long bundle sha256 that is not hex is previewed where the bundle is said to hold no entry (found by fuzzing)', () => {
    const sha256 = 'x'.repeat(16_000);
    const error = refusal({ formatVersion: 3, rootPath: '/p', bundles: [{ ...bundle, sha256 }], files: [member] });
    expect(error).toBeInstanceOf(IndexValidationError);
    expect(error.message).toMatch(/bundles\[0\] "x+"… \(16000 characters\) holds no entry/);
    expect(error.message.length).toBeLessThan(2000);
  });

  test('a sha256 in a message is shown whole', () => {
    const error = refusal({ formatVersion: 3, rootPath: '/p', bundles: [bundle], files: [{ ...member, bundle: hex('c') }] });
    expect(error.message).toContain(`files[0].bundle "${hex('c')}" names no listed bundle`);
  });

  test('250,000 broken entries give a message of the first 20 problems and a count of the rest', () => {
    // (A million behave the same, slower: the message stays ~1.6 KB; it was 402 MB before.)
    const files = Array.from({ length: 250_000 }, () => ({ path: 'a', sizeBytes: -1, sha256: hex('1'), url: 'u' }));
    const error = refusal({ formatVersion: 2, rootPath: '/p', files }) as IndexValidationError;
    expect(error).toBeInstanceOf(IndexValidationError);
    // Each entry has a bad size, and every entry after the first repeats its path.
    expect(error.problemCount).toBe(499_999);
    expect(error.message.split('\n').filter((line) => line.startsWith('  files['))).toHaveLength(20);
    expect(error.message).toContain('… and 499979 more problems');
    expect(error.message.length).toBeLessThan(4000);
    // The first 1000, then the first repeated path (paths are compared after every entry is checked).
    expect(error.problems.length).toBe(1001);
    expect(error.problems[1000]).toBe('files[1].path "a" repeats files[0].path');
    expect(error.problems[0]).toBe('files[0].sizeBytes must be a non-negative integer no larger than 2^53 − 1');
  });
});

describe('index text is strict UTF-8 (SPEC preamble; issue 20)', () => {
  const bytesOf = (...parts: (string | number[])[]) =>
    Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))));
  const refusal = (bytes: Uint8Array) => {
    try {
      decodeIndexText(bytes, { url: 'https://cdn.example/project.index.json' });
    } catch (error) {
      return error as IndexValidationError;
    }
    throw new Error('accepted');
  };

  test('valid UTF-8 decodes as TextDecoder does: a leading BOM dropped, a real U+FFFD kept', () => {
    expect(decodeIndexText(bytesOf([0xef, 0xbb, 0xbf], '{"a":"x\uFFFDy😀"}'))).toBe('{"a":"x\uFFFDy😀"}');
  });

  test('bytes FF FE in files[1].path: E_INDEX_INVALID naming the entry, its bytes, and the first offset', () => {
    const error = refusal(bytesOf('{"formatVersion":2,"rootPath":"/p","files":[{"path":"ok"},{"path":"a/', [0xff, 0xfe], '.png"}]}'));
    expect(error).toBeInstanceOf(IndexValidationError);
    expect(error).toMatchObject({ code: 'E_INDEX_INVALID', url: 'https://cdn.example/project.index.json' });
    expect(error.problems).toEqual(['files[1].path "a/\\xFF\\xFE.png" is not UTF-8 (bytes FF FE); the first at byte 69 (FF) of the index']);
  });

  test('every field that holds such bytes is named: values, keys, bundles, rootPath', () => {
    const error = refusal(
      bytesOf('{"rootPath":"/', [0xc0, 0xaf], '","bundles":[{"url":"b/', [0xed, 0xa0, 0x80], '"}],"files":[{"', [0xe2, 0x82], '":1}]}'),
    );
    expect(error.problems.map((problem) => problem.replace(/;.*$/, ''))).toEqual([
      'rootPath "/\\xC0\\xAF" is not UTF-8 (bytes C0 AF)',
      'bundles[0].url "b/\\xED\\xA0\\x80" is not UTF-8 (bytes ED A0 80)',
      'files[0] has a key "\\xE2\\x82" is not UTF-8 (bytes E2 82)',
    ]);
  });

  test('bytes outside any string: the byte offset', () => {
    expect(refusal(bytesOf('{"formatVersion":2', [0x80], '}')).problems).toEqual(['is not UTF-8: the first at byte 18 (80)']);
    // A sequence cut short at the end names its lead byte and what came of it.
    expect(refusal(bytesOf('{}', [0xf0, 0x9f, 0x98])).problems).toEqual(['is not UTF-8: the first at byte 2 (F0 9F 98)']);
  });

  test('invalidUtf8At agrees with TextDecoder({ fatal: true }) on random bytes', () => {
    const strict = new TextDecoder('utf-8', { fatal: true });
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 64 }),
        fc.array(fc.constantFrom(0x80, 0xbf, 0xc2, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff), { maxLength: 8 }),
        (random, leads) => {
          const bytes = Uint8Array.from([...random, ...leads, ...random.slice(0, 3)]);
          let valid = true;
          try {
            strict.decode(bytes);
          } catch {
            valid = false;
          }
          expect(invalidUtf8At(bytes) === undefined).toBe(valid);
        },
      ),
      { seed: 20261130, numRuns: 2000 },
    );
  });
});
