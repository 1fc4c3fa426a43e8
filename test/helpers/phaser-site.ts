/**
 * A published site for the Phaser adapter's browser tests: the example assets and the Phaser
 * fixtures as loose files (`loose/`), the same files published by the CLI (`published/`), and
 * with opaque ids (`opaque/`), and a copy whose bundle holding `fixtures/notes.txt` is damaged
 * (`damaged/`).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, temporaryDir } from './cli';

const FIXTURES = join(REPO, 'test', 'fixtures');

export const PHASER_PAGES = join(FIXTURES, 'phaser-page');
export const DAMAGED_MEMBER = 'fixtures/notes.txt';

export interface PhaserSite {
  dir: string;
  index: { bundles: { sha256: string; url: string }[]; files: { path: string; bundle: string; offset: number; sizeBytes: number }[] };
}

export function buildPhaserSite(): PhaserSite {
  const dir = temporaryDir('awkb-phaser-site-');
  const loose = join(dir, 'loose');
  for (const folder of ['atlas', 'audio', 'bitmapfont', 'images', 'spritesheet', 'tilemap']) cpSync(join(REPO, 'examples/assets', folder), join(loose, folder), { recursive: true });
  cpSync(join(FIXTURES, 'phaser'), join(loose, 'fixtures'), { recursive: true });
  const published = join(dir, 'published');
  // A small target, so the files spread over several bundles.
  const run = spawnSync(process.execPath, [join(REPO, 'dist/cli/main.js'), loose, '--out', published, '--target-mb', '0.5'], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`publish failed: ${run.stderr}`);
  const index = JSON.parse(readFileSync(join(published, 'project.index.json'), 'utf8')) as PhaserSite['index'];
  // The same files under opaque ids: the index lists no paths (SPEC §4).
  const opaque = spawnSync(process.execPath, [join(REPO, 'dist/cli/main.js'), loose, '--out', join(dir, 'opaque'), '--opaque-ids', '--salt', 'phaser-test'], { encoding: 'utf8' });
  if (opaque.status !== 0) throw new Error(`publish failed: ${opaque.stderr}`);

  cpSync(published, join(dir, 'damaged'), { recursive: true });
  const member = index.files.find((file) => file.path === DAMAGED_MEMBER)!;
  const bundle = index.bundles.find((b) => b.sha256 === member.bundle)!;
  const damagedPath = join(dir, 'damaged', bundle.url);
  const bytes = readFileSync(damagedPath);
  bytes[member.offset] ^= 0xff;
  writeFileSync(damagedPath, bytes);
  mkdirSync(join(dir, 'missing'), { recursive: true });
  return { dir, index };
}
