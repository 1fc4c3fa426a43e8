/**
 * `BundleStreamChecker` (core/read/verify/stream-check.ts) on its own: a bundle checked as its
 * bytes stream in (SPEC §7 "Streamed members"). No member may leave before the bundle's head (its
 * first 16 + table size bytes) has arrived and equals the canonical header and table of the
 * index's records (SPEC §5), and before every byte of that member has arrived and matched its
 * SHA-256; encoded members are decoded as their stored bytes arrive and checked decoded, in turn
 * (SPEC §5a). The bundle is still accepted or rejected whole, and a refusal names the part SPEC §7
 * "Verified" asks for: `header` or `table` for a head that is not the canonical one, else every
 * damaged member. The checker is fed here as the transport and the reader's worker feed it (chunks
 * of any size, 1 byte, odd sizes, whole), with the head judged later (`deferredJudge`, then
 * `refusalError` and `judgedError`), as the page and the worker do; end-to-end tests see it only
 * through a server, and streamed-reader.test.ts drives its subclass that judges at once.
 * Bundles: one built by the writer (an empty file, a content listed twice, encoded and plain
 * members), and the conformance fixtures' damaged bundles (SPEC §9) with what they must report.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BundleIntegrityError, MemberDecodeError } from '../core/errors.js';
import { decodeBundle } from '../core/format/awkb-decode.js';
import { encodeBundle } from '../core/format/awkb.js';
import { registerMemberDecoder, StreamMemberDecoder, type MemberDecoderFactory } from '../core/format/encoded-member.js';
import type { BundleEntry } from '../core/format/project-index.js';
import { sha256Hex } from '../core/hash.js';
import { publishFolder } from '../core/node/index.js';
import { nodeMemberDecoder, registerNodeDecoder } from '../core/node/inflate.js';
import { IndexView } from '../core/read/open/index-view.js';
import { judgeHead } from '../core/read/verify/structure.js';
import {
  BundleStreamChecker,
  bundleStreamPlan,
  deferredJudge,
  judgedError,
  refusalError,
  StreamRefusal,
  type BundleStreamPlan,
  type HeadJudge,
  type Hasher,
  type StreamFailure,
} from '../core/read/verify/stream-check.js';
import { spanOf } from '../core/read/verify/verify.js';
import { FIXTURES, temporaryDir } from './helpers/cli.js';
import { sha256Hex as sha256Sync, writeTree } from './helpers/trees.js';
import { MIXED_FILES } from './helpers/mixed-files.js';

/** One bundle (one group) of every kind of member (helpers/mixed-files.ts). */
const FILES = MIXED_FILES;
const URL_OF_BUNDLE = 'https://cdn.example/bundles/x.awkb';

let bundle: BundleEntry;
let bundleBytes: Uint8Array;
let plan: BundleStreamPlan;

beforeAll(async () => {
  const tree = temporaryDir('awkb-stream-check-tree-');
  writeTree(tree, FILES);
  const out = temporaryDir('awkb-stream-check-out-');
  const { index } = await publishFolder({ folder: tree, outDir: out, grouping: () => 'one' });
  expect(index.bundles).toHaveLength(1);
  bundle = index.bundles[0]!;
  bundleBytes = new Uint8Array(readFileSync(join(out, bundle.url)));
  const view = await IndexView.open(index, undefined, undefined);
  // The plan the reader makes from the index (bundle-fetcher.ts `whole`).
  plan = view.streamPlan(bundle)!;
  expect(plan).toBeDefined();
  // What the tests below rely on: data in key order, one copy of the twice-listed content, the text encoded.
  expect(plan.contents.map((content) => content.keys)).toEqual([
    ['a/empty.txt'],
    ['a/noise.bin', 'b/copy.bin'],
    ['b/level.json'],
    ['c/map.json'],
    ['c/tiny.txt'],
    ['d/big.bin'],
  ]);
  expect(plan.contents.map((content) => content.encoding)).toEqual([
    undefined,
    undefined,
    'deflate-raw',
    'deflate-raw',
    undefined,
    undefined,
  ]);
  expect(Buffer.from(bundleBytes.subarray(0, plan.head.length)).equals(Buffer.from(plan.head))).toBe(true);
});

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const indexOf = (key: string) => plan.contents.findIndex((content) => content.keys.includes(key));

/** What every content should come out as: its index, and its decoded bytes as hex. */
const expectedOut = (streamPlan = plan) => streamPlan.contents.map((content, index) => ({ index, bytes: hex(FILES[content.keys[0]!]!) }));

interface Outcome {
  ok: boolean;
  handed: { index: number; bytes: string }[];
  /** The refusal, when there was one. */
  failure?: StreamFailure;
  /** Bytes pushed before a `push` threw, when one did (a refused head). */
  refusedAt?: number;
  checker: BundleStreamChecker;
}

/**
 * Feeds `bytes` to a fresh checker in chunks whose sizes cycle through `sizes` (0 included: an
 * empty chunk), then finishes it; a `StreamRefusal` from `push` or `finish` is the outcome.
 */
async function stream(
  bytes: Uint8Array,
  sizes: readonly number[],
  streamPlan: BundleStreamPlan = plan,
  options: { judge?: HeadJudge; hash?: Hasher } = {},
): Promise<Outcome> {
  const handed: { index: number; bytes: string }[] = [];
  const checker = new BundleStreamChecker(
    streamPlan,
    options.hash ?? sha256Hex,
    { member: (index, member) => handed.push({ index, bytes: hex(member) }) },
    options.judge ?? deferredJudge(streamPlan),
  );
  let at = 0;
  try {
    for (let i = 0; at < bytes.length; i++) {
      const size = sizes[i % sizes.length]!;
      const chunk = bytes.subarray(at, Math.min(at + size, bytes.length));
      try {
        checker.push(chunk);
      } catch (error) {
        if (error instanceof StreamRefusal) return { ok: false, handed, failure: error.failure, refusedAt: at + chunk.length, checker };
        throw error;
      }
      at += chunk.length;
    }
    await checker.finish();
    return { ok: true, handed, checker };
  } catch (error) {
    if (!(error instanceof StreamRefusal)) throw error;
    return { ok: false, handed, failure: error.failure, checker };
  }
}

/** Resolves once `condition` holds (checked every turn of the event loop), failing after a while. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turns = 0; !condition(); turns++) {
    if (turns > 2000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** A copy of `bytes` with byte `at` set to `value` (by default, changed in one bit). */
function withByte(bytes: Uint8Array, at: number, value = bytes[at]! ^ 0x10): Uint8Array {
  const copy = bytes.slice();
  copy[at] = value;
  return copy;
}

/** The refusal as the reader reports it: the bundle's integrity error, its head judged (SPEC §7 "Errors"). */
async function reported(failure: StreamFailure, streamPlan = plan): Promise<BundleIntegrityError> {
  const error = await judgedError(refusalError(failure, URL_OF_BUNDLE), streamPlan);
  expect(error).toBeInstanceOf(BundleIntegrityError);
  expect((error as BundleIntegrityError).url).toBe(URL_OF_BUNDLE);
  return error as BundleIntegrityError;
}

const WHOLE = [Number.MAX_SAFE_INTEGER];

describe('a good bundle', () => {
  test.each([
    ['1 byte', [1]],
    ['odd sizes, with empty chunks', [3, 0, 17, 251, 1, 4097, 0, 65_537]],
    ['sizes that cut the head and members anywhere', [7, 1, 1, 130, 999]],
    ['one chunk', WHOLE],
  ])('in chunks of %s: every content out once, in data order, with its decoded bytes', async (_, sizes) => {
    const outcome = await stream(bundleBytes, sizes);
    expect(outcome.failure).toBeUndefined();
    expect(outcome.handed).toEqual(expectedOut());
    expect(outcome.checker.received).toBe(bundle.sizeBytes);
    expect([...outcome.checker.delivered].sort()).toEqual(plan.contents.map((_, index) => index));
    expect(outcome.checker.failed).toBe(false);
  });

  test('nothing leaves before the head is in; then each member as soon as it passed, before the body ends', async () => {
    const handed: number[] = [];
    const checker = new BundleStreamChecker(plan, sha256Hex, { member: (index) => handed.push(index) }, deferredJudge(plan));
    // All of the head but its last byte.
    checker.push(bundleBytes.subarray(0, plan.head.length - 1));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(handed).toEqual([]);
    // Up to the end of the second content (the empty one comes with it).
    const noise = plan.contents[1]!;
    checker.push(bundleBytes.subarray(plan.head.length - 1, noise.offset + noise.sizeBytes));
    await until(() => handed.length === 2, 'the first two contents');
    // The encoded one after it: out once its stored bytes are in and decoded.
    const level = plan.contents[2]!;
    checker.push(bundleBytes.subarray(noise.offset + noise.sizeBytes, level.offset + spanOf(level) - 1));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(handed).toEqual([0, 1]);
    checker.push(bundleBytes.subarray(level.offset + spanOf(level) - 1, level.offset + spanOf(level)));
    await until(() => handed.length === 3, 'level.json');
    expect(handed).toEqual([0, 1, 2]);
    checker.push(bundleBytes.subarray(level.offset + spanOf(level)));
    await checker.finish();
    expect(handed).toEqual([0, 1, 2, 3, 4, 5]);
  });

  test('a bundle of empty contents only: its members come out once the head is in and the body ended', async () => {
    const empty = new Uint8Array(0);
    const members = ['x/one.txt', 'x/two.txt'].map((key) => ({ key, bytes: empty, sha256: sha256Sync(empty) }));
    const bytes = encodeBundle(members);
    const records = decodeBundle(bytes).records;
    const emptyPlan = bundleStreamPlan(
      { sha256: sha256Sync(bytes), sizeBytes: bytes.length },
      records.map(({ key, offset, sizeBytes, sha256 }) => ({ key, offset, sizeBytes, sha256 })),
    )!;
    expect(emptyPlan.head.length).toBe(bytes.length);
    expect(emptyPlan.contents.map((content) => content.keys)).toEqual([['x/one.txt', 'x/two.txt']]);
    for (const sizes of [[1], [5], WHOLE]) {
      const outcome = await stream(bytes, sizes, emptyPlan);
      expect(outcome.failure).toBeUndefined();
      expect(outcome.handed).toEqual([{ index: 0, bytes: '' }]);
    }
  });
});

describe('encoded members (SPEC §5a)', () => {
  test.each([
    ['node:zlib (Node)', nodeMemberDecoder as MemberDecoderFactory],
    ['DecompressionStream (the page, the worker)', ((member) => new StreamMemberDecoder(member)) as MemberDecoderFactory],
  ])('decode in turn, with %s: a body pushed in one go feeds the second only once the first has decoded', async (_, decoder) => {
    const events: string[] = [];
    registerMemberDecoder((member) => {
      const inner = decoder(member);
      let written = 0;
      return {
        write(chunk) {
          if (written === 0) events.push(`write ${member.key}`);
          written += chunk.length;
          inner.write(chunk);
        },
        end: () =>
          inner.end().then((bytes) => {
            events.push(`decoded ${member.key}: ${written} stored bytes in, ${bytes.length} out`);
            return bytes;
          }),
        abort: () => inner.abort(),
      };
    });
    try {
      for (const sizes of [WHOLE, [1000]]) {
        events.length = 0;
        const outcome = await stream(bundleBytes, sizes);
        expect(outcome.handed).toEqual(expectedOut());
        const [level, map] = [plan.contents[indexOf('b/level.json')]!, plan.contents[indexOf('c/map.json')]!];
        expect(events).toEqual([
          'write b/level.json',
          `decoded b/level.json: ${level.storedBytes} stored bytes in, ${level.sizeBytes} out`,
          'write c/map.json',
          `decoded c/map.json: ${map.storedBytes} stored bytes in, ${map.sizeBytes} out`,
        ]);
      }
    } finally {
      registerNodeDecoder();
    }
  });
});

describe('a damaged member', () => {
  test.each(['a/noise.bin', 'b/level.json', 'c/map.json', 'c/tiny.txt', 'd/big.bin'])(
    'one changed byte in %s: refused naming it (and every key of its content); no member out from it on',
    async (key) => {
      const content = plan.contents[indexOf(key)]!;
      const damaged = withByte(bundleBytes, content.offset + Math.floor(spanOf(content) / 2));
      for (const sizes of [[1], [333], WHOLE]) {
        const outcome = await stream(damaged, sizes);
        expect(outcome.ok).toBe(false);
        expect(outcome.refusedAt).toBeUndefined();
        expect(outcome.failure).toMatchObject({ part: 'members', damaged: content.keys });
        expect(outcome.failure!.message).toContain(`bundle ${bundle.sha256}: damaged member`);
        for (const name of content.keys) expect(outcome.failure!.message).toContain(name);
        // SPEC §7 "Streamed members": what passed before it left; nothing from the damaged one on.
        expect(outcome.handed).toEqual(expectedOut().slice(0, indexOf(key)));
        expect(outcome.checker.failed).toBe(true);
        const error = await reported(outcome.failure!);
        expect(error.part).toBe('members');
        expect(error.damaged).toEqual(content.keys);
      }
    },
  );

  test('two damaged members: both named, in data order, and only what came before the first one left', async () => {
    const tiny = plan.contents[indexOf('c/tiny.txt')]!;
    const noise = plan.contents[indexOf('a/noise.bin')]!;
    const damaged = withByte(withByte(bundleBytes, tiny.offset), noise.offset + noise.sizeBytes - 1);
    const outcome = await stream(damaged, [4096]);
    expect(outcome.failure).toMatchObject({ part: 'members', damaged: ['a/noise.bin', 'b/copy.bin', 'c/tiny.txt'] });
    expect(outcome.failure!.message).toContain('damaged members "a/noise.bin", "b/copy.bin", "c/tiny.txt"');
    expect(outcome.handed).toEqual(expectedOut().slice(0, 1));
  });

  test('an encoded member whose stored bytes are no deflate stream: refused with why it did not decode (SPEC §5a)', async () => {
    const map = plan.contents[indexOf('c/map.json')]!;
    const garbage = bundleBytes.slice();
    garbage.fill(0xff, map.offset, map.offset + spanOf(map));
    const outcome = await stream(garbage, [100]);
    expect(outcome.failure).toMatchObject({
      part: 'members',
      damaged: ['c/map.json'],
      decode: [{ key: 'c/map.json', encoding: 'deflate-raw', problem: 'corrupt' }],
    });
    expect(outcome.failure!.message).toMatch(/damaged member "c\/map\.json"; .*not a valid deflate stream/);
    expect(outcome.handed).toEqual(expectedOut().slice(0, indexOf('c/map.json')));
    // As the reader reports it: the integrity error, the decode error its cause.
    const error = await reported(outcome.failure!);
    expect(error.damaged).toEqual(['c/map.json']);
    expect(error.cause).toBeInstanceOf(MemberDecodeError);
    expect((error.cause as MemberDecodeError).problem).toBe('corrupt');
    expect((error.cause as MemberDecodeError).key).toBe('c/map.json');
  });

  test('a later encoded member still decodes after one that did not (decoding in turn goes on)', async () => {
    const level = plan.contents[indexOf('b/level.json')]!;
    const garbage = bundleBytes.slice();
    garbage.fill(0xff, level.offset, level.offset + spanOf(level));
    const map = plan.contents[indexOf('c/map.json')]!;
    const both = withByte(garbage, map.offset + 40);
    const outcome = await stream(both, [2048]);
    // Both are judged (each decoded in its turn), though only the first's decoding failed.
    expect(outcome.failure!.damaged).toEqual(['b/level.json', 'c/map.json']);
    expect(outcome.failure!.decode?.[0]).toMatchObject({ key: 'b/level.json', problem: 'corrupt' });
    expect(outcome.handed).toEqual(expectedOut().slice(0, indexOf('b/level.json')));
  });
});

describe('a damaged head', () => {
  test.each([
    ['magic', 0, 0x42, 'header', /bad magic 42574b42/],
    ['version', 5, 3, 'header', /unknown version 3/],
    ['reserved field', 7, 1, 'header', /reserved field is 1/],
  ] as const)(
    'its %s: refused by push once the header and the table it declares are in, nothing out, judged later as the header',
    async (_, at, value, part, says) => {
      const damaged = withByte(bundleBytes, at, value);
      const outcome = await stream(damaged, [1]);
      expect(outcome.ok).toBe(false);
      // Refused during the body, once what the judgement needs is in: the header, and the table
      // its (unchanged) table size declares, which here is the whole head.
      expect(outcome.refusedAt).toBe(plan.head.length);
      expect(outcome.handed).toEqual([]);
      // Deferred: the part, and the head as it came, for the page to judge.
      expect(outcome.failure).toMatchObject({ part, damaged: [] });
      expect(outcome.failure!.message).toBe(
        `bundle ${bundle.sha256}: AWKB header: not the canonical header of the index's records for this bundle`,
      );
      expect(hex(outcome.failure!.head!)).toBe(hex(damaged.subarray(0, plan.head.length)));
      const error = await reported(outcome.failure!);
      expect(error.part).toBe(part);
      expect(error.damaged).toEqual([]);
      expect(error.message).toMatch(says);
      expect(error.message).toContain(`bundle ${bundle.sha256}`);
      expect(error.message).toBe(judgeHead(plan, outcome.failure!.head!).message);
    },
  );

  test('a table size past the bundle: refused from the header alone', async () => {
    const damaged = bundleBytes.slice();
    new DataView(damaged.buffer).setUint32(12, 0x7fffffff);
    const outcome = await stream(damaged, [1]);
    expect(outcome.refusedAt).toBe(16);
    const error = await reported(outcome.failure!);
    expect(error.part).toBe('table');
    expect(error.message).toContain('runs past the end');
  });

  test('a changed SHA-256 in a record: refused once the whole table is in, judged as the table, naming the record', async () => {
    const head = Buffer.from(bundleBytes.subarray(0, plan.head.length));
    const big = plan.contents[indexOf('d/big.bin')]!;
    const at = head.indexOf(Buffer.from(big.sha256, 'hex'));
    expect(at).toBeGreaterThan(16);
    for (const sizes of [[1], [50], WHOLE]) {
      const outcome = await stream(withByte(bundleBytes, at + 31), sizes);
      expect(outcome.handed).toEqual([]);
      expect(outcome.failure).toMatchObject({ part: 'table', damaged: [] });
      if (sizes[0] === 1) expect(outcome.refusedAt).toBe(plan.head.length);
      const error = await reported(outcome.failure!);
      expect(error.part).toBe('table');
      expect(error.message).toContain('AWKB table: record "d/big.bin" differs from its index entry');
    }
  });

  test('deferredJudge says which part differs, keeps its own copy of the head, and judgedError judges it', async () => {
    const judge = deferredJudge(plan);
    const badTable = withByte(bundleBytes.subarray(0, plan.head.length), plan.head.length - 1);
    const failure = judge(badTable);
    expect(failure.part).toBe('table');
    expect(failure.message).toContain('AWKB table: not the canonical table');
    badTable.fill(0);
    expect(hex(failure.head!)).toBe(hex(withByte(bundleBytes.subarray(0, plan.head.length), plan.head.length - 1)));
    expect(judge(withByte(bundleBytes.subarray(0, 16), 15)).part).toBe('header');
    // An error that is no unjudged refusal is given back as it is.
    const plain = new Error('network');
    expect(await judgedError(plain, plan)).toBe(plain);
    const judgedAlready = refusalError({ part: 'members', message: 'm', damaged: ['c/tiny.txt'] }, URL_OF_BUNDLE);
    expect(await judgedError(judgedAlready, plan)).toBe(judgedAlready);
  });
});

describe('a body of the wrong length', () => {
  test('more than the listed size: push refuses the byte past it', async () => {
    const longer = new Uint8Array(bundleBytes.length + 1);
    longer.set(bundleBytes);
    const outcome = await stream(longer, [4096]);
    expect(outcome.failure).toMatchObject({ part: 'members', damaged: [] });
    expect(outcome.failure!.message).toBe(`bundle ${bundle.sha256}: more than the listed ${bundle.sizeBytes} bytes arrived`);
    expect(outcome.refusedAt).toBe(longer.length);
    // Every member had passed by then.
    await until(() => outcome.checker.delivered.size === plan.contents.length, 'every member');
  });

  test('cut short in the data: the members it never brought are named, after the cause', async () => {
    const map = plan.contents[indexOf('c/map.json')]!;
    const outcome = await stream(bundleBytes.subarray(0, map.offset + 10), [777]);
    expect(outcome.failure).toMatchObject({ part: 'members', damaged: ['c/map.json', 'c/tiny.txt', 'd/big.bin'] });
    expect(outcome.failure!.message).toContain(`the body ended after ${map.offset + 10} of ${bundle.sizeBytes} bytes; damaged members`);
    expect(outcome.handed).toEqual(expectedOut().slice(0, indexOf('c/map.json')));
  });

  test('cut short right after the head: the empty content leaves, every other is named', async () => {
    const outcome = await stream(bundleBytes.subarray(0, plan.head.length), WHOLE);
    expect(outcome.handed).toEqual(expectedOut().slice(0, 1));
    expect(outcome.failure!.damaged).toEqual(plan.contents.slice(1).flatMap((content) => content.keys));
  });

  test('cut short inside the table: said so, nothing out, every content named', async () => {
    const outcome = await stream(bundleBytes.subarray(0, 40), [3]);
    expect(outcome.handed).toEqual([]);
    expect(outcome.failure!.message).toContain(`the body ended after 40 of ${bundle.sizeBytes} bytes, inside the table`);
    for (const content of plan.contents.slice(1)) for (const key of content.keys) expect(outcome.failure!.damaged).toContain(key);
  });

  test('cut short inside the header: refused as the header', async () => {
    const outcome = await stream(bundleBytes.subarray(0, 10), [1]);
    expect(outcome.refusedAt).toBeUndefined();
    expect(outcome.failure!.part).toBe('header');
    const error = await reported(outcome.failure!);
    expect(error.part).toBe('header');
    expect(error.message).toContain('truncated: 10 bytes');
  });
});

/** Rejections nobody handled while `run` ran and a macrotask after it (one would end a Node process). */
async function unhandledDuring(run: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const listen = (reason: unknown) => void seen.push(reason);
  process.on('unhandledRejection', listen);
  try {
    await run();
    await new Promise<void>((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', listen);
  }
  return seen;
}

test('a hasher that always fails leaves no unhandled rejection: every content’s failure is awaited in turn, or dropped with the checker', async () => {
  const broken = new Error('crypto.subtle is gone');
  const finished = await unhandledDuring(async () => {
    const checker = new BundleStreamChecker(plan, () => Promise.reject(broken), { member: () => undefined }, deferredJudge(plan));
    checker.push(bundleBytes);
    await expect(checker.finish()).rejects.toBe(broken);
  });
  const dropped = await unhandledDuring(async () => {
    // Dropped without finish (its load aborted): nobody will ever await its digests.
    new BundleStreamChecker(plan, () => Promise.reject(broken), { member: () => undefined }, deferredJudge(plan)).push(bundleBytes);
  });
  expect({ finished, dropped }).toEqual({ finished: [], dropped: [] });
});

test('a hasher that fails: its error comes out of finish as it is, not taken for damage', async () => {
  // It fails on the first content in data order (the empty one): nothing is handed out.
  const broken = new Error('crypto.subtle is gone');
  const hashed: number[] = [];
  const hash: Hasher = (bytes) => {
    hashed.push(bytes.length);
    return bytes.length === 0 ? Promise.reject(broken) : sha256Hex(bytes);
  };
  const handed: number[] = [];
  const checker = new BundleStreamChecker(plan, hash, { member: (index) => handed.push(index) }, deferredJudge(plan));
  checker.push(bundleBytes);
  await expect(checker.finish()).rejects.toBe(broken);
  expect(handed).toEqual([]);
  expect(hashed[0]).toBe(0);
});

describe('the conformance damaged bundles (SPEC §9), judged later as the page and the worker do', () => {
  const damagedDir = join(FIXTURES, 'damaged');
  const expected = JSON.parse(readFileSync(join(damagedDir, 'expected.json'), 'utf8'));
  const fixturePlan = (): BundleStreamPlan => bundleStreamPlan(expected.good, expected.members)!;
  type Case = { file: string; expect: { ok?: true; part?: string; damaged?: string[]; says?: string } };

  test.each(expected.cases as Case[])('$file', async ({ file, expect: expectation }) => {
    const bytes = new Uint8Array(readFileSync(join(damagedDir, file)));
    const streamPlan = fixturePlan();
    const good = expected.members.map((member: { sha256: string }) => member.sha256);
    for (const sizes of [[1], [13], WHOLE]) {
      const outcome = await stream(bytes, sizes, streamPlan);
      if (expectation.ok) {
        expect(outcome.ok).toBe(true);
        expect(outcome.handed.map(({ index }) => streamPlan.contents[index]!.sha256)).toEqual(good);
        continue;
      }
      expect(outcome.ok).toBe(false);
      const error = await reported(outcome.failure!, streamPlan);
      expect(error.code).toBe('E_BUNDLE_INTEGRITY');
      if (expectation.part) {
        expect(error.part).toBe(expectation.part);
        expect(error.damaged).toEqual([]);
        expect(outcome.handed).toEqual([]);
      }
      if (expectation.damaged) {
        expect([...error.damaged].sort()).toEqual([...expectation.damaged].sort());
        for (const key of expectation.damaged) expect(error.message).toContain(key);
        // Never a damaged member out, and nothing after the first damaged one.
        const firstDamaged = Math.min(...expectation.damaged.map((key) => streamPlan.contents.findIndex((c) => c.keys.includes(key))));
        expect(outcome.handed.map(({ index }) => index)).toEqual([...Array(firstDamaged).keys()]);
      }
      if (expectation.says) expect(error.message).toContain(expectation.says);
    }
  });
});
