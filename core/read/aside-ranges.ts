/**
 * Members fetched beside a needed-bytes load (SPEC §7 "Needed bytes"): a load of a bundle fetches
 * the members it was planned for; a read (or a read-ahead) of another member of that bundle that
 * comes while it is in flight gets that member by a range of its own at once, rather than wait for
 * the load to end and start another. One range per content at a time, whoever asks: the bytes are
 * held for the files that read that content (pending-members.ts), so no byte comes twice.
 */
import type { Entry } from './index-view.js';
import type { LoadRunner } from './loads.js';
import { noteBrought } from './needed-bytes.js';
import type { SourceParts } from './source-parts.js';

/** Fetches `entry`'s member by range and holds it for its reads; false when the host refused the range (its origin then gets whole bundles). */
export function rangeAside(parts: SourceParts, loads: LoadRunner, entry: Entry, path: string): Promise<boolean> {
  const { sha256 } = entry;
  const inFlight = parts.ranging.get(sha256);
  if (inFlight) return inFlight;
  const loadKey = parts.view.loadKeyOf(entry);
  const ranging = parts.fetcher
    .range(entry, path, parts.lifetime, (accepted, contents) => loads.keepWhole(loadKey, accepted, contents))
    .then((bytes) => {
      if (bytes) noteBrought(parts.brought, loadKey, [sha256]);
      if (bytes && !parts.held.has(sha256)) parts.held.put(sha256, bytes, parts.view.filesWith(loadKey, sha256).length, 0, loadKey);
      return bytes !== undefined;
    })
    .finally(() => parts.ranging.delete(sha256));
  parts.ranging.set(sha256, ranging);
  return ranging;
}
