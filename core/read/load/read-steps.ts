/**
 * A read's steps (file-read.ts `ReadSteps`) as the source's parts carry them out: memory
 * (pending-members.ts), the loads in flight (load-registry.ts), the prefetches' decisions, the
 * verified cache, the planner's range decision and the fetchers.
 */
import { BundleIntegrityError } from '../../errors.js';
import { abortable } from '../../net/abort.js';
import { rangeAside, rangeHandlers } from '../fetch/aside-ranges.js';
import type { ReadSteps } from './file-read.js';
import type { Entry } from '../open/index-view.js';
import { fileBytesOf } from './load-progress.js';
import { decided, type Load } from './load-registry.js';
import type { LoadRunner } from './loads.js';
import type { SourceParts } from '../state/source-parts.js';

/** A read's own: what it reads, whether a prefetch had asked for it (a pin to take), its progress. */
export interface ReadOf {
  path: string;
  entry: Entry;
  pinned: boolean;
  onProgress?: ((loadedBytes: number, totalBytes: number) => void) | undefined;
}

export function readSteps(parts: SourceParts, loads: LoadRunner, read: ReadOf): ReadSteps & { releasePin(): void; doneAsking(): void } {
  const { ledger, registry, view, cache } = parts;
  const { held } = ledger;
  const { entry, onProgress } = read;
  const { sha256 } = entry;
  const loadKey = view.loadKeyOf(entry);
  let pinned = read.pinned;
  /** The pin goes once: with the bytes taken, or given back when they came another way. */
  const releasePin = () => {
    if (pinned) held.unpin(sha256);
    pinned = false;
  };
  /** Whether this read is counted as asking the cache (needed-bytes.ts `CacheLookups`): until it found bytes or joined or started a load. */
  let asking = false;
  const doneAsking = () => {
    if (asking) parts.lookups.end(loadKey);
    asking = false;
  };
  const take = (waited: boolean) => {
    const bytes = held.take(sha256, { waited, pinned });
    if (bytes) pinned = false;
    return bytes;
  };
  /** The source's own signal aborts its loads itself: no listener per read (load-registry.ts). */
  const until = <T>(promise: Promise<T>, signal: AbortSignal) => (signal === parts.lifetime ? promise : abortable(promise, signal));
  return {
    releasePin,
    doneAsking,
    takeHeld: () => take(false),
    inFlight: () => registry.get(loadKey),
    brings(load, signal) {
      if (load.status === 'gathering') {
        // A load gathering the reads asked for with it (needed bytes): it will bring this content too.
        load.wanted!.add(sha256);
        doneAsking();
        return true;
      }
      doneAsking();
      const answer = () => load.brings === undefined || load.brings.has(sha256);
      // Answered at once once the load has decided (so a read joins a load before it can finish), else when it decides, before any request.
      return decided(load) ? answer() : until(load.planned, signal).then(answer);
    },
    async arrival(load: Load, signal) {
      held.expect(sha256);
      const stop = onProgress && registry.watch(load, () => onProgress(fileBytesOf(load, entry), entry.sizeBytes));
      try {
        await registry.arrival(load, sha256, signal);
      } catch (error) {
        held.unexpect(sha256);
        throw error;
      } finally {
        stop?.();
      }
      const bytes = take(true);
      if (bytes || load.partial || load.arrived.has(sha256)) return bytes;
      throw new BundleIntegrityError('members', `content ${sha256} was not in the bundle that the index names for it`, [sha256]);
    },
    async settle(load, signal) {
      await registry.settle(load, signal).catch((error: unknown) => {
        if (signal.aborted) throw error; // how the load ended is not this read's concern: only that it is over
      });
    },
    deciding: () => ledger.deciding(loadKey),
    async fromCache(signal) {
      // Arrived, let go under the memory budget, its cache write still pending: wait for the write, not the network.
      const writing = ledger.writing(sha256);
      if (writing) {
        parts.flushWrites();
        await until(writing, signal);
      }
      if (parts.lines && !asking && entry.bundle !== undefined) {
        asking = true;
        parts.lookups.begin(loadKey);
      }
      const bytes = await cache.read(entry);
      if (bytes) {
        releasePin();
        doneAsking();
      }
      return bytes;
    },
    byRange: () => parts.planner.readsByRange(entry),
    ranging: () => ledger.ranging(sha256) !== undefined,
    asideByRange: (load) => parts.lines !== undefined && load.partial && parts.planner.readsByRange(entry, true),
    async aside(signal) {
      doneAsking();
      held.expect(sha256);
      try {
        await until(rangeAside(parts, loads, entry, read.path), signal);
      } catch (error) {
        held.unexpect(sha256);
        throw error;
      }
      return take(true);
    },
    range(signal) {
      releasePin();
      doneAsking();
      return parts.fetcher.range(entry, read.path, signal, rangeHandlers(parts, loads, entry));
    },
    startLoad() {
      doneAsking();
      return loads.start(loadKey, { need: sha256 });
    },
  };
}
