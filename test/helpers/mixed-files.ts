/**
 * One bundle's worth of files of every kind a member can be: an empty file, a content listed
 * twice, two text files the writer stores deflate-raw (SPEC §5a), a tiny file and a larger
 * incompressible one. The parts tested on their own (range-members, stream-checker) read them.
 */
import { text } from './encoded-sites.js';
import { seededBytes } from './trees.js';

export const MIXED_FILES: Readonly<Record<string, Uint8Array>> = {
  'a/empty.txt': new Uint8Array(0),
  'a/noise.bin': seededBytes(5000, 1),
  'b/copy.bin': seededBytes(5000, 1),
  'b/level.json': text(30_000, 3),
  'c/map.json': text(12_000, 7),
  'c/tiny.txt': new TextEncoder().encode('hello'),
  'd/big.bin': seededBytes(70_000, 9),
};
