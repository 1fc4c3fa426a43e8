/**
 * Encoded members (SPEC §5a, AWKB version 2), the writer's side: what it stores deflate-raw and
 * when, that the output decodes to the input byte for byte, that it is deterministic, that
 * `--no-compress` (`compress: false`) gives the output of before, and each refusal of the index
 * checks, the AWKB decoder and the Node inflater (core/node/inflate.ts) that `verify` uses.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import {
  BundleFormatError,
  BundleWriter,
  decodeBundle,
  encodeBundle,
  encodingPays,
  IndexValidationError,
  layoutBundle,
  canonicalBundleLayout,
  MemberDecodeError,
  parseProjectIndex,
  parseProjectIndexJson,
  serializeIndex,
  type BundledIndex,
  type FinishedBundle,
  type LooseIndex,
  type MemberCompressor,
} from '../core/internal.js';
import {
  COMPRESS_BY_DEFAULT,
  decodeMemberNode,
  NodeMemberDecoder,
  nodeMemberCompressor,
  publishFolder,
  verifyPublished,
} from '../core/node/index.js';
import { resolveBuildOptions } from '../integrations/build/options.js';
import { FIXTURES, runCli, temporaryDir } from './helpers/cli.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const TEXT_TREE = join(FIXTURES, 'trees', 'text');
const ENCODED = join(FIXTURES, 'encoded', 'text');

function pseudoRandom(size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/** Text that deflate shrinks well: JSON-like lines with some variety. */
function text(size: number, seed: number): Uint8Array {
  const words = ['tile', 'layer', 'width', 'height', 'sprite', 'frame', 'x', 'y', 'rotation', 'visible'];
  let out = '';
  for (let i = 0; out.length < size; i++) out += `{"${words[(i * seed) % words.length]}": ${(i * 7919 + seed) % 1000}},\n`;
  return new TextEncoder().encode(out.slice(0, size));
}

function writeTree(root: string, files: Record<string, Uint8Array>): void {
  for (const [path, bytes] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), bytes);
  }
}

function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (sub: string) => {
    for (const entry of readdirSync(join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else out[rel] = sha256(readFileSync(join(dir, rel)));
    }
  };
  walk('');
  return out;
}

/** Every file of a published folder, read back from its bundle and decoded (SPEC §5a). */
async function readBack(outDir: string): Promise<Map<string, Uint8Array>> {
  const index = parseProjectIndexJson(readFileSync(join(outDir, 'project.index.json'), 'utf8')) as BundledIndex;
  const files = new Map<string, Uint8Array>();
  for (const entry of index.files) {
    const bundle = index.bundles.find((candidate) => candidate.sha256 === entry.bundle)!;
    const bytes = readFileSync(join(outDir, bundle.url));
    const stored = bytes.subarray(entry.offset!, entry.offset! + (entry.storedBytes ?? entry.sizeBytes));
    const decoded = entry.encoding
      ? await decodeMemberNode(stored, { key: entry.path!, sizeBytes: entry.sizeBytes, encoding: entry.encoding })
      : stored;
    files.set(entry.path!, decoded);
  }
  return files;
}

const versionOf = (bytes: Uint8Array) => (bytes[4]! << 8) | bytes[5]!;

const mixed: Record<string, Uint8Array> = {
  'maps/level1.json': text(60_000, 3),
  'maps/level1-copy.json': text(60_000, 3),
  'maps/level2.json': text(9_000, 5),
  'maps/tiny.json': text(900, 7),
  'art/noise.png': pseudoRandom(40_000, 1),
  'art/atlas.json': text(20_000, 11),
  'audio/theme.ogg': pseudoRandom(50_000, 2),
};

describe('the writer stores members deflate-raw where that pays (SPEC §5a)', () => {
  let dir: string;
  beforeAll(() => {
    dir = temporaryDir('awkb-encoded-');
    writeTree(join(dir, 'tree'), mixed);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('a publish decodes to the exact input files, with version 2 only where a member is encoded', async () => {
    const out = join(dir, 'out');
    await publishFolder({ folder: join(dir, 'tree'), outDir: out, compress: true });
    const back = await readBack(out);
    expect([...back.keys()].sort()).toEqual(Object.keys(mixed).sort());
    for (const [path, bytes] of back) expect(Buffer.from(bytes).equals(Buffer.from(mixed[path]!))).toBe(true);

    const index = parseProjectIndexJson(readFileSync(join(out, 'project.index.json'), 'utf8')) as BundledIndex;
    const entry = (path: string) => index.files.find((file) => file.path === path)!;
    expect(entry('maps/level1.json')).toMatchObject({ encoding: 'deflate-raw' });
    expect(entry('maps/level1.json').storedBytes).toBeLessThan(entry('maps/level1.json').sizeBytes / 10);
    // One copy per distinct content covers the stored bytes: the copy points at the same stored range.
    expect(entry('maps/level1-copy.json')).toMatchObject({
      offset: entry('maps/level1.json').offset,
      storedBytes: entry('maps/level1.json').storedBytes,
    });
    // Too small to save 1 KiB, and random bytes: stored as they are.
    expect(entry('maps/tiny.json').encoding).toBeUndefined();
    expect(entry('art/noise.png').encoding).toBeUndefined();
    expect(entry('audio/theme.ogg').encoding).toBeUndefined();
    // Entry key order of SPEC §5a: storedBytes and encoding after offset.
    const written = readFileSync(join(out, 'project.index.json'), 'utf8');
    expect(written).toMatch(/"offset": \d+,\n\s+"storedBytes": \d+,\n\s+"encoding": "deflate-raw"\n/);
    expect(serializeIndex(index)).toBe(written);

    const versions = Object.fromEntries(index.bundles.map((bundle) => [bundle.url, versionOf(readFileSync(join(out, bundle.url)))]));
    const bundleOf = (path: string) => index.bundles.find((bundle) => bundle.sha256 === entry(path).bundle)!.url;
    expect(versions[bundleOf('maps/level1.json')]).toBe(2); // mixed: encoded and not, in one version 2 bundle
    expect(versions[bundleOf('audio/theme.ogg')]).toBe(1); // nothing pays: version 1
    expect((await verifyPublished(out)).problems).toEqual([]);
  });

  test('a bundle in which nothing pays is version 1, byte for byte what compress: false writes', async () => {
    const tree = join(dir, 'random');
    writeTree(tree, { 'a/noise.bin': pseudoRandom(30_000, 9), 'a/small.json': text(1000, 2), 'b/noise.bin': pseudoRandom(5000, 4) });
    await publishFolder({ folder: tree, outDir: join(dir, 'random-on'), compress: true });
    await publishFolder({ folder: tree, outDir: join(dir, 'random-off'), compress: false });
    expect(snapshot(join(dir, 'random-on'))).toEqual(snapshot(join(dir, 'random-off')));
    expect(readFileSync(join(dir, 'random-on', 'project.index.json'), 'utf8')).not.toMatch(/storedBytes|encoding/);
  });

  test('two publishes give the same bytes, however the compressor schedules its work', async () => {
    await publishFolder({ folder: join(dir, 'tree'), outDir: join(dir, 'again-1'), compress: true });
    await publishFolder({ folder: join(dir, 'tree'), outDir: join(dir, 'again-2'), compress: true });
    // Results that come back in a shuffled order, as from a busy thread pool.
    let calls = 0;
    const shuffled: MemberCompressor = {
      deflateRaw: async (bytes) => {
        const result = await nodeMemberCompressor.deflateRaw(bytes);
        await new Promise((resolve) => setTimeout(resolve, (calls++ * 37) % 23));
        return result;
      },
    };
    await publishFolder({
      folder: join(dir, 'tree'),
      outDir: join(dir, 'again-3'),
      compressor: shuffled,
      readConcurrency: 4,
      compress: true,
    });
    const first = snapshot(join(dir, 'again-1'));
    expect(snapshot(join(dir, 'again-2'))).toEqual(first);
    expect(snapshot(join(dir, 'again-3'))).toEqual(first);
    expect(calls).toBeGreaterThan(1);
  });

  test('compress: false writes version 1 bundles and an index without storedBytes, the output of a writer with no compressor', async () => {
    const off = join(dir, 'off');
    await publishFolder({ folder: join(dir, 'tree'), outDir: off, compress: false });
    const index = readFileSync(join(off, 'project.index.json'), 'utf8');
    expect(index).not.toMatch(/storedBytes|encoding/);
    for (const name of readdirSync(join(off, 'bundles'))) expect(versionOf(readFileSync(join(off, 'bundles', name)))).toBe(1);
    await expect(
      publishFolder({ folder: join(dir, 'tree'), outDir: join(dir, 'bad'), compress: 'yes' as unknown as boolean }),
    ).rejects.toThrow(/compress must be true or false/);
  });
});

describe("SPEC §5a's rule at its edges: saves at least 1 KiB and 5%", () => {
  test('encodingPays', () => {
    expect(encodingPays(20_480, 20_480 - 1024)).toBe(true); // 1024 saved, exactly 5%
    expect(encodingPays(20_480, 20_480 - 1023)).toBe(false); // 1023 saved
    expect(encodingPays(100_000, 100_000 - 5000)).toBe(true); // exactly 5%
    expect(encodingPays(100_000, 100_000 - 4999)).toBe(false); // just under 5%, though well over 1 KiB
    expect(encodingPays(1024, 0)).toBe(true);
    expect(encodingPays(1023, 0)).toBe(false);
  });

  /** A compressor that answers with `stored` bytes of a chosen length: the rule is judged on lengths. */
  const answering = (length: number): MemberCompressor => ({ deflateRaw: async () => new Uint8Array(length).fill(7) });

  async function storedWith(size: number, storedLength: number) {
    const bytes = text(size, 1);
    const looseIndex: LooseIndex = {
      formatVersion: 2,
      rootPath: '/p',
      files: [{ path: 'a.json', sizeBytes: size, sha256: sha256(bytes), url: 'a.json' }],
    };
    const handed: FinishedBundle[] = [];
    const index = await new BundleWriter({ compressor: answering(storedLength) }).write(
      looseIndex,
      () => bytes,
      (bundle) => void handed.push(bundle),
    );
    return { entry: index.files[0]!, bundle: handed[0]! as Extract<FinishedBundle, { kind: 'bytes' }> };
  }

  test.each([
    [20_480, 19_456, true],
    [20_480, 19_457, false],
    [100_000, 95_000, true],
    [100_000, 95_001, false],
  ])('a %i-byte member whose deflate is %i bytes: encoded %s', async (size, storedLength, encoded) => {
    const { entry, bundle } = await storedWith(size, storedLength);
    if (encoded) {
      expect(entry).toMatchObject({ storedBytes: storedLength, encoding: 'deflate-raw' });
      expect(versionOf(bundle.bytes)).toBe(2);
      expect(bundle.sizeBytes).toBe(entry.offset! + storedLength);
    } else {
      expect(entry.storedBytes).toBeUndefined();
      expect(versionOf(bundle.bytes)).toBe(1);
    }
  });

  test('the core writer with no compressor stores every member as it is (the Node publish gives it node:zlib)', async () => {
    const bytes = text(50_000, 2);
    const looseIndex: LooseIndex = {
      formatVersion: 2,
      rootPath: '/p',
      files: [{ path: 'a.json', sizeBytes: bytes.length, sha256: sha256(bytes), url: 'a.json' }],
    };
    const index = await new BundleWriter().write(
      looseIndex,
      () => bytes,
      () => undefined,
    );
    expect(index.files[0]!.encoding).toBeUndefined();
  });
});

describe('the command line compresses by default (and with --compress); --no-compress turns it off (SPEC §8)', () => {
  let dir: string;
  beforeAll(() => (dir = temporaryDir('awkb-encoded-cli-')));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('a publish of trees/text encodes; --no-compress writes what the writer without a compressor writes', async () => {
    expect(runCli([TEXT_TREE, '--out', join(dir, 'on'), '--compress']).code).toBe(0);
    expect(readFileSync(join(dir, 'on', 'project.index.json'), 'utf8')).toMatch(/"encoding": "deflate-raw"/);
    expect(runCli([TEXT_TREE, '--out', join(dir, 'off'), '--no-compress']).code).toBe(0);
    const back = await readBack(join(dir, 'on'));
    for (const [path, bytes] of back) expect(sha256(bytes)).toBe(sha256(readFileSync(join(TEXT_TREE, path))));

    // The writer as it was before encoding existed: no compressor.
    const files = [...back.keys()].sort();
    const looseIndex: LooseIndex = {
      formatVersion: 2,
      rootPath: '/project',
      files: files.map((path) => ({ path, sizeBytes: back.get(path)!.length, sha256: sha256(back.get(path)!), url: path })),
    };
    const bundles = new Map<string, Uint8Array>();
    const index = await new BundleWriter().write(
      looseIndex,
      (entry) => readFileSync(join(TEXT_TREE, entry.path)),
      (bundle) => {
        if (bundle.kind === 'bytes') bundles.set(bundle.url, bundle.bytes);
      },
    );
    expect(readFileSync(join(dir, 'off', 'project.index.json'), 'utf8')).toBe(serializeIndex(index));
    for (const [url, bytes] of bundles) expect(sha256(readFileSync(join(dir, 'off', url)))).toBe(sha256(bytes));
  });

  test('a publish encodes unless told not to (COMPRESS_BY_DEFAULT, SPEC §8), the same bytes as --compress; --compress with --no-compress is a usage error', () => {
    expect(COMPRESS_BY_DEFAULT).toBe(true);
    expect(runCli([TEXT_TREE, '--out', join(dir, 'default')]).code).toBe(0);
    const index = readFileSync(join(dir, 'default', 'project.index.json'), 'utf8');
    expect(index).toMatch(/"encoding": "deflate-raw"/);
    expect(index).toBe(readFileSync(join(dir, 'on', 'project.index.json'), 'utf8'));
    const both = runCli([TEXT_TREE, '--out', join(dir, 'both'), '--compress', '--no-compress']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--compress and --no-compress/);
  });

  test('the usage text names --no-compress', () => {
    expect(runCli(['--help']).stdout + runCli(['publish', '--help']).stdout).toMatch(/--no-compress/);
  });

  test('the build plugins take compress: false, and refuse a value that is not true or false', () => {
    expect(resolveBuildOptions({ assets: 'a' }, dir).settings.compress).toBeUndefined();
    expect(resolveBuildOptions({ assets: 'a', compress: true }, dir).settings.compress).toBe(true);
    expect(resolveBuildOptions({ assets: 'a', compress: false }, dir).settings.compress).toBe(false);
    expect(() => resolveBuildOptions({ assets: 'a', compress: 'no' as unknown as boolean }, dir)).toThrow(
      /option compress: must be true or false/,
    );
  });
});

describe('the shared encoded publish (conformance/encoded/text, SPEC §9)', () => {
  test('its index parses, and every file of trees/text reads from it byte for byte', async () => {
    const index = parseProjectIndexJson(readFileSync(join(ENCODED, 'project.index.json'), 'utf8')) as BundledIndex;
    expect(index.files.filter((entry) => entry.encoding === 'deflate-raw')).toHaveLength(4);
    const back = await readBack(ENCODED);
    expect(back.size).toBe(6);
    for (const [path, bytes] of back) expect(Buffer.from(bytes).equals(readFileSync(join(TEXT_TREE, path)))).toBe(true);
  });

  test('verify reads it: every bundle and member matches', async () => {
    expect(await verifyPublished(ENCODED)).toMatchObject({ problems: [], bundles: 4, files: 6 });
    const result = runCli(['verify', ENCODED]);
    expect(result).toMatchObject({ code: 0 });
  });

  test('inspect shows stored and decoded sizes and the encoding of each member', () => {
    const index = JSON.parse(readFileSync(join(ENCODED, 'project.index.json'), 'utf8')) as BundledIndex;
    const ui = index.files.find((entry) => entry.path === 'atlas/ui.json')!;
    const result = runCli(['inspect', join(ENCODED, 'bundles', `${ui.bundle}.awkb`), '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      version: 2,
      members: [{ key: 'atlas/ui.json', storedBytes: ui.storedBytes, sizeBytes: ui.sizeBytes, encoding: 'deflate-raw', ok: true }],
    });
    expect(runCli(['inspect', join(ENCODED, 'bundles', `${ui.bundle}.awkb`)]).stdout).toMatch(/ 1554 +12166 +deflate-raw /);
  });
});

describe('the index checks of SPEC §5a', () => {
  const bundleSha = 'b'.repeat(64);
  const member = (extra: Record<string, unknown>) => ({
    formatVersion: 3,
    rootPath: '/p',
    bundles: [{ sha256: bundleSha, sizeBytes: 1000, url: `bundles/${bundleSha}.awkb` }],
    files: [{ path: 'a.json', sizeBytes: 50_000, sha256: 'a'.repeat(64), bundle: bundleSha, offset: 100, ...extra }],
  });
  const problemsOf = (value: unknown): string[] => {
    try {
      parseProjectIndex(value);
    } catch (error) {
      expect(error).toBeInstanceOf(IndexValidationError);
      return (error as IndexValidationError).problems;
    }
    return [];
  };

  test('an encoded member whose decoded size passes the bundle is good: its stored range is what must lie inside', () => {
    expect(problemsOf(member({ storedBytes: 900, encoding: 'deflate-raw' }))).toEqual([]);
    expect(problemsOf(member({ storedBytes: 901, encoding: 'deflate-raw' }))).toEqual([
      `files[0].offset 100 + storedBytes 901 lies outside bundle ${'b'.repeat(12)}… of 1000 bytes`,
    ]);
    expect(problemsOf(member({}))).toEqual([`files[0].offset 100 + sizeBytes 50000 lies outside bundle ${'b'.repeat(12)}… of 1000 bytes`]);
  });

  test('an unknown encoding is refused, naming the field and the value', () => {
    expect(problemsOf(member({ storedBytes: 900, encoding: 'br' }))).toEqual([
      'files[0].encoding "br" is not an encoding this reader knows (deflate-raw)',
    ]);
    expect(problemsOf(member({ storedBytes: 900, encoding: 1 }))).toEqual([
      'files[0].encoding 1 is not an encoding this reader knows (deflate-raw)',
    ]);
  });

  test('storedBytes and encoding come together, storedBytes is a size, and neither is on a loose file', () => {
    expect(problemsOf(member({ storedBytes: 900 }))).toEqual([
      'files[0].encoding must be given with storedBytes (an encoded member has both)',
    ]);
    expect(problemsOf(member({ encoding: 'deflate-raw' }))).toEqual([
      'files[0].storedBytes must be given with encoding (an encoded member has both)',
    ]);
    expect(problemsOf(member({ storedBytes: -1, encoding: 'deflate-raw' }))).toEqual([
      'files[0].storedBytes must be a non-negative integer no larger than 2^53 − 1',
    ]);
    expect(problemsOf(member({ storedBytes: 2 ** 53, encoding: 'deflate-raw' }))).toHaveLength(1);
    const loose = {
      formatVersion: 3,
      rootPath: '/p',
      bundles: [],
      files: [{ path: 'a.json', sizeBytes: 5, sha256: 'a'.repeat(64), url: 'a.json', storedBytes: 3, encoding: 'deflate-raw' }],
    };
    expect(problemsOf(loose)).toEqual([
      'files[0].storedBytes must be absent on a loose file: only a bundle member is encoded (SPEC §5a)',
      'files[0].encoding must be absent on a loose file: only a bundle member is encoded (SPEC §5a)',
    ]);
    const looseV2 = {
      formatVersion: 2,
      rootPath: '/p',
      files: [{ path: 'a.json', sizeBytes: 5, sha256: 'a'.repeat(64), url: 'a.json', encoding: 'deflate-raw' }],
    };
    expect(problemsOf(looseV2)).toEqual(['files[0].encoding must be absent: only a bundle member is encoded (SPEC §5a)']);
  });
});

describe('AWKB version 2 tables (SPEC §5a)', () => {
  const plain = text(30_000, 4);
  const stored = deflateRawSync(plain);
  const bundle = () => encodeBundle([{ key: 'a.json', bytes: plain, sha256: sha256(plain), stored, encoding: 'deflate-raw' }]);

  test('a record is key length, key, offset, stored size, size, SHA-256, encoding; decodeBundle reads it back', () => {
    const bytes = bundle();
    expect(versionOf(bytes)).toBe(2);
    expect(bytes.length).toBe(16 + 2 + 6 + 8 + 8 + 8 + 32 + 1 + stored.length);
    const decoded = decodeBundle(bytes);
    expect(decoded.records).toEqual([
      { key: 'a.json', offset: 81, sizeBytes: plain.length, sha256: sha256(plain), storedBytes: stored.length, encoding: 'deflate-raw' },
    ]);
    expect(canonicalBundleLayout({ sizeBytes: bytes.length }, decoded.records)?.head).toEqual(bytes.subarray(0, 81));
    // The same records without their encoding are not this bundle's canonical layout.
    expect(
      canonicalBundleLayout(
        { sizeBytes: bytes.length },
        decoded.records.map(({ key, offset, sizeBytes, sha256: digest }) => ({ key, offset, sizeBytes, sha256: digest })),
      ),
    ).toBeUndefined();
  });

  test('an encoding byte other than 0 and 1 is refused, naming it and the member', () => {
    const bytes = bundle();
    bytes[80] = 2; // the encoding byte of the only record
    expect(() => decodeBundle(bytes)).toThrow(BundleFormatError);
    expect(() => decodeBundle(bytes)).toThrow(
      'AWKB table: member "a.json" has encoding 2, which this reader does not know (0 none, 1 deflate-raw)',
    );
  });

  test('encoding 0 with a stored size other than the size is refused', () => {
    const bytes = bundle();
    bytes[80] = 0;
    expect(() => decodeBundle(bytes)).toThrow(
      /member "a.json" is stored as is \(encoding 0\) but its stored size \d+ differs from its size 30000/,
    );
  });

  test('a version this reader does not know is named with the ones it knows', () => {
    const bytes = bundle();
    bytes[5] = 3;
    expect(() => decodeBundle(bytes)).toThrow('AWKB header: unknown version 3; this reader knows versions 1 and 2');
  });

  test('a version 1 table whose header says 2, and the reverse, name the header', () => {
    const v1 = encodeBundle([{ key: 'a.json', bytes: plain, sha256: sha256(plain) }]);
    v1[5] = 2;
    expect(() => decodeBundle(v1)).toThrow("AWKB header: version 2 does not fit its table, which is laid out as version 1's");
    const v2 = bundle();
    v2[5] = 1;
    expect(() => decodeBundle(v2)).toThrow("AWKB header: version 1 does not fit its table, which is laid out as version 2's");
  });

  test('copies of a content must be stored alike', () => {
    const spec = { sizeBytes: 10, sha256: 'c'.repeat(64) };
    expect(() =>
      layoutBundle([
        { key: 'a', ...spec, storedBytes: 5, encoding: 'deflate-raw' },
        { key: 'b', ...spec },
      ]),
    ).toThrow(/stored differently/);
  });
});

describe('the Node inflater refuses what does not decode to the listed size (SPEC §5a)', () => {
  const plain = text(200_000, 6);
  const stored = deflateRawSync(plain);
  const member = { key: 'maps/a.json', sizeBytes: plain.length, encoding: 'deflate-raw' };

  async function refusal(run: () => Promise<unknown>): Promise<MemberDecodeError> {
    try {
      await run();
    } catch (error) {
      expect(error).toBeInstanceOf(MemberDecodeError);
      return error as MemberDecodeError;
    }
    throw new Error('expected a MemberDecodeError');
  }

  test('good stored bytes decode to the member, in one piece or many', async () => {
    expect(sha256(await decodeMemberNode(stored, member))).toBe(sha256(plain));
    const decoder = new NodeMemberDecoder(member);
    for (let at = 0; at < stored.length; at += 97) await decoder.write(stored.subarray(at, at + 97));
    expect(sha256(await decoder.end())).toBe(sha256(plain));
  });

  test('output past the listed size (a bomb) is refused before it is held', async () => {
    const bomb = deflateRawSync(new Uint8Array(64 * 1024 * 1024)); // 64 MiB of zeros in ~64 KB
    const error = await refusal(() => decodeMemberNode(bomb, { key: 'bomb.bin', sizeBytes: 1000, encoding: 'deflate-raw' }));
    expect(error).toMatchObject({ key: 'bomb.bin', encoding: 'deflate-raw', problem: 'too-long', code: 'E_MEMBER_DECODE' });
    expect(error.message).toMatch(/^"bomb\.bin" \("deflate-raw"\): decodes to more than its listed 1000 bytes/);
    // One byte over is as refused as a gigabyte.
    expect((await refusal(() => decodeMemberNode(stored, { ...member, sizeBytes: plain.length - 1 }))).problem).toBe('too-long');
  });

  test('a stream cut short, and a whole stream shorter than the listed size, are refused', async () => {
    const cut = await refusal(() => decodeMemberNode(stored.subarray(0, stored.length - 10), member));
    expect(cut).toMatchObject({ problem: 'too-short', key: 'maps/a.json', encoding: 'deflate-raw' });
    const short = await refusal(() => decodeMemberNode(stored, { ...member, sizeBytes: plain.length + 1 }));
    expect(short.problem).toBe('too-short');
    expect(short.message).toMatch(/decodes to 200000 bytes, short of its listed 200001/);
  });

  test('bytes after the end of the deflate stream are refused, in the same piece or a later one', async () => {
    const withTrailing = new Uint8Array([...stored, 1, 2, 3]);
    const error = await refusal(() => decodeMemberNode(withTrailing, member));
    expect(error).toMatchObject({ problem: 'trailing-bytes' });
    expect(error.message).toMatch(/3 stored bytes follow the end of its deflate stream/);
    const decoder = new NodeMemberDecoder(member);
    await decoder.write(stored);
    const later = await refusal(async () => {
      await decoder.write(new Uint8Array([0]));
      await decoder.end();
    });
    expect(later.problem).toBe('trailing-bytes');
  });

  test('an unknown encoding, and bytes that are no deflate stream, are refused', async () => {
    expect((await refusal(async () => new NodeMemberDecoder({ ...member, encoding: 'br' }))).message).toBe(
      '"maps/a.json" ("br"): encoding "br" is none this reader knows (deflate-raw)',
    );
    expect((await refusal(async () => new NodeMemberDecoder({ ...member, encoding: 2 }))).problem).toBe('unknown-encoding');
    const broken = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x00]);
    expect(['corrupt', 'too-short']).toContain((await refusal(() => decodeMemberNode(broken, member))).problem);
  });

  test('verify names a member whose stored bytes do not decode, with its encoding', async () => {
    const dir = temporaryDir('awkb-encoded-verify-');
    try {
      writeTree(join(dir, 'tree'), { 'maps/a.json': plain });
      const out = join(dir, 'out');
      await publishFolder({ folder: join(dir, 'tree'), outDir: out, compress: true });
      const index = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8')) as BundledIndex;
      const entry = index.files[0]!;
      const path = join(out, index.bundles[0]!.url);
      const bytes = readFileSync(path);
      bytes[entry.offset! + entry.storedBytes! - 1] ^= 0xff; // the stream's last byte
      writeFileSync(path, bytes);
      const { problems } = await verifyPublished(out);
      expect(problems.some((line) => line.includes('member "maps/a.json" ("deflate-raw"): '))).toBe(true);
      expect(runCli(['verify', out]).code).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
