/**
 * Streamed members (SPEC §7): a bundle checked as its bytes arrive, each member handed out as
 * soon as it may be. The header and table are compared with the canonical ones (§5) built from
 * the index's records as soon as they are in, and a mismatch refuses the bundle before any member
 * is handed out. Each distinct content is cut into a buffer of its own as its bytes arrive (the
 * only copy a byte needs), hashed once complete, and handed to `sink.member` if it matches. The
 * bundle is still accepted or rejected whole: `finish` resolves only when every content passed
 * and the body was exactly the listed size.
 *
 * This file does no I/O and runs wherever the body is read: on the page or in Node (fed from
 * `response.body` by the transport), and in the reader's Web Workers (worker-main.ts), so the
 * rules exist once. Browser-safe: no `node:` imports.
 */
import { roomFor } from '../../bytes.js';
import { BundleIntegrityError, MemberDecodeError } from '../../errors.js';
import { createMemberDecoder, type MemberDecoder } from '../../format/encoded-member.js';
import type { BundleStreamPlan, DecodeFailure, StreamedContent, StreamFailure } from './stream-plan.js';
import { canonicalLayoutFor, describeDamaged, spanOf, type ExpectedMember } from './verify.js';
import { checkMember } from './check-member.js';

export type { BundleStreamPlan, DecodeFailure, StreamedContent, StreamFailure } from './stream-plan.js';

/** What to say of a head that is not the canonical one (structure.ts `judgeHead`, or `deferredJudge`). */
export type HeadJudge = (head: Uint8Array) => StreamFailure;

/**
 * A judge that leaves saying why to later (`judgedError`): the failure carries the head's bytes.
 * The reader's worker and the page's streamed reads use it, so that neither carries the AWKB
 * decoder and its messages (structure.ts) for a bundle that passes; a refused one imports them.
 */
export function deferredJudge(plan: Pick<BundleStreamPlan, 'sha256' | 'head'>): HeadJudge {
  return (head) => {
    // Said only if structure.ts cannot be imported: which part differs from the canonical one.
    const part = head.length < 16 || head.subarray(0, 16).some((byte, i) => byte !== plan.head[i]) ? 'header' : 'table';
    const message = `bundle ${plan.sha256}: AWKB ${part}: not the canonical ${part} of the index's records for this bundle`;
    return { part, message, damaged: [], head: head.slice() };
  };
}

/** Refusals whose head is still to be judged, by the error made of them (`refusalError`). */
const unjudged = new WeakMap<object, StreamFailure>();

/** The bundle's integrity error for a refusal (SPEC §7); one whose head is unjudged is judged by `judgedError`. */
export function refusalError(failure: StreamFailure, url: string): BundleIntegrityError {
  const decode = failure.decode?.[0];
  const cause = decode && new MemberDecodeError(decode.message, decode);
  const error = new BundleIntegrityError(failure.part, failure.message, failure.damaged, { url, ...(cause ? { cause } : {}) });
  if (failure.head) unjudged.set(error, failure);
  return error;
}

/**
 * `error`, or for a `refusalError` whose head is unjudged, the error saying why the head was
 * refused (structure.ts `judgeHead`, imported now: the same words as a head judged at once).
 * Should the import fail, the unjudged error stands: it names the bundle and the part.
 */
export async function judgedError(error: unknown, plan: Pick<BundleStreamPlan, 'sha256' | 'sizeBytes' | 'members'>): Promise<unknown> {
  const failure = typeof error === 'object' && error !== null ? unjudged.get(error) : undefined;
  if (!failure?.head) return error;
  let judged: StreamFailure;
  try {
    judged = (await import('./structure.js')).judgeHead(plan, failure.head);
  } catch {
    return error;
  }
  return new BundleIntegrityError(judged.part, judged.message, judged.damaged, { url: (error as BundleIntegrityError).url! });
}

/** A decoder for `content`, or one that refuses at its end when its encoding is none this reader knows. */
export function decoderFor(content: Pick<StreamedContent, 'keys' | 'sizeBytes' | 'encoding'>): MemberDecoder {
  const member = { key: content.keys[0]!, sizeBytes: content.sizeBytes, encoding: content.encoding };
  try {
    return createMemberDecoder(member);
  } catch (error) {
    const refused = Promise.reject(error);
    refused.catch(() => undefined);
    return { write() {}, end: () => refused, abort() {} };
  }
}

/**
 * A content's decoder that takes its bytes only once the encoded content before it has decoded
 * (`turn` settled): one content decodes at a time, in data order. Decoders fed side by side on
 * one thread (a body that arrived while the page was busy is pushed in one go) advance together
 * through the microtask queue and all finish at the end; in turn, the first member is handed
 * over once its own bytes have decoded, the next after it, as they arrived (SPEC §7 "Streamed
 * members"). Bytes that come before the turn wait here, as the decoder's own pieces wait for it.
 */
function decoderInTurn(content: Pick<StreamedContent, 'keys' | 'sizeBytes' | 'encoding'>, turn: Promise<unknown>): MemberDecoder {
  const waiting: Uint8Array[] = [];
  let inner: MemberDecoder | undefined;
  let aborted = false;
  const started = turn.then(() => {
    inner = decoderFor(content);
    if (aborted) inner.abort();
    else for (const piece of waiting) inner.write(piece);
    waiting.length = 0;
    return inner;
  });
  return {
    write(chunk) {
      if (inner) inner.write(chunk);
      else if (!aborted) waiting.push(chunk);
    },
    end: () => started.then((decoder) => decoder.end()),
    abort() {
      aborted = true;
      waiting.length = 0;
      inner?.abort();
    },
  };
}

/** A `MemberDecodeError` as plain data, to post from a worker. */
export function decodeFailure(error: MemberDecodeError): DecodeFailure {
  return { key: error.key, encoding: error.encoding, problem: error.problem, message: error.message };
}

/** Thrown by `push` and `finish` (plain data, posted as is from a worker). */
export class StreamRefusal extends Error {
  constructor(readonly failure: StreamFailure) {
    super(failure.message);
  }
}

export interface StreamSink {
  /**
   * Content `index` (into `plan.contents`) arrived whole and matched its SHA-256: `bytes` fill a
   * buffer of their own, given up to the sink (it may transfer or keep them).
   */
  member(index: number, bytes: Uint8Array): void;
}

/** Lowercase hex SHA-256 of `bytes`, which it must not keep or change. */
export type Hasher = (bytes: Uint8Array) => Promise<string>;

/**
 * The plan for streaming `listing`, or `undefined` when the index's offsets are not the canonical
 * layout of its records (a bundle another writer laid out otherwise): such a bundle is read whole
 * and judged the slow way, since SPEC §7 lets members out early only past a canonical head.
 */
export function bundleStreamPlan(
  listing: { sha256: string; sizeBytes: number },
  members: readonly ExpectedMember[],
): BundleStreamPlan | undefined {
  const layout = canonicalLayoutFor(listing, members);
  if (!layout) return undefined;
  const keysOf = new Map<string, string[]>();
  for (const member of members) {
    const keys = keysOf.get(member.sha256);
    if (keys) keys.push(member.key);
    else keysOf.set(member.sha256, [member.key]);
  }
  const contents = layout.written.map((index): StreamedContent => {
    const { sha256, offset, sizeBytes, storedBytes, encoding } = layout.records[index]!;
    const keys = keysOf.get(sha256)!;
    return encoding === undefined ? { sha256, offset, sizeBytes, keys } : { sha256, offset, sizeBytes, storedBytes, encoding, keys };
  });
  return { sha256: listing.sha256, sizeBytes: listing.sizeBytes, head: layout.head, contents, members: [...members] };
}

/**
 * Checks one bundle body as it arrives. Feed it every chunk in order with `push` (which throws
 * `StreamRefusal` at once for a head that is not the canonical one), then `finish` once the body
 * has ended. A fresh verifier per attempt: one that refused is done. `judge` says why a head is
 * refused: `deferredJudge`, or (bundle-stream.ts `BundleStreamVerifier`) structure.ts `judgeHead`.
 */
export class BundleStreamChecker {
  /** Bytes of the body so far. */
  received = 0;
  readonly #plan: BundleStreamPlan;
  readonly #hash: Hasher;
  readonly #sink: StreamSink;
  readonly #judge: HeadJudge;
  /** The head as it arrives, while it matches; then (on a mismatch) what is needed to say why. */
  #head: Uint8Array;
  #headMatches = true;
  /** The content being filled, and its buffer (or, for an encoded content, its decoder). */
  #current = 0;
  #buffer: Uint8Array | undefined;
  #decoder: MemberDecoder | undefined;
  /** Settles once the last encoded content so far has decoded (or failed to): the next one's turn. */
  #decodeTurn: Promise<unknown> = Promise.resolve();
  /** Why each content that did not decode was refused, by index. */
  readonly #decode = new Map<number, DecodeFailure>();
  #filled = 0;
  /** Settles once every completed content has been judged, in data order. */
  #judged: Promise<void> = Promise.resolve();
  readonly #damaged = new Set<number>();
  /** Contents handed out, by index. */
  readonly delivered = new Set<number>();

  constructor(plan: BundleStreamPlan, hash: Hasher, sink: StreamSink, judge: HeadJudge) {
    this.#plan = plan;
    this.#hash = hash;
    this.#sink = sink;
    this.#judge = judge;
    this.#head = new Uint8Array(plan.head.length);
  }

  /** Whether a content failed already: nothing more is handed out. */
  get failed(): boolean {
    return this.#damaged.size > 0;
  }

  /**
   * The next bytes of the bundle, in order. The checker keeps `chunk` itself where an encoded
   * member's decoder reads it later (plain members are copied): the caller must not reuse its
   * buffer. Every caller hands over a fresh chunk (a stream's read, a worker's message).
   */
  push(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.length && (this.received < this.#plan.head.length || !this.#headMatches)) at += this.#takeHead(chunk.subarray(at));
    if (at === chunk.length) return;
    this.#skipEmpty();
    while (at < chunk.length) {
      const content = this.#plan.contents[this.#current];
      if (!content) {
        // Past the listed size: the transport bounds bodies by it, so this is a caller's slip.
        throw new StreamRefusal({
          part: 'members',
          message: `bundle ${this.#plan.sha256}: more than the listed ${this.#plan.sizeBytes} bytes arrived`,
          damaged: [],
        });
      }
      const span = spanOf(content);
      const take = Math.min(chunk.length - at, span - this.#filled);
      if (content.encoding === undefined) {
        // Grown with the bytes, not allocated at the listed size: a body may bring 100 bytes of a
        // member the index lists at 3 GiB (SPEC §5: never allocate from a size not bounded by bytes held).
        this.#buffer = roomFor(this.#buffer, this.#filled + take, span);
        this.#buffer.set(chunk.subarray(at, at + take), this.#filled);
      } else {
        // SPEC §5a: decoded as the stored bytes arrive; the decoder holds what it is given.
        (this.#decoder ??= decoderInTurn(content, this.#decodeTurn)).write(chunk.subarray(at, at + take));
      }
      this.#filled += take;
      this.received += take;
      at += take;
      if (this.#filled === span) this.#complete();
      this.#skipEmpty();
    }
  }

  /**
   * The body ended: resolves once every content matched and the body had the listed size, with
   * nothing more to do; rejects with `StreamRefusal` naming what is wrong (every damaged member,
   * and those the body never brought).
   */
  async finish(): Promise<void> {
    // A head that is not the canonical one, or too short to say more than its header: judged as such.
    if (this.received < 16 || !this.#headMatches) throw new StreamRefusal(this.#judgeHead());
    // A body cut short (inside the table, or in the data): every content it did not bring is
    // damaged, as a whole-bundle check names them (SPEC §7 "Verified").
    if (this.received >= this.#plan.head.length) this.#skipEmpty();
    // A content the body stopped inside decodes no further.
    this.#decoder?.abort();
    this.#decoder = undefined;
    await this.#judged;
    const missing = this.received >= this.#plan.head.length ? this.#current : 0;
    for (let i = missing; i < this.#plan.contents.length; i++) this.#damaged.add(i);
    if (this.#damaged.size === 0) return;
    const damaged = [...this.#damaged].sort((a, b) => a - b).flatMap((index) => this.#plan.contents[index]!.keys);
    // A body cut short: that is the cause, said first; the members it never brought follow.
    const where = this.received < this.#plan.head.length ? ', inside the table' : '';
    const short =
      missing < this.#plan.contents.length ? `the body ended after ${this.received} of ${this.#plan.sizeBytes} bytes${where}; ` : '';
    const decode = [...this.#decode.entries()].sort(([a], [b]) => a - b).map(([, failure]) => failure);
    // A member that did not decode: why, after the list (the first one; the rest are in `decode`).
    const why = decode.length > 0 ? `; ${decode[0]!.message}` : '';
    throw new StreamRefusal({
      part: 'members',
      message: `bundle ${this.#plan.sha256}: ${short}${describeDamaged(damaged)}${why}`,
      damaged,
      ...(decode.length > 0 ? { decode } : {}),
    });
  }

  /** Takes head bytes from `chunk`; returns how many of them it used. Throws once a mismatch can be named. */
  #takeHead(chunk: Uint8Array): number {
    const expected = this.#plan.head;
    if (this.#headMatches) {
      const take = Math.min(chunk.length, expected.length - this.received);
      for (let i = 0; i < take; i++) {
        if (chunk[i] !== expected[this.received + i]) {
          this.#headMatches = false;
          break;
        }
      }
      if (this.#headMatches) {
        this.#head.set(chunk.subarray(0, take), this.received);
        this.received += take;
        return take;
      }
    }
    // Not the canonical head: nothing will be handed out. Gather what the judgement needs (the
    // header, then the table it declares, within the listed size), then refuse.
    const used = this.#gatherHead(chunk);
    const needed = this.#bytesToJudge();
    if (this.received >= needed) throw new StreamRefusal(this.#judgeHead());
    return used;
  }

  #gatherHead(chunk: Uint8Array): number {
    const needed = Math.max(16, this.#bytesToJudge());
    if (this.#head.length < needed) {
      const grown = new Uint8Array(needed);
      grown.set(this.#head.subarray(0, this.received));
      this.#head = grown;
    }
    const take = Math.min(chunk.length, this.#head.length - this.received);
    this.#head.set(chunk.subarray(0, take), this.received);
    this.received += take;
    return take;
  }

  /** The bytes that a head of this bundle needs before it can be judged: 16, then 16 + its table size (within the listed size). */
  #bytesToJudge(): number {
    if (this.received < 16) return 16;
    const tableSize = new DataView(this.#head.buffer, this.#head.byteOffset, 16).getUint32(12);
    const dataStart = 16 + tableSize;
    // A table that cannot fit is judged from the header alone.
    return dataStart > this.#plan.sizeBytes ? 16 : dataStart;
  }

  #judgeHead(): StreamFailure {
    return this.#judge(this.#head.subarray(0, this.received));
  }

  /** Empty contents take no bytes: complete them as soon as the data reaches their place. */
  #skipEmpty(): void {
    for (let content = this.#plan.contents[this.#current]; content && spanOf(content) === 0; content = this.#plan.contents[this.#current]) {
      this.#buffer = new Uint8Array(0);
      this.#complete();
    }
  }

  #complete(): void {
    const index = this.#current;
    const content = this.#plan.contents[index]!;
    // An encoded content: its decoded bytes (SPEC §5a), or why they are refused.
    const decoded = content.encoding === undefined ? undefined : (this.#decoder ?? decoderInTurn(content, this.#decodeTurn)).end();
    if (decoded) this.#decodeTurn = decoded.catch(() => undefined);
    const stored = this.#buffer;
    this.#current++;
    this.#buffer = undefined;
    this.#decoder = undefined;
    this.#filled = 0;
    // Hashed at once (in parallel with what follows), judged in data order: a member is not
    // handed out while one before it is unchecked or damaged.
    const digest = decoded
      ? decoded.then(
          async (bytes) => ({ bytes, digest: await this.#hash(bytes) }),
          (error: unknown) => {
            if (!(error instanceof MemberDecodeError)) throw error;
            return { bytes: undefined, digest: undefined, error };
          },
        )
      : this.#hash(stored!).then((digest) => ({ bytes: stored!, digest }));
    // Awaited in turn below; until then (a member before it still hashing, or a checker dropped
    // without `finish`) its failure must not be an unhandled rejection, which ends a Node process.
    digest.catch(() => undefined);
    this.#judged = this.#judged
      .then(() => digest)
      .then((outcome) => {
        if ('error' in outcome) this.#decode.set(index, decodeFailure(outcome.error!));
        if (checkMember(content, outcome.bytes, outcome.digest) !== undefined) {
          this.#damaged.add(index);
          return;
        }
        // SPEC §7 "Streamed members": out as soon as it matched, unless the bundle failed already.
        if (this.#damaged.size > 0) return;
        this.delivered.add(index);
        this.#sink.member(index, outcome.bytes!);
      });
    // `finish` awaits the chain; a checker dropped without it (its load stopped) must not leave it unhandled.
    this.#judged.catch(() => undefined);
  }
}
