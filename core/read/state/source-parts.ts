/**
 * The parts one `IndexedAssetSource` is made of, shared by the read path's modules (the reads,
 * the loads, the prefetches): state that belongs to a source lives on it, never in module globals.
 */
import type { BundleFetcher } from '../fetch/bundle-fetcher.js';
import type { IndexView } from '../open/index-view.js';
import type { LoadPlanner } from '../plan/load-planner.js';
import type { LoadRegistry } from '../load/load-registry.js';
import type { CacheLookups, LineEstimates } from '../plan/needed-bytes.js';
import type { ContentLedger } from './content-ledger.js';
import type { VerifiedCache } from './verified-cache.js';

export interface SourceParts {
  readonly view: IndexView;
  readonly cache: VerifiedCache;
  readonly planner: LoadPlanner;
  readonly fetcher: BundleFetcher;
  readonly registry: LoadRegistry;
  /** What this source holds of each content, or has coming, besides the cache. */
  readonly ledger: ContentLedger;
  /** The source's lifetime: aborted by `dispose` or the `signal` it was opened with. */
  readonly lifetime: AbortSignal;
  /** Asks for the pending writes now (the workers' wait for the loads to end). */
  flushWrites(): void;
  /** Asks for the pending writes once the page is idle: what a range of its own brought, with no load in flight to ask when it ends. */
  flushWhenIdle(): void;
  readonly pendingBytes: number;
  /** The reads asking the cache, per load key: what a load gathers before it plans (needed bytes). */
  readonly lookups: CacheLookups;
  /** The lines to the origins, when needed bytes are on (SPEC §7 "Needed bytes"); else `undefined`. */
  readonly lines: LineEstimates | undefined;
}
