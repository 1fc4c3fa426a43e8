/**
 * Decoding an encoded member (SPEC §5a), the parts every platform shares: which encodings are
 * known, the words of each refusal (`MemberDecodeError`), and the output collector that refuses
 * bytes past the listed size before it holds them. The inflater itself is the platform's
 * (`node:zlib` in core/node/inflate.ts; `DecompressionStream('deflate-raw')` in a browser).
 */
import { KEY_PREVIEW_CHARACTERS, MemberDecodeError, previewValue, type MemberDecodeProblem } from '../errors.js';
import { MEMBER_ENCODINGS, type MemberEncoding } from './awkb.js';

/** What a decoder needs to know of the member it decodes: its entry's key, listed size and encoding. */
export interface EncodedMemberInfo {
  /** Path, or id when ids replace paths: named in every error. */
  key: string;
  /** The decoded size the index (or table) lists. */
  sizeBytes: number;
  /** The encoding claimed: a name from the index, or a table's encoding byte. */
  encoding?: unknown;
}

/** The encoding `member` claims, when this implementation knows it; else a `MemberDecodeError` (`unknown-encoding`). */
export function knownEncoding(member: EncodedMemberInfo): MemberEncoding {
  const { encoding } = member;
  if (encoding === 1 || (typeof encoding === 'string' && (MEMBER_ENCODINGS as readonly string[]).includes(encoding)))
    return encoding === 1 ? 'deflate-raw' : (encoding as MemberEncoding);
  throw memberDecodeError(member, 'unknown-encoding', `encoding ${previewValue(encoding)} is none this reader knows (deflate-raw)`);
}

/** The error for `member`, naming it and its encoding: `"a.json" (deflate-raw): <what>`. */
export function memberDecodeError(
  member: EncodedMemberInfo,
  problem: MemberDecodeProblem,
  what: string,
  cause?: unknown,
): MemberDecodeError {
  const encoding = typeof member.encoding === 'string' ? member.encoding : String(member.encoding);
  return new MemberDecodeError(`${previewValue(member.key, KEY_PREVIEW_CHARACTERS)} (${previewValue(encoding)}): ${what}`, {
    key: member.key,
    encoding,
    problem,
    ...(cause === undefined ? {} : { cause }),
  });
}

/** The first buffer a collector holds, before it has seen how much the stream gives. */
const FIRST_CAPACITY = 64 * 1024;

/**
 * Collects a decoder's output up to the member's listed size. A chunk that would pass it is
 * refused (`too-long`) before it is copied, so a member that inflates without bound (a bomb)
 * costs at most its listed size and one chunk. The buffer grows by doubling up to the listed
 * size, so an index's size is never allocated before the bytes arrive.
 */
export class DecodedOutput {
  private buffer: Uint8Array;
  private length = 0;

  constructor(private readonly member: EncodedMemberInfo) {
    this.buffer = new Uint8Array(Math.min(member.sizeBytes, FIRST_CAPACITY));
  }

  /** Bytes decoded so far. */
  get received(): number {
    return this.length;
  }

  /** Takes one chunk of output; throws `too-long` when it would pass the listed size. */
  push(chunk: Uint8Array): void {
    const { sizeBytes } = this.member;
    if (chunk.length > sizeBytes - this.length)
      throw memberDecodeError(
        this.member,
        'too-long',
        `decodes to more than its listed ${sizeBytes} bytes (refused at ${this.length + chunk.length})`,
      );
    if (this.length + chunk.length > this.buffer.length) {
      const grown = new Uint8Array(Math.min(sizeBytes, Math.max(this.length + chunk.length, this.buffer.length * 2)));
      grown.set(this.buffer.subarray(0, this.length));
      this.buffer = grown;
    }
    this.buffer.set(chunk, this.length);
    this.length += chunk.length;
  }

  /** The decoded bytes, once the stream has ended: `too-short` unless they are the listed size. */
  finish(): Uint8Array {
    if (this.length !== this.member.sizeBytes)
      throw memberDecodeError(this.member, 'too-short', `decodes to ${this.length} bytes, short of its listed ${this.member.sizeBytes}`);
    return this.buffer.length === this.length ? this.buffer : this.buffer.subarray(0, this.length);
  }
}

/**
 * One member's decoder, as its stored bytes arrive: `write` each piece in order (the decoder may
 * hold the view until it settles, so the caller must not change it), then `end()` for the
 * decoded bytes, exactly the listed size, or the refusal (`MemberDecodeError`). `abort()` stops it.
 */
export interface MemberDecoder {
  write(chunk: Uint8Array): void;
  end(): Promise<Uint8Array>;
  abort(): void;
}

export type MemberDecoderFactory = (member: EncodedMemberInfo) => MemberDecoder;

/**
 * Stored bytes go to the inflater in pieces of at most this many, each taken before the next:
 * a browser's `DecompressionStream` inflates one piece whole before the reader sees any output,
 * so a piece of a bomb (at most ~1032× its size) is what a refusal can cost beyond the listed size.
 */
const PIECE_BYTES = 16 * 1024;

/**
 * `DecompressionStream('deflate-raw')`: in browsers (the page, the reader's workers, the service
 * worker) and in Node ≥ 20 when `awake-bundle/node` has not registered `node:zlib`. In a Worker
 * it runs off the page's thread; on the page, the reader sends large members to its workers.
 */
export class StreamMemberDecoder implements MemberDecoder {
  readonly #member: EncodedMemberInfo;
  readonly #writer: WritableStreamDefaultWriter<BufferSource>;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #output: DecodedOutput;
  readonly #decoded: Promise<Uint8Array>;
  /** Writes in order, each piece after the one before was taken. */
  #written: Promise<void> = Promise.resolve();
  #failure: unknown;
  #ended = false;

  /** Throws `MemberDecodeError` (`unknown-encoding`) at once for an encoding this reader does not know. */
  constructor(member: EncodedMemberInfo) {
    knownEncoding(member);
    this.#member = member;
    this.#output = new DecodedOutput(member);
    const stream = new DecompressionStream('deflate-raw');
    this.#writer = stream.writable.getWriter();
    this.#reader = stream.readable.getReader();
    this.#decoded = this.#read();
    this.#decoded.catch(() => undefined);
  }

  write(chunk: Uint8Array): void {
    for (let at = 0; at < chunk.length; at += PIECE_BYTES) {
      const piece = chunk.subarray(at, Math.min(chunk.length, at + PIECE_BYTES));
      this.#written = this.#written.then(() =>
        this.#failure === undefined ? this.#writer.write(piece as Uint8Array<ArrayBuffer>) : undefined,
      );
    }
    this.#written.catch(() => undefined);
  }

  async end(): Promise<Uint8Array> {
    this.#written = this.#written.then(() => {
      this.#ended = true;
      return this.#failure === undefined ? this.#writer.close() : undefined;
    });
    this.#written.catch(() => undefined);
    return this.#decoded;
  }

  abort(): void {
    this.#fail(undefined);
  }

  async #read(): Promise<Uint8Array> {
    try {
      for (;;) {
        const { value, done } = await this.#reader.read();
        if (done) break;
        this.#output.push(value);
      }
    } catch (error) {
      throw this.#fail(this.#failure ?? this.#describe(error));
    }
    if (this.#failure !== undefined) throw this.#failure;
    return this.#output.finish();
  }

  /**
   * What an inflater's error means: input after the stream's end (output already complete, or the
   * platform says so), input that ended inside the stream (Node: "unexpected end of file"), or
   * bytes that are no deflate stream.
   */
  #describe(error: unknown): unknown {
    if (error instanceof MemberDecodeError) return error;
    const received = this.#output.received;
    const words = (error as Error)?.message ?? String(error);
    // Chromium "Junk found after end of compressed data", Firefox "Unexpected input after the end of stream".
    if (received === this.#member.sizeBytes || /junk|after (the )?end/i.test(words))
      return memberDecodeError(this.#member, 'trailing-bytes', 'stored bytes follow the end of its deflate stream', error);
    // Chromium "Compressed input was truncated", Firefox "The input is ended without reaching the stream end".
    if (this.#ended && /truncat|unexpected end|ended without|end of (the )?(file|stream|input|data)/i.test(words))
      return memberDecodeError(
        this.#member,
        'too-short',
        `its stored bytes end inside the deflate stream (${received} bytes decoded)`,
        error,
      );
    return memberDecodeError(this.#member, 'corrupt', `not a valid deflate stream: ${words}`, error);
  }

  #fail(error: unknown): unknown {
    if (this.#failure === undefined) {
      this.#failure = error ?? memberDecodeError(this.#member, 'corrupt', 'decoding was stopped');
      this.#reader.cancel().catch(() => undefined);
      this.#writer.abort().catch(() => undefined);
    }
    return this.#failure;
  }
}

let factory: MemberDecoderFactory = (member) => new StreamMemberDecoder(member);

/** The platform's decoder for `member` (`StreamMemberDecoder` unless another was registered). */
export function createMemberDecoder(member: EncodedMemberInfo): MemberDecoder {
  return factory(member);
}

/** Sets the decoder every reader in this process uses: `awake-bundle/node` registers `node:zlib`. */
export function registerMemberDecoder(make: MemberDecoderFactory): void {
  factory = make;
}

/** Decodes one member's whole stored bytes with the platform's decoder. */
export async function decodeMember(stored: Uint8Array, member: EncodedMemberInfo): Promise<Uint8Array> {
  const decoder = createMemberDecoder(member);
  decoder.write(stored);
  return decoder.end();
}

/** `stored` decoded as `member` says, or the `MemberDecodeError` that refused it (other errors reject). */
export async function decodedOrRefusal(stored: Uint8Array, member: EncodedMemberInfo): Promise<Uint8Array | MemberDecodeError> {
  try {
    return await decodeMember(stored, member);
  } catch (error) {
    if (error instanceof MemberDecodeError) return error;
    throw error;
  }
}
