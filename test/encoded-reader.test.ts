/**
 * Issue 28, the reader (SPEC §5a): encoded members decode everywhere the reader reads, in Node.
 * Each read path (whole bundles streamed, whole bundles read whole, needed-bytes ranges, range
 * reads, delta reads, prefetch) reads the reference-made encoded publish (conformance/encoded/text)
 * and our own byte for byte, with both decoders: node:zlib (what awake-bundle/node registers)
 * and DecompressionStream (what browsers use, and Node without awake-bundle/node). Members that do
 * not decode to their listed bytes are refused naming the member and its encoding, and nothing of
 * their bundle is cached. The browsers' runs are in browser-encoded.test.ts.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDeflateRaw, deflateRawSync } from 'node:zlib';
import {
  BundleIntegrityError,
  IndexedAssetSource,
  MemberDecodeError,
  MemoryCache,
  registerMemberDecoder,
  StreamMemberDecoder,
  type MemberDecodeProblem,
} from '../core/internal.js';
import { nodeMemberDecoder, publishFolder, startStaticServer, type StaticServer } from '../core/node/index.js';
import { temporaryDir } from './helpers/cli.js';
import { BAD_MEMBER_BYTES, BAD_STORED_CASES, badMembers, craftedSite, pseudoRandom, sha256, text } from './helpers/encoded-sites.js';
import { RecordingCache } from './helpers/recording-cache.js';

const FIXTURES = join(__dirname, 'fixtures', 'conformance');
const ENCODED = join(FIXTURES, 'encoded', 'text');
const TEXT_TREE = join(FIXTURES, 'trees', 'text');

function filesOf(dir: string, sub = ''): string[] {
  return readdirSync(join(dir, sub)).flatMap((name) => {
    const rel = sub ? `${sub}/${name}` : name;
    return statSync(join(dir, rel)).isDirectory() ? filesOf(dir, rel) : [rel];
  });
}

const decoders = [
  ['node:zlib', nodeMemberDecoder],
  ['DecompressionStream', (member: ConstructorParameters<typeof StreamMemberDecoder>[0]) => new StreamMemberDecoder(member)],
] as const;

afterAll(() => registerMemberDecoder(nodeMemberDecoder));

interface Served {
  server: StaticServer;
  requests: string[];
  indexUrl: string;
}

async function serve(root: string, index = 'project.index.json'): Promise<Served> {
  const requests: string[] = [];
  const server = await startStaticServer({ root, log: (line) => requests.push(line) });
  return { server, requests, indexUrl: `${server.url}${index}` };
}

/** Modes of reading, each a different path through the reader; `load`: read through `source.load` (needed bytes plan loads). */
const modes = [
  ['whole bundles, streamed', { neededBytes: false }, false],
  ['the default (needed bytes where they pay)', {}, true],
  ['needed-bytes ranges', { neededBytes: { roundTripBytes: 1 } }, true],
  ['needed-bytes ranges, one range per request', { neededBytes: { roundTripBytes: 1 }, deltaReads: { multipartRanges: false } }, true],
  ['range reads', { rangeReads: true, neededBytes: false }, false],
] as const;

/** `path`'s bytes, through a load of it first where `viaLoad` says. */
async function readVia(source: IndexedAssetSource, path: string, viaLoad: boolean): Promise<Uint8Array> {
  if (viaLoad) await source.load([path]);
  return source.read(path);
}

describe.each(decoders)('with the %s decoder', (_, decoder) => {
  beforeAll(() => registerMemberDecoder(decoder));

  describe.each(modes)('%s', (_mode, options, viaLoad) => {
    test('the reference-made encoded publish reads byte for byte, and the cache holds decoded bytes', async () => {
      const { server, indexUrl } = await serve(ENCODED);
      try {
        const cache = new MemoryCache();
        const source = await IndexedAssetSource.open({ indexUrl, cache, ...options });
        for (const path of filesOf(TEXT_TREE)) {
          const bytes = await readVia(source, path, viaLoad);
          const expected = readFileSync(join(TEXT_TREE, path));
          expect({ path, same: Buffer.from(bytes).equals(expected) }).toEqual({ path, same: true });
          await source.whenStored();
          const cached = await cache.get(sha256(expected));
          if (cached) expect(Buffer.from(cached).equals(expected)).toBe(true);
        }
      } finally {
        await server.close();
      }
    });
  });

  test('needed-bytes ranges ask for stored bytes: one member of a large encoded bundle is fetched as its stored range', async () => {
    const site = await ownPublish();
    const { server, requests, indexUrl } = await serve(site.out);
    try {
      const source = await IndexedAssetSource.open({ indexUrl, neededBytes: { roundTripBytes: 1 } });
      const entry = site.index.files.find((file: { path: string }) => file.path === 'maps/level2.json')!;
      const bytes = await readVia(source, 'maps/level2.json', true);
      expect(Buffer.from(bytes).equals(site.tree['maps/level2.json']!)).toBe(true);
      expect(entry.encoding).toBe('deflate-raw');
      const bundleLines = requests.filter((line) => line.includes('.awkb'));
      // The one range asked is the member's stored bytes, far fewer than its decoded size.
      const start = (entry as { offset?: number }).offset!;
      expect(bundleLines).toEqual([expect.stringContaining(` 206 ${entry.storedBytes}B `)]);
      expect(bundleLines[0]).toContain(`(bytes ${start}-${start + entry.storedBytes! - 1}/`);
    } finally {
      await server.close();
    }
  });

  test('our own encoded publish reads byte for byte on every path; prefetch and delta reads too', async () => {
    const site = await ownPublish();
    const { server, indexUrl } = await serve(site.out);
    try {
      for (const [, options, viaLoad] of modes) {
        const source = await IndexedAssetSource.open({ indexUrl, ...options });
        for (const [path, bytes] of Object.entries(site.tree))
          expect(Buffer.from(await readVia(source, path, viaLoad)).equals(bytes)).toBe(true);
      }
      // Prefetch, then reads from memory; a cache that holds some members (delta reads).
      const cache = new MemoryCache();
      const first = await IndexedAssetSource.open({ indexUrl, cache, neededBytes: false });
      await first.prefetch(Object.keys(site.tree));
      for (const [path, bytes] of Object.entries(site.tree)) expect(Buffer.from(await first.read(path)).equals(bytes)).toBe(true);
      await first.whenStored();
      // A second visit with part of the cache gone: the missing members come by range, decoded.
      const partial = new MemoryCache();
      for (const path of ['maps/level1.json', 'art/noise.png']) await partial.put(sha256(site.tree[path]!), site.tree[path]!);
      const second = await IndexedAssetSource.open({ indexUrl, cache: partial });
      for (const [path, bytes] of Object.entries(site.tree)) expect(Buffer.from(await second.read(path)).equals(bytes)).toBe(true);
    } finally {
      await server.close();
    }
  });

  describe('a member whose stored bytes do not decode to its listed bytes is refused, naming it and its encoding; nothing is cached', () => {
    const good = BAD_MEMBER_BYTES;
    const cases = BAD_STORED_CASES;

    // Node's own DecompressionStream (unlike Chromium's and Firefox's, browser-encoded.test.ts)
    // ignores bytes after the stream's end; node:zlib, which awake-bundle/node registers, refuses them.
    const platformIgnores = (problem: MemberDecodeProblem) => decoder !== nodeMemberDecoder && problem === 'trailing-bytes';

    test.each(cases)('%s', async (_label, problem, stored, says) => {
      if (platformIgnores(problem)) return;
      // The bundle and index are consistent (the bundle's SHA-256 is listed): only decoding can tell.
      const site = craftedSite(badMembers(stored));
      const { server, indexUrl } = await serve(site);
      try {
        for (const [, options, viaLoad] of modes) {
          const cache = new RecordingCache();
          const source = await IndexedAssetSource.open({ indexUrl, cache, ...options });
          const error = await readVia(source, 'maps/bad.json', viaLoad).then(
            () => undefined,
            (thrown: unknown) => thrown,
          );
          const refusal = error instanceof MemberDecodeError ? error : (error as BundleIntegrityError | undefined)?.cause;
          expect(refusal).toBeInstanceOf(MemberDecodeError);
          expect(refusal).toMatchObject({ key: 'maps/bad.json', encoding: 'deflate-raw', problem });
          expect((error as Error).message).toMatch(says);
          expect((error as Error).message).toContain('maps/bad.json');
          expect((error as Error).message).toContain('deflate-raw');
          if (error instanceof BundleIntegrityError) expect(error.damaged).toEqual(['maps/bad.json']);
          await source.whenStored();
          expect(cache.puts).not.toContain(sha256(good));
        }
      } finally {
        await server.close();
      }
    });
  });
});

describe('a 512 MiB bomb in a 0.5 MB member (SPEC §5a: output past the listed size is refused before it is held)', () => {
  let site: string;
  let bombBytes = 0;

  beforeAll(async () => {
    // 512 MiB of zeros deflated as they stream (never held), listed as a 1 MiB member.
    const deflater = createDeflateRaw({ level: 9, memLevel: 9 });
    const pieces: Buffer[] = [];
    deflater.on('data', (piece: Buffer) => pieces.push(piece));
    const ended = new Promise((resolve) => deflater.on('end', resolve));
    const zeros = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < 512; i++) if (!deflater.write(zeros)) await new Promise((resolve) => deflater.once('drain', resolve));
    deflater.end();
    await ended;
    const stored = new Uint8Array(Buffer.concat(pieces));
    bombBytes = stored.length;
    const listed = new Uint8Array(1024 * 1024);
    const ok = text(3000, 5);
    site = craftedSite([
      { key: 'bomb.bin', bytes: listed, sha256: sha256(listed), stored, encoding: 'deflate-raw' },
      { key: 'ok.txt', bytes: ok, sha256: sha256(ok) },
    ]);
  }, 60_000);

  test.each(decoders)(
    'with the %s decoder, on every read path, RSS grows by less than 64 MiB',
    async (_, decoder) => {
      expect(bombBytes).toBeGreaterThan(400_000);
      expect(bombBytes).toBeLessThan(600_000);
      registerMemberDecoder(decoder);
      const { server, indexUrl } = await serve(site);
      try {
        for (const [, options, viaLoad] of modes) {
          const before = process.memoryUsage().rss;
          let peak = before;
          // Sampled while the read runs (each sample a turn of the event loop; nothing waits on it).
          const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 1);
          try {
            const source = await IndexedAssetSource.open({ indexUrl, ...options });
            const error = await readVia(source, 'bomb.bin', viaLoad).then(
              () => undefined,
              (thrown: unknown) => thrown,
            );
            const refusal = error instanceof MemberDecodeError ? error : (error as { cause?: unknown } | undefined)?.cause;
            expect(refusal).toMatchObject({ key: 'bomb.bin', encoding: 'deflate-raw', problem: 'too-long' });
            peak = Math.max(peak, process.memoryUsage().rss);
          } finally {
            clearInterval(sampler);
          }
          expect((peak - before) / 2 ** 20).toBeLessThan(64);
        }
      } finally {
        await server.close();
      }
    },
    60_000,
  );
});

test('an encoding name the reader does not know is refused when the index is read, naming the field', async () => {
  const site = craftedSite([
    { key: 'a.json', bytes: text(5000, 1), sha256: sha256(text(5000, 1)), stored: deflateRawSync(text(5000, 1)), encoding: 'deflate-raw' },
  ]);
  const index = JSON.parse(readFileSync(join(site, 'project.index.json'), 'utf8'));
  index.files[0].encoding = 'zstd';
  writeFileSync(join(site, 'project.index.json'), JSON.stringify(index));
  const { server, indexUrl } = await serve(site);
  try {
    await expect(IndexedAssetSource.open({ indexUrl })).rejects.toThrow(/files\[0\]\.encoding.*"zstd"/);
  } finally {
    await server.close();
  }
});

test('an encoding byte the reader does not know is refused as the table, before any member is handed out', async () => {
  const bytes = text(5000, 1);
  const site = craftedSite([{ key: 'a.json', bytes, sha256: sha256(bytes), stored: deflateRawSync(bytes), encoding: 'deflate-raw' }]);
  // Make the table say encoding 2 (kept for brotli) and list the bundle as it now is.
  const index = JSON.parse(readFileSync(join(site, 'project.index.json'), 'utf8'));
  const bundlePath = join(site, index.bundles[0].url);
  const bundle = readFileSync(bundlePath);
  const tableEnd = 16 + bundle.readUInt32BE(12);
  bundle[tableEnd - 1] = 2;
  const name = sha256(bundle);
  writeFileSync(join(site, 'bundles', `${name}.awkb`), bundle);
  index.bundles[0] = { sha256: name, sizeBytes: bundle.length, url: `bundles/${name}.awkb` };
  index.files[0].bundle = name;
  writeFileSync(join(site, 'project.index.json'), JSON.stringify(index));
  const { server, indexUrl } = await serve(site);
  try {
    const source = await IndexedAssetSource.open({ indexUrl, neededBytes: false });
    const error = (await source.read('a.json').catch((thrown: unknown) => thrown)) as BundleIntegrityError;
    expect(error).toBeInstanceOf(BundleIntegrityError);
    expect(error.part).toBe('table');
    expect(error.message).toMatch(/encoding 2|encoding byte 2/);
  } finally {
    await server.close();
  }
});

// ---------------------------------------------------------------------------------------------

interface OwnPublish {
  out: string;
  tree: Record<string, Uint8Array>;
  index: { files: { path: string; sizeBytes: number; storedBytes?: number; encoding?: string }[] };
}

let published: Promise<OwnPublish> | undefined;

/** A tree of text and noise published with compression: one bundle for `maps/`, several members encoded. */
function ownPublish(): Promise<OwnPublish> {
  published ??= (async () => {
    const root = temporaryDir('awkb-encoded-reader-');
    const input = join(root, 'input');
    const tree: Record<string, Uint8Array> = {
      'maps/level1.json': text(300_000, 3),
      'maps/level1-copy.json': text(300_000, 3),
      'maps/level2.json': text(90_000, 5),
      'maps/level3.json': text(400_000, 9),
      'maps/tiny.json': text(900, 7),
      'maps/empty.json': new Uint8Array(0),
      'maps/noise.bin': pseudoRandom(300_000, 4),
      'art/noise.png': pseudoRandom(400_000, 1),
      'art/atlas.json': text(20_000, 11),
    };
    for (const [path, bytes] of Object.entries(tree)) {
      mkdirSync(join(input, path, '..'), { recursive: true });
      writeFileSync(join(input, path), bytes);
    }
    const out = join(root, 'out');
    await publishFolder({ folder: input, outDir: out, compress: true });
    const index = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8')) as OwnPublish['index'];
    return { out, tree, index };
  })();
  return published;
}
