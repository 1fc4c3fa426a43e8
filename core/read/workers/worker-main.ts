/**
 * The reader's Web Worker (see digest-pool.ts): built from this entry by `npm run build` into
 * one script (scripts/postbuild.mjs), from the same modules the page runs, so the body reader
 * (net/body.ts), the streamed-bundle check (stream-check.ts) and the IndexedDB store
 * (cache/idb-store.ts) each exist once. It answers:
 * - `ping`: whether it has WebCrypto and fetch, before the page trusts it with buffers;
 * - a digest job: hashes ranges of the buffers it is sent (transferred), optionally cuts each
 *   into a buffer of its own, and optionally stores them when every one matches its key;
 * - `url`: fetches and reads a whole body, within the bounds it is given, reporting progress;
 * - `bundle`: one job per bundle (SPEC §7 "Streamed members"): fetches it, checks the head,
 *   cuts and hashes each member as it arrives and posts it at once (transferred, not copied),
 *   and once the whole bundle passed, stores its members;
 * - `read` / `has`: cached entries, checked here; `open`, `flush`: the store.
 */
import { getEntries, hasEntries, openStore, putEntries, type WorkerStoreAccess } from '../../cache/idb-store.js';
import { bodyToRead, collectBody, declaredLength, pumpBody, responseHead, type ResponseHead } from '../../net/body.js';
import { toHex } from '../../hash.js';
import { MemberDecodeError } from '../../errors.js';
import { decodedOrRefusal, type EncodedMemberInfo } from '../../format/encoded-member.js';
import { BundleStreamChecker, decodeFailure, deferredJudge, StreamRefusal, type BundleStreamPlan } from '../verify/stream-check.js';
import { checkMember } from '../verify/check-member.js';

declare const self: {
  postMessage(message: unknown, transfer?: Transferable[]): void;
  onmessage: ((event: MessageEvent) => void) | null;
  crypto: Crypto;
};

const post = (message: unknown, transfer: Transferable[] = []) => self.postMessage(message, transfer);
const describe = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));
const digestHex = async (bytes: Uint8Array): Promise<string> =>
  toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)));

/** Requests in flight, by job id, to abort. */
const fetches = new Map<number, AbortController>();

// Writes wait until the page says its loads are done (or too much waits): IndexedDB's work then
// does not compete with fetching and hashing for the cores.
const QUEUED_BYTES_LIMIT = 64 * 1024 * 1024;
let queued: { id: number; target: WorkerStoreAccess; entries: [string, Uint8Array][] }[] = [];
let queuedBytes = 0;

/**
 * A flush the page asked for found nothing queued (a read waits for a write this worker has not
 * queued yet): the next write goes at once, rather than after the page's loads are over, which a
 * load held at the server may postpone for as long as it is held.
 */
let flushAsked = false;

function flush(): void {
  const jobs = queued;
  queued = [];
  queuedBytes = 0;
  flushAsked = jobs.length === 0;
  for (const job of jobs) void write(job.id, job.target, job.entries);
}

function store(id: number, target: WorkerStoreAccess, entries: [string, Uint8Array][]): void {
  queued.push({ id, target, entries });
  for (const [, bytes] of entries) queuedBytes += bytes.length;
  if (flushAsked || queuedBytes > QUEUED_BYTES_LIMIT) flush();
}

async function write(id: number, target: WorkerStoreAccess, entries: [string, Uint8Array][]): Promise<void> {
  try {
    await putEntries(target, entries);
    post({ id, stored: true });
  } catch (error) {
    post({ id, storeError: describe(error) });
  }
}

interface DigestMessage {
  id: number;
  buffers: ArrayBuffer[];
  /** [buffer, byteOffset, length] */
  ranges: [number, number, number][];
  split: boolean;
  store?: WorkerStoreAccess & { keys: string[] };
  /** Per range: an encoded member's stored bytes, decoded here before they are hashed (SPEC §5a). */
  decode?: (EncodedMemberInfo | null)[];
}

async function digest({ id, buffers, ranges, split, store: target, decode }: DigestMessage): Promise<void> {
  try {
    const views = ranges.map(([buffer, offset, length]) => new Uint8Array(buffers[buffer]!, offset, length));
    const decoded = await Promise.all(views.map((view, i) => (decode?.[i] ? decodedOrRefusal(view, decode[i]!) : view)));
    const refused = (bytes: Uint8Array | MemberDecodeError): bytes is MemberDecodeError => bytes instanceof MemberDecodeError;
    const digests = await Promise.all(decoded.map((bytes) => (refused(bytes) ? '' : digestHex(bytes))));
    // A decoded member's own buffer is its part; a stored range is cut into one.
    const own = decoded.map((bytes, i) => (refused(bytes) ? new Uint8Array(0) : decode?.[i] ? bytes : undefined));
    const parts = split ? decoded.map((bytes, i) => own[i]?.buffer ?? (bytes as Uint8Array).slice().buffer) : undefined;
    const decodeErrors = decode ? decoded.map((bytes) => (refused(bytes) ? decodeFailure(bytes) : null)) : undefined;
    // Copies for the store, taken before the buffers go back; written after, off the reply's path.
    // All or nothing: one range that does not match its key, and nothing is stored (SPEC §7).
    const whole = target !== undefined && digests.every((d, i) => d === target.keys[i]);
    const entries: [string, Uint8Array][] = whole ? decoded.map((bytes, i) => [target.keys[i]!, (bytes as Uint8Array).slice()]) : [];
    post({ id, buffers, digests, parts, decodeErrors }, parts ? [...buffers, ...(parts as ArrayBuffer[])] : buffers);
    if (target) store(id, target, entries);
  } catch (error) {
    post({ id, buffers, error: describe(error) }, buffers);
    if (target) post({ id, storeError: describe(error) });
  }
}

async function hasStored({ id, has }: { id: number; has: WorkerStoreAccess & { keys: string[] } }): Promise<void> {
  try {
    post({ id, present: await hasEntries(has, has.keys) });
  } catch (error) {
    post({ id, readError: describe(error) });
  }
}

async function readStored({ id, read }: { id: number; read: WorkerStoreAccess & { keys: string[]; sizes: number[] } }): Promise<void> {
  try {
    const values = await getEntries(read, read.keys);
    const found: [string, ArrayBuffer][] = [];
    const bad: string[] = [];
    await Promise.all(
      values.map(async (bytes, i) => {
        const key = read.keys[i]!;
        if (bytes === undefined) return;
        if (checkMember({ sha256: key, sizeBytes: read.sizes[i]! }, bytes, await digestHex(bytes)) !== undefined) return void bad.push(key);
        found.push([key, bytes.buffer as ArrayBuffer]);
      }),
    );
    post(
      { id, found, bad },
      found.map(([, buffer]) => buffer),
    );
  } catch (error) {
    post({ id, readError: describe(error) });
  }
}

interface GetMessage {
  id: number;
  url: string;
  headers: Record<string, string>;
  progress: boolean;
  expectedBytes?: number;
}

/** Progress posts at most every this many bytes (and at the end): a message per chunk would cost the page. */
const PROGRESS_STEP_BYTES = 64 * 1024;

function progressPoster(id: number, total: number | undefined): (received: number) => void {
  let reported = 0;
  return (received) => {
    if (received - reported < PROGRESS_STEP_BYTES) return;
    reported = received;
    post({ id, progress: received, total });
  };
}

async function get(message: GetMessage): Promise<void> {
  const { id, url, headers } = message;
  const controller = new AbortController();
  fetches.set(id, controller);
  let readToEnd = false;
  try {
    // A range past the HTTP cache, as the page's transport asks for it (net/transport.ts `streamRanges`).
    const ranged = Object.keys(headers ?? {}).some((name) => name.toLowerCase() === 'range');
    const response = await fetch(url, { headers, signal: controller.signal, ...(ranged ? { cache: 'no-store' as const } : {}) });
    const head = responseHead(response);
    if (response.status < 200 || response.status > 299 || !response.body) {
      response.body?.cancel().catch(() => undefined);
      return post({ id, head, buffer: new ArrayBuffer(0) });
    }
    const limit = message.expectedBytes;
    const declared = declaredLength(response.headers);
    // Refused at the headers as the transport does: more than the limit.
    if (limit !== undefined && declared !== undefined && declared > limit) {
      response.body.cancel().catch(() => undefined);
      return post({ id, head, buffer: new ArrayBuffer(0), over: { declaredBytes: declared } });
    }
    const read = await collectBody(bodyToRead(response)!, {
      signal: controller.signal,
      ...(limit !== undefined ? { limit } : {}),
      ...(declared !== undefined ? { expectedBytes: declared } : {}),
      ...(message.progress ? { onProgress: progressPoster(id, declared) } : {}),
    });
    if (read.overLimit !== undefined) return post({ id, head, buffer: new ArrayBuffer(0), over: { receivedBytes: read.overLimit } });
    readToEnd = true;
    const buffer = wholeBuffer(read.bytes);
    post({ id, head, buffer }, [buffer]);
  } catch (error) {
    post({ id, failure: describe(error), aborted: controller.signal.aborted });
  } finally {
    stopUnlessRead(id, controller, readToEnd);
  }
}

/** The job is over: a body not read to its end is stopped (see net/body.ts `bodyToRead`); one that was is left to finish. */
function stopUnlessRead(id: number, controller: AbortController, readToEnd: boolean): void {
  fetches.delete(id);
  if (!readToEnd) controller.abort();
}

/** The bytes' own buffer when they span it, else a copy that does. */
function wholeBuffer(bytes: Uint8Array): ArrayBuffer {
  return (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes.buffer : bytes.slice().buffer) as ArrayBuffer;
}

/**
 * A response the page fetched (digest-pool.ts: a cold page's large decode, a preloaded bundle):
 * its head, and its body as the page posts it here chunk by chunk (`fed`, `fedEnd`, `fedError`
 * messages), each chunk's buffer transferred as the page reads it. Not a transferred stream: that
 * takes one round trip to the page per chunk, each waiting for a free moment of a page busy with
 * its engine, so a whole bundle arrived here only after its last byte had reached the page.
 */
interface PageFetched {
  head: ResponseHead;
  fed: boolean;
}

/** The bodies the page is feeding, by job id. */
const feeds = new Map<number, ReadableStreamDefaultController<Uint8Array>>();

/** The body the page feeds to job `id`. A body this job stops reading drops what the page still sends. */
function fedBody(id: number): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      feeds.set(id, controller);
    },
    cancel() {
      feeds.delete(id);
    },
  });
}

/** One message of a fed body: a chunk, its end, or why the page could not read on. */
function feed(data: { id: number; fed?: ArrayBuffer; fedEnd?: boolean; fedError?: string }): void {
  const controller = feeds.get(data.id);
  if (!controller) return;
  if (data.fed !== undefined) return controller.enqueue(new Uint8Array(data.fed));
  feeds.delete(data.id);
  if (data.fedEnd) controller.close();
  else controller.error(new TypeError(data.fedError ?? 'the page stopped reading the body'));
}

interface BundleMessage {
  id: number;
  bundle: { url: string; headers: Record<string, string>; plan: BundleStreamPlan; store?: WorkerStoreAccess; fetched?: PageFetched };
}

/** The page's response, as much of a `Response` as a bundle job reads: its head and the body it feeds. */
function pageResponse(id: number, { head, fed }: PageFetched): Response {
  return { ...head, headers: new Headers(head.headers), body: fed ? fedBody(id) : null } as unknown as Response;
}

/**
 * One attempt at one bundle, streamed (SPEC §7 "Streamed members"). Posts `head`, then each
 * member as it passes (`member`, its buffer transferred), `progress`, and at the end `end` with
 * the bytes read and, for a refused bundle, why. The page's transport judges the head and the
 * length as for any body, and retries what is worth retrying.
 */
async function bundle({ id, bundle: job }: BundleMessage): Promise<void> {
  const controller = new AbortController();
  fetches.set(id, controller);
  let readToEnd = false;
  try {
    const response = job.fetched
      ? pageResponse(id, job.fetched)
      : await fetch(job.url, { headers: job.headers, signal: controller.signal });
    const head = job.fetched?.head ?? responseHead(response);
    const limit = job.plan.sizeBytes;
    const unstored = () => job.store && post({ id, storeError: 'nothing stored: the bundle did not arrive' });
    if (response.status < 200 || response.status > 299 || !response.body) {
      response.body?.cancel().catch(() => undefined);
      post({ id, end: { head, received: 0 } });
      return void unstored();
    }
    const declared = declaredLength(response.headers);
    if (declared !== undefined && declared > limit) {
      response.body.cancel().catch(() => undefined);
      post({ id, end: { head, received: 0, over: { declaredBytes: declared } } });
      return void unstored();
    }
    // Copies for the store are taken as members pass, before their buffers go to the page; they
    // are written only once the whole bundle has passed (SPEC §7: nothing of a failed bundle is cached).
    const kept: [string, Uint8Array][] = [];
    // A head that is not the canonical one is refused here, and judged on the page (stream-check.ts
    // `judgedError`): this script then carries no AWKB decoder nor its messages.
    const verifier = new BundleStreamChecker(
      job.plan,
      digestHex,
      {
        member(index, bytes) {
          if (job.store) kept.push([job.plan.contents[index]!.sha256, bytes.slice()]);
          post({ id, member: index, buffer: bytes.buffer }, [bytes.buffer as ArrayBuffer]);
        },
      },
      deferredJudge(job.plan),
    );
    const onProgress = progressPoster(id, declared);
    let refusal: StreamRefusal | undefined;
    // The page's body is read as it comes: its clone for Chromium's loader was taken there.
    const read = await pumpBody(job.fetched ? response.body! : bodyToRead(response)!, {
      signal: controller.signal,
      limit,
      onChunk: (chunk) => verifier.push(chunk),
      onProgress,
    }).catch((error: unknown) => {
      if (!(error instanceof StreamRefusal)) throw error;
      refusal = error;
      return { received: verifier.received, overLimit: undefined };
    });
    if (read.overLimit !== undefined) {
      post({ id, end: { head, received: read.received, over: { receivedBytes: read.overLimit } } });
      return void unstored();
    }
    readToEnd = !refusal;
    post({ id, progress: read.received, total: declared });
    // A body cut short is the transport's to retry; only a whole body is judged.
    if (!refusal && (declared === undefined || read.received === declared)) {
      await verifier.finish().catch((error: unknown) => {
        if (!(error instanceof StreamRefusal)) throw error;
        refusal = error;
      });
    }
    post({ id, end: { head, received: read.received, ...(refusal ? { refusal: refusal.failure } : {}) } });
    if (!job.store) return;
    if (!refusal && kept.length === job.plan.contents.length) store(id, job.store, kept);
    else post({ id, storeError: 'nothing stored: the bundle did not pass' });
  } catch (error) {
    post({ id, failure: describe(error), aborted: controller.signal.aborted });
    if (job.store) post({ id, storeError: 'nothing stored: the bundle did not arrive' });
  } finally {
    stopUnlessRead(id, controller, readToEnd);
  }
}

self.onmessage = ({ data }: MessageEvent) => {
  if (data.ping) return post({ pong: true, subtle: Boolean(self.crypto?.subtle?.digest), fetch: typeof fetch === 'function' });
  if (data.abort) return void fetches.get(data.abort)?.abort();
  if (data.fed !== undefined || data.fedEnd || data.fedError !== undefined) return feed(data);
  if (data.bundle) return void bundle(data);
  if (data.url) return void get(data);
  if (data.read) return void readStored(data);
  if (data.has) return void hasStored(data);
  if (data.open) return void openStore(data.open).catch(() => undefined);
  if (data.flush) return flush();
  void digest(data);
};
