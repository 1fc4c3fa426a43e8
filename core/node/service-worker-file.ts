/**
 * The prebuilt service worker (dist/sw/awake-bundle-sw.js, made by `npm run build`) as a site
 * serves it, with its index URL baked in when given: what `awake-bundle sw` writes and what the
 * build plugins emit. Not exported from `awake-bundle/node`: it finds the worker beside the
 * built package (dist/core/node/ → dist/sw/).
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { PublishInputError } from '../errors.js';

export const SERVICE_WORKER_FILE = 'awake-bundle-sw.js';

/** Where the built worker lies: dist/sw/ beside dist/core/ (this file is dist/core/node/service-worker-file.js). */
function builtServiceWorkerPath(): string {
  return fileURLToPath(new URL(`../../sw/${SERVICE_WORKER_FILE}`, import.meta.url));
}

/**
 * The worker's source. `indexUrl`, relative to the worker's own URL, is baked in when given
 * (a `?index=` query on the register URL still wins, see adapters/service-worker).
 */
export async function serviceWorkerSource(indexUrl?: string): Promise<string> {
  const source = builtServiceWorkerPath();
  let worker: string;
  try {
    worker = await readFile(source, 'utf8');
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new PublishInputError(
      missing ? `${source} is missing: this package was not built (npm run build)` : `${source}: cannot read: ${(error as Error).message}`,
      source,
      error,
    );
  }
  const baked = indexUrl === undefined ? '' : `self.AWKB_SW_INDEX_URL = ${JSON.stringify(indexUrl)};\n`;
  return baked + worker;
}
