/**
 * The error contract (SPEC §7 "Errors", README "Errors"): every error the library throws at a
 * user is an `AwakeError` subclass with a literal `name` equal to its class name and a `code`
 * that means one thing. Then a few real throw sites, one per kind of mistake.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as errors from '../core/errors';
import {
  AssetNotFoundError,
  AwakeError,
  BundleFormatError,
  BundleIntegrityError,
  FileIntegrityError,
  MemberDecodeError,
  HttpError,
  IndexTooLargeError,
  IndexValidationError,
  InvalidOptionError,
  isAwakeError,
  NetworkError,
  OriginNotAllowedError,
  PublishInputError,
  PublishOutputError,
  RangeResponseError,
  ReadStalledError,
  RequestAbortedError,
  RequestTimeoutError,
  ResponseSizeError,
  ServeRootError,
  TokenOriginError,
  UnsafePathError,
  UnsupportedIndexVersionError,
  UnsupportedOperationError,
  type AnyAwakeError,
  type AwakeErrorCode,
} from '../core/errors';
import { MemoryCache } from '../core/cache/memory';
import { decodeBundle } from '../core/format/awkb-decode';
import { opaqueId } from '../core/format/ids';
import { assertSafePath } from '../core/format/paths';
import { parseProjectIndex, parseProjectIndexJson, type LooseIndex } from '../core/format/project-index';
import { fromHex } from '../core/hash';
import { Transport } from '../core/net/transport';
import { looseIndexFromFolder } from '../core/node/loose-index';
import { startStaticServer } from '../core/node/server';
import { groupByFolder } from '../core/publish/grouping';
import { BundleWriter } from '../core/publish/bundle-writer';
import { IndexedAssetSource } from '../core/read/indexed-asset-source';

// ---- the types: a literal name and code on every class, so a switch narrows the union ----------

// Were any class's `name` or `code` a plain string, these unions would widen to `string` and the
// two lines below would not compile (`npm run typecheck`).
const namesAreLiteral: string extends AnyAwakeError['name'] ? never : true = true;
const codesAreLiteral: string extends AnyAwakeError['code'] ? never : true = true;

function describeError(error: AnyAwakeError): string {
  switch (error.name) {
    case 'HttpError':
      return `HTTP ${error.status}`; // narrowed: `status` is only on HttpError
    case 'BundleIntegrityError':
      return `damaged: ${error.damaged.join(', ')}`;
    default:
      return error.code;
  }
}

/** One instance of every class, keyed by its name: the type makes the table cover the union. */
const examples: { [Name in AnyAwakeError['name']]: () => Extract<AnyAwakeError, { name: Name }> } = {
  IndexValidationError: () => new IndexValidationError(['files[0].sha256: must be 64 lowercase hex digits']),
  UnsupportedIndexVersionError: () => new UnsupportedIndexVersionError(9),
  IndexTooLargeError: () => new IndexTooLargeError('/project.index.json', 1024),
  BundleFormatError: () => new BundleFormatError('header', 'bad magic'),
  BundleIntegrityError: () => new BundleIntegrityError('members', 'damaged member a.txt', ['a.txt']),
  FileIntegrityError: () => new FileIntegrityError('a.txt: got 2 bytes, the index says 1'),
  MemberDecodeError: () =>
    new MemberDecodeError('a.json (deflate-raw): decodes past its listed 10 bytes', {
      key: 'a.json',
      encoding: 'deflate-raw',
      problem: 'too-long',
    }),
  AssetNotFoundError: () => new AssetNotFoundError('a.txt'),
  UnsupportedOperationError: () => new UnsupportedOperationError('prefetchFolder needs plain paths'),
  InvalidOptionError: () => new InvalidOptionError('pendingBytes', 'pendingBytes must be a number ≥ 0'),
  UnsafePathError: () => new UnsafePathError('../a', 'leaves the root'),
  PublishInputError: () => new PublishInputError('a.txt: cannot read', 'a.txt'),
  PublishOutputError: () => new PublishOutputError('out: cannot write', 'out'),
  ServeRootError: () => new ServeRootError('site: no such folder', 'site'),
  HttpError: () => new HttpError(404, 'GET /a: 404', { url: '/a' }),
  NetworkError: () => new NetworkError('GET /a: reset', { url: '/a' }),
  RequestTimeoutError: () => new RequestTimeoutError(100, 'GET /a: timed out', { url: '/a' }),
  RequestAbortedError: () => new RequestAbortedError('GET /a: aborted', { url: '/a' }),
  ReadStalledError: () => new ReadStalledError('a.txt: gave up joining', { path: 'a.txt', state: 'joining', restarts: 5 }),
  RangeResponseError: () => new RangeResponseError('GET /a: wrong range', { url: '/a' }),
  ResponseSizeError: () => new ResponseSizeError('GET /a: too long', { url: '/a', expectedBytes: 1 }),
  OriginNotAllowedError: () =>
    new OriginNotAllowedError('bundles[0].url is on another origin', { url: 'https://elsewhere.example/b.awkb' }),
  TokenOriginError: () => new TokenOriginError('no origin for the token'),
};

/** Every class `core/errors` exports, found by walking its exports, not by a list. */
const exportedClasses = Object.entries(errors).filter(
  (entry): entry is [string, typeof AwakeError] => typeof entry[1] === 'function' && entry[1].prototype instanceof AwakeError,
);

describe('the error classes', () => {
  test('the types hold (checked by the compiler; here so the constants are used)', () => {
    expect([namesAreLiteral, codesAreLiteral]).toEqual([true, true]);
    expect(describeError(new HttpError(503, 'busy', { url: '/a' }))).toBe('HTTP 503');
  });

  test('every exported class has an example, and no example is for a class that is not exported', () => {
    expect(exportedClasses.map(([name]) => name).sort()).toEqual(Object.keys(examples).sort());
  });

  test.each(exportedClasses)('%s: name is the class name, an AwakeError and an Error, with a stable code', (exportName, ErrorClass) => {
    const error = examples[exportName as keyof typeof examples]();
    expect(error).toBeInstanceOf(ErrorClass);
    expect(error).toBeInstanceOf(AwakeError);
    expect(error).toBeInstanceOf(Error);
    expect(isAwakeError(error)).toBe(true);
    expect(error.name).toBe(exportName);
    expect(error.name).toBe(ErrorClass.name);
    expect(error.code).toMatch(/^E_[A-Z_]+$/);
    expect(String(error)).toMatch(new RegExp(`^${exportName}: `));
  });

  test('each code belongs to one class: a code means one thing', () => {
    const codes = Object.values(examples).map((make) => make().code);
    expect(new Set(codes).size).toBe(codes.length);
    // Every code in the AwakeErrorCode type is used by some class (none is left with no meaning).
    const everyCode: Record<AwakeErrorCode, true> = {
      E_UNSAFE_PATH: true,
      E_INDEX_INVALID: true,
      E_INDEX_VERSION: true,
      E_INDEX_TOO_LARGE: true,
      E_BUNDLE_FORMAT: true,
      E_BUNDLE_INTEGRITY: true,
      E_FILE_INTEGRITY: true,
      E_MEMBER_DECODE: true,
      E_NOT_FOUND: true,
      E_UNSUPPORTED: true,
      E_OPTION: true,
      E_HTTP: true,
      E_NETWORK: true,
      E_TIMEOUT: true,
      E_ABORTED: true,
      E_READ_STALLED: true,
      E_RANGE: true,
      E_RESPONSE_SIZE: true,
      E_ORIGIN: true,
      E_TOKEN_ORIGIN: true,
      E_PUBLISH_INPUT: true,
      E_PUBLISH_OUTPUT: true,
      E_SERVE_ROOT: true,
    };
    expect([...codes].sort()).toEqual(Object.keys(everyCode).sort());
  });

  test('cause is kept', () => {
    const cause = new Error('EACCES');
    expect(new PublishInputError('a.txt: cannot read', 'a.txt', cause).cause).toBe(cause);
  });
});

// ---- real throw sites ---------------------------------------------------------------------------

/** What `run` threw (or rejected with); fails the test if it did not. */
async function thrown(run: () => unknown): Promise<AnyAwakeError> {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(AwakeError);
    return error as AnyAwakeError;
  }
  throw new Error('expected a throw');
}

const SHA256_OF_A = 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb'; // "a"
const LOOSE: LooseIndex = {
  formatVersion: 2,
  rootPath: '/project',
  files: [{ path: 'a.txt', sizeBytes: 1, sha256: SHA256_OF_A, url: 'files/a.txt' }],
};

describe('invalid options are InvalidOptionError (E_OPTION), naming the option', () => {
  test.each<[string, () => unknown, string]>([
    ['Transport retry.attempts 0', () => new Transport({ retry: { attempts: 0 } }), 'retry.attempts'],
    ['Transport timeoutMs -1', () => new Transport({ timeoutMs: -1 }), 'timeoutMs'],
    ['MemoryCache maxBytes -1', () => new MemoryCache({ maxBytes: -1 }), 'maxBytes'],
    ['groupByFolder(0)', () => groupByFolder(0), 'depth'],
    ['BundleWriter targetBundleBytes 0', () => new BundleWriter({ targetBundleBytes: 0 }), 'targetBundleBytes'],
    ['opaqueId with no salt', () => opaqueId('', 'a.txt'), 'salt'],
    ['fromHex of text that is not hex', () => fromHex('zz'), 'hex'],
    ['open with neither indexUrl nor index', () => IndexedAssetSource.open({}), 'indexUrl'],
    [
      'open with allowOrigins that are not origins',
      () => IndexedAssetSource.open({ index: LOOSE, baseUrl: 'http://127.0.0.1:9/', allowOrigins: ['ftp://x'] }),
      'allowOrigins[0]',
    ],
    ['a server on port 70000', () => startStaticServer({ root: '.', port: 70000 }), 'port'],
  ])('%s', async (_, run, option) => {
    const error = await thrown(run);
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error).toMatchObject({ name: 'InvalidOptionError', code: 'E_OPTION', option });
  });
});

describe('a source', () => {
  const open = () => IndexedAssetSource.open({ index: LOOSE, baseUrl: 'http://127.0.0.1:9/', hashWorkers: 0, cache: null });

  test('read after dispose() rejects with RequestAbortedError (E_ABORTED)', async () => {
    const source = await open();
    source.dispose();
    const error = await thrown(() => source.read('a.txt'));
    expect(error).toBeInstanceOf(RequestAbortedError);
    expect(error).toMatchObject({ code: 'E_ABORTED', message: expect.stringMatching(/disposed/) });
  });

  test('a path the index does not list is AssetNotFoundError (E_NOT_FOUND)', async () => {
    const source = await open();
    try {
      const error = await thrown(() => source.read('b.txt'));
      expect(error).toBeInstanceOf(AssetNotFoundError);
      expect(error).toMatchObject({ code: 'E_NOT_FOUND', path: 'b.txt' });
    } finally {
      source.dispose();
    }
  });
});

describe('bad indexes, bundles and paths', () => {
  test('an index that breaks the rules is IndexValidationError (E_INDEX_INVALID), naming the field', async () => {
    const error = await thrown(() => parseProjectIndex({ ...LOOSE, files: [{ ...LOOSE.files[0]!, sha256: 'nope' }] }));
    expect(error).toMatchObject({
      name: 'IndexValidationError',
      code: 'E_INDEX_INVALID',
      problems: [expect.stringContaining('files[0].sha256')],
    });
  });

  test('text that is not JSON is IndexValidationError too', async () => {
    expect(await thrown(() => parseProjectIndexJson('{'))).toMatchObject({ code: 'E_INDEX_INVALID' });
  });

  test('an unknown formatVersion is UnsupportedIndexVersionError (E_INDEX_VERSION)', async () => {
    expect(await thrown(() => parseProjectIndex({ ...LOOSE, formatVersion: 9 }))).toMatchObject({
      name: 'UnsupportedIndexVersionError',
      code: 'E_INDEX_VERSION',
      found: 9,
    });
  });

  test('bytes that are not a bundle are BundleFormatError (E_BUNDLE_FORMAT)', async () => {
    expect(await thrown(() => decodeBundle(new Uint8Array(20)))).toMatchObject({
      name: 'BundleFormatError',
      code: 'E_BUNDLE_FORMAT',
      part: 'header',
    });
  });

  test('a path that leaves the root is UnsafePathError (E_UNSAFE_PATH)', async () => {
    expect(await thrown(() => assertSafePath('../secrets.txt'))).toMatchObject({
      name: 'UnsafePathError',
      code: 'E_UNSAFE_PATH',
      path: '../secrets.txt',
    });
  });
});

describe('publish and serve inputs', () => {
  let empty: string;
  beforeAll(async () => {
    empty = await mkdtemp(join(tmpdir(), 'awkb-errors-'));
  });
  afterAll(() => rm(empty, { recursive: true, force: true }));

  test('an empty folder is PublishInputError (E_PUBLISH_INPUT), naming the folder', async () => {
    expect(await thrown(() => looseIndexFromFolder(empty))).toMatchObject({
      name: 'PublishInputError',
      code: 'E_PUBLISH_INPUT',
      path: empty,
    });
  });

  test('a file that is not what its loose index says is PublishInputError', async () => {
    const writer = new BundleWriter();
    const error = await thrown(() =>
      writer.write(
        LOOSE,
        async () => new TextEncoder().encode('b'),
        () => undefined,
      ),
    );
    expect(error).toMatchObject({ name: 'PublishInputError', code: 'E_PUBLISH_INPUT', path: 'a.txt' });
  });

  test('serving a folder that does not exist is ServeRootError (E_SERVE_ROOT)', async () => {
    const missing = join(empty, 'missing');
    expect(await thrown(() => startStaticServer({ root: missing }))).toMatchObject({
      name: 'ServeRootError',
      code: 'E_SERVE_ROOT',
      path: missing,
    });
  });
});
