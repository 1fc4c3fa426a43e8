/**
 * The service worker's stand-in for core/read/workers/digest-pool.ts (webpack.config.cjs replaces that
 * module with this one in the worker's build): a service worker has no Web Workers, so the reader
 * there hashes, and decodes encoded members (SPEC §5a), on its own thread, which is not the page's,
 * with `InThreadDigests`; the worker pool's code (about 2 KB gzipped) stays out of the 40 KB.
 */
import { InThreadDigests } from '../../core/read/workers/digest-jobs.js';

export * from '../../core/read/workers/digest-jobs.js';

/** Never made here (no Web Workers in a service worker): every `instanceof WorkerDigestPool` is false. */
export class WorkerDigestPool {
  private constructor() {}
}

export function workersAvailable(): boolean {
  return false;
}

const shared = new InThreadDigests();

export function sharedDigestPool(): InThreadDigests {
  return shared;
}
