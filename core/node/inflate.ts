/**
 * Decoding encoded members in Node (SPEC §5a) with `node:zlib`, as their stored bytes arrive:
 * output past the listed size is refused before it is held (a bomb costs at most the listed size
 * and one 64 KiB chunk), a stream that ends short and bytes after the stream's end are refused,
 * each with a `MemberDecodeError` naming the member and its encoding. zlib inflates on libuv's
 * thread pool, off the event loop. The SHA-256 of the decoded bytes is the caller's to check.
 */
import { createInflateRaw, type InflateRaw } from 'node:zlib';
import {
  DecodedOutput,
  knownEncoding,
  memberDecodeError,
  registerMemberDecoder,
  type EncodedMemberInfo,
  type MemberDecoder,
} from '../format/encoded-member.js';

const CHUNK_BYTES = 64 * 1024;

/**
 * One member's decoder: `write` each piece of its stored bytes in order (awaiting each), then
 * `end()` for the decoded bytes. Any refusal rejects `write` or `end`; `destroy()` stops it.
 */
export class NodeMemberDecoder {
  private readonly inflater: InflateRaw;
  private readonly output: DecodedOutput;
  private failure: unknown;
  private streamEnded = false;
  private fed = 0;
  private readonly settled: Promise<void>;

  /** Throws `MemberDecodeError` (`unknown-encoding`) at once for an encoding this reader does not know. */
  constructor(private readonly member: EncodedMemberInfo) {
    knownEncoding(member);
    this.output = new DecodedOutput(member);
    this.inflater = createInflateRaw({ chunkSize: CHUNK_BYTES });
    this.inflater.on('data', (chunk: Buffer) => {
      if (this.failure !== undefined) return;
      try {
        this.output.push(chunk);
      } catch (error) {
        this.fail(error);
      }
    });
    this.settled = new Promise((resolve) => {
      this.inflater.on('end', () => {
        this.streamEnded = true;
        resolve();
      });
      this.inflater.on('error', (error: NodeJS.ErrnoException) => {
        // zlib's "unexpected end of file": the stored bytes ended inside the stream.
        const short = error.code === 'Z_BUF_ERROR';
        this.fail(
          memberDecodeError(
            member,
            short ? 'too-short' : 'corrupt',
            short
              ? `its stored bytes end inside the deflate stream (${this.output.received} bytes decoded)`
              : `not a valid deflate stream: ${error.message}`,
            error,
          ),
        );
        resolve();
      });
      this.inflater.on('close', () => resolve());
    });
  }

  /** Feeds the next stored bytes; resolves once zlib has taken them. */
  async write(chunk: Uint8Array): Promise<void> {
    this.throwIfFailed();
    if (chunk.length === 0) return;
    this.fed += chunk.length;
    if (this.streamEnded) return this.throwIfTrailing();
    // A refusal destroys the stream, which may drop this write's callback: `settled` ends the wait then.
    await Promise.race([new Promise<void>((resolve) => this.inflater.write(chunk, () => resolve())), this.settled]);
    this.throwIfFailed();
    if (this.streamEnded) this.throwIfTrailing();
  }

  /** Ends the stored bytes: resolves to the decoded bytes, exactly the listed size. */
  async end(): Promise<Uint8Array> {
    this.throwIfFailed();
    this.inflater.end();
    await this.settled;
    this.throwIfFailed();
    this.throwIfTrailing();
    return this.output.finish();
  }

  /** Stops decoding (the bytes stop coming, or the caller gave up). */
  destroy(): void {
    this.inflater.destroy();
  }

  private fail(error: unknown): void {
    this.failure ??= error;
    this.inflater.destroy();
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** zlib stops taking input at the stream's end: what it did not take is trailing. */
  private throwIfTrailing(): void {
    const taken = this.inflater.bytesWritten;
    if (this.streamEnded && taken < this.fed) {
      this.fail(memberDecodeError(this.member, 'trailing-bytes', `${this.fed - taken} stored bytes follow the end of its deflate stream`));
      this.throwIfFailed();
    }
  }
}

/** Decodes one member's whole stored bytes (see `NodeMemberDecoder`). */
export async function decodeMemberNode(stored: Uint8Array, member: EncodedMemberInfo): Promise<Uint8Array> {
  const decoder = new NodeMemberDecoder(member);
  try {
    await decoder.write(stored);
    return await decoder.end();
  } finally {
    decoder.destroy();
  }
}

/** `NodeMemberDecoder` as the reader's `MemberDecoder`: writes taken in order, the first refusal kept. */
export function nodeMemberDecoder(member: EncodedMemberInfo): MemberDecoder {
  const decoder = new NodeMemberDecoder(member);
  let written = Promise.resolve();
  return {
    write(chunk) {
      written = written.then(() => decoder.write(chunk));
      written.catch(() => undefined);
    },
    end: () => written.then(() => decoder.end()).finally(() => decoder.destroy()),
    abort: () => decoder.destroy(),
  };
}

/** Makes every reader in this process decode with `node:zlib` (awake-bundle/node does, when imported). */
export function registerNodeDecoder(): void {
  registerMemberDecoder(nodeMemberDecoder);
}
