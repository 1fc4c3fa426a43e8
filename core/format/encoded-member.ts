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
