/**
 * The reader's worker program as text, for a `blob:` worker (no bundler setup needed by users).
 * `npm run build` replaces the compiled form of this file (dist/core/read/workers/worker-script.js) with
 * the script that webpack builds from worker-main.ts (scripts/postbuild.mjs), so the worker runs
 * the same modules the page does. In the sources it is undefined: Node and the tests that import
 * the TypeScript directly have no Web Workers, and the pool then works on the calling thread.
 */
export const WORKER_SCRIPT: string | undefined = undefined;
