/**
 * The reader under network faults and load (SPEC §7 "Verified", "One request per bundle",
 * "Retries", "Range reads"), against a scripted node:http server on 127.0.0.1: every load ends
 * with verified bytes or a typed error, bounded, leaving no memory held and no listener on any
 * signal. Waits between attempts go through an injected `sleep` that returns at once; stalls end
 * by the transport's quiet-time limit (a small `timeoutMs`), never by the test's clock.
 */
import { getEventListeners } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import {
  AwakeError,
  BundleIntegrityError,
  DEFAULT_MAX_INDEX_BYTES,
  HttpError,
  IndexedAssetSource,
  IndexTooLargeError,
  InvalidOptionError,
  RangeResponseError,
  Transport,
  type OpenOptions,
} from '../core/internal.js';
import { NodeFolderCache } from '../core/node/index.js';
import { temporaryDir } from './helpers/cli';
import { publishSite, startScriptedServer, type Fault, type PublishedSite, type ScriptedServer } from './helpers/scripted-site';

let site: PublishedSite;
const servers: ScriptedServer[] = [];
const warnings: Error[] = [];
const onWarning = (warning: Error) => warnings.push(warning);

beforeAll(async () => {
  // 12 bundles of 4 files, 6–20 KB each.
  site = await publishSite(12, 4, (n) => 6000 + ((n * 7919) % 14000));
  process.on('warning', onWarning);
});
afterAll(() => process.off('warning', onWarning));
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(
  script?: (request: { path: string; seen: number; headers: Record<string, unknown> }) => Fault | undefined,
): Promise<ScriptedServer> {
  const server = await startScriptedServer(site.resources, script);
  servers.push(server);
  return server;
}

/** Retry waits recorded, not waited. */
const noWait = { sleep: async () => undefined };
const indexUrlOf = (server: ScriptedServer) => `${server.origin}/project.index.json`;
const bundles = () => site.index.bundles;
const bundlePath = (i: number) => `/${bundles()[i]!.url}`;
const filesOf = (i: number) => site.index.files.filter((file) => file.bundle === bundles()[i]!.sha256).map((file) => file.path!);
const abortListeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;
const maxListenerWarnings = () => warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning');

async function open(server: ScriptedServer, options: Partial<OpenOptions> = {}): Promise<IndexedAssetSource> {
  return IndexedAssetSource.open({
    indexUrl: indexUrlOf(server),
    transport: new Transport({ ...noWait, retry: { attempts: 4 }, timeoutMs: 2000 }),
    ...options,
  });
}

// ---- bounded bodies --------------------------------------------------------------------------

describe('a body larger than the index says is refused before it fills memory', () => {
  const HUGE = 96 * 1024 * 1024;

  test('a Content-Length larger than the listed size: refused at the headers, naming the URL and the bundle', async () => {
    const server = await serve((request) =>
      request.path === bundlePath(0) ? { kind: 'oversize', extraBytes: HUGE, declare: true } : undefined,
    );
    const source = await open(server);
    const error = await source.read(filesOf(0)[0]!).catch((e) => e);
    expect(error).toBeInstanceOf(BundleIntegrityError);
    expect(error).toMatchObject({
      code: 'E_BUNDLE_INTEGRITY',
      part: 'bundle',
      url: `${server.origin}${bundlePath(0)}`,
      path: filesOf(0)[0],
    });
    expect(error.message).toContain(bundles()[0]!.sha256);
    expect(error.message).toMatch(/Content-Length/);
    expect(server.count(bundlePath(0))).toBe(1); // not retried: the same server would send the same body
    // What the server got to write before the client hung up: socket buffers, not 96 MiB.
    expect(server.bytesWritten).toBeLessThan(24 * 1024 * 1024);
    source.dispose();
  });

  test('no Content-Length: reading stops as soon as more than the listed size arrived', async () => {
    const server = await serve((request) =>
      request.path === bundlePath(1) ? { kind: 'oversize', extraBytes: HUGE, declare: false } : undefined,
    );
    const source = await open(server);
    const error = await source.read(filesOf(1)[0]!).catch((e) => e);
    expect(error).toMatchObject({
      name: 'BundleIntegrityError',
      code: 'E_BUNDLE_INTEGRITY',
      part: 'bundle',
      url: `${server.origin}${bundlePath(1)}`,
    });
    expect(server.bytesWritten).toBeLessThan(24 * 1024 * 1024);
    source.dispose();
  });

  test('a 200 answer to a range read (the server ignores Range) is read within the bundle size', async () => {
    const server = await serve((request) =>
      request.path === bundlePath(2) ? { kind: 'oversize', extraBytes: HUGE, declare: false } : undefined,
    );
    const source = await open(server, { rangeReads: true });
    const error = await source.read(filesOf(2)[1]!).catch((e) => e);
    expect(error).toMatchObject({ code: 'E_BUNDLE_INTEGRITY', url: `${server.origin}${bundlePath(2)}` });
    expect(server.bytesWritten).toBeLessThan(24 * 1024 * 1024);
    source.dispose();
  });

  test('a 206 longer than asked for is a RangeResponseError; a server ignoring Range still serves the member', async () => {
    const server = await serve((request) =>
      request.path === bundlePath(3) ? { kind: 'wrong-range' } : request.path === bundlePath(4) ? { kind: 'ignore-range' } : undefined,
    );
    const source = await open(server, { rangeReads: true });
    await expect(source.read(filesOf(3)[1]!)).rejects.toBeInstanceOf(RangeResponseError);
    const path = filesOf(4)[1]!;
    expect(await source.read(path)).toEqual(site.files.get(path));
    source.dispose();
  });

  test('Transport: expectedBytes bounds getBytes, and a matching body passes', async () => {
    const server = await serve((request) => (request.seen === 0 ? { kind: 'oversize', extraBytes: 1_000_000, declare: false } : undefined));
    const transport = new Transport({ ...noWait });
    const url = `${server.origin}${bundlePath(5)}`;
    const size = bundles()[5]!.sizeBytes;
    await expect(transport.getBytes(url, { expectedBytes: size })).rejects.toMatchObject({
      name: 'ResponseSizeError',
      code: 'E_RESPONSE_SIZE',
      url,
      expectedBytes: size,
    });
    expect((await transport.getBytes(url, { expectedBytes: size })).length).toBe(size);
  });
});

describe('an index larger than maxIndexBytes is refused before it fills memory', () => {
  const MiB = 1024 * 1024;
  const INDEX = '/project.index.json';
  const indexBytes = () => site.resources.get(INDEX)!.length;
  const serveIndex = (fault: { extraBytes: number; declare: boolean }) =>
    serve((request) => (request.path === INDEX ? { kind: 'oversize', ...fault } : undefined));

  test('an index that never ends: reading stops past maxIndexBytes, an IndexTooLargeError naming the URL, the limit and the option; not retried', async () => {
    const server = await serveIndex({ extraBytes: 100 * MiB, declare: false });
    const error = await open(server, { maxIndexBytes: MiB }).catch((e) => e);
    expect(error).toBeInstanceOf(IndexTooLargeError);
    expect(error).toMatchObject({ name: 'IndexTooLargeError', code: 'E_INDEX_TOO_LARGE', url: indexUrlOf(server), maxBytes: MiB });
    expect(error.receivedBytes).toBeGreaterThan(MiB);
    expect(error.message).toContain(indexUrlOf(server));
    expect(error.message).toContain(String(MiB));
    expect(error.message).toMatch(/maxIndexBytes/);
    expect(server.count(INDEX)).toBe(1);
    expect(server.bytesWritten).toBeLessThan(24 * MiB);
  });

  test('by default at most 64 MiB: a 600 MB Content-Length is refused at the headers', async () => {
    const server = await serveIndex({ extraBytes: 600_000_000, declare: true });
    const error = await open(server).catch((e) => e);
    expect(DEFAULT_MAX_INDEX_BYTES).toBe(64 * MiB);
    expect(error).toBeInstanceOf(IndexTooLargeError);
    expect(error).toMatchObject({
      code: 'E_INDEX_TOO_LARGE',
      url: indexUrlOf(server),
      maxBytes: DEFAULT_MAX_INDEX_BYTES,
      declaredBytes: 600_000_000 + indexBytes(),
    });
    expect(error.message).toMatch(/Content-Length/);
    expect(server.count(INDEX)).toBe(1);
    expect(server.bytesWritten).toBeLessThan(24 * MiB);
  });

  test('by default, an index that never ends stops past 64 MiB', async () => {
    const server = await serveIndex({ extraBytes: 100 * MiB, declare: false });
    const error = await open(server).catch((e) => e);
    expect(error).toMatchObject({ name: 'IndexTooLargeError', maxBytes: DEFAULT_MAX_INDEX_BYTES });
    expect(server.bytesWritten).toBeLessThan(DEFAULT_MAX_INDEX_BYTES + 24 * MiB);
  });

  test('an index of exactly maxIndexBytes opens; maxIndexBytes is checked before any request', async () => {
    const server = await serve();
    const source = await open(server, { maxIndexBytes: indexBytes() });
    expect(await source.read(filesOf(0)[0]!)).toEqual(site.files.get(filesOf(0)[0]!));
    source.dispose();
    await expect(open(server, { maxIndexBytes: indexBytes() - 1 })).rejects.toBeInstanceOf(IndexTooLargeError);
    const before = server.requests.length;
    const error = await open(server, { maxIndexBytes: -1 }).catch((e) => e);
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error).toMatchObject({ option: 'maxIndexBytes' });
    expect(server.requests.length).toBe(before);
  });
});

// ---- retries, bounded in total ---------------------------------------------------------------

describe('a storm of 429/503 with Retry-After', () => {
  test('waits at most retry.maxTotalWaitMs in all, then fails with a typed HttpError', async () => {
    const server = await serve((request) =>
      request.path === bundlePath(0) ? { kind: 'status', status: request.seen % 2 ? 503 : 429, retryAfter: '10' } : undefined,
    );
    const waits: number[] = [];
    const transport = new Transport({ sleep: async (ms) => void waits.push(ms), retry: { attempts: 50, maxTotalWaitMs: 25_000 } });
    const source = await IndexedAssetSource.open({ indexUrl: indexUrlOf(server), transport });
    const error = await source.read(filesOf(0)[0]!).catch((e) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ code: 'E_HTTP', attempts: 3, url: `${server.origin}${bundlePath(0)}` });
    expect(error.message).toMatch(/maxTotalWaitMs/);
    expect(waits).toEqual([10_000, 10_000]);
    expect(server.count(bundlePath(0))).toBe(3);
    source.dispose();
  });
});

// ---- listeners -------------------------------------------------------------------------------

describe('signals keep no listener', () => {
  test("dispose removes open()'s listener from the caller's signal", async () => {
    const server = await serve();
    const app = new AbortController();
    const sources = await Promise.all(Array.from({ length: 10 }, () => open(server, { signal: app.signal })));
    for (const source of sources) source.dispose();
    expect(abortListeners(app.signal)).toBe(0);
  });

  test('40 concurrent range reads and whole reads on one source: at most 10 listeners on any signal (no MaxListenersExceededWarning), none left', async () => {
    // The signals the reader hands the transport, and the most abort listeners any of them had while requests were open.
    const seen = new Set<AbortSignal>();
    let most = 0;
    class WatchedTransport extends Transport {
      override getBytes(url: string, options: Parameters<Transport['getBytes']>[1] = {}) {
        if (options.signal) seen.add(options.signal);
        return super.getBytes(url, options);
      }
      override getRange(url: string, offset: number, size: number, options: Parameters<Transport['getRange']>[3] = {}) {
        if (options.signal) seen.add(options.signal);
        return super.getRange(url, offset, size, options);
      }
    }
    const server = await serve(() => {
      for (const signal of seen) most = Math.max(most, abortListeners(signal));
      return undefined;
    });
    const app = new AbortController();
    const before = maxListenerWarnings().length;
    const ranged = await open(server, { rangeReads: true, signal: app.signal, transport: new WatchedTransport({ ...noWait }) });
    const whole = await open(server, { signal: app.signal, transport: new WatchedTransport({ ...noWait }) });
    const paths = site.index.files.map((file) => file.path!).slice(0, 40);
    const reads = [...paths.map((path) => ranged.read(path)), ...paths.map((path) => whole.read(path, { signal: app.signal }))];
    const results = await Promise.all(reads);
    results.forEach((bytes, i) => expect(bytes).toEqual(site.files.get(paths[i % paths.length]!)));
    // Warnings are emitted on the next tick.
    await new Promise((next) => setImmediate(next));
    expect(maxListenerWarnings().length).toBe(before);
    expect(most).toBeGreaterThan(0); // the probe saw the transport's listeners
    expect(most).toBeLessThanOrEqual(10);
    expect(abortListeners(app.signal)).toBe(0);
    ranged.dispose();
    whole.dispose();
    expect(abortListeners(app.signal)).toBe(0);
  });
});

// ---- a cache that cannot be written ----------------------------------------------------------

describe('a cache that cannot be written', () => {
  test('members read one by one are fetched once each (a read is a load of one), and the failures are reported', async () => {
    const server = await serve();
    const blocker = join(temporaryDir('awkb-blocked-'), 'file');
    writeFileSync(blocker, 'a file where the cache folder should be');
    const reported: string[] = [];
    const source = await open(server, {
      cache: new NodeFolderCache(join(blocker, 'cache')),
      onCacheError: (_, detail) => reported.push(detail.operation),
    });
    const paths = filesOf(0);
    for (const path of paths) expect(await source.read(path)).toEqual(site.files.get(path));
    await source.whenStored();
    // Each read its own member's range (SPEC §7 "Needed bytes"); a failed write fetches nothing again.
    expect(server.count(bundlePath(0))).toBe(paths.length);
    expect(reported).toContain('put');
    expect(source.stats().heldBytes).toBe(0);
    source.dispose();
  });
});

// ---- the fault storm -------------------------------------------------------------------------

const faultArbitrary: fc.Arbitrary<Fault | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('status' as const),
      status: fc.constantFrom(429, 503),
      retryAfter: fc.constantFrom('0', '1', '30', 'Wed, 21 Oct 2015 07:28:00 GMT'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('status' as const), status: fc.constantFrom(500, 502, 404) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reset' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'short' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'stall' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'ignore-range' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'wrong-range' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('oversize' as const),
      extraBytes: fc.constantFrom(1, 70_000, 4_000_000),
      declare: fc.boolean(),
    }),
  },
);

describe('a randomized fault storm (fixed seed)', () => {
  const tally = { runs: 0, reads: 0, verified: 0, typedFailures: 0, byCode: {} as Record<string, number>, lost: 0 };
  afterAll(() => console.log(`fault storm: ${JSON.stringify(tally)}`));

  test('every read ends verified or with a typed error; nothing held, no listener left', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(faultArbitrary, { minLength: 1, maxLength: 8 }),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 0, max: bundles().length - 3 }),
        async (faults, rangeReads, withPrefetch, first) => {
          tally.runs++;
          // The k-th request for each bundle meets faults[k] (the index itself is served cleanly).
          const server = await serve((request) =>
            request.path === '/project.index.json' ? undefined : faults[request.seen % faults.length],
          );
          const app = new AbortController();
          const transport = new Transport({ ...noWait, retry: { attempts: 3, baseDelayMs: 1 }, timeoutMs: 100 });
          const source = await IndexedAssetSource.open({
            indexUrl: indexUrlOf(server),
            transport,
            rangeReads,
            signal: app.signal,
            pendingBytes: 40_000,
          });
          const paths = [first, first + 1, first + 2].flatMap(filesOf);
          const prefetching = withPrefetch ? source.prefetch(filesOf(first)).catch((error: unknown) => error) : undefined;
          const outcomes = await Promise.allSettled(paths.map((path) => source.read(path, { signal: app.signal })));
          const prefetched = await prefetching;
          if (prefetched !== undefined) expect(prefetched).toBeInstanceOf(AwakeError);
          outcomes.forEach((outcome, i) => {
            tally.reads++;
            if (outcome.status === 'fulfilled') {
              expect(outcome.value).toEqual(site.files.get(paths[i]!));
              tally.verified++;
            } else if (outcome.reason instanceof AwakeError) {
              expect(outcome.reason.url ?? outcome.reason.path).toBeDefined();
              tally.typedFailures++;
              tally.byCode[outcome.reason.code] = (tally.byCode[outcome.reason.code] ?? 0) + 1;
            } else {
              tally.lost++;
              throw outcome.reason;
            }
          });
          // A bundle may still be finishing after its members were read (streamed): let it end.
          await source.whenStored();
          const stats = source.stats();
          expect(stats.loadsInFlight).toBe(0);
          // Every read has settled: nothing is kept for a read or a prefetch any more, the rest is within the budget.
          expect(stats.protectedBytes).toBe(0);
          expect(stats.heldBytes).toBeLessThanOrEqual(40_000);
          source.dispose();
          expect(source.stats().heldBytes).toBe(0);
          expect(abortListeners(app.signal)).toBe(0);
          await server.close();
          servers.splice(servers.indexOf(server), 1);
        },
      ),
      { seed: 20261130, numRuns: 50 },
    );
    expect(tally.lost).toBe(0);
    expect(tally.verified).toBeGreaterThan(0);
    expect(tally.typedFailures).toBeGreaterThan(0);
    expect(maxListenerWarnings()).toEqual([]);
  }, 600_000);
});

// ---- load ------------------------------------------------------------------------------------

describe('load: 50 concurrent reads and prefetches on one source', () => {
  test('one request per bundle, and memory within the pending budget plus what was asked for', async () => {
    const server = await serve();
    const pendingBytes = 30_000;
    // Whole bundles (SPEC §7 "One request per bundle"): with needed bytes, prefetches of parts of a bundle are ranges.
    const source = await IndexedAssetSource.open({ indexUrl: indexUrlOf(server), pendingBytes, neededBytes: false });
    const sizeOf = new Map(site.index.files.map((file) => [file.path!, file.sizeBytes]));
    let worst = 0;
    const sample = (): void => {
      const { heldBytes, protectedBytes } = source.stats();
      expect(heldBytes - protectedBytes).toBeLessThanOrEqual(pendingBytes);
      // What reads wait for or prefetches asked for: never more than every file of the site.
      worst = Math.max(worst, heldBytes);
    };
    // Each file is read once (the reader holds a content for the reads its files will make, SPEC §7).
    // Two whole-bundle prefetches first, then one operation per file: a third prefetch it and read it, the rest read it.
    const paths = bundles().flatMap((_, i) => filesOf(i));
    const readOnce = async (path: string) => {
      const bytes = await source.read(path);
      sample();
      expect(bytes).toEqual(site.files.get(path));
    };
    const operations = [
      source.prefetch(filesOf(0), { onProgress: sample }),
      source.prefetch(filesOf(7), { onProgress: sample }),
      ...paths.map((path, i) =>
        i % 3 === 0 ? source.prefetch([path], { onProgress: sample }).then(() => readOnce(path)) : readOnce(path),
      ),
    ];
    expect(operations).toHaveLength(50);
    await Promise.all(operations);
    for (let i = 0; i < bundles().length; i++) expect(server.count(bundlePath(i))).toBe(1);
    const allBytes = [...sizeOf.values()].reduce((sum, size) => sum + size, 0);
    expect(worst).toBeLessThanOrEqual(pendingBytes + allBytes);
    const after = source.stats();
    expect(after.heldBytes).toBeLessThanOrEqual(pendingBytes);
    expect(after.protectedBytes).toBe(0);
    expect(after.loadsInFlight).toBe(0);
    source.dispose();
    expect(source.stats().heldBytes).toBe(0);
  });
});
