/**
 * The service worker's stand-in for core/read/workers/digest-pool.ts (webpack.config.cjs replaces that
 * module with this one in the worker's build): a service worker has no Web Workers, so the reader
 * there hashes, and decodes encoded members (SPEC §5a), on its own thread, which is not the page's,
 * with `InThreadDigests`, a `DigestPool` with none of the workers' optional parts; the worker
 * pool's code (about 2 KB gzipped) stays out of the 38 KB.
 */
import { InThreadDigests } from '../../core/read/workers/digest-jobs.js';

export * from '../../core/read/workers/digest-jobs.js';

/** Never made here: `workersAvailable()` is false, so no source asks for one. */
export { InThreadDigests as WorkerDigestPool };

export function workersAvailable(): boolean {
  return false;
}

const shared = new InThreadDigests();

export function sharedDigestPool(): InThreadDigests {
  return shared;
}
