/**
 * The bundle writer (SPEC §6), in the shape of the seed's `ContentBundleWriter`: it reads each
 * file once through a function you give it, checks it against the loose index, and hands over
 * one finished bundle at a time, so a publish step of your own can skip bundles the host
 * already has. It returns the bundled index.
 */
import { InvalidOptionError, PublishInputError } from '../errors.js';
import { layoutBundle, type BundleLayout, type BundleMemberSpec } from '../format/awkb.js';
import { opaqueId, PATH_ID_ALGORITHM, type PathIds } from '../format/ids.js';
import { assertSafePath } from '../format/paths.js';
import {
  parseProjectIndex,
  type BundledFileEntry,
  type BundledIndex,
  type LooseFileEntry,
  type LooseIndex,
} from '../format/project-index.js';
import { concatBytes } from '../bytes.js';
import { sha256Hex } from '../hash.js';
import { createSha256, type IncrementalSha256 } from '../hash-noble.js';
import { groupByFolder, toGrouping, type GroupingLike } from './grouping.js';
import { encodeMember, type EncodedMember, type MemberCompressor } from './member-encoding.js';
import { DEFAULT_BUNDLE_URL_PREFIX, DEFAULT_TARGET_BUNDLE_BYTES, planBundles, type PlannedBundle } from './plan.js';

/** A file's bytes: whole, or as chunks for files larger than the target (never held whole). */
export type FileContent = Uint8Array | AsyncIterable<Uint8Array>;

/** What the writer tells `read` about the file it asks for. */
export interface ReadHint {
  /** True when the file is larger than the target: return chunks then, never the whole file. */
  stream: boolean;
  /**
   * Given when `stream` is false: a view of exactly `entry.sizeBytes` bytes inside the bundle
   * being built, where the file's content goes. A reader may read the file straight into it and
   * return `into` (or the part of it it filled), which saves a copy and an allocation; whatever
   * else it returns is checked and copied in. A reader that finds the file larger than `into`
   * returns the file's bytes instead, so that the writer can report the mismatch.
   */
  into?: Uint8Array;
}

/**
 * Reads one project file. `stream` is true when the file is larger than the target: return an
 * async iterable of chunks then (a Node `Readable` is one), so it is never held whole.
 */
export type ReadProjectFile = (entry: LooseFileEntry, hint: ReadHint) => FileContent | Promise<FileContent>;

/** How the writer computes SHA-256; platform code can plug in something faster. */
export interface BundleHashing {
  /** One-shot lowercase hex SHA-256. Default `sha256Hex` (WebCrypto where there is one). */
  digest?: (bytes: Uint8Array) => string | Promise<string>;
  /**
   * A fast incremental SHA-256. When given, a bundle is hashed while its members arrive,
   * and files larger than the target are hashed with it. Default: one-shot `digest` for
   * bundles held in memory, `createSha256()` for streamed files.
   */
  incremental?: () => IncrementalSha256;
}

interface FinishedBundleBase {
  /** Which group the bundle belongs to. */
  group: string;
  /** Number of members. */
  members: number;
  sizeBytes: number;
}

/** A bundle up to about the target size, whole in memory. */
export interface BundleBytes extends FinishedBundleBase {
  kind: 'bytes';
  sha256: string;
  /** `<bundleUrlPrefix>/<sha256>.awkb`, relative to the index. */
  url: string;
  bytes: Uint8Array;
}

/**
 * A bundle holding one content larger than the target. Its name is known only once all of it
 * has gone by, so write `chunks` somewhere temporary and name it when `finished` resolves. If
 * the file does not match the loose index, iterating `chunks` throws at the end and `finished`
 * rejects: discard what was written.
 */
export interface BundleStream extends FinishedBundleBase {
  kind: 'stream';
  chunks: AsyncIterable<Uint8Array>;
  finished: Promise<{ sha256: string; url: string }>;
}

export type FinishedBundle = BundleBytes | BundleStream;

export interface BundleWriterOptions {
  /** Default `groupByFolder(1)`. */
  grouping?: GroupingLike;
  /** Default 16 MiB. */
  targetBundleBytes?: number;
  /** With a salt, opaque ids replace paths in the index and the bundles (SPEC §4). */
  pathIds?: { salt: string } | null;
  /** Default `bundles`. */
  bundleUrlPrefix?: string;
  /** How many files of a bundle are read at once (default 8); 1 reads them one by one. */
  readConcurrency?: number;
  /** SHA-256 implementations (see `BundleHashing`). */
  hashing?: BundleHashing;
  /**
   * Reuse the memory of a bundle once `onBundle` has resolved for it (default false). Only for
   * an `onBundle` that is done with `bytes` when it resolves (writes them out, say), and does
   * not look past `bytes.length` into `bytes.buffer`. Keeps memory flat on large projects.
   */
  reuseBuffers?: boolean;
  /**
   * With `reuseBuffers`: keep the reused memory from one `write` call to the next (for a caller
   * that writes a project a bundle at a time), until `releaseBuffers()`. Default false: each
   * `write` lets its buffers go when it ends.
   */
  keepBuffersBetweenWrites?: boolean;
  /**
   * 1 (the default): one bundle in memory at a time, as SPEC §6 asks. 2: while `onBundle`
   * works on one bundle, the files of the next are already read into a second one: ~10%
   * faster on a local disk, for twice the memory.
   */
  bundlesInMemory?: 1 | 2;
  /** Called by `write` with its plan (see `plan`) before it reads any file. */
  onPlan?: (plans: readonly PlannedBundle[]) => void;
  /**
   * Stores members deflate-raw where that saves at least 1 KiB and 5% (SPEC §5a), through this
   * compressor; a bundle with an encoded member is AWKB version 2, one without stays version 1.
   * Default: none here (every member stored as is); the Node publish functions give `node:zlib`'s
   * (core/node/deflate.ts) unless told `compress: false`. A member of a streamed bundle (a file
   * larger than the target) is always stored as is (FORMAT.md "Encoded members").
   */
  compressor?: MemberCompressor;
}

type OnBundle = (bundle: FinishedBundle) => void | Promise<void>;

/** One bundle built in memory, ready to hand over. */
interface BuiltBundle {
  sha256: string;
  bytes: Uint8Array;
  /** The bundle's layout: the plan's, or the version 2 one when members were encoded. */
  layout: BundleLayout;
  /** Whether `bytes` came from the buffer pool (and goes back to it). */
  pooled: boolean;
}

const DEFAULT_READ_CONCURRENCY = 8;

export class BundleWriter {
  readonly targetBundleBytes: number;
  readonly bundleUrlPrefix: string;
  private readonly grouping;
  private readonly pathIds: PathIds | undefined;
  private readonly readConcurrency: number;
  private readonly digest: (bytes: Uint8Array) => string | Promise<string>;
  private readonly incremental: (() => IncrementalSha256) | undefined;
  private readonly reuseBuffers: boolean;
  private readonly keepBuffers: boolean;
  private keptPool: BufferPool | undefined;
  private readonly bundlesInMemory: 1 | 2;
  private readonly onPlan: ((plans: readonly PlannedBundle[]) => void) | undefined;
  private readonly compressor: MemberCompressor | undefined;

  constructor(options: BundleWriterOptions = {}) {
    const target = options.targetBundleBytes ?? DEFAULT_TARGET_BUNDLE_BYTES;
    if (!Number.isSafeInteger(target) || target < 1)
      throw new InvalidOptionError('targetBundleBytes', `targetBundleBytes must be a positive integer, got ${target}`);
    if (options.pathIds && !options.pathIds.salt) throw new InvalidOptionError('pathIds.salt', 'pathIds needs a non-empty salt');
    const concurrency = options.readConcurrency ?? DEFAULT_READ_CONCURRENCY;
    if (!Number.isSafeInteger(concurrency) || concurrency < 1)
      throw new InvalidOptionError('readConcurrency', `readConcurrency must be a positive integer, got ${concurrency}`);
    this.targetBundleBytes = target;
    this.grouping = toGrouping(options.grouping ?? groupByFolder(1));
    this.pathIds = options.pathIds ? { algorithm: PATH_ID_ALGORITHM, salt: options.pathIds.salt } : undefined;
    this.bundleUrlPrefix = (options.bundleUrlPrefix ?? DEFAULT_BUNDLE_URL_PREFIX).replace(/\/+$/, '');
    this.readConcurrency = concurrency;
    this.digest = options.hashing?.digest ?? sha256Hex;
    this.incremental = options.hashing?.incremental;
    this.reuseBuffers = options.reuseBuffers ?? false;
    this.keepBuffers = options.keepBuffersBetweenWrites ?? false;
    if (options.bundlesInMemory !== undefined && options.bundlesInMemory !== 1 && options.bundlesInMemory !== 2)
      throw new InvalidOptionError('bundlesInMemory', `bundlesInMemory must be 1 or 2, got ${String(options.bundlesInMemory)}`);
    this.bundlesInMemory = options.bundlesInMemory ?? 1;
    this.onPlan = options.onPlan;
    if (options.compressor !== undefined && typeof options.compressor?.deflateRaw !== 'function')
      throw new InvalidOptionError('compressor', 'compressor must have a deflateRaw(bytes) method');
    this.compressor = options.compressor;
  }

  /** The bundles this writer will make from `looseIndex`, without reading any file. */
  plan(looseIndex: LooseIndex): PlannedBundle[] {
    const checked = parseProjectIndex(looseIndex);
    if (checked.formatVersion !== 2) throw new PublishInputError('the bundle writer takes a loose (formatVersion 2) index');
    for (const file of checked.files) assertSafePath(file.path);
    return planBundles(checked.files, this.grouping, this.targetBundleBytes);
  }

  /**
   * Reads every file of `looseIndex` once through `read`, checks it, and calls `onBundle` with
   * each finished bundle in order, awaiting it before the next. Resolves to the bundled index.
   *
   * With `bundlesInMemory: 2`, the files of the next bundle are read while `onBundle` works on
   * one. A bundle with a file larger than the target waits for the bundle before it, and is
   * streamed alone.
   */
  async write(looseIndex: LooseIndex, read: ReadProjectFile, onBundle: OnBundle): Promise<BundledIndex> {
    const plans = this.plan(looseIndex);
    this.onPlan?.(plans);
    const bundles: BundledIndex['bundles'] = [];
    const files: BundledFileEntry[] = [];
    const pool = !this.reuseBuffers ? undefined : this.keepBuffers ? (this.keptPool ??= new BufferPool()) : new BufferPool();
    let handing: Promise<void> | undefined; // the onBundle call under way, if any
    const handed = async () => {
      const pending = handing;
      handing = undefined;
      if (pending) await pending;
    };
    try {
      for (const plan of plans) {
        const keys = plan.files.map((file) => (this.pathIds ? opaqueId(this.pathIds.salt, file.path) : file.path));
        // A load group's data goes in first-use order, the plan's (SPEC §5 "Data order").
        let layout = layoutBundle(
          plan.files.map((file, i) => ({ key: keys[i]!, sizeBytes: file.sizeBytes, sha256: file.sha256 })),
          { dataOrder: dataOrderOf(plan) },
        );
        let sha256: string;
        if (plan.dataBytes > this.targetBundleBytes) {
          await handed();
          sha256 = (await this.writeStreamed(plan, layout, read, onBundle)).sha256;
        } else {
          if (this.bundlesInMemory === 1) await handed();
          const built = await this.buildInMemory(plan, layout, keys, read, pool);
          await handed();
          sha256 = built.sha256;
          layout = built.layout;
          const bundle: BundleBytes = {
            kind: 'bytes',
            group: plan.group,
            members: plan.files.length,
            sizeBytes: built.bytes.length,
            sha256,
            url: this.bundleUrl(sha256),
            bytes: built.bytes,
          };
          handing = (async () => {
            await onBundle(bundle);
            if (built.pooled) pool?.release(built.bytes);
          })();
          handing.catch(() => undefined); // awaited by handed(); this only stops an early unhandled-rejection report
        }
        bundles.push({ sha256, sizeBytes: layout.sizeBytes, url: this.bundleUrl(sha256) });
        const recordOf = new Map(layout.records.map((record) => [record.key, record]));
        for (const [i, file] of plan.files.entries()) {
          const key = keys[i]!;
          const { offset, storedBytes, encoding } = recordOf.get(key)!;
          // Plain literals (not a spread): one compact object per file, in key order (SPEC §3, §5a).
          const entry: BundledFileEntry = this.pathIds
            ? { id: key, sizeBytes: file.sizeBytes, sha256: file.sha256, bundle: sha256, offset }
            : { path: file.path, sizeBytes: file.sizeBytes, sha256: file.sha256, bundle: sha256, offset };
          if (encoding !== undefined) {
            entry.storedBytes = storedBytes!;
            entry.encoding = encoding;
          }
          files.push(entry);
        }
      }
      await handed();
    } catch (error) {
      // The bundle being handed over comes first in order: its failure, if any, is reported.
      await handed();
      throw error;
    } finally {
      if (!this.keepBuffers) pool?.dispose();
    }
    return {
      formatVersion: 3,
      rootPath: looseIndex.rootPath,
      ...(this.pathIds ? { pathIds: this.pathIds } : {}),
      bundles,
      files,
    };
  }

  /** Lets the memory kept by `keepBuffersBetweenWrites` go. */
  releaseBuffers(): void {
    this.keptPool?.dispose();
    this.keptPool = undefined;
  }

  bundleUrl(sha256: string): string {
    return this.bundleUrlPrefix === '' ? `${sha256}.awkb` : `${this.bundleUrlPrefix}/${sha256}.awkb`;
  }

  /**
   * Reads the members of one bundle, a few at a time, straight into their place in the bundle
   * when the reader can, checks each against the loose index, and hashes the bundle (as its
   * bytes arrive in order, when there is an incremental hash).
   */
  private async buildInMemory(
    plan: PlannedBundle,
    layout: BundleLayout,
    keys: string[],
    read: ReadProjectFile,
    pool: BufferPool | undefined,
  ): Promise<BuiltBundle> {
    // A reused buffer gets room for the target plus a generous table, so that the next
    // bundles (whose tables differ) fit it too.
    const room = this.targetBundleBytes + Math.max(2 * layout.head.length, 1 << 20);
    const out = pool ? pool.take(layout.sizeBytes, room) : new Uint8Array(layout.sizeBytes);
    try {
      out.set(layout.head, 0);
      const recordIndex = new Map(layout.records.map((record, index) => [record.key, index]));
      // Records whose content goes into the data area, in data order; the rest share an
      // earlier copy (SPEC §5).
      const isWritten = new Uint8Array(layout.records.length);
      for (const index of layout.written) isWritten[index] = 1;
      const bundleHash = this.incremental?.();
      bundleHash?.update(out.subarray(0, layout.head.length));
      const ready = new Uint8Array(layout.records.length);
      let fed = 0; // layout.written[0 .. fed) are in the bundle hash
      const feed = () => {
        while (fed < layout.written.length && ready[layout.written[fed]!]) {
          const record = layout.records[layout.written[fed++]!]!;
          bundleHash!.update(out.subarray(record.offset, record.offset + record.sizeBytes));
        }
      };
      // Each distinct content's encoding (SPEC §5a), started as soon as its bytes are checked, so
      // the compressor (a thread pool) works while the next files are read.
      const compressor = this.compressor;
      const encodings = new Map<number, Promise<EncodedMember | undefined>>();
      const firsts: number[] = [];
      const copies: number[] = [];
      for (let i = 0; i < plan.files.length; i++) (isWritten[recordIndex.get(keys[i]!)!] ? firsts : copies).push(i);
      // Each file is read straight into its content's place in the bundle when the reader can.
      // Files whose content an earlier file already brought come last, into that same place:
      // if they match (as they must), the bytes there do not change; if not, the bundle fails.
      const member = (whenChecked: (index: number) => void) => async (i: number) => {
        const file = plan.files[i]!;
        const index = recordIndex.get(keys[i]!)!;
        const record = layout.records[index]!;
        const place = out.subarray(record.offset, record.offset + record.sizeBytes);
        const bytes = await readWhole(file, read, place);
        if (bytes.length !== file.sizeBytes) checkDigest(file, bytes.length, '');
        checkDigest(file, bytes.length, await this.digest(bytes));
        if (!sameMemory(bytes, place)) place.set(bytes);
        whenChecked(index);
      };
      await runBounded(
        firsts,
        this.readConcurrency,
        member((index) => {
          ready[index] = 1;
          if (bundleHash) feed();
          if (compressor) {
            const record = layout.records[index]!;
            const encoding = encodeMember(out.subarray(record.offset, record.offset + record.sizeBytes), compressor);
            encoding.catch(() => undefined); // awaited below; this only stops an early unhandled-rejection report
            encodings.set(index, encoding);
          }
        }),
      ).catch(async (error: unknown) => {
        await Promise.allSettled(encodings.values()); // the compressor reads `out`: let it finish first
        throw error;
      });
      const encoded = await encodedContents(layout, encodings);
      const sha256 = encoded.size > 0 ? undefined : bundleHash ? bundleHash.digestHex() : await this.digest(out);
      await runBounded(
        copies,
        this.readConcurrency,
        member(() => undefined),
      );
      if (encoded.size === 0) return { sha256: sha256!, bytes: out, layout, pooled: pool !== undefined };
      const built = await this.buildEncoded(plan, layout, keys, out, encoded);
      pool?.release(out);
      return built;
    } catch (error) {
      pool?.release(out);
      throw error;
    }
  }

  /**
   * The version 2 bundle (SPEC §5a) of a plan some of whose contents are stored encoded: laid out
   * again with their stored sizes (in the same data order), the rest copied from `plain`, the
   * version 1 bundle already built. Copies of a content share its one encoded copy.
   */
  private async buildEncoded(
    plan: PlannedBundle,
    plainLayout: BundleLayout,
    keys: string[],
    plain: Uint8Array,
    encoded: ReadonlyMap<string, EncodedMember>,
  ): Promise<BuiltBundle> {
    const specs = plan.files.map((file, i): BundleMemberSpec => {
      const stored = encoded.get(file.sha256);
      const spec = { key: keys[i]!, sizeBytes: file.sizeBytes, sha256: file.sha256 };
      return stored ? { ...spec, storedBytes: stored.stored.length, encoding: stored.encoding } : spec;
    });
    const layout = layoutBundle(specs, { dataOrder: dataOrderOf(plan) });
    const plainOffset = new Map(plainLayout.records.map((record) => [record.key, record.offset]));
    const bytes = new Uint8Array(layout.sizeBytes);
    bytes.set(layout.head, 0);
    for (const index of layout.written) {
      const record = layout.records[index]!;
      const stored = encoded.get(record.sha256);
      if (stored) bytes.set(stored.stored, record.offset);
      else {
        const from = plainOffset.get(record.key)!;
        bytes.set(plain.subarray(from, from + record.sizeBytes), record.offset);
      }
    }
    return { sha256: await this.digest(bytes), bytes, layout, pooled: false };
  }

  /**
   * One file larger than the target, streamed. It is alone in its bundle: by the split rule of
   * SPEC §6 any next file, even a copy of its content, would push the sum over the target.
   */
  private async writeStreamed(plan: PlannedBundle, layout: BundleLayout, read: ReadProjectFile, onBundle: OnBundle) {
    // An internal assertion (the planner gives a streamed bundle one file): a plain Error is a bug.
    if (plan.files.length !== 1) throw new Error(`internal: a streamed bundle holds one file, this plan has ${plan.files.length}`);
    const first = plan.files[0]!;
    const newHash = this.incremental ?? createSha256;
    const bundleHash = newHash();
    let resolveFinished!: (value: { sha256: string; url: string }) => void;
    let rejectFinished!: (error: unknown) => void;
    const finished = new Promise<{ sha256: string; url: string }>((resolve, reject) => {
      resolveFinished = resolve;
      rejectFinished = reject;
    });
    finished.catch(() => undefined); // the writer itself reports the failure
    let started = false;
    let failure: unknown;
    const url = (sha256: string) => this.bundleUrl(sha256);
    const chunks = async function* (): AsyncGenerator<Uint8Array> {
      started = true;
      try {
        bundleHash.update(layout.head);
        yield layout.head;
        const fileHash = newHash();
        let seen = 0;
        for await (const chunk of await readChunks(first, read)) {
          seen += chunk.length;
          if (seen > first.sizeBytes)
            throw new PublishInputError(`${first.path}: larger than the ${first.sizeBytes} bytes the loose index says`, first.path);
          fileHash.update(chunk);
          bundleHash.update(chunk);
          yield chunk;
        }
        checkDigest(first, seen, fileHash.digestHex());
        const sha256 = bundleHash.digestHex();
        resolveFinished({ sha256, url: url(sha256) });
      } catch (error) {
        failure = error;
        rejectFinished(error);
        throw error;
      }
    };
    const iterable = chunks();
    await onBundle({
      kind: 'stream',
      group: plan.group,
      members: plan.files.length,
      sizeBytes: layout.sizeBytes,
      chunks: iterable,
      finished,
    });
    if (!started) for await (const _ of iterable); // the consumer skipped it: still read and check the file
    if (failure !== undefined) throw failure;
    const { sha256 } = await finished;
    return { sha256, sizeBytes: layout.sizeBytes };
  }
}

/**
 * Bundle buffers for reuse (at most `bundlesInMemory` exist): one being filled, and with two,
 * one being handed over. A buffer is made a little larger than asked, so that later bundles
 * of about the target fit it again.
 */
class BufferPool {
  private readonly free: ArrayBufferLike[] = [];

  take(size: number, capacity: number): Uint8Array {
    const at = this.free.findIndex((buffer) => buffer.byteLength >= size);
    if (at >= 0) return new Uint8Array(this.free.splice(at, 1)[0]!, 0, size);
    this.free.length = 0; // too small: let them go rather than hold more buffers
    return new Uint8Array(Math.max(size, capacity)).subarray(0, size);
  }

  release(bytes: Uint8Array): void {
    if (this.free.length < 2 && !this.free.includes(bytes.buffer)) this.free.push(bytes.buffer);
  }

  /**
   * Lets the buffers go. A long-lived buffer would wait for a full garbage collection to free
   * its memory; moved (transferred) into a fresh one, it goes with the next minor collection.
   */
  dispose(): void {
    for (const buffer of this.free.splice(0)) {
      if (typeof structuredClone === 'function' && buffer instanceof ArrayBuffer) structuredClone(buffer, { transfer: [buffer] });
    }
  }
}

/** SPEC §5 "Data order": a load group's first use, else table order. */
function dataOrderOf(plan: PlannedBundle): 'given' | 'key' {
  return plan.order === 'first-use' ? 'given' : 'key';
}

/** The contents (by SHA-256) that are stored encoded, once every encoding is known. */
async function encodedContents(
  layout: BundleLayout,
  encodings: ReadonlyMap<number, Promise<EncodedMember | undefined>>,
): Promise<Map<string, EncodedMember>> {
  // All settled before any failure is thrown: the compressor reads the bundle's buffer.
  const entries = [...encodings].sort((a, b) => a[0] - b[0]);
  const settled = await Promise.allSettled(entries.map(([, encoding]) => encoding));
  const encoded = new Map<string, EncodedMember>();
  // In table order, whatever order the compressor finished in: the result depends on bytes only.
  for (const [i, outcome] of settled.entries()) {
    if (outcome.status === 'rejected') throw outcome.reason;
    if (outcome.value) encoded.set(layout.records[entries[i]![0]]!.sha256, outcome.value);
  }
  return encoded;
}

function sameMemory(a: Uint8Array, b: Uint8Array): boolean {
  return a.buffer === b.buffer && a.byteOffset === b.byteOffset && a.length === b.length;
}

/**
 * Runs `work` over `items` with at most `limit` at once, started in order. On a failure no
 * more items start; once the started ones settle, the failure of the earliest item is thrown
 * (so the error does not depend on timing).
 */
async function runBounded<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failedAt = Infinity;
  let failure: unknown;
  const lane = async () => {
    while (next < items.length && failedAt === Infinity) {
      const index = next++;
      try {
        await work(items[index]!, index);
      } catch (error) {
        if (index < failedAt) {
          failedAt = index;
          failure = error;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failedAt !== Infinity) throw failure;
}

async function readWhole(file: LooseFileEntry, read: ReadProjectFile, into: Uint8Array | undefined): Promise<Uint8Array> {
  let content: FileContent;
  try {
    content = await read(file, into ? { stream: false, into } : { stream: false });
  } catch (error) {
    throw new PublishInputError(`${file.path}: cannot read: ${(error as Error).message}`, file.path, error);
  }
  if (content instanceof Uint8Array) return content;
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of content) {
    if (length + chunk.length > file.sizeBytes)
      throw new PublishInputError(`${file.path}: larger than the ${file.sizeBytes} bytes the loose index says`, file.path);
    if (into) into.set(chunk, length);
    else parts.push(chunk);
    length += chunk.length;
  }
  return into ? into.subarray(0, length) : concatBytes(parts, length);
}

async function readChunks(file: LooseFileEntry, read: ReadProjectFile): Promise<AsyncIterable<Uint8Array>> {
  let content: FileContent;
  try {
    content = await read(file, { stream: true });
  } catch (error) {
    throw new PublishInputError(`${file.path}: cannot read: ${(error as Error).message}`, file.path, error);
  }
  if (content instanceof Uint8Array) {
    const whole = content;
    return (async function* () {
      yield whole;
    })();
  }
  return content;
}

function checkDigest(file: LooseFileEntry, sizeBytes: number, sha256: string): void {
  if (sizeBytes !== file.sizeBytes) {
    throw new PublishInputError(`${file.path}: ${sizeBytes} bytes on disk, but the loose index says ${file.sizeBytes}`, file.path);
  }
  if (sha256 !== file.sha256) {
    throw new PublishInputError(`${file.path}: SHA-256 ${sha256} differs from the loose index's ${file.sha256}`, file.path);
  }
}
