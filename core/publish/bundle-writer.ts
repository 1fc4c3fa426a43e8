/**
 * The bundle writer (SPEC §6), in the shape of the seed's `ContentBundleWriter`: it reads each
 * file once through a function you give it, checks it against the loose index, and hands over
 * one finished bundle at a time, so a publish step of your own can skip bundles the host
 * already has. It returns the bundled index.
 */
import { AwakeError } from '../errors.js';
import { layoutBundle, type BundleLayout } from '../format/awkb.js';
import { opaqueId, PATH_ID_ALGORITHM, type PathIds } from '../format/ids.js';
import { assertSafePath } from '../format/paths.js';
import { parseProjectIndex, type BundledFileEntry, type BundledIndex, type LooseFileEntry, type LooseIndex } from '../format/project-index.js';
import { createSha256, sha256Hex } from '../hash.js';
import { groupByFolder, toGrouping, type GroupingLike } from './grouping.js';
import { DEFAULT_TARGET_BUNDLE_BYTES, planBundles, type PlannedBundle } from './plan.js';

/** A file's bytes: whole, or as chunks for files larger than the target (never held whole). */
export type FileContent = Uint8Array | AsyncIterable<Uint8Array>;

/**
 * Reads one project file. `stream` is true when the file is larger than the target: return an
 * async iterable of chunks then (a Node `Readable` is one), so it is never held whole.
 */
export type ReadProjectFile = (entry: LooseFileEntry, hint: { stream: boolean }) => FileContent | Promise<FileContent>;

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
}

/** A publish input that does not match its loose index, or cannot be read. */
export class PublishInputError extends AwakeError {
  override name = 'PublishInputError';
  constructor(message: string, path?: string, cause?: unknown) {
    super('E_PUBLISH_INPUT', message, { ...(path === undefined ? {} : { path }), ...(cause === undefined ? {} : { cause }) });
  }
}

export class BundleWriter {
  readonly targetBundleBytes: number;
  readonly bundleUrlPrefix: string;
  private readonly grouping;
  private readonly pathIds: PathIds | undefined;

  constructor(options: BundleWriterOptions = {}) {
    const target = options.targetBundleBytes ?? DEFAULT_TARGET_BUNDLE_BYTES;
    if (!Number.isSafeInteger(target) || target < 1) throw new RangeError(`targetBundleBytes must be a positive integer, got ${target}`);
    if (options.pathIds && !options.pathIds.salt) throw new RangeError('pathIds needs a non-empty salt');
    this.targetBundleBytes = target;
    this.grouping = toGrouping(options.grouping ?? groupByFolder(1));
    this.pathIds = options.pathIds ? { algorithm: PATH_ID_ALGORITHM, salt: options.pathIds.salt } : undefined;
    this.bundleUrlPrefix = (options.bundleUrlPrefix ?? 'bundles').replace(/\/+$/, '');
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
   */
  async write(looseIndex: LooseIndex, read: ReadProjectFile, onBundle: (bundle: FinishedBundle) => void | Promise<void>): Promise<BundledIndex> {
    const plans = this.plan(looseIndex);
    const bundles: BundledIndex['bundles'] = [];
    const files: BundledFileEntry[] = [];
    for (const plan of plans) {
      const keyOf = (path: string) => (this.pathIds ? opaqueId(this.pathIds.salt, path) : path);
      const layout = layoutBundle(plan.files.map((file) => ({ key: keyOf(file.path), sizeBytes: file.sizeBytes, sha256: file.sha256 })));
      const { sha256, sizeBytes } = plan.dataBytes > this.targetBundleBytes
        ? await this.writeStreamed(plan, layout, read, onBundle)
        : await this.writeInMemory(plan, layout, keyOf, read, onBundle);
      bundles.push({ sha256, sizeBytes, url: this.bundleUrl(sha256) });
      const offsetOf = new Map(layout.records.map((record) => [record.key, record.offset]));
      for (const file of plan.files) {
        const key = keyOf(file.path);
        files.push({
          ...(this.pathIds ? { id: key } : { path: file.path }),
          sizeBytes: file.sizeBytes,
          sha256: file.sha256,
          bundle: sha256,
          offset: offsetOf.get(key)!,
        });
      }
    }
    return {
      formatVersion: 3,
      rootPath: looseIndex.rootPath,
      ...(this.pathIds ? { pathIds: this.pathIds } : {}),
      bundles,
      files,
    };
  }

  bundleUrl(sha256: string): string {
    return this.bundleUrlPrefix === '' ? `${sha256}.awkb` : `${this.bundleUrlPrefix}/${sha256}.awkb`;
  }

  private async writeInMemory(plan: PlannedBundle, layout: BundleLayout, keyOf: (path: string) => string, read: ReadProjectFile, onBundle: (bundle: FinishedBundle) => void | Promise<void>) {
    const out = new Uint8Array(layout.sizeBytes);
    out.set(layout.head, 0);
    const recordByKey = new Map(layout.records.map((record) => [record.key, record]));
    // Records whose content goes into the data area; the rest share an earlier copy (SPEC §5).
    const firstCopies = new Set(layout.written.map((index) => layout.records[index]!.key));
    for (const file of plan.files) {
      const bytes = await readWhole(file, read);
      await checkFile(file, bytes);
      const key = keyOf(file.path);
      if (firstCopies.has(key)) out.set(bytes, recordByKey.get(key)!.offset);
    }
    const sha256 = await sha256Hex(out);
    await onBundle({ kind: 'bytes', group: plan.group, members: plan.files.length, sizeBytes: out.length, sha256, url: this.bundleUrl(sha256), bytes: out });
    return { sha256, sizeBytes: out.length };
  }

  /** One content larger than the target (plus any files with the same content), streamed. */
  private async writeStreamed(plan: PlannedBundle, layout: BundleLayout, read: ReadProjectFile, onBundle: (bundle: FinishedBundle) => void | Promise<void>) {
    const [first, ...copies] = plan.files as [LooseFileEntry, ...LooseFileEntry[]];
    const bundleHash = createSha256();
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
        const fileHash = createSha256();
        let seen = 0;
        for await (const chunk of await readChunks(first, read)) {
          seen += chunk.length;
          if (seen > first.sizeBytes) throw new PublishInputError(`${first.path}: larger than the ${first.sizeBytes} bytes the loose index says`, first.path);
          fileHash.update(chunk);
          bundleHash.update(chunk);
          yield chunk;
        }
        checkDigest(first, seen, fileHash.digestHex());
        for (const copy of copies) await checkStreamedCopy(copy, read);
        const sha256 = bundleHash.digestHex();
        resolveFinished({ sha256, url: url(sha256) });
      } catch (error) {
        failure = error;
        rejectFinished(error);
        throw error;
      }
    };
    const iterable = chunks();
    await onBundle({ kind: 'stream', group: plan.group, members: plan.files.length, sizeBytes: layout.sizeBytes, chunks: iterable, finished });
    if (!started) for await (const _ of iterable); // the consumer skipped it: still read and check the file
    if (failure !== undefined) throw failure;
    const { sha256 } = await finished;
    return { sha256, sizeBytes: layout.sizeBytes };
  }
}

async function readWhole(file: LooseFileEntry, read: ReadProjectFile): Promise<Uint8Array> {
  let content: FileContent;
  try {
    content = await read(file, { stream: false });
  } catch (error) {
    throw new PublishInputError(`${file.path}: cannot read: ${(error as Error).message}`, file.path, error);
  }
  if (content instanceof Uint8Array) return content;
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of content) {
    length += chunk.length;
    if (length > file.sizeBytes) throw new PublishInputError(`${file.path}: larger than the ${file.sizeBytes} bytes the loose index says`, file.path);
    parts.push(chunk);
  }
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
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
    return (async function* () { yield whole; })();
  }
  return content;
}

async function checkStreamedCopy(file: LooseFileEntry, read: ReadProjectFile): Promise<void> {
  const hash = createSha256();
  let seen = 0;
  for await (const chunk of await readChunks(file, read)) {
    seen += chunk.length;
    hash.update(chunk);
  }
  checkDigest(file, seen, hash.digestHex());
}

async function checkFile(file: LooseFileEntry, bytes: Uint8Array): Promise<void> {
  if (bytes.length !== file.sizeBytes) checkDigest(file, bytes.length, '');
  checkDigest(file, bytes.length, await sha256Hex(bytes));
}

function checkDigest(file: LooseFileEntry, sizeBytes: number, sha256: string): void {
  if (sizeBytes !== file.sizeBytes) {
    throw new PublishInputError(`${file.path}: ${sizeBytes} bytes on disk, but the loose index says ${file.sizeBytes}`, file.path);
  }
  if (sha256 !== file.sha256) {
    throw new PublishInputError(`${file.path}: SHA-256 ${sha256} differs from the loose index's ${file.sha256}`, file.path);
  }
}
