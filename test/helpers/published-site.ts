/**
 * The three published forms of a loose folder that the adapters' browser tests serve: the CLI's
 * output (`published/`), the same with opaque ids (`opaque/`), and a copy whose bundle holding
 * one member has a flipped byte in that member (`damaged/`).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './cli';

export interface PublishedIndex {
  bundles: { sha256: string; url: string }[];
  files: { path: string; bundle: string; offset: number; sizeBytes: number }[];
}

export interface PublishOptions {
  /** Bundle size target in MiB, small so that files spread over several bundles. */
  targetMb: number;
  salt: string;
  /** The member whose byte at `damagedAt` (from its start) is flipped in `damaged/`. */
  damagedMember: string;
  damagedAt?: number;
}

/** Publishes `<dir>/loose` into `<dir>/published`, `<dir>/opaque` and `<dir>/damaged`; returns the index. */
export function publishLooseFolder(dir: string, options: PublishOptions): PublishedIndex {
  const loose = join(dir, 'loose');
  const published = join(dir, 'published');
  cli([loose, '--out', published, '--target-mb', String(options.targetMb)]);
  const index = JSON.parse(readFileSync(join(published, 'project.index.json'), 'utf8')) as PublishedIndex;
  // The same files under opaque ids: the index lists no paths (SPEC §4).
  cli([loose, '--out', join(dir, 'opaque'), '--opaque-ids', '--salt', options.salt]);
  cpSync(published, join(dir, 'damaged'), { recursive: true });
  const member = index.files.find((file) => file.path === options.damagedMember)!;
  const bundle = index.bundles.find((b) => b.sha256 === member.bundle)!;
  const damagedPath = join(dir, 'damaged', bundle.url);
  const bytes = readFileSync(damagedPath);
  bytes[member.offset + (options.damagedAt ?? 0)] ^= 0xff;
  writeFileSync(damagedPath, bytes);
  return index;
}

function cli(args: string[]): void {
  const run = spawnSync(process.execPath, [join(REPO, 'dist/cli/main.js'), ...args], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`publish failed: ${run.stderr}`);
}
