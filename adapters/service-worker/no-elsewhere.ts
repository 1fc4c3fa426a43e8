/**
 * The service worker's stand-in for the transport's attempts run elsewhere (core/net/elsewhere.ts):
 * those run in the page's reader workers, and a service worker has none (its pool is the calling
 * thread's, digest-pool.ts here), so its transports never get a body fetcher or a stream to run
 * elsewhere. webpack.config.cjs puts it in place of that module.
 */
import type { Fetched } from '../../core/net/requests.js';

/** No body fetcher here: the transport fetches itself. */
export async function fetchElsewhereAttempt(): Promise<Fetched | undefined> {
  return undefined;
}

/** No stream elsewhere here: the transport reads the body itself. */
export async function streamElsewhereAttempt(): Promise<true | { here: Response } | undefined> {
  return undefined;
}
