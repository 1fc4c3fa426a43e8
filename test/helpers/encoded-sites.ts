/**
 * Encoded members for the reader's tests (SPEC §5a): text that compresses, noise that does not,
 * and sites of one bundle made of members exactly as given (stored bytes that do not decode to
 * their listed bytes included), with the index that lists that bundle, so that only decoding can
 * tell a bad member. Used by encoded-reader.test.ts (Node) and browser-encoded.test.ts.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { decodeBundle, encodeBundle, type BundleMemberInput, type MemberDecodeProblem } from '../../core/internal.js';
import { temporaryDir } from './cli.js';

export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** JSON-like text of `size` bytes that deflate shrinks a lot. */
export function text(size: number, seed: number): Uint8Array {
  const words = ['tile', 'layer', 'width', 'height', 'sprite', 'frame', 'x', 'y', 'rotation', 'visible'];
  let out = '';
  for (let i = 0; out.length < size; i++) out += `{"${words[(i * seed) % words.length]}": ${(i * 7919 + seed) % 1000}},\n`;
  return new TextEncoder().encode(out.slice(0, size));
}

/** Bytes that do not compress. */
export function pseudoRandom(size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size);
  let state = Math.imul(seed, 2654435761) >>> 0;
  for (let i = 0; i < size; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    out[i] = state >>> 24;
  }
  return out;
}

/** The listed (decoded) bytes of the bad member in every `BAD_STORED_CASES` site. */
export const BAD_MEMBER_BYTES = text(40_000, 3);

/** Stored bytes that do not decode to `BAD_MEMBER_BYTES`: label, the refusal's `problem`, the bytes, and words its message has. */
export const BAD_STORED_CASES: [string, MemberDecodeProblem, Uint8Array, RegExp][] = [
  ['a bomb: output past the listed size', 'too-long', deflateRawSync(new Uint8Array(8 * 1024 * 1024)), /decodes to more than its listed/],
  [
    'a stream cut short',
    'too-short',
    deflateRawSync(BAD_MEMBER_BYTES).subarray(0, 600),
    /end inside the deflate stream|short of its listed/,
  ],
  [
    'a whole stream shorter than the listed size',
    'too-short',
    deflateRawSync(BAD_MEMBER_BYTES.subarray(0, 30_000)),
    /short of its listed|end inside/,
  ],
  [
    'bytes after the end of the stream',
    'trailing-bytes',
    Buffer.concat([deflateRawSync(BAD_MEMBER_BYTES), Buffer.from('trailing garbage')]),
    /follow the end of its deflate stream/,
  ],
  ['bytes that are no deflate stream', 'corrupt', new Uint8Array(900).fill(0xff), /not a valid deflate stream/],
];

/** `maps/bad.json` stored as `stored` (listed as `BAD_MEMBER_BYTES`) beside a good `maps/ok.txt`. */
export function badMembers(stored: Uint8Array): BundleMemberInput[] {
  const ok = text(3000, 5);
  return [
    { key: 'maps/bad.json', bytes: BAD_MEMBER_BYTES, sha256: sha256(BAD_MEMBER_BYTES), stored, encoding: 'deflate-raw' },
    { key: 'maps/ok.txt', bytes: ok, sha256: sha256(ok) },
  ];
}

/** A site (in `root`, else a new folder) of one bundle made of `members` as given, with the index that lists it. */
export function craftedSite(members: BundleMemberInput[], root = temporaryDir('awkb-encoded-crafted-')): string {
  const bundle = encodeBundle(members);
  const name = sha256(bundle);
  mkdirSync(join(root, 'bundles'), { recursive: true });
  writeFileSync(join(root, 'bundles', `${name}.awkb`), bundle);
  // The offsets as the writer laid them out: read back from the table.
  const files = decodeBundle(bundle)
    .records.map((record) => ({
      path: record.key,
      sizeBytes: record.sizeBytes,
      sha256: record.sha256,
      bundle: name,
      offset: record.offset,
      ...(record.encoding ? { storedBytes: record.storedBytes, encoding: record.encoding } : {}),
    }))
    .sort((a, b) => (a.path < b.path ? -1 : 1));
  const index = {
    formatVersion: 3,
    rootPath: '/project',
    bundles: [{ sha256: name, sizeBytes: bundle.length, url: `bundles/${name}.awkb` }],
    files,
  };
  writeFileSync(join(root, 'project.index.json'), JSON.stringify(index, null, 2));
  return root;
}
