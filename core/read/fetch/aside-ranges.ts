/**
 * Members fetched beside a needed-bytes load (SPEC §7 "Needed bytes"): a load of a bundle fetches
 * the members it was planned for; a read (or a read-ahead) of another member of that bundle that
 * comes while it is in flight gets that member by a range of its own at once, rather than wait for
 * the load to end and start another. One range per content at a time, whoever asks: the bytes are
 * held for the files that read that content (held-members.ts), and its cache write is marked
 * pending, so no byte comes twice. While it is on its way, a read of that content waits for it
 * (file-read.ts `ranging`), a load plans without it and a prefetch or read-ahead counts it as
 * coming (the planner's `held` in loads.ts, prefetch.ts): a needed-bytes load of the same bundle that
 * starts once the first has ended asks for none of its bytes again.
 */
import type { RangeHandlers } from './fetched.js';
import type { Entry } from '../open/index-view.js';
import type { LoadRunner } from '../load/loads.js';
import type { SourceParts } from '../state/source-parts.js';

/** Fetches `entry`'s member by range and holds it for its reads; false when the host refused the range (its origin then gets whole bundles). */
export function rangeAside(parts: SourceParts, loads: LoadRunner, entry: Entry, path: string): Promise<boolean> {
  const { sha256 } = entry;
  const { ledger } = parts;
  const inFlight = ledger.ranging(sha256);
  if (inFlight) return inFlight;
  const loadKey = parts.view.loadKeyOf(entry);
  return ledger.range(
    sha256,
    parts.fetcher.range(entry, path, parts.lifetime, rangeHandlers(parts, loads, entry)).then((bytes) => {
      if (bytes) ledger.noteBrought(loadKey, [sha256]);
      // Held for the files that read it, those a prefetch asked for meanwhile pinned (it counted the range as coming).
      if (bytes && !ledger.held.has(sha256)) ledger.holdFor(sha256, bytes, parts.view.filesWith(loadKey, sha256), loadKey);
      return bytes !== undefined;
    }),
  );
}

/**
 * What a range of one member hands over beside its bytes (an aside range, or a `rangeReads` read):
 * a whole bundle a host sent instead is held and cached as a load's; the member's cache write is
 * pending until it settles, so a read that finds the bytes taken waits for it, not the network,
 * and asked for once no load is in flight (a load's end asks for it otherwise).
 */
export function rangeHandlers(parts: SourceParts, loads: LoadRunner, entry: Entry): RangeHandlers {
  const loadKey = parts.view.loadKeyOf(entry);
  return {
    onWhole: (accepted, contents) => loads.keepWhole(loadKey, accepted, contents),
    onStored: (written) => {
      parts.ledger.markWrites([entry.sha256], written);
      // A worker writes once it is asked: when the last load in flight ends, and for a range
      // with none in flight (the read-ahead's, or range reads'), once the page is idle.
      if (parts.registry.size === 0) parts.flushWhenIdle();
    },
  };
}
