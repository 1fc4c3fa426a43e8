/**
 * What a streamed bundle must be, and why one was refused (SPEC §7 "Streamed members"): plain
 * data, shared by the stream's checks (stream-check.ts) and the structural judge of a refused
 * head (structure.ts, imported only then), so that both import it downward.
 */
import type { MemberDecodeProblem } from '../../errors.js';
import type { ExpectedMember } from './verify.js';

/** One distinct content of a bundle in its canonical place. */
export interface StreamedContent {
  sha256: string;
  offset: number;
  /** The decoded size. */
  sizeBytes: number;
  /** An encoded content's stored size and encoding (SPEC §5a): it takes `storedBytes` of the body. */
  storedBytes?: number;
  encoding?: string;
  /** The table keys (paths, or ids) that hold this content, to name it when damaged. */
  keys: string[];
}

/**
 * What a streamed bundle must be: plain data, so that it can be posted to a worker. Made by
 * `bundleStreamPlan` from the index's records.
 */
export interface BundleStreamPlan {
  /** The bundle's SHA-256 as listed (for messages). */
  sha256: string;
  /** The listed size: the body must be exactly this long. */
  sizeBytes: number;
  /** The canonical header and table: the bundle's first `head.length` bytes. */
  head: Uint8Array;
  /** Distinct contents in data order; they tile `[head.length, sizeBytes)` exactly. */
  contents: StreamedContent[];
  /** The index's records, to say what is wrong with a head that is not the canonical one. */
  members: ExpectedMember[];
}

/** Why a streamed bundle was refused: the part SPEC §7 names, and every damaged member. */
export interface StreamFailure {
  part: 'header' | 'table' | 'members';
  message: string;
  damaged: string[];
  /** The members among `damaged` whose stored bytes did not decode, and why (plain data: posted from a worker). */
  decode?: DecodeFailure[];
  /**
   * A head that is not the canonical one, as it arrived (its header, then the table it declares),
   * when the thread that read it left the judgement to another (`judgeHead`): the reader's worker
   * does, so that its script carries no AWKB decoder and its messages; the page then says why.
   */
  head?: Uint8Array;
}

/** A member whose stored bytes did not decode (a `MemberDecodeError` as plain data). */
export interface DecodeFailure {
  key: string;
  encoding: string;
  problem: MemberDecodeProblem;
  message: string;
}
