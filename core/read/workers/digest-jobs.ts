/**
 * What the reader asks of a digest pool (digest-pool.ts), and the pool that does it on the calling
 * thread (`InThreadDigests`): hashing ranges of buffers, cutting them into buffers of their own,
 * and decoding encoded members first (SPEC §5a). A module of its own so that the service worker,
 * which has no Web Workers, carries this and not the worker pool
 * (adapters/service-worker/digest-pool.ts stands in for digest-pool.ts in its build).
 */
import type { WorkerStoreAccess } from '../../cache/idb-store.js';
import { MemberDecodeError } from '../../errors.js';
import { decodedOrRefusal, type EncodedMemberInfo } from '../../format/encoded-member.js';
import { sha256Hex } from '../../hash.js';
import type { BodyFetcher, StreamElsewhere } from '../../net/body.js';
import type { BundleStreamPlan } from '../verify/stream-plan.js';

/** A range of one of a job's inputs: `input` indexes `DigestJob.inputs`. */
export interface DigestRange {
  input: number;
  offset: number;
  length: number;
  /**
   * The range is an encoded member's stored bytes (SPEC §5a): decoded first, where the job runs
   * (a worker's `DecompressionStream`, off the page's thread), and its digest, part and stored
   * copy are then the decoded bytes'. A refusal leaves its digest `''` and its error in `decodeErrors`.
   */
  decode?: EncodedMemberInfo;
}

export interface DigestJob {
  /**
   * The bytes to hash. With `transfer`, the pool may move their buffers to a worker: the caller
   * must not touch them until the result, which hands back views onto the same bytes.
   */
  inputs: Uint8Array[];
  /** What to hash, relative to each input; by default every input whole. */
  ranges?: DigestRange[];
  /** Also return each range as a `Uint8Array` over a buffer of its own. */
  split?: boolean;
  /** The caller owns the inputs' whole buffers and gives them up for the job (no copy). */
  transfer?: boolean;
  /**
   * Also write each range into this IndexedDB store under `keys[i]`, from the worker (see
   * `WorkerStoreAccess`), if and only if every range's SHA-256 equals its key: a job with one
   * mismatch stores nothing. `DigestResult.stored` tells how it went.
   */
  store?: WorkerStoreAccess & { keys: string[] };
  /**
   * Hash on this thread rather than wait for a worker to start: a worker takes the job only if
   * one has already answered. For work on the path to a game's first bytes.
   */
  now?: boolean;
}

export type { WorkerStoreAccess } from '../../cache/idb-store.js';

export interface DigestResult {
  /** The inputs again (views onto the bytes, which may live in a new buffer after a transfer). */
  inputs: Uint8Array[];
  /** Lowercase hex SHA-256 of each range, in order. */
  digests: string[];
  /** With `split`: each range's bytes in a buffer no one else holds. */
  parts?: Uint8Array[];
  /** With `store`: settles when the write has committed; rejects with the store's error. */
  stored?: Promise<void>;
  /** Per range, for a range with `decode` whose bytes were refused: why. */
  decodeErrors?: (MemberDecodeError | undefined)[];
}

/**
 * What the reader asks of a pool. `digest` and `terminate` are all a pool must do (a pool of your
 * own, `hashWorkers`); the rest is what a pool of Web Workers can do besides, each optional: a pool
 * without it (`InThreadDigests`, the service worker's) leaves that work to the reader on its own
 * thread. A method that is there may still answer `undefined` (no worker up): the same fallback.
 */
export interface DigestPool {
  digest(job: DigestJob): Promise<DigestResult>;
  /** Stops the pool's workers (jobs in flight reject). */
  terminate(): void;
  /** Whether jobs go to workers: undefined until the first job has found out, false once they cannot. */
  readonly usingWorkers?: boolean | undefined;
  /** Starts the workers soon, in a task of their own. */
  warm?(): void;
  /** Lets the workers open this store as soon as they are up. */
  prepareStore?(access: WorkerStoreAccess): void;
  /** Lets the workers write what they hold for their stores (they wait for the loads in flight). */
  flushStores?(): void;
  /** Reads bodies in the workers (`undefined` from a call: this thread reads it). */
  readonly fetchBody?: BodyFetcher;
  /** One bundle fetched, checked and cut in a worker, each member posted as it passes (SPEC §7 "Streamed members"). */
  streamBundle?(
    plan: BundleStreamPlan,
    onMember: (index: number, bytes: Uint8Array) => void,
    store?: WorkerStoreAccess,
    preloaded?: boolean,
  ): { attempt: StreamElsewhere; stored: () => Promise<void> | undefined };
  /** Cached entries read and checked in a worker: the ones that passed and the ones that failed. */
  readStored?(
    access: WorkerStoreAccess,
    wanted: readonly { sha256: string; sizeBytes: number }[],
  ): Promise<{ found: Map<string, Uint8Array>; bad: string[] } | undefined>;
  /** Which of `keys` a store holds, asked in a worker. */
  hasStored?(access: WorkerStoreAccess, keys: readonly string[]): Promise<boolean[] | undefined>;
}

export function rangesOf(job: DigestJob): DigestRange[] {
  return job.ranges ?? job.inputs.map((bytes, input) => ({ input, offset: 0, length: bytes.length }));
}

/** The same hashing on the calling thread. */
export class InThreadDigests implements DigestPool {
  async digest(job: DigestJob): Promise<DigestResult> {
    const ranges = rangesOf(job);
    const views = ranges.map(({ input, offset, length }) => job.inputs[input]!.subarray(offset, offset + length));
    const decoded = await Promise.all(ranges.map(({ decode }, i) => (decode ? decodedOrRefusal(views[i]!, decode) : views[i]!)));
    const digests = await Promise.all(decoded.map((bytes) => (bytes instanceof MemberDecodeError ? '' : sha256Hex(bytes))));
    const parts = job.split
      ? decoded.map((bytes, i) => (bytes instanceof MemberDecodeError ? new Uint8Array(0) : ranges[i]!.decode ? bytes : bytes.slice()))
      : undefined;
    const errors = decoded.map((bytes) => (bytes instanceof MemberDecodeError ? bytes : undefined));
    return {
      inputs: job.inputs,
      digests,
      ...(parts ? { parts } : {}),
      ...(errors.some(Boolean) ? { decodeErrors: errors } : {}),
    };
  }

  terminate(): void {}
}
