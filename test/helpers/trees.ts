/** Project trees for publish tests: seeded incompressible bytes, and a check of a published folder. */
import { createCipheriv, createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** `size` incompressible bytes that depend only on `seed` (AES-128-CTR of zeros). */
export function seededBytes(size: number, seed: number): Buffer {
  const key = createHash('sha256').update(`seed:${seed}`).digest().subarray(0, 16);
  return createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(size));
}

export function writeTree(root: string, files: Record<string, string | Uint8Array>): void {
  for (const [path, bytes] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), bytes);
  }
}

/** Every name below `dir` (recursively) that holds `.tmp-`: a publish's temporary files. */
export function temporaryFilesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.includes('.tmp-'));
}

/**
 * What is wrong with a published folder, from a reader's point of view: an index that names a
 * bundle that is missing, has the wrong size, or whose bytes do not hash to its name. An out
 * folder without an index is fine (nothing was published yet).
 */
export function indexViolations(out: string): string[] {
  const indexPath = join(out, 'project.index.json');
  if (!existsSync(indexPath)) return [];
  let index: { bundles: { sha256: string; sizeBytes: number; url: string }[] };
  try {
    index = JSON.parse(readFileSync(indexPath, 'utf8'));
  } catch (error) {
    return [`project.index.json: not JSON (${(error as Error).message})`];
  }
  const problems: string[] = [];
  for (const bundle of index.bundles) {
    const path = join(out, bundle.url);
    if (!existsSync(path)) {
      problems.push(`${bundle.url}: missing`);
      continue;
    }
    const bytes = readFileSync(path);
    if (bytes.length !== bundle.sizeBytes) problems.push(`${bundle.url}: ${bytes.length} bytes, the index says ${bundle.sizeBytes}`);
    else if (sha256Hex(bytes) !== bundle.sha256) problems.push(`${bundle.url}: SHA-256 differs`);
  }
  return problems;
}
