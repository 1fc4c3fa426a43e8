/**
 * The streamed reader in Node (SPEC §7 "Streamed members", "Byte progress"): the check itself,
 * fed in chunks of every size, against the conformance damage fixtures and a load group's bundles
 * (data in first-use order, SPEC §5); a body that stops halfway
 * on every attempt; and a prefetch that only fills the cache keeps its bodies in flight within
 * `pendingBytes`. Browser behaviour is in streamed-members.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MemoryCache, NetworkError, sha256HexSync } from '../core/internal.js';
import { IndexedAssetSource } from '../core/read/indexed-asset-source.js';
import { BundleStreamVerifier, bundleStreamPlan, StreamRefusal, type BundleStreamPlan } from '../core/read/verify/bundle-stream.js';
import { sha256Hex } from '../core/hash.js';
import { encodeBundle } from '../core/format/awkb.js';
import { decodeBundle } from '../core/format/awkb-decode.js';
import { registerMemberDecoder, StreamMemberDecoder } from '../core/format/encoded-member.js';
import { deflateRawSync } from 'node:zlib';
import { text } from './helpers/encoded-sites';
import { FIXTURES } from './helpers/cli';
import { publishSite, startScriptedServer, type ScriptedServer } from './helpers/scripted-site';

const damagedDir = join(FIXTURES, 'damaged');
const expected = JSON.parse(readFileSync(join(damagedDir, 'expected.json'), 'utf8'));
const plan = bundleStreamPlan(expected.good, expected.members)!;

/** Feeds `bytes` in chunks of `size` and finishes; what was handed out, in order, and how it ended. */
async function stream(bytes: Uint8Array, size: number, streamPlan: BundleStreamPlan = plan) {
  const handed: { index: number; sha256: string }[] = [];
  const verifier = new BundleStreamVerifier(streamPlan, sha256Hex, {
    member: (index, member) => handed.push({ index, sha256: sha256HexSync(member) }),
  });
  let refusedAt: number | undefined;
  try {
    for (let at = 0; at < bytes.length; at += size) {
      try {
        verifier.push(bytes.subarray(at, at + size));
      } catch (error) {
        refusedAt = at;
        throw error;
      }
    }
    await verifier.finish();
    return { ok: true as const, handed };
  } catch (error) {
    if (!(error instanceof StreamRefusal)) throw error;
    return { ok: false as const, handed, refusedAt, ...error.failure };
  }
}

describe('BundleStreamVerifier', () => {
  test('the plan is the canonical head of the index records, and contents that tile the data', () => {
    const good = new Uint8Array(readFileSync(join(damagedDir, 'good.awkb')));
    expect(Buffer.from(good.subarray(0, plan.head.length)).equals(Buffer.from(plan.head))).toBe(true);
    expect(plan.contents.map((content) => content.offset)).toEqual(expected.members.map((member: { offset: number }) => member.offset));
    // Offsets the canonical layout would not give: no plan (the bundle is then read whole).
    expect(
      bundleStreamPlan(
        expected.good,
        expected.members.map((member: { offset: number }, i: number) => (i === 0 ? { ...member, offset: member.offset + 1 } : member)),
      ),
    ).toBeUndefined();
  });

  test.each([1, 7, 64, 4096])('a good bundle in chunks of %i bytes hands out every member once, in order, verified', async (size) => {
    const outcome = await stream(new Uint8Array(readFileSync(join(damagedDir, 'good.awkb'))), size);
    expect(outcome).toEqual({
      ok: true,
      handed: expected.members.map((member: { sha256: string }, index: number) => ({ index, sha256: member.sha256 })),
    });
  });

  test.each(
    (expected.cases as { file: string; expect: { ok?: true; part?: string; damaged?: string[]; says?: string } }[]).filter(
      (c) => !c.expect.ok,
    ),
  )('conformance $file: refused as the fixture says, nothing damaged handed out', async ({ file, expect: expectation }) => {
    const bytes = new Uint8Array(readFileSync(join(damagedDir, file)));
    for (const size of [1, 13, 1 << 16]) {
      const outcome = await stream(bytes, size);
      expect(outcome.ok).toBe(false);
      if (outcome.ok) continue;
      if (expectation.part) {
        expect(outcome.part).toBe(expectation.part);
        // A head that is not the canonical one is refused before the body's end, with nothing handed out.
        if (bytes.length > plan.head.length) expect(outcome.refusedAt).toBeLessThan(plan.head.length + 16 * 4);
        expect(outcome.handed).toEqual([]);
      }
      if (expectation.damaged) expect([...outcome.damaged].sort()).toEqual([...expectation.damaged].sort());
      if (expectation.says) expect(outcome.message).toContain(expectation.says);
      // Never a damaged member out; only members before the first damage.
      const damagedShas = new Set(
        expected.members.filter((m: { key: string }) => expectation.damaged?.includes(m.key)).map((m: { sha256: string }) => m.sha256),
      );
      for (const member of outcome.handed) expect(damagedShas.has(member.sha256)).toBe(false);
    }
  });

  test('a body cut short names the members it never brought', async () => {
    const good = new Uint8Array(readFileSync(join(damagedDir, 'good.awkb')));
    const outcome = await stream(good.subarray(0, expected.members[2].offset + 10), 50);
    expect(outcome).toMatchObject({ ok: false, part: 'members', damaged: ['b/three.bin'] });
    expect((outcome as { message: string }).message).toContain(`the body ended after ${expected.members[2].offset + 10} of 422 bytes`);
    expect(outcome.handed.map((member) => member.index)).toEqual([0, 1]);
  });

  test('encoded members decode in turn: a body pushed in one go hands out its first member before the later ones have decoded', async () => {
    // Five deflate-raw members (SPEC §5a). A body that arrived while the page was busy is pushed
    // at once; decoders fed side by side would all finish at its end. In turn, when the first
    // member is handed out, no member after the next has had a byte decoded.
    const inputs = [0, 1, 2, 3, 4].map((seed) => {
      const bytes = text(60_000, 40 + seed);
      return {
        key: `sounds/loop-${seed}.wav`,
        bytes,
        sha256: sha256HexSync(bytes),
        stored: deflateRawSync(bytes),
        encoding: 'deflate-raw' as const,
      };
    });
    const bundle = encodeBundle(inputs);
    const records = decodeBundle(bundle).records;
    const encodedPlan = bundleStreamPlan(
      { sha256: sha256HexSync(bundle), sizeBytes: bundle.length },
      records.map((record) => ({
        key: record.key,
        offset: record.offset,
        sizeBytes: record.sizeBytes,
        sha256: record.sha256,
        storedBytes: record.storedBytes,
        encoding: record.encoding,
      })),
    )!;
    const written = new Map<string, number>();
    registerMemberDecoder((member) => {
      const inner = new StreamMemberDecoder(member);
      return {
        write(chunk) {
          written.set(member.key, (written.get(member.key) ?? 0) + chunk.length);
          inner.write(chunk);
        },
        end: () => inner.end(),
        abort: () => inner.abort(),
      };
    });
    try {
      const writtenAtHandOut: number[][] = [];
      const handed: string[] = [];
      const verifier = new BundleStreamVerifier(encodedPlan, sha256Hex, {
        member(index, bytes) {
          writtenAtHandOut.push(encodedPlan.contents.map((content) => written.get(content.keys[0]!) ?? 0));
          handed.push(`${encodedPlan.contents[index]!.keys[0]}:${sha256HexSync(bytes)}`);
        },
      });
      verifier.push(bundle);
      await verifier.finish();
      expect(handed).toEqual(encodedPlan.contents.map((content) => `${content.keys[0]}:${content.sha256}`));
      expect(writtenAtHandOut[0]!.slice(2)).toEqual([0, 0, 0]);
      // Every member's stored bytes reached its decoder once.
      expect(encodedPlan.contents.map((content) => written.get(content.keys[0]!))).toEqual(
        encodedPlan.contents.map((content) => content.storedBytes),
      );
    } finally {
      registerMemberDecoder((member) => new StreamMemberDecoder(member));
    }
  });
});

/** A conformance output (expected/<name>): its index, and the resources a server serves for it. */
function conformanceSite(name: string) {
  const dir = join(FIXTURES, 'expected', name);
  const indexBytes = new Uint8Array(readFileSync(join(dir, 'project.index.json')));
  const index: {
    bundles: { sha256: string; sizeBytes: number; url: string }[];
    files: { path?: string; id?: string; sizeBytes: number; sha256: string; bundle: string; offset: number }[];
  } = JSON.parse(Buffer.from(indexBytes).toString('utf8'));
  const resources = new Map<string, Uint8Array>([['/project.index.json', indexBytes]]);
  for (const bundle of index.bundles) resources.set(`/${bundle.url}`, new Uint8Array(readFileSync(join(dir, bundle.url))));
  const membersOf = (sha256: string) =>
    index.files
      .filter((file) => file.bundle === sha256)
      .map((file) => ({ key: (file.path ?? file.id)!, offset: file.offset, sizeBytes: file.sizeBytes, sha256: file.sha256 }));
  return { index, resources, membersOf };
}

describe('a load group\'s bundle, data in first-use order (SPEC §5 "Data order")', () => {
  test.each(['small-loads', 'small-loads-target-0.25-ids'])(
    'conformance %s: every bundle gets a plan from the index offsets, and streams every member out, in data order',
    async (name) => {
      const site = conformanceSite(name);
      for (const bundle of site.index.bundles) {
        const members = site.membersOf(bundle.sha256);
        const streamPlan = bundleStreamPlan(bundle, members);
        expect(streamPlan).toBeDefined();
        const offsets = streamPlan!.contents.map((content) => content.offset);
        expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
        const bytes = site.resources.get(`/${bundle.url}`)!;
        const outcome = await stream(bytes, 4096, streamPlan);
        expect(outcome).toEqual({
          ok: true,
          handed: streamPlan!.contents.map((content, index) => ({ index, sha256: content.sha256 })),
        });
      }
    },
  );

  test("small-loads' load:pier bundle: its contents are planned in the loads file's order, not its table's", () => {
    const site = conformanceSite('small-loads');
    const sha256 = site.index.files.find((file) => file.path === 'scenes/pier.scene.json')!.bundle;
    const bundle = site.index.bundles.find((listed) => listed.sha256 === sha256)!;
    const streamPlan = bundleStreamPlan(bundle, site.membersOf(sha256))!;
    expect(streamPlan.contents.map((content) => content.keys)).toEqual([
      ['scenes/pier.scene.json'],
      ['assets/sounds/bell.ogg'],
      ['assets/models/crate.glb'],
      ['ui/hud.json'],
    ]);
  });
});

describe('IndexedAssetSource, streamed', () => {
  const servers: ScriptedServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });

  test('a body that stops halfway on every attempt: the members before the cut are read, verified; the rest fail typed naming the bundle, after the retries; nothing is cached', async () => {
    const site = await publishSite(1, 8, () => 64 * 1024);
    const bundle = site.index.bundles[0]!;
    const server = await startScriptedServer(site.resources, (request) => (request.path.endsWith('.awkb') ? { kind: 'short' } : undefined));
    servers.push(server);
    const cache = new MemoryCache();
    const source = await IndexedAssetSource.open({
      indexUrl: `${server.origin}/project.index.json`,
      cache,
      retry: { attempts: 3, baseDelayMs: 1 },
    });
    const paths = site.index.files.map((file) => file.path!);
    const reads = await Promise.allSettled(paths.map((path) => source.read(path)));
    await source.whenStored();
    // 'short' sends half the body: members wholly in the first half passed and were handed out.
    const half = bundle.sizeBytes / 2;
    paths.forEach((path, i) => {
      const entry = source.entry(path)!;
      const read = reads[i]!;
      if (entry.offset! + entry.sizeBytes <= half)
        expect(read.status === 'fulfilled' && Buffer.from(read.value).equals(Buffer.from(site.files.get(path)!))).toBe(true);
      else {
        expect(read.status).toBe('rejected');
        const error = (read as PromiseRejectedResult).reason;
        expect(error).toBeInstanceOf(NetworkError);
        expect(error.url).toBe(`${server.origin}/${bundle.url}`);
        expect(error.message).toMatch(/gave up after 3 attempts/);
      }
    });
    expect(reads.filter((read) => read.status === 'fulfilled').length).toBeGreaterThan(0);
    expect(server.count(`/${bundle.url}`)).toBe(3);
    expect(cache.size).toBe(0);
  });

  test("a load group's bundle cut halfway on every attempt: the members its load uses first are read, verified; the later ones fail", async () => {
    const site = conformanceSite('small-loads');
    const server = await startScriptedServer(site.resources, (request) => (request.path.endsWith('.awkb') ? { kind: 'short' } : undefined));
    servers.push(server);
    const source = await IndexedAssetSource.open({
      indexUrl: `${server.origin}/project.index.json`,
      retry: { attempts: 2, baseDelayMs: 1 },
      // The whole bundle, streamed (SPEC §7 "Streamed members"), not the reads' needed ranges.
      neededBytes: false,
    });
    // load:pier's data: pier.scene.json, bell.ogg (both in the first half of the bundle), crate.glb, hud.json.
    const paths = ['scenes/pier.scene.json', 'assets/sounds/bell.ogg', 'ui/hud.json'];
    const reads = await Promise.allSettled(paths.map((path) => source.read(path)));
    const tree = join(FIXTURES, 'trees/small');
    expect(reads.map((read) => read.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    reads.slice(0, 2).forEach((read, i) => {
      expect(Buffer.from((read as PromiseFulfilledResult<Uint8Array>).value).equals(readFileSync(join(tree, paths[i]!)))).toBe(true);
    });
    expect((reads[2] as PromiseRejectedResult).reason).toBeInstanceOf(NetworkError);
  });

  test('prefetch(…, { keep: false }) keeps the bodies in flight within pendingBytes (one bundle at least), and fills the cache', async () => {
    // 12 bundles of 4 × 64 KiB; a budget of 600 KiB lets at most two 256 KiB bundles fly at once.
    const site = await publishSite(12, 4, () => 64 * 1024);
    const server = await startScriptedServer(site.resources);
    servers.push(server);
    const cache = new MemoryCache();
    const source = await IndexedAssetSource.open({ indexUrl: `${server.origin}/project.index.json`, cache, pendingBytes: 600 * 1024 });
    let most = 0;
    const totals = new Set<number>();
    await source.prefetch(
      site.index.files.map((file) => file.path!),
      {
        keep: false,
        onProgress: (progress) => {
          totals.add(progress.totalBytes);
          most = Math.max(most, source.stats().loadBytesInFlight);
        },
      },
    );
    const largest = Math.max(...site.index.bundles.map((bundle) => bundle.sizeBytes));
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(600 * 1024 + largest);
    expect(most).toBeLessThan(site.index.bundles.reduce((sum, bundle) => sum + bundle.sizeBytes, 0));
    // One total for the whole prefetch, from its first event (SPEC §7 "Byte progress").
    expect(totals.size).toBe(1);
    expect(source.stats().heldBytes).toBe(0);
    expect(cache.size).toBe(site.index.files.length);
    expect(site.index.bundles.every((bundle) => server.count(`/${bundle.url}`) === 1)).toBe(true);
  });
});
