/**
 * Fuzzing (issue 9 "Reliability and security"): the bundle decoder (SPEC §5), the index parser
 * and validator (§2–3), `verifyBundle` and the reader's accept path `acceptBundle` (§7), fed
 * random inputs and mutations of valid ones (the conformance fixtures and bundles the writer
 * makes). Properties: only the library's typed errors are thrown, never a TypeError or
 * RangeError; a mutated bundle is refused or gives exactly the original bytes; a single flipped
 * byte is named exactly; sizes claimed by a tiny buffer allocate nothing; messages stay small;
 * no run hangs (async runs have a time limit) and no promise is left rejected unhandled (see below).
 *
 * Also the parsers of what a client or a server sends: the `Range` header parsers
 * (`requestedRange`, `requestedRanges`, the Babylon adapter's `parseRange`) and the transport's
 * `multipart/byteranges` parser (`multipartOffsets`), on inputs up to 64 KB with long runs of
 * their grammar's characters, each call under a work bound (`guarded`, below).
 *
 * The seed is fixed. `FUZZ_RUNS` sets the runs per property (default 300 in `npm test`);
 * `npm run fuzz` runs 100,000 each and prints the counts (scripts/fuzz.mjs).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import vm from 'node:vm';
import { deflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import { parseRange as parseBabylonRange } from '../adapters/babylon/bundle-request.js';
import {
  acceptBundle,
  AwakeError,
  BundleFormatError,
  BundleIntegrityError,
  decodeBundle,
  encodeBundle,
  IndexValidationError,
  MAX_PROBLEMS_IN_MESSAGE,
  parseProjectIndex,
  parseProjectIndexJson,
  RangeResponseError,
  serializeIndex,
  UnsupportedIndexVersionError,
  verifyBundle,
  MemberDecodeError,
  StreamMemberDecoder,
  type EncodedMemberInfo,
  type BundledIndex,
  type BundleEntry,
  type BundleMemberInput,
  type ExpectedMember,
} from '../core/internal.js';
import { MAX_RANGE_HEADER_LENGTH, requestedRange, requestedRanges } from '../core/format/range-header.js';
import { MultipartStream } from '../core/net/multipart.js';
import { bundleStreamPlan, BundleStreamVerifier, refusalError, StreamRefusal } from '../core/read/verify/bundle-stream.js';
import { decodeMemberNode } from '../core/node/inflate.js';
import { multipartOffsets } from './helpers/multipart-offsets.js';
import { FIXTURES } from './helpers/cli.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const SEED = Number(process.env.FUZZ_SEED ?? 20261130);
/** A run of an async property that takes longer than this fails it (a hang is a failure). */
const RUN_TIME_LIMIT_MS = 10_000;
/** Room for a slow shared machine: about 5 ms per run, never under a minute. */
const TEST_TIMEOUT_MS = Math.max(60_000, RUNS * 5);

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const utf8 = new TextEncoder();

// ---------------------------------------------------------------------------------------------
// Counting: every property records its runs, so `npm run fuzz` can print them.

interface TargetReport {
  target: string;
  property: string;
  runs: number;
  failed: boolean;
  ms: number;
  seed: number;
}
const reports: TargetReport[] = [];

async function runProperty<T>(target: string, property: string, prop: fc.IProperty<T> | fc.IAsyncProperty<T>): Promise<void> {
  const started = performance.now();
  const details = await fc.check(prop as fc.IAsyncProperty<T>, {
    seed: SEED,
    numRuns: RUNS,
    ...(prop.isAsync() ? { timeout: RUN_TIME_LIMIT_MS } : {}),
  });
  reports.push({
    target,
    property,
    runs: details.numRuns,
    failed: details.failed,
    ms: Math.round(performance.now() - started),
    seed: SEED,
  });
  if (details.failed)
    throw new Error(`${target}, ${property}: ${String(details.errorInstance)}\n${fc.defaultReportMessage(details) ?? ''}`);
}

// No unhandled rejection: Jest 30 (jest-circus) listens to the real process's
// 'unhandledRejection' and fails the test during which one happens (the `process` a test sees is
// a copy whose listeners never hear it, so this file cannot listen itself).
afterAll(() => {
  if (process.env.FUZZ_REPORT)
    writeFileSync(process.env.FUZZ_REPORT, JSON.stringify({ seed: SEED, runsPerProperty: RUNS, reports }, null, 2));
});

// ---------------------------------------------------------------------------------------------
// Valid inputs: the conformance outputs (an independent writer) and bundles our writer makes.

interface ValidBundle {
  listing: BundleEntry;
  bytes: Uint8Array;
  members: ExpectedMember[];
}
interface ValidProject {
  name: string;
  index: BundledIndex;
  text: string;
  bundles: ValidBundle[];
}

function membersOf(index: BundledIndex, bundle: string): ExpectedMember[] {
  return index.files
    .filter((file) => file.bundle === bundle)
    .map((file) => ({ key: (file.path ?? file.id)!, offset: file.offset!, sizeBytes: file.sizeBytes, sha256: file.sha256 }));
}

/** Counterexamples show a fixture by its name, not its bytes. */
function named<T extends object>(name: string, value: T): T {
  return Object.assign(value, { [fc.toStringMethod]: () => name });
}

const projects: ValidProject[] = readdirSync(join(FIXTURES, 'expected'))
  .sort()
  .map((name) => {
    const dir = join(FIXTURES, 'expected', name);
    const text = readFileSync(join(dir, 'project.index.json'), 'utf8');
    const index = parseProjectIndexJson(text) as BundledIndex;
    const bundles = index.bundles.map((listing, i) =>
      named(`${name} bundles[${i}]`, {
        listing,
        bytes: new Uint8Array(readFileSync(join(dir, listing.url))),
        members: membersOf(index, listing.sha256),
      }),
    );
    return named(name, { name, index, text, bundles });
  });
/** Fixture bundles small enough to hash thousands of times a second. */
const smallFixtureBundles = projects.flatMap((project) => project.bundles).filter((bundle) => bundle.bytes.length <= 64 * 1024);

const segment = fc
  .string({ unit: fc.constantFrom('a', 'b', 'Z', '-', ' ', 'é', 'Ａ', '😀', '\u{10ffff}'), minLength: 1, maxLength: 5 })
  .filter((s) => s !== '.' && s !== '..');
const key = fc.array(segment, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
/** A bundle from our writer: shared contents, empty contents, non-ASCII keys. */
const writtenBundle: fc.Arbitrary<ValidBundle> = fc
  .tuple(
    fc.uniqueArray(key, { minLength: 1, maxLength: 8 }),
    fc.array(fc.uint8Array({ maxLength: 48 }), { minLength: 1, maxLength: 4 }),
    fc.array(fc.nat(), { maxLength: 8 }),
  )
  .map(([keys, pool, picks]) => {
    const input: BundleMemberInput[] = keys.map((k, i) => {
      const bytes = pool[(picks[i] ?? i) % pool.length]!;
      return { key: k, bytes, sha256: sha256(bytes) };
    });
    const bytes = encodeBundle(input);
    const members = decodeBundle(bytes).records.map(({ key: k, offset, sizeBytes, sha256: digest }) => ({
      key: k,
      offset,
      sizeBytes,
      sha256: digest,
    }));
    return { listing: { sha256: sha256(bytes), sizeBytes: bytes.length, url: 'b.awkb' }, bytes, members };
  });
const validBundle = fc.oneof(fc.constantFrom(...smallFixtureBundles), writtenBundle);

// ---------------------------------------------------------------------------------------------
// Byte mutations: flips, overwrites with extreme field values, truncation, splices.

type ByteMutation =
  | { kind: 'flip'; at: number; xor: number }
  | { kind: 'field'; at: number; width: 2 | 4 | 8; value: bigint }
  | { kind: 'truncate'; at: number }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'duplicate'; at: number; length: number };

const extremeField = fc.constantFrom(
  0n,
  1n,
  0x7fffn,
  0xffffn,
  0x7fffffffn,
  0xffffffffn,
  2n ** 32n,
  2n ** 40n,
  2n ** 53n,
  2n ** 63n,
  2n ** 64n - 1n,
);
const byteMutation: fc.Arbitrary<ByteMutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
  fc.record({
    kind: fc.constant('field' as const),
    at: fc.nat(),
    width: fc.constantFrom(2 as const, 4 as const, 8 as const),
    value: fc.oneof(extremeField, fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })),
  }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 64 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }) }),
  fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 128 }) }),
);

function mutateBytes(original: Uint8Array, mutations: readonly ByteMutation[]): Uint8Array {
  let bytes: Uint8Array = original.slice();
  for (const mutation of mutations) {
    const at = bytes.length === 0 ? 0 : mutation.at % bytes.length;
    switch (mutation.kind) {
      case 'flip':
        if (bytes.length > 0) bytes[at] ^= mutation.xor;
        break;
      case 'field': {
        let value = mutation.value & ((1n << BigInt(mutation.width * 8)) - 1n);
        for (let i = mutation.width - 1; i >= 0; i--, value >>= 8n) if (at + i < bytes.length) bytes[at + i] = Number(value & 0xffn);
        break;
      }
      case 'truncate':
        bytes = bytes.slice(0, mutation.at % (bytes.length + 1));
        break;
      case 'delete':
        bytes = concat(bytes.subarray(0, at), bytes.subarray(at + mutation.length));
        break;
      case 'insert':
        bytes = concat(bytes.subarray(0, at), mutation.bytes, bytes.subarray(at));
        break;
      case 'duplicate':
        bytes = concat(bytes.subarray(0, at + mutation.length), bytes.subarray(at));
        break;
    }
  }
  return bytes;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const sameBytes = (a: Uint8Array, b: Uint8Array) =>
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

// ---------------------------------------------------------------------------------------------
// JSON mutations: any field of a valid index set to a value of the wrong type, a huge or
// negative number, a NaN-like string, a long string, a value nested thousands deep; removed.

function nested(depth: number): unknown {
  let value: unknown = depth % 2 === 0 ? [] : {};
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { a: value };
  return value;
}

const DEEP_ARRAY = nested(100_000);
const DEEP_OBJECT = nested(100_001);
const LONG_STRING = 'x'.repeat(200_000);
const LONG_PATH = `${'a/'.repeat(30_000)}b`;

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    -1,
    -0,
    0.5,
    1.5,
    2 ** 53,
    2 ** 53 - 1,
    2 ** 64,
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER,
    Number.MIN_SAFE_INTEGER,
    4294967296,
  ),
  fc.constantFrom(
    'NaN',
    'Infinity',
    '-Infinity',
    '-1',
    '1e400',
    '0x10',
    '',
    ' ',
    '12',
    '../x',
    'a\\b',
    '/abs',
    'C:/x',
    '\u0000',
    '\ud800',
    'hmac-sha256',
  ),
  fc.constantFrom(null, true, false, [], {}, [[]], { formatVersion: 3 }),
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: 2, max: 2_000 }).map(nested),
  // Built once: a fresh value 10⁵ deep or a 200 KB string each run would cost more than the run.
  fc.constantFrom(DEEP_ARRAY, DEEP_OBJECT, LONG_STRING, LONG_PATH),
  fc.string({ unit: fc.constantFrom(...'0123456789abcdefA'), minLength: 63, maxLength: 65 }),
  fc.double(),
  fc.integer(),
);

type JsonPath = (string | number)[];
/** Places in `value` to mutate, down to the depth an index has (a nested hostile value is not walked). */
function pathsIn(value: unknown): JsonPath[] {
  const out: JsonPath[] = [];
  const pending: [unknown, JsonPath][] = [[value, []]];
  while (pending.length > 0) {
    const [node, path] = pending.pop()!;
    out.push(path);
    if (path.length >= 4 || node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) node.forEach((item, i) => pending.push([item, [...path, i]]));
    else for (const [name, item] of Object.entries(node)) pending.push([item, [...path, name]]);
  }
  return out;
}

type JsonMutation = { at: number; action: 'set' | 'delete' | 'copy-sibling'; value: unknown };
const jsonMutation: fc.Arbitrary<JsonMutation> = fc.record({
  at: fc.nat(),
  action: fc.constantFrom('set' as const, 'set' as const, 'delete' as const, 'copy-sibling' as const),
  value: hostileValue,
});

/** Applies the mutations to a fresh copy of `value` (so the fixture objects stay intact). */
function mutateJson(value: unknown, mutations: readonly JsonMutation[]): unknown {
  let root = structuredClone(value);
  for (const mutation of mutations) {
    const paths = pathsIn(root);
    const path = paths[mutation.at % paths.length]!;
    if (path.length === 0) {
      if (mutation.action === 'set') root = mutation.value;
      continue;
    }
    const parent = path.slice(0, -1).reduce((node: any, step) => node[step], root) as any;
    const last = path[path.length - 1]!;
    if (mutation.action === 'set') parent[last] = mutation.value;
    else if (mutation.action === 'delete') {
      if (Array.isArray(parent)) parent.splice(last as number, 1);
      else delete parent[last];
    } else if (Array.isArray(parent))
      parent.push(parent[last as number]); // the same object twice: a repeated entry
    else parent[`${String(last)}2`] = parent[last];
  }
  return root;
}

// ---------------------------------------------------------------------------------------------
// Outcomes: what each target may do.

const MAX_MESSAGE_CHARS = 16 * 1024;

function expectTypedError(error: unknown, allowed: (new (...args: never[]) => AwakeError)[]): void {
  if (!(error instanceof AwakeError) || !allowed.some((type) => error instanceof type)) throw error;
  if (error.message.length > MAX_MESSAGE_CHARS) throw new Error(`${error.name} message of ${error.message.length} characters`);
}

function decodeOutcome(bytes: Uint8Array): void {
  let decoded;
  try {
    decoded = decodeBundle(bytes);
  } catch (error) {
    expectTypedError(error, [BundleFormatError]);
    return;
  }
  // Accepted: everything the table says lies inside the bytes held, keys strictly increasing.
  let previous: Uint8Array | undefined;
  for (const record of decoded.records) {
    expect(record.offset).toBeGreaterThanOrEqual(decoded.dataStart);
    expect(record.offset + record.sizeBytes).toBeLessThanOrEqual(bytes.length);
    const keyBytes = utf8.encode(record.key);
    if (previous) expect(Buffer.compare(previous, keyBytes)).toBeLessThan(0);
    previous = keyBytes;
  }
}

function parseOutcome(value: unknown): BundledIndex | undefined {
  try {
    return (typeof value === 'string' ? parseProjectIndexJson(value) : parseProjectIndex(value)) as BundledIndex;
  } catch (error) {
    expectTypedError(error, [IndexValidationError, UnsupportedIndexVersionError]);
    if (error instanceof IndexValidationError) {
      expect(error.problemCount).toBeGreaterThan(0);
      expect(error.problems.length).toBeGreaterThan(0);
    }
    return undefined;
  }
}

/** What a verifier that refuses must say: the part, and damaged members only among those listed. */
function expectIntegrityError(error: unknown, members: readonly ExpectedMember[]): BundleIntegrityError {
  expectTypedError(error, [BundleIntegrityError]);
  const integrity = error as BundleIntegrityError;
  const keys = new Set(members.map((member) => member.key));
  expect(['header', 'table', 'members']).toContain(integrity.part);
  if (integrity.part === 'members') expect(integrity.damaged.length).toBeGreaterThan(0);
  else expect(integrity.damaged).toEqual([]);
  for (const name of integrity.damaged) expect(keys.has(name)).toBe(true);
  return integrity;
}

type Verifier = 'verifyBundle' | 'acceptBundle';

/** The contents a verifier hands out, by SHA-256, or its error. */
async function verifyOutcome(
  verifier: Verifier,
  bytes: Uint8Array,
  listing: BundleEntry,
  members: readonly ExpectedMember[],
): Promise<Map<string, Uint8Array> | BundleIntegrityError> {
  try {
    if (verifier === 'acceptBundle') return (await acceptBundle(bytes, listing, members)).contents;
    return new Map((await verifyBundle(bytes, listing, members)).map((member) => [member.sha256, member.bytes]));
  } catch (error) {
    return expectIntegrityError(error, members);
  }
}

/** The members a single flipped byte at `at` damages, or the part it must name (SPEC §7). */
function expectedDamage(bundle: ValidBundle, at: number): { part: 'header' | 'table' | 'members'; damaged: string[] } {
  // Magic, version, reserved: the header; member count and table size: judged with the table.
  if (at < 8) return { part: 'header', damaged: [] };
  const dataStart = decodeBundle(bundle.bytes).dataStart;
  if (at < dataStart) return { part: 'table', damaged: [] };
  const damaged = bundle.members
    .filter((member) => at >= member.offset && at < member.offset + member.sizeBytes)
    .map((member) => member.key);
  return { part: 'members', damaged };
}

// ---------------------------------------------------------------------------------------------

describe('fuzz: decodeBundle (SPEC §5)', () => {
  test(
    'random bytes only ever raise BundleFormatError',
    async () => {
      await runProperty('decodeBundle', 'random bytes', fc.property(fc.uint8Array({ maxLength: 400 }), decodeOutcome));
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'random bytes behind a valid magic and version only ever raise BundleFormatError',
    async () => {
      const head = new Uint8Array([0x41, 0x57, 0x4b, 0x42, 0, 1, 0, 0]);
      await runProperty(
        'decodeBundle',
        'random bytes after a valid magic',
        fc.property(fc.uint8Array({ maxLength: 400 }), (rest) => decodeOutcome(concat(head, rest))),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'mutated valid bundles decode (with every record inside the bytes) or raise BundleFormatError',
    async () => {
      await runProperty(
        'decodeBundle',
        'mutated valid bundles',
        fc.property(validBundle, fc.array(byteMutation, { minLength: 1, maxLength: 4 }), (bundle, mutations) => {
          decodeOutcome(mutateBytes(bundle.bytes, mutations));
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a tiny buffer claiming enormous counts and sizes is refused at once, allocating nothing from them',
    async () => {
      const huge = fc.oneof(fc.constantFrom(0xffffffff, 0x80000000, 0x7fffffff, 0x10000000, 1 << 20), fc.nat({ max: 0xffffffff }));
      const before = process.memoryUsage().arrayBuffers;
      let highest = before;
      let runs = 0;
      await runProperty(
        'decodeBundle',
        'enormous claims in a tiny buffer',
        fc.property(
          huge,
          huge,
          fc.array(fc.tuple(fc.integer({ min: 0, max: 0xffff }), extremeField, extremeField), { maxLength: 3 }),
          fc.nat({ max: 64 }),
          (count, tableSize, records, padding) => {
            const parts: number[] = [0x41, 0x57, 0x4b, 0x42, 0, 1, 0, 0, ...u32(count), ...u32(tableSize)];
            for (const [keyLength, offset, size] of records)
              parts.push(...u16(keyLength), 0x61, ...u64(offset), ...u64(size), ...new Array(32).fill(0));
            const bytes = concat(new Uint8Array(parts), new Uint8Array(padding));
            expect(() => decodeBundle(bytes)).toThrow(BundleFormatError);
            // memoryUsage() costs more than a run: sample it.
            if (++runs % 16 === 0) highest = Math.max(highest, process.memoryUsage().arrayBuffers);
          },
        ),
      );
      expect(highest - before).toBeLessThan(4 * 1024 * 1024);
    },
    TEST_TIMEOUT_MS,
  );
});

const u16 = (n: number) => [(n >>> 8) & 0xff, n & 0xff];
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const u64 = (n: bigint) => Array.from({ length: 8 }, (_, i) => Number((n >> BigInt(56 - i * 8)) & 0xffn));

describe('fuzz: parseProjectIndex (SPEC §2–3)', () => {
  test(
    'any JSON value is an index or a typed index error with a small message',
    async () => {
      await runProperty(
        'parseProjectIndex',
        'random JSON values',
        fc.property(fc.jsonValue(), (value) => {
          parseOutcome(value);
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'any JavaScript value (not only JSON) is an index or a typed index error',
    async () => {
      await runProperty(
        'parseProjectIndex',
        'random JavaScript values',
        fc.property(fc.anything({ withBigInt: true, withNullPrototype: true, withSparseArray: true, withBoxedValues: true }), (value) => {
          parseOutcome(value);
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'valid indexes with fields set to hostile values, removed or repeated: a typed error, or an index that serializes and reads back',
    async () => {
      await runProperty(
        'parseProjectIndex',
        'mutated valid indexes',
        fc.property(fc.constantFrom(...projects), fc.array(jsonMutation, { minLength: 1, maxLength: 3 }), (project, mutations) => {
          const parsed = parseOutcome(mutateJson(project.index, mutations));
          if (parsed) expect(parseOutcome(serializeIndex(parsed))).toBeDefined();
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'mutated index JSON text: a typed error or an index',
    async () => {
      const lenient = new TextDecoder();
      await runProperty(
        'parseProjectIndexJson',
        'mutated index text',
        fc.property(fc.constantFrom(...projects), fc.array(byteMutation, { minLength: 1, maxLength: 4 }), (project, mutations) => {
          parseOutcome(lenient.decode(mutateBytes(utf8.encode(project.text), mutations)));
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'index text nested up to 10⁵ deep, closed or not, is a typed error',
    async () => {
      await runProperty(
        'parseProjectIndexJson',
        'deeply nested text',
        fc.property(
          fc.oneof(
            { arbitrary: fc.integer({ min: 1, max: 3_000 }), weight: 19 },
            { arbitrary: fc.integer({ min: 3_000, max: 100_000 }), weight: 1 },
          ),
          fc.constantFrom('[', '{"a":'),
          fc.boolean(),
          fc.constantFrom('files', 'formatVersion', 'rootPath', 'pathIds', 'bundles'),
          (depth, open, closed, field) => {
            const close = open === '[' ? ']' : '}';
            const deep = `${open.repeat(depth)}0${closed ? close.repeat(depth) : ''}`;
            expect(parseOutcome(`{"formatVersion":3,"rootPath":"/p","bundles":[],"files":[],"${field}":${deep}}`)).toBeUndefined();
          },
        ),
      );
    },
    TEST_TIMEOUT_MS,
  );
});

describe.each(['verifyBundle', 'acceptBundle'] as const)('fuzz: %s (SPEC §7 "Verified")', (verifier) => {
  test(
    'a mutated bundle is refused with a BundleIntegrityError, or gives exactly the original contents',
    async () => {
      await runProperty(
        verifier,
        'mutated bundles',
        fc.asyncProperty(validBundle, fc.array(byteMutation, { minLength: 1, maxLength: 4 }), async (bundle, mutations) => {
          const mutated = mutateBytes(bundle.bytes, mutations);
          const outcome = await verifyOutcome(verifier, mutated, bundle.listing, bundle.members);
          if (outcome instanceof BundleIntegrityError) {
            expect(sameBytes(mutated, bundle.bytes)).toBe(false);
            return;
          }
          // Accepted: only possible when the mutations cancelled out, and then every content is the original.
          expect(sameBytes(mutated, bundle.bytes)).toBe(true);
          for (const member of bundle.members)
            expect(sameBytes(outcome.get(member.sha256)!, bundle.bytes.subarray(member.offset, member.offset + member.sizeBytes))).toBe(
              true,
            );
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'one flipped byte is named exactly: the header, the table, or the members holding it',
    async () => {
      await runProperty(
        verifier,
        'single flipped byte',
        fc.asyncProperty(validBundle, fc.nat(), fc.integer({ min: 1, max: 255 }), async (bundle, where, xor) => {
          const at = where % bundle.bytes.length;
          const flipped = bundle.bytes.slice();
          flipped[at] ^= xor;
          const outcome = await verifyOutcome(verifier, flipped, bundle.listing, bundle.members);
          expect(outcome).toBeInstanceOf(BundleIntegrityError);
          const error = outcome as BundleIntegrityError;
          const expected = expectedDamage(bundle, at);
          expect({ part: error.part, damaged: [...error.damaged].sort() }).toEqual({
            part: expected.part,
            damaged: expected.damaged.sort(),
          });
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'with a mutated index (that the parser accepts), whatever is handed out matches its entry',
    async () => {
      const fixture = fc.constantFrom(...projects.filter((project) => project.bundles.every((bundle) => bundle.bytes.length <= 64 * 1024)));
      await runProperty(
        verifier,
        'mutated index, real bytes',
        fc.asyncProperty(
          fixture,
          fc.array(jsonMutation, { minLength: 1, maxLength: 3 }),
          fc.array(byteMutation, { maxLength: 2 }),
          async (project, mutations, byteMutations) => {
            const index = parseOutcome(mutateJson(project.index, mutations));
            if (!index || index.formatVersion !== 3) return;
            for (const [i, listing] of index.bundles.entries()) {
              const original = project.bundles[i % project.bundles.length]!.bytes;
              const members = membersOf(index, listing.sha256);
              const outcome = await verifyOutcome(verifier, mutateBytes(original, byteMutations), listing, members);
              if (outcome instanceof BundleIntegrityError) continue;
              for (const member of members) {
                const bytes = outcome.get(member.sha256);
                expect(bytes).toBeDefined();
                expect(bytes!.length).toBe(member.sizeBytes);
                expect(sha256(bytes!)).toBe(member.sha256);
              }
            }
          },
        ),
      );
    },
    TEST_TIMEOUT_MS,
  );
});

// ---------------------------------------------------------------------------------------------
// Range headers and multipart/byteranges bodies: the parsers `serve`, the service
// worker, the Babylon adapter and the transport run on what a client or a server sends. Inputs go
// up to 64 KB, with long runs of the characters their grammars are made of.
//
// Work bound: every call runs under a `vm` watchdog (`CALL_GUARD_MS`), so a parser that backtracks
// is stopped and fails its property at once instead of holding the run for minutes. The guard is
// thousands of times what a linear call needs (microseconds, also at 64 KB) and below what the old
// `requestedRange` took on a 2 KB header (3 s); it bounds work, it does not time speed.

const CALL_GUARD_MS = 2_000;
const guardContext = vm.createContext({ call: undefined as unknown });
const guardScript = new vm.Script('call()');

/** `call()`, stopped with an Error when it runs past CALL_GUARD_MS. */
function guarded<T>(call: () => T): T {
  guardContext.call = call;
  try {
    return guardScript.runInContext(guardContext, { timeout: CALL_GUARD_MS }) as T;
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT')
      throw new Error(`one call ran past ${CALL_GUARD_MS} ms: super-linear work`, { cause: error });
    throw error;
  } finally {
    guardContext.call = undefined;
  }
}

const rangeToken = fc.constantFrom(
  'bytes',
  'BYTES',
  '=',
  '-',
  ',',
  ' ',
  '\t',
  '\r\n',
  '\u00a0',
  '\u3000',
  '\ufeff',
  '0',
  '1',
  '7',
  '9',
  '18446744073709551616',
  'x',
  '*',
  '/',
  '+',
  '.',
  'e3',
  '２',
);
/** A few tokens, often behind a valid start: short enough for the old regular expressions to answer quickly. */
const shortRangeHeader = fc
  .tuple(fc.constantFrom('', 'bytes=', ' bytes = ', 'bytes=0-1,'), fc.array(rangeToken, { maxLength: 12 }))
  .map(([head, tokens]) => head + tokens.join(''));
/** Long runs of one token each, up to 64 KB in all. */
const runLength = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 8 }) },
  { weight: 2, arbitrary: fc.integer({ min: 500, max: 4096 }) },
  { weight: 1, arbitrary: fc.integer({ min: 4096, max: 32 * 1024 }) },
);
const tokenRun = fc.tuple(rangeToken, runLength).map(([token, n]) => token.repeat(Math.max(1, Math.floor(n / token.length))));
const longRangeHeader = fc
  .tuple(fc.constantFrom('', 'bytes=', 'bytes ='), fc.array(tokenRun, { minLength: 1, maxLength: 6 }))
  .map(([head, runs]) => (head + runs.join('')).slice(0, 64 * 1024));
/** The shape that backtracked: `bytes=` and long runs of spaces around digits and a dash, and something after. */
const hostileRangeHeader = fc
  .record({
    n: fc.integer({ min: 256, max: 8 * 1024 }),
    space: fc.constantFrom(' ', '\t', '\u00a0'),
    digit: fc.constantFrom('', '0', '12'),
    end: fc.constantFrom('x', ',', '-', '', ',0-1'),
  })
  .map(
    ({ n, space, digit, end }) => `bytes=${space.repeat(n)}${digit}${space.repeat(n)}-${space.repeat(n)}${digit}${space.repeat(n)}${end}`,
  );
const rangeHeader = fc.oneof(shortRangeHeader, longRangeHeader, hostileRangeHeader);
const fileSize = fc.oneof(fc.constantFrom(0, 1, 10, 100, Number.MAX_SAFE_INTEGER), fc.nat());

/** A range the parsers may hand out for a file of `size` bytes. */
function expectRangeWithin(range: { start: number; end: number }, size: number): void {
  expect(Number.isSafeInteger(range.start) && Number.isSafeInteger(range.end)).toBe(true);
  expect(0 <= range.start && range.start <= range.end && range.end < size).toBe(true);
}

/** The parsers as they were before issue 20 (regular expressions), the grammar's reference on short inputs. */
const reference = {
  rangeSpec(first: string, last: string, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
    if (first === '' && last === '') return undefined;
    if (first === '') {
      const suffix = Number(last);
      return suffix === 0 || size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - suffix), end: size - 1 };
    }
    const start = Number(first);
    if (last !== '' && Number(last) < start) return undefined;
    if (start >= size) return 'unsatisfiable';
    return { start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) };
  },
  requestedRange(header: string, size: number) {
    const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
    return match ? reference.rangeSpec(match[1]!, match[2]!, size) : undefined;
  },
  requestedRanges(header: string, size: number, maxRanges: number) {
    const match = /^\s*bytes\s*=(.*)$/is.exec(header);
    if (!match) return undefined;
    const specs = match[1]!
      .split(',')
      .map((spec) => spec.trim())
      .filter((spec) => spec !== '');
    if (specs.length === 0 || specs.length > maxRanges) return undefined;
    const ranges: { start: number; end: number }[] = [];
    for (const spec of specs) {
      const parts = /^(\d*)\s*-\s*(\d*)$/.exec(spec);
      const range = parts ? reference.rangeSpec(parts[1]!, parts[2]!, size) : undefined;
      if (range === undefined) return undefined;
      if (range !== 'unsatisfiable') ranges.push(range);
    }
    return ranges.length === 0 ? 'unsatisfiable' : ranges;
  },
};

// ---------------------------------------------------------------------------------------------
// Encoded members (issue 28, SPEC §5a): the decoders, and the reader's checks of version 2 bundles.

/** The reference-made encoded publish (conformance/encoded/text), its members with their stored sizes and encodings. */
const encodedBundles: (ValidBundle & { decoded: Map<string, Uint8Array> })[] = (() => {
  const dir = join(FIXTURES, 'encoded', 'text');
  const index = parseProjectIndexJson(readFileSync(join(dir, 'project.index.json'), 'utf8')) as BundledIndex;
  const tree = join(FIXTURES, 'trees', 'text');
  return index.bundles.map((listing) => {
    const files = index.files.filter((file) => file.bundle === listing.sha256);
    return {
      listing,
      bytes: new Uint8Array(readFileSync(join(dir, listing.url))),
      members: files.map((file) => ({
        key: file.path!,
        offset: file.offset!,
        sizeBytes: file.sizeBytes,
        sha256: file.sha256,
        ...(file.encoding ? { storedBytes: file.storedBytes!, encoding: file.encoding } : {}),
      })),
      decoded: new Map(files.map((file) => [file.sha256, new Uint8Array(readFileSync(join(tree, file.path!)))])),
    };
  });
})();

const decoderKinds = [
  ['node:zlib', (stored: Uint8Array, member: EncodedMemberInfo) => decodeMemberNode(stored, member)],
  [
    'DecompressionStream',
    (stored: Uint8Array, member: EncodedMemberInfo) => {
      const decoder = new StreamMemberDecoder(member);
      decoder.write(stored);
      return decoder.end();
    },
  ],
] as const;

const deflatedText = (() => {
  const plain = utf8.encode(Array.from({ length: 400 }, (_, i) => `{"tile": ${i % 37}, "layer": "ground-${i % 5}"},`).join('\n'));
  return { plain, stored: new Uint8Array(deflateRawSync(plain)) };
})();

describe.each(decoderKinds)('fuzz: the %s member decoder (SPEC §5a)', (name, decode) => {
  test(
    'truncated, flipped and expanded streams decode to exactly the member, or are refused with a MemberDecodeError',
    async () => {
      await runProperty(
        name,
        'mutated deflate streams',
        fc.asyncProperty(
          fc.array(byteMutation, { minLength: 1, maxLength: 4 }),
          fc.integer({ min: -64, max: 64 }),
          async (mutations, sizeSlip) => {
            const stored = mutateBytes(deflatedText.stored, mutations);
            // A listed size off by a little, now and then: a stream that is fine but not this member.
            const sizeBytes = Math.max(0, deflatedText.plain.length + (sizeSlip % 4 === 0 ? sizeSlip : 0));
            const member = { key: 'maps/fuzz.json', sizeBytes, encoding: 'deflate-raw' };
            try {
              const out = await decode(stored, member);
              expect(out.length).toBe(sizeBytes);
              // Decoded to the listed size: the reader then checks the SHA-256, so a different output is caught there.
            } catch (error) {
              expectTypedError(error, [MemberDecodeError]);
              expect((error as MemberDecodeError).key).toBe('maps/fuzz.json');
              expect(['too-long', 'too-short', 'trailing-bytes', 'corrupt']).toContain((error as MemberDecodeError).problem);
            }
          },
        ),
      );
    },
    TEST_TIMEOUT_MS,
  );
});

describe.each(['verifyBundle', 'acceptBundle', 'streamed'] as const)('fuzz: %s of encoded bundles (SPEC §5a, §7)', (verifier) => {
  test(
    'a mutated version 2 bundle is refused with a BundleIntegrityError, or gives exactly the decoded members',
    async () => {
      await runProperty(
        `${verifier} (encoded)`,
        'mutated encoded bundles',
        fc.asyncProperty(
          fc.constantFrom(...encodedBundles),
          fc.array(byteMutation, { minLength: 1, maxLength: 4 }),
          fc.integer({ min: 1, max: 4096 }),
          async (bundle, mutations, chunk) => {
            const mutated = mutateBytes(bundle.bytes, mutations);
            const outcome =
              verifier === 'streamed'
                ? await streamedOutcome(mutated, bundle, chunk)
                : await verifyOutcome(verifier, mutated, bundle.listing, bundle.members);
            if (outcome instanceof BundleIntegrityError) {
              expect(sameBytes(mutated, bundle.bytes)).toBe(false);
              if (outcome.cause !== undefined) expectTypedError(outcome.cause, [MemberDecodeError, BundleFormatError]);
              return;
            }
            expect(sameBytes(mutated, bundle.bytes)).toBe(true);
            for (const [sha, bytes] of bundle.decoded) expect(sameBytes(outcome.get(sha)!, bytes)).toBe(true);
          },
        ),
      );
    },
    TEST_TIMEOUT_MS,
  );
});

/** The bundle streamed in `chunk`-byte pieces through the streamed check (SPEC §7 "Streamed members"), decoding as it goes. */
async function streamedOutcome(
  bytes: Uint8Array,
  bundle: ValidBundle,
  chunk: number,
): Promise<Map<string, Uint8Array> | BundleIntegrityError> {
  const plan = bundleStreamPlan(bundle.listing, bundle.members)!;
  const out = new Map<string, Uint8Array>();
  const verifier = new BundleStreamVerifier(plan, async (b) => sha256(b), {
    member: (index, member) => out.set(plan.contents[index]!.sha256, member),
  });
  try {
    for (let at = 0; at < Math.min(bytes.length, bundle.listing.sizeBytes); at += chunk)
      verifier.push(bytes.subarray(at, Math.min(at + chunk, bytes.length, bundle.listing.sizeBytes)));
    if (bytes.length > bundle.listing.sizeBytes)
      throw new StreamRefusal({ part: 'members', message: 'more than the listed size', damaged: bundle.members.map((m) => m.key) });
    await verifier.finish();
    return out;
  } catch (error) {
    if (error instanceof StreamRefusal) return expectIntegrityError(refusalError(error.failure, 'http://127.0.0.1/x.awkb'), bundle.members);
    throw error;
  }
}

describe("fuzz: Range headers (requestedRange, requestedRanges, the Babylon adapter's parseRange)", () => {
  test(
    'requestedRange: any header up to 64 KB gives a range inside the file, unsatisfiable or none, within the work bound',
    async () => {
      await runProperty(
        'requestedRange',
        'random and hostile headers',
        fc.property(rangeHeader, fileSize, (header, size) => {
          const range = guarded(() => requestedRange(header, size));
          if (range !== undefined && range !== 'unsatisfiable') expectRangeWithin(range, size);
          if (header.length > MAX_RANGE_HEADER_LENGTH) expect(range).toBeUndefined();
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'requestedRange: the grammar of the old regular expression, on short headers',
    async () => {
      await runProperty(
        'requestedRange',
        'same answers as the old parser',
        fc.property(shortRangeHeader, fileSize, (header, size) => {
          expect(requestedRange(header, size)).toEqual(reference.requestedRange(header, size));
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'requestedRanges: sorted, joined ranges inside the file, at most maxRanges parts asked for, within the work bound',
    async () => {
      await runProperty(
        'requestedRanges',
        'random and hostile headers',
        fc.property(rangeHeader, fileSize, fc.integer({ min: 1, max: 64 }), (header, size, maxRanges) => {
          const ranges = guarded(() => requestedRanges(header, size, maxRanges));
          if (ranges === undefined || ranges === 'unsatisfiable') return;
          expect(ranges.length).toBeGreaterThan(0);
          expect(ranges.length).toBeLessThanOrEqual(maxRanges);
          ranges.forEach((range, i) => {
            expectRangeWithin(range, size);
            if (i > 0) expect(range.start).toBeGreaterThan(ranges[i - 1]!.end + 1); // overlapping and adjacent ones are joined
          });
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'requestedRanges: the grammar of the old parser, on short headers',
    async () => {
      await runProperty(
        'requestedRanges',
        'same answers as the old parser',
        fc.property(shortRangeHeader, fileSize, fc.integer({ min: 1, max: 4 }), (header, size, maxRanges) => {
          const ranges = requestedRanges(header, size, maxRanges);
          const expected = reference.requestedRanges(header, size, maxRanges);
          if (Array.isArray(expected) && Array.isArray(ranges)) {
            // The old parser's ranges, joined: every byte it asked for, and no other.
            const covered = (list: { start: number; end: number }[], at: number) =>
              list.some((range) => range.start <= at && at <= range.end);
            const edges = expected
              .flatMap((range) => [range.start - 1, range.start, range.end, range.end + 1])
              .concat(ranges.flatMap((range) => [range.start - 1, range.start, range.end, range.end + 1]));
            for (const at of edges) expect(covered(ranges, at)).toBe(covered(expected, at));
          } else expect(ranges).toEqual(expected);
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "the Babylon adapter's parseRange: a range inside the file or none, within the work bound",
    async () => {
      await runProperty(
        'babylon parseRange',
        'random and hostile headers',
        fc.property(fc.option(rangeHeader, { nil: undefined }), fc.integer({ min: 0, max: 1 << 30 }), (header, size) => {
          const range = guarded(() => parseBabylonRange(header, size));
          if (range) expectRangeWithin({ start: range[0], end: range[1] }, size);
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );
});

// multipart/byteranges: bodies built as `serve` builds them (a preamble, transport padding, extra
// part headers, parts that cover several ranges), then mutated; and bodies made of long runs.

const RESOURCE = Uint8Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) & 0xff);
const MULTIPART_URL = 'https://cdn.example/b.awkb';
const latin1 = (text: string) => Uint8Array.from(text, (char) => char.charCodeAt(0) & 0xff);

interface MultipartCase {
  ranges: { offset: number; length: number }[];
  body: Uint8Array;
  contentType: string;
}

const multipartCase: fc.Arbitrary<MultipartCase> = fc
  .record({
    cuts: fc.uniqueArray(fc.integer({ min: 0, max: RESOURCE.length }), { minLength: 2, maxLength: 12 }),
    boundary: fc.string({ unit: fc.constantFrom(..."azAZ09_-'()+./:=?"), minLength: 1, maxLength: 70 }),
    quoted: fc.boolean(),
    preamble: fc.constantFrom('', 'a preamble\r\n', '\r\n'),
    padding: fc.constantFrom('', ' ', '\t \t'),
    extraHeader: fc.constantFrom('', 'X-Note: part\r\n', `X-Long: ${'y'.repeat(3000)}\r\n`),
    joinAll: fc.boolean(),
  })
  .map(({ cuts, boundary, quoted, preamble, padding, extraHeader, joinAll }) => {
    // Sorted cuts give sorted ranges that do not overlap: [c0, c1), [c2, c3), …
    const sorted = [...cuts].sort((a, b) => a - b);
    const ranges: { offset: number; length: number }[] = [];
    for (let i = 0; i + 1 < sorted.length; i += 2)
      if (sorted[i + 1]! > sorted[i]!) ranges.push({ offset: sorted[i]!, length: sorted[i + 1]! - sorted[i]! });
    if (ranges.length === 0) ranges.push({ offset: 0, length: 1 });
    const parts = joinAll
      ? [{ offset: ranges[0]!.offset, length: ranges.at(-1)!.offset + ranges.at(-1)!.length - ranges[0]!.offset }]
      : ranges;
    let text = preamble;
    const chunks: Uint8Array[] = [];
    for (const part of parts) {
      text += `--${boundary}${padding}\r\nContent-Type: application/octet-stream\r\n${extraHeader}Content-Range: bytes ${part.offset}-${part.offset + part.length - 1}/${RESOURCE.length}\r\n\r\n`;
      chunks.push(latin1(text), RESOURCE.subarray(part.offset, part.offset + part.length));
      text = '\r\n';
    }
    chunks.push(latin1(`${text}--${boundary}--\r\n`));
    return { ranges, body: concat(...chunks), contentType: `multipart/byteranges; boundary=${quoted ? `"${boundary}"` : boundary}` };
  });

/** Content-Types with long runs of what the boundary parameter is made of. */
const hostileContentType = fc
  .tuple(
    fc.array(fc.tuple(fc.constantFrom(';', ' ', 'boundary', '=', '"', 'b', ',', '\t'), fc.integer({ min: 1, max: 8 * 1024 })), {
      minLength: 1,
      maxLength: 6,
    }),
  )
  .map(([runs]) =>
    `multipart/byteranges${runs.map(([token, n]) => token.repeat(Math.max(1, Math.floor(n / token.length)))).join('')}`.slice(0, 64 * 1024),
  );
/** Bodies made of long runs of delimiter, header and line-break pieces. */
const hostileBody = fc
  .array(
    fc.tuple(
      fc.constantFrom('--', '--b', '\r\n', '\r\n\r\n', ' ', 'Content-Range: bytes ', '0-9/4096', ':', '-'),
      fc.integer({ min: 1, max: 16 * 1024 }),
    ),
    { minLength: 1, maxLength: 6 },
  )
  .map((runs) =>
    latin1(
      runs
        .map(([token, n]) => token.repeat(Math.max(1, Math.floor(n / token.length))))
        .join('')
        .slice(0, 64 * 1024),
    ),
  );

/** Where `multipartOffsets` may point: inside the body, for each range asked for; or it refuses with RangeResponseError. */
function multipartOutcome(testCase: MultipartCase): number[] | undefined {
  let at: number[];
  try {
    at = guarded(() => multipartOffsets(testCase.body, testCase.contentType, MULTIPART_URL, testCase.ranges));
  } catch (error) {
    expectTypedError(error, [RangeResponseError]);
    expect((error as RangeResponseError).url).toBe(MULTIPART_URL);
    return undefined;
  }
  expect(at).toHaveLength(testCase.ranges.length);
  at.forEach((offset, i) => {
    expect(Number.isSafeInteger(offset) && offset >= 0).toBe(true);
    expect(offset + testCase.ranges[i]!.length).toBeLessThanOrEqual(testCase.body.length);
  });
  return at;
}

describe("fuzz: multipart/byteranges (the transport's multipartOffsets, behind Transport.getRanges)", () => {
  test(
    "a well-formed body gives each range's exact bytes",
    async () => {
      await runProperty(
        'multipartOffsets',
        'well-formed bodies',
        fc.property(multipartCase, (testCase) => {
          const at = multipartOutcome(testCase);
          expect(at).toBeDefined();
          testCase.ranges.forEach((range, i) =>
            expect(
              sameBytes(
                testCase.body.subarray(at![i]!, at![i]! + range.length),
                RESOURCE.subarray(range.offset, range.offset + range.length),
              ),
            ).toBe(true),
          );
        }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a mutated body or Content-Type points inside the body or is refused with RangeResponseError, within the work bound',
    async () => {
      await runProperty(
        'multipartOffsets',
        'mutated bodies and Content-Types',
        fc.property(
          multipartCase,
          fc.array(byteMutation, { minLength: 1, maxLength: 4 }),
          fc.option(hostileContentType, { nil: undefined }),
          (testCase, mutations, contentType) => {
            multipartOutcome({
              ...testCase,
              body: mutateBytes(testCase.body, mutations),
              contentType: contentType ?? testCase.contentType,
            });
          },
        ),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'bodies and Content-Types of long runs up to 64 KB are refused with RangeResponseError, within the work bound',
    async () => {
      await runProperty(
        'multipartOffsets',
        'long runs',
        fc.property(
          hostileBody,
          fc.oneof(hostileContentType, fc.constant('multipart/byteranges; boundary=b')),
          fc.array(fc.integer({ min: 0, max: 4095 }), { minLength: 1, maxLength: 4 }),
          (body, contentType, offsets) => {
            const ranges = [...new Set(offsets)].sort((a, b) => a - b).map((offset) => ({ offset, length: 1 }));
            multipartOutcome({ body, contentType, ranges });
          },
        ),
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'pushed in chunks as it arrives (MultipartStream, behind Transport.streamRanges): the same bytes at the same offsets, or the same refusal',
    async () => {
      /** The resource bytes the parser gave, as runs of contiguous bytes `[offset, bytes]`; or the refusal. */
      const streamed = (testCase: MultipartCase, cuts: number[]): [number, Buffer][] | 'refused' => {
        const runs: [number, Buffer[]][] = [];
        try {
          const parser = new MultipartStream(testCase.contentType, MULTIPART_URL, testCase.ranges, (offset, bytes) => {
            const last = runs[runs.length - 1];
            const end = last ? last[0] + last[1].reduce((sum, b) => sum + b.length, 0) : -1;
            if (last && end === offset) last[1].push(Buffer.from(bytes));
            else if (bytes.length > 0) runs.push([offset, [Buffer.from(bytes)]]);
          });
          let at = 0;
          for (const cut of cuts.map((c) => c % (testCase.body.length + 1)).sort((a, b) => a - b)) {
            parser.push(testCase.body.subarray(at, Math.max(at, cut)));
            at = Math.max(at, cut);
          }
          parser.push(testCase.body.subarray(at));
          parser.end();
        } catch (error) {
          expectTypedError(error, [RangeResponseError]);
          return 'refused';
        }
        return runs.map(([offset, pieces]) => [offset, Buffer.concat(pieces)]);
      };
      await runProperty(
        'multipartOffsets',
        'chunked bodies',
        fc.property(
          multipartCase,
          fc.array(byteMutation, { maxLength: 2 }),
          fc.array(fc.nat(), { maxLength: 12 }),
          (testCase, mutations, cuts) => {
            const mutated = { ...testCase, body: mutateBytes(testCase.body, mutations) };
            const whole = streamed(mutated, []);
            expect(whole === 'refused').toBe(multipartOutcome(mutated) === undefined);
            const chunked = streamed(mutated, cuts);
            if (whole === 'refused') return void expect(chunked).toBe('refused');
            expect(chunked).toEqual(whole);
            if (mutations.length === 0)
              for (const [offset, bytes] of whole) expect(sameBytes(bytes, RESOURCE.subarray(offset, offset + bytes.length))).toBe(true);
          },
        ),
      );
    },
    TEST_TIMEOUT_MS,
  );
});

describe('bounded messages', () => {
  test('a bundle with thousands of damaged members names them all in `damaged`, and the first 20 in the message', async () => {
    const input = Array.from({ length: 5000 }, (_, i) => {
      const bytes = utf8.encode(`content ${i}`);
      return { key: `m/${String(i).padStart(5, '0')}`, bytes, sha256: sha256(bytes) };
    });
    const bytes = encodeBundle(input);
    const members = decodeBundle(bytes).records.map(({ key: k, offset, sizeBytes, sha256: digest }) => ({
      key: k,
      offset,
      sizeBytes,
      sha256: digest,
    }));
    const damagedBytes = bytes.slice();
    for (const member of members) damagedBytes[member.offset] ^= 1;
    const error = await verifyBundle(damagedBytes, { sha256: sha256(bytes), sizeBytes: bytes.length, url: 'b.awkb' }, members).catch(
      (caught) => caught,
    );
    expect(error).toBeInstanceOf(BundleIntegrityError);
    expect(error.damaged).toHaveLength(5000);
    expect(error.message).toContain('"m/00000"');
    expect(error.message).toContain(`"m/${String(MAX_PROBLEMS_IN_MESSAGE - 1).padStart(5, '0')}"`);
    expect(error.message).not.toContain(`"m/${String(MAX_PROBLEMS_IN_MESSAGE).padStart(5, '0')}"`);
    expect(error.message).toContain('and 4980 more');
    expect(error.message.length).toBeLessThan(2000);
  });

  test('a member key of 60,000 characters is previewed in the messages of verifyBundle and decodeBundle (found by fuzzing)', async () => {
    const longKey = `${'a/'.repeat(30_000)}b`;
    const content = utf8.encode('content');
    const bytes = encodeBundle([{ key: longKey, bytes: content, sha256: sha256(content) }]);
    const [member] = decodeBundle(bytes).records;
    const listing = { sha256: sha256(bytes), sizeBytes: bytes.length, url: 'b.awkb' };
    const damagedMember = bytes.slice();
    damagedMember[member!.offset] ^= 1;
    const truncated = bytes.subarray(0, bytes.length - 1);
    for (const damaged of [damagedMember, truncated]) {
      const error = await verifyBundle(damaged, listing, [member!]).catch((caught) => caught);
      expect(error).toBeInstanceOf(BundleIntegrityError);
      expect(error.damaged).toEqual([longKey]);
      expect(error.message).toContain('… (60001 characters)');
      expect(error.message.length).toBeLessThan(2000);
    }
    expect(() => decodeBundle(truncated)).toThrow(/member "(a\/)+a?"… \(60001 characters\) \(offset/);
    // The member's bytes match, the listed SHA-256 does not, and the table has no record of that key: the table is named.
    const differing = await verifyBundle(bytes, { ...listing, sha256: sha256(content) }, [{ ...member!, key: `${longKey}x` }]).catch(
      (caught) => caught,
    );
    expect(differing.part).toBe('table');
    expect(differing.message).toContain('no record for "a/a/');
    expect(differing.message.length).toBeLessThan(2000);
  });

  test('a 64 KB Content-Type, or a 4 KB part Content-Range, is cut in a multipart RangeResponseError (found by fuzzing)', () => {
    const ranges = [{ offset: 0, length: 1 }];
    const longType = `multipart/byteranges${';'.repeat(64 * 1024)}`;
    const longPartHeader = latin1(`--b\r\nContent-Range: ${'9'.repeat(4000)}\r\n\r\n`);
    const messages = [
      [latin1('--b\r\n'), longType],
      [longPartHeader, 'multipart/byteranges; boundary=b'],
    ].map(([body, type]) => {
      try {
        multipartOffsets(body as Uint8Array, type as string, MULTIPART_URL, ranges);
      } catch (error) {
        expect(error).toBeInstanceOf(RangeResponseError);
        return (error as RangeResponseError).message;
      }
      throw new Error('accepted');
    });
    expect(messages[0]).toMatch(/no boundary in Content-Type: multipart\/byteranges;+… \(65556 characters\)$/);
    expect(messages[1]).toContain(`has no valid Content-Range (${'9'.repeat(200)}… (4000 characters))`);
    for (const message of messages) expect(message.length).toBeLessThan(1000);
  });

  test('an index that claims enormous sizes for a tiny bundle is refused without allocating from them', async () => {
    const content = utf8.encode('tiny');
    const bytes = encodeBundle([{ key: 'a', bytes: content, sha256: sha256(content) }]);
    const [record] = decodeBundle(bytes).records;
    const huge = 2 ** 40;
    const claims: [BundleEntry, ExpectedMember][] = [
      [
        { sha256: sha256(bytes), sizeBytes: Number.MAX_SAFE_INTEGER, url: 'b.awkb' },
        { ...record!, offset: Number.MAX_SAFE_INTEGER - huge, sizeBytes: huge },
      ],
      [
        { sha256: sha256(bytes), sizeBytes: bytes.length, url: 'b.awkb' },
        { ...record!, sizeBytes: huge },
      ],
      [
        { sha256: sha256(bytes), sizeBytes: bytes.length, url: 'b.awkb' },
        { ...record!, offset: huge },
      ],
    ];
    const before = process.memoryUsage().arrayBuffers;
    for (const [listing, member] of claims) {
      for (const verifier of ['verifyBundle', 'acceptBundle'] as const) {
        const outcome = await verifyOutcome(verifier, bytes, listing, [member]);
        expect(outcome).toBeInstanceOf(BundleIntegrityError);
        expect((outcome as BundleIntegrityError).damaged).toEqual(['a']);
      }
    }
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(4 * 1024 * 1024);
  });
});
