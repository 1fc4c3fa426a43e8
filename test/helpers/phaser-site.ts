/**
 * A published site for the Phaser adapter's browser tests: the example assets, the Phaser
 * fixtures and a video as loose files (`loose/`), the same files published by the CLI (`published/`), and
 * with opaque ids (`opaque/`), and a copy whose bundle holding `fixtures/notes.txt` is damaged
 * (`damaged/`).
 */
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, temporaryDir } from './cli';
import { publishLooseFolder, type PublishedIndex } from './published-site';

const FIXTURES = join(REPO, 'test', 'fixtures');

export const PHASER_PAGES = join(FIXTURES, 'phaser-page');
export const DAMAGED_MEMBER = 'fixtures/notes.txt';

export interface PhaserSite {
  dir: string;
  index: PublishedIndex;
}

export function buildPhaserSite(): PhaserSite {
  const dir = temporaryDir('awkb-phaser-site-');
  const loose = join(dir, 'loose');
  for (const folder of ['atlas', 'audio', 'bitmapfont', 'images', 'spritesheet', 'tilemap'])
    cpSync(join(REPO, 'examples/assets', folder), join(loose, folder), { recursive: true });
  cpSync(join(FIXTURES, 'phaser'), join(loose, 'fixtures'), { recursive: true });
  // A seekable video in a folder of its own: a bundle no other file needs.
  cpSync(join(FIXTURES, 'media', 'testsrc-4s.webm'), join(loose, 'video', 'testsrc-4s.webm'));
  const index = publishLooseFolder(dir, { targetMb: 0.5, salt: 'phaser-test', damagedMember: DAMAGED_MEMBER });
  mkdirSync(join(dir, 'missing'), { recursive: true });
  return { dir, index };
}
