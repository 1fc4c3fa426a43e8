/**
 * The read path as a bounded machine: a read resolves, fails typed, or waits on
 * something named; it never spins. The machine with steps that always send it round again; the
 * defects a hostile probe found (a returning reader's livelock, the abort-join race, raw aborts,
 * a cross-bundle forget, quadratic wake-ups), each against the project's own server.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { IndexedAssetSource, ReadStalledError, RequestAbortedError } from '../core/internal.js';
import { MAX_READ_RESTARTS, runRead, type ReadSteps } from '../core/read/load/file-read.js';
import { LoadRegistry, type Load } from '../core/read/load/load-registry.js';
import { abortable } from '../core/net/abort.js';
import { MAX_READ_AHEAD, ReadAhead } from '../core/read/load/read-ahead.js';
import { startStaticServer } from '../core/node/index.js';
import { REPO, runCli, temporaryDir } from './helpers/cli.js';
import { startHeldServer } from './helpers/held-server.js';
import { seededBytes, writeTree } from './helpers/trees.js';

const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const KiB = 1024;

function publish(files: Record<string, Uint8Array>, out: string, args: string[] = []): void {
  const tree = temporaryDir('awkb-read-path-tree-');
  writeTree(tree, files);
  const result = runCli([tree, '--out', out, ...args]);
  if (result.code !== 0) throw new Error(`publish ${out}: ${result.stderr}`);
}

// ---- the machine ------------------------------------------------------------------------------

/** A load that is in flight and never brings anything: what every step of a looping read waits on. */
function emptyLoad(): Load {
  return {
    key: 'bundle',
    controller: new AbortController(),
    done: new Promise(() => undefined),
    stored: Promise.resolve(),
    fetchBytes: 1,
    planned: Promise.resolve(1),
    status: 'fetching',
    partial: false,
    receivedBytes: 0,
    arrived: new Set(),
    interest: 0,
    listeners: new Set(),
  };
}

/** Steps where nothing is held or cached and every wait ends with nothing: `tick` says how a wait ends (a microtask, or a macrotask). */
function loopingSteps(path: 'joining' | 'passed-over' | 'ranging' | 'deciding' | 'range' | 'load', tick: () => Promise<void>) {
  const calls: string[] = [];
  const load = emptyLoad();
  const step =
    <T>(name: string, value: () => T) =>
    async (): Promise<T> => {
      calls.push(name);
      await tick();
      return value();
    };
  const steps: ReadSteps = {
    takeHeld: () => (calls.push('takeHeld'), undefined),
    inFlight: () => (path === 'joining' || path === 'passed-over' ? load : undefined),
    brings: () => path !== 'passed-over',
    arrival: step('arrival', () => undefined),
    settle: step('settle', () => undefined),
    deciding: () => (path === 'deciding' ? (calls.push('deciding'), tick()) : undefined),
    fromCache: step('fromCache', () => undefined),
    byRange: () => path === 'range',
    ranging: () => path === 'ranging',
    asideByRange: () => false,
    aside: step('aside', () => undefined),
    range: step('range', () => undefined),
    startLoad: () => (calls.push('startLoad'), load),
  };
  return { steps, calls };
}

const PATHS_ROUND = [
  ['joining', 'joining'],
  ['passed-over', 'joining'],
  ['ranging', 'joining'],
  ['deciding', 'deciding'],
  ['range', 'fetching'],
  ['load', 'fetching'],
] as const;

describe('one read is a machine with a bound on starting over', () => {
  test.each(PATHS_ROUND)(
    'steps that answer at once and always send it round (%s): ReadStalledError naming the path and its state, within the bound',
    async (path, state) => {
      const { steps, calls } = loopingSteps(path, () => Promise.resolve());
      const error = await runRead(steps, { path: 'levels/a.bin', id: undefined }, new AbortController().signal).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ReadStalledError);
      expect(error).toMatchObject({ code: 'E_READ_STALLED', path: 'levels/a.bin', state, restarts: MAX_READ_RESTARTS });
      expect((error as Error).message).toContain('levels/a.bin');
      // Each round is a few steps: the read did not go round more than the bound allows.
      expect(calls.filter((call) => call === 'takeHeld').length).toBeLessThanOrEqual(2 * (MAX_READ_RESTARTS + 1));
    },
  );

  test.each(PATHS_ROUND)(
    'steps that answer a macrotask later (%s): the event loop keeps turning (a setInterval fires meanwhile), then the read fails typed',
    async (path, state) => {
      let ticks = 0;
      const interval = setInterval(() => ticks++, 0);
      try {
        const { steps } = loopingSteps(path, () => new Promise((resolve) => setTimeout(resolve, 1)));
        const error = await runRead(steps, { path: 'levels/a.bin' }, new AbortController().signal).catch((e: unknown) => e);
        expect(error).toMatchObject({ code: 'E_READ_STALLED', state });
        expect(ticks).toBeGreaterThan(0);
      } finally {
        clearInterval(interval);
      }
    },
  );

  test('an abort while the read waits: RequestAbortedError naming the path, whatever the signal was aborted with', async () => {
    const { steps } = loopingSteps('joining', () => Promise.resolve());
    // The steps stop waiting when the signal aborts (as the source's do): with the signal's own reason.
    const waiting: ReadSteps = { ...steps, arrival: (_, signal) => abortable(new Promise<undefined>(() => undefined), signal) };
    const controller = new AbortController();
    const reading = runRead(waiting, { path: 'levels/a.bin' }, controller.signal).catch((e: unknown) => e);
    await Promise.resolve();
    controller.abort(); // a DOMException AbortError, as a game's scene change gives
    const error = await reading;
    expect(error).toBeInstanceOf(RequestAbortedError);
    expect(error).toMatchObject({ code: 'E_ABORTED', path: 'levels/a.bin' });
    expect((error as Error).cause).toBe(controller.signal.reason);
  });
});

// ---- a returning reader (defect 1) ------------------------------------------------------------

describe('a returning reader, v1 in the cache, v2 changes 3 of 20 members of one bundle (defect 1: no livelock)', () => {
  const LEVELS = Array.from({ length: 20 }, (_, i) => `levels/chunk-${String(i).padStart(2, '0')}.bin`);
  const CHANGED = [3, 9, 15].map((i) => LEVELS[i]!);
  const OTHER = 'ui/hud.json';
  let root: string;
  const v2: Record<string, Uint8Array> = {};

  beforeAll(() => {
    root = temporaryDir('awkb-read-path-site-');
    const v1: Record<string, Uint8Array> = { [OTHER]: seededBytes(900, 77) };
    LEVELS.forEach((path, i) => (v1[path] = seededBytes(16 * KiB, i)));
    Object.assign(v2, v1);
    for (const path of CHANGED) v2[path] = seededBytes(16 * KiB, 1000 + LEVELS.indexOf(path));
    publish(v1, join(root, 'v1'));
    publish(v2, join(root, 'v2'));
  });

  /**
   * Runs test/fixtures/read-path/returning-reader.mjs in a worker thread with a small heap: a read
   * path that spins in microtasks starves its own thread and grows its memory (1.5 GiB in 23 s
   * before the fix), so the worker dies of its limit and the test fails, rather than hang.
   */
  function returningReader(data: object): Promise<{ path: string; bytes: Uint8Array }[]> {
    const worker = new Worker(join(REPO, 'test/fixtures/read-path/returning-reader.mjs'), {
      workerData: { root, cacheDir: temporaryDir('awkb-read-path-cache-'), ...data },
      resourceLimits: { maxOldGenerationSizeMb: 160 },
    });
    return new Promise((resolve, reject) => {
      worker.once('message', (message: { read?: { path: string; bytes: Uint8Array }[]; error?: string }) => {
        void worker.terminate();
        if (message.error) reject(new Error(message.error));
        else resolve(message.read!);
      });
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the worker exited (${code}) without an answer`)));
    });
  }

  const expectV2 = (read: { path: string; bytes: Uint8Array }[], count: number) => {
    expect(read).toHaveLength(count);
    for (const { path, bytes } of read) expect(sha256Hex(bytes)).toBe(sha256Hex(v2[path]!));
  };

  test.each([
    ['NodeFolderCache', 'folder'],
    ['a ContentCache whose put takes 5 ms', 'slow'],
  ])('with %s, a changed file read twice in a row: both reads resolve', async (_, cacheKind) => {
    expectV2(await returningReader({ cacheKind, reads: [[CHANGED[0]], [CHANGED[0]]] }), 2);
  });

  test.each([
    [403, 'multi'],
    [416, 'multi'],
    [501, 'multi'],
    [403, 'every'],
    [416, 'every'],
    [501, 'every'],
  ])(
    'a MemoryCache and a host that answers %i to %s-range requests: the changed files, then all 21 files, read',
    async (refuse, refuseOnly) => {
      expectV2(await returningReader({ cacheKind: 'memory', refuse, refuseOnly, reads: [CHANGED, [...LEVELS, OTHER]] }), 3 + 21);
    },
  );
});

// ---- aborts (defects 4 and 5) -----------------------------------------------------------------

describe('aborts', () => {
  let root: string;
  const files: Record<string, Uint8Array> = {};
  const PATHS = Array.from({ length: 8 }, (_, i) => `levels/part-${i}.bin`);

  beforeAll(() => {
    root = temporaryDir('awkb-read-path-abort-');
    PATHS.forEach((path, i) => (files[path] = seededBytes(8 * KiB, 300 + i)));
    publish(files, join(root, 'site'));
  });

  const bundlePath = () => {
    const index = JSON.parse(readFileSync(join(root, 'site/project.index.json'), 'utf8'));
    return `/site/${index.bundles[0].url}`;
  };

  test.each(['read', 'prefetch'])(
    'defect 4: a %s with no signal, one microtask after an aborted read of the same bundle, gets its bytes (20 rounds)',
    async (kind) => {
      const host = await startHeldServer(root);
      try {
        for (let round = 0; round < 20; round++) {
          const source = await IndexedAssetSource.open({ indexUrl: `${host.origin}/site/project.index.json`, hashWorkers: 0 });
          const held = host.hold(bundlePath());
          const controller = new AbortController();
          const first = source.read(PATHS[0]!, { signal: controller.signal }).catch((e: unknown) => e);
          await held.arrived;
          controller.abort();
          await Promise.resolve();
          const second = kind === 'read' ? source.read(PATHS[1]!) : source.prefetch([PATHS[1]!]).then(() => source.read(PATHS[1]!));
          held.release();
          expect(await first).toMatchObject({ code: 'E_ABORTED' });
          expect(sha256Hex(await second)).toBe(sha256Hex(files[PATHS[1]!]!));
          source.dispose();
        }
      } finally {
        await host.close();
      }
    },
  );

  test('defect 5: every read aborted by its caller rejects with RequestAbortedError (E_ABORTED), never the raw DOMException (5,000 reads)', async () => {
    const server = await startStaticServer({ root });
    try {
      const codes = new Map<string, number>();
      for (let round = 0; round < 25; round++) {
        const source = await IndexedAssetSource.open({ indexUrl: `${server.url}site/project.index.json`, hashWorkers: 0 });
        const reads = Array.from({ length: 200 }, (_, i) => {
          const controller = new AbortController();
          const reading = source.read(PATHS[i % PATHS.length]!, { signal: controller.signal });
          // Aborted at once, a microtask later, a macrotask later, or never.
          if (i % 4 === 0) controller.abort();
          else if (i % 4 === 1) queueMicrotask(() => controller.abort());
          else if (i % 4 === 2) setTimeout(() => controller.abort(), 0);
          return reading.then(
            () => 'bytes',
            (error: unknown) => (error instanceof RequestAbortedError ? 'E_ABORTED' : `${(error as Error).name}`),
          );
        });
        for (const outcome of await Promise.all(reads)) codes.set(outcome, (codes.get(outcome) ?? 0) + 1);
        source.dispose();
      }
      expect([...codes.keys()].sort()).toEqual(['E_ABORTED', 'bytes']);
      expect(codes.get('E_ABORTED')).toBeGreaterThanOrEqual(2500);
    } finally {
      await server.close();
    }
  });
});

// ---- a content in two bundles (defect 9) ------------------------------------------------------

test('defect 9: a late failure of bundle x keeps the copy of a shared content that a prefetch of bundle y holds', async () => {
  const root = temporaryDir('awkb-read-path-shared-');
  const same = seededBytes(4 * KiB, 9);
  // By folder: x holds a/same.bin then a/zz.bin (key order), y holds b/same.bin: the same content in both.
  publish({ 'a/same.bin': same, 'a/zz.bin': seededBytes(64 * KiB, 10), 'b/same.bin': same }, join(root, 'site'));
  const index = JSON.parse(readFileSync(join(root, 'site/project.index.json'), 'utf8'));
  const bundleOf = (path: string) =>
    index.bundles.find((b: { sha256: string }) => b.sha256 === index.files.find((f: { path: string }) => f.path === path).bundle);
  const x = bundleOf('a/zz.bin');
  const y = bundleOf('b/same.bin');
  expect(x.sha256).not.toBe(y.sha256);
  // x's last member damaged: its first one (the shared content) passes and arrives, then x fails.
  const damaged = readFileSync(join(root, 'site', x.url));
  damaged[damaged.length - 1]! ^= 0xff;
  const host = await startHeldServer(root);
  try {
    const source = await IndexedAssetSource.open({ indexUrl: `${host.origin}/site/project.index.json`, hashWorkers: 0 });
    await source.prefetch(['b/same.bin']);
    const held = host.hold(`/site/${x.url}`);
    const failing = source.read('a/zz.bin').catch((e: unknown) => e);
    await held.arrived;
    held.release(damaged);
    expect(await failing).toMatchObject({ code: 'E_BUNDLE_INTEGRITY' });
    // The prefetched file reads from memory: y is not fetched again (the host may be gone by now).
    expect(sha256Hex(await source.read('b/same.bin'))).toBe(sha256Hex(same));
    expect(host.count(`/site/${y.url}`)).toBe(1);
    expect(host.count(`/site/${x.url}`)).toBe(1);
  } finally {
    await host.close();
  }
});

// ---- linear work (defect 10) ------------------------------------------------------------------

describe('defect 10: work is linear in the reads waiting', () => {
  test('n reads waiting on n contents of one load: each woken once by its own arrival (n wake-ups, not n²/2)', async () => {
    for (const n of [1000, 10_000, 40_000]) {
      const lifetime = new AbortController();
      const registry = new LoadRegistry(lifetime.signal, () => undefined);
      let finish!: () => void;
      const load = registry.start('bundle', n, () => new Promise<void>((resolve) => (finish = resolve)));
      const shas = Array.from({ length: n }, (_, i) => `sha-${i}`);
      // One signal for every read (a scene's, say): the waits share its one listener.
      const signal = new AbortController().signal;
      const waiting = shas.map((sha) => registry.arrival(load, sha, signal));
      for (const sha of shas) registry.arrive(load, sha);
      await Promise.all(waiting);
      finish();
      await load.done;
      expect(registry.wakeups).toBe(n);
    }
  });

  test('20,000 concurrent reads of one bundle’s members through a source: every one verified, one request', async () => {
    const root = temporaryDir('awkb-read-path-many-');
    const files: Record<string, Uint8Array> = {};
    for (let i = 0; i < 20_000; i++) files[`many/f${i}.bin`] = seededBytes(16, i);
    publish(files, join(root, 'site'), ['--target-mb', '64']);
    const index = JSON.parse(readFileSync(join(root, 'site/project.index.json'), 'utf8'));
    expect(index.bundles).toHaveLength(1);
    const host = await startHeldServer(root);
    try {
      const source = await IndexedAssetSource.open({ indexUrl: `${host.origin}/site/project.index.json`, hashWorkers: 0 });
      const paths = Object.keys(files);
      const read = await Promise.all(paths.map((path) => source.read(path)));
      expect(read.filter((bytes, i) => !Buffer.from(bytes).equals(files[paths[i]!]!))).toEqual([]);
      expect(host.count(`/site/${index.bundles[0].url}`)).toBe(1);
    } finally {
      await host.close();
    }
  });
});

// ---- read-ahead of references ----------------------------------------------

describe('read-ahead: a file that names others starts their loads as it is handed out', () => {
  const gltf = (images: string[], buffer = '../buffers/ship.bin') =>
    new TextEncoder().encode(
      JSON.stringify({ asset: { version: '2.0' }, buffers: [{ uri: buffer, byteLength: 4096 }], images: images.map((uri) => ({ uri })) }),
    );
  let root: string;
  const files: Record<string, Uint8Array> = {};
  const bundleOf = (path: string) => {
    const index = JSON.parse(readFileSync(join(root, 'site/project.index.json'), 'utf8'));
    const file = index.files.find((f: { path: string }) => f.path === path);
    return `/site/${index.bundles.find((b: { sha256: string }) => b.sha256 === file.bundle).url}`;
  };

  beforeAll(() => {
    root = temporaryDir('awkb-read-ahead-');
    files['models/ship.gltf'] = gltf(['../textures/ship.png']);
    files['buffers/ship.bin'] = seededBytes(4096, 1);
    files['textures/ship.png'] = seededBytes(3000, 2);
    files['textures/unused.png'] = seededBytes(3000, 3);
    files['packs/game.json'] = new TextEncoder().encode(
      JSON.stringify({ boot: { files: [{ type: 'image', key: 'ship', url: 'textures/ship.png' }] } }),
    );
    // By folder (the default): the model, its buffer and its texture are three bundles.
    publish(files, join(root, 'site'));
  });

  test('reading a .gltf starts its buffer’s and image’s bundles before anyone asks; reading them then makes no request', async () => {
    const host = await startHeldServer(root);
    try {
      const source = await IndexedAssetSource.open({ indexUrl: `${host.origin}/site/project.index.json`, hashWorkers: 0 });
      expect(sha256Hex(await source.read('models/ship.gltf'))).toBe(sha256Hex(files['models/ship.gltf']!));
      // Nothing else read yet: the server is asked for both bundles all the same.
      await host.answered(bundleOf('buffers/ship.bin'), 1);
      await host.answered(bundleOf('textures/ship.png'), 1);
      expect(sha256Hex(await source.read('buffers/ship.bin'))).toBe(sha256Hex(files['buffers/ship.bin']!));
      expect(sha256Hex(await source.read('textures/ship.png'))).toBe(sha256Hex(files['textures/ship.png']!));
      expect([bundleOf('buffers/ship.bin'), bundleOf('textures/ship.png')].map((path) => host.count(path))).toEqual([1, 1]);
      // Not recorded as loads: only what the game asked for is.
      expect(source.recordedLoads().loads.flatMap((load) => load.paths)).toEqual([
        'models/ship.gltf',
        'buffers/ship.bin',
        'textures/ship.png',
      ]);
    } finally {
      await host.close();
    }
  });

  test('readAhead: false reads only what is asked for', async () => {
    const host = await startHeldServer(root);
    try {
      const source = await IndexedAssetSource.open({
        indexUrl: `${host.origin}/site/project.index.json`,
        hashWorkers: 0,
        readAhead: false,
      });
      await source.read('models/ship.gltf');
      await import('../core/format/references.js'); // what read-ahead imports, in hand: a read-ahead would have started by the next task
      await new Promise((resolve) => setImmediate(resolve));
      await source.whenStored();
      expect(host.count(bundleOf('textures/ship.png'))).toBe(0);
      expect(host.count(bundleOf('buffers/ship.bin'))).toBe(0);
    } finally {
      await host.close();
    }
  });

  test('a Phaser pack is not read ahead of: which of its sections a scene loads is the game’s choice', async () => {
    const host = await startHeldServer(root);
    try {
      const source = await IndexedAssetSource.open({ indexUrl: `${host.origin}/site/project.index.json`, hashWorkers: 0 });
      await source.read('packs/game.json');
      await import('../core/read/load/read-ahead-references.js'); // what read-ahead imports, in hand: it would have started by the next task
      await new Promise((resolve) => setImmediate(resolve));
      await source.whenStored();
      expect(host.count(bundleOf('textures/ship.png'))).toBe(0);
    } finally {
      await host.close();
    }
  });

  test('bounded: a file naming 100,000 listed files starts at most MAX_READ_AHEAD; a file is read for references once', async () => {
    const names = ['models/child.gltf', ...Array.from({ length: 100_000 }, (_, i) => `textures/t${i}.png`)];
    const view = { paths: () => ['models/many.gltf', ...names] } as unknown as ConstructorParameters<typeof ReadAhead>[0];
    const started: string[][] = [];
    const ahead = new ReadAhead(view, (paths) => started.push(paths));
    const bytes = gltf(
      names.slice(1).map((name) => `../${name}`),
      '../models/child.gltf',
    );
    ahead.handingOut('models/many.gltf', bytes);
    ahead.handingOut('models/many.gltf', bytes);
    await import('../core/format/references.js');
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toHaveLength(1);
    expect(started[0]).toHaveLength(MAX_READ_AHEAD);
    expect(started[0]!.slice(0, 2)).toEqual(['models/child.gltf', 'textures/t0.png']);
    // What was started ahead is not read ahead of in turn (one level), a glTF among them.
    ahead.handingOut('models/child.gltf', gltf(['../textures/t5000.png']));
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toHaveLength(1);
  });
});
