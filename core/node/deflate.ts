/**
 * The Node compressor of encoded members (SPEC §5a): `node:zlib` deflate-raw at a fixed level,
 * through zlib's asynchronous API, which runs on libuv's thread pool, so the members of a
 * bundle are compressed in parallel across cores while the writer reads the next files. Each
 * member is compressed alone with the same settings, so the output depends on its bytes only
 * (SPEC §5a: same inputs and options give the same bytes), however the pool schedules it.
 */
import { deflateRaw } from 'node:zlib';
import type { MemberCompressor } from '../publish/member-encoding.js';

/**
 * zlib level 6 (its default): on examples/assets it stores 0.688 of the raw bytes against 0.687
 * at level 9, at twice the speed (25 against 14 MB/s per core here; BENCHMARKS.md "Encoded publish").
 */
export const DEFLATE_LEVEL = 6;

/** deflate-raw through `node:zlib`'s thread pool; fixed level, memLevel and strategy (its defaults). */
export const nodeMemberCompressor: MemberCompressor = {
  deflateRaw: (bytes) =>
    new Promise((resolve, reject) => {
      deflateRaw(bytes, { level: DEFLATE_LEVEL }, (error, result) => (error ? reject(error) : resolve(result)));
    }),
};
