/**
 * The parts one `IndexedAssetSource` is made of, shared by the read path's modules (the reads,
 * the loads, the prefetches): state that belongs to a source lives on it, never in module globals.
 */
import type { BundleFetcher } from '../fetch/bundle-fetcher.js';
import type { IndexView } from '../open/index-view.js';
import type { LoadPlanner } from '../plan/load-planner.js';
import type { LoadRegistry } from '../load/load-registry.js';
import type { CacheLookups, LineEstimates } from '../plan/needed-bytes.js';
import type { HeldMembers } from './held-members.js';
import type { VerifiedCache } from './verified-cache.js';

export interface SourceParts {
  readonly view: IndexView;
  readonly cache: VerifiedCache;
  readonly planner: LoadPlanner;
  readonly fetcher: BundleFetcher;
  readonly registry: LoadRegistry;
  readonly held: HeldMembers;
  /** Keys of files a prefetch asked for that have not been read (or released) since. */
  readonly asked: Set<string>;
  /** Groups whose source (cache or network) a prefetch is deciding, by load key. */
  readonly deciding: Map<string, Promise<void>>;
  /** The source's lifetime: aborted by `dispose` or the `signal` it was opened with. */
  readonly lifetime: AbortSignal;
  /**
   * Cache writes not yet settled, by content: what a load brought and the cache does not hold yet
   * (a worker's writes wait until the loads in flight are over). A read that finds nothing held
   * waits for its content's write rather than fetch it again (SPEC §7 "Needed bytes": no byte twice).
   */
  readonly writes: Map<string, Promise<void>>;
  /** Asks for the pending writes now (the workers' wait for the loads to end). */
  flushWrites(): void;
  /** Asks for the pending writes once the page is idle: what a range of its own brought, with no load in flight to ask when it ends. */
  flushWhenIdle(): void;
  readonly pendingBytes: number;
  /** The reads asking the cache, per load key: what a load gathers before it plans (needed bytes). */
  readonly lookups: CacheLookups;
  /** Per bundle, the contents needed-bytes loads of this source brought: a later plan of that bundle never brings them again. */
  readonly brought: Map<string, Set<string>>;
  /** Members being fetched by a range of their own beside a needed-bytes load, by content (aside-ranges.ts). */
  readonly ranging: Map<string, Promise<boolean>>;
  /** The lines to the origins, when needed bytes are on (SPEC §7 "Needed bytes"); else `undefined`. */
  readonly lines: LineEstimates | undefined;
}
