/**
 * What the fetchers hand back (bundle-fetcher.ts, bundle-ranges.ts), in a module of its own so
 * that both, and the loads that use them, import it downward: no circle between the fetchers.
 */
import { BundleIntegrityError, ResponseSizeError } from '../../errors.js';
import type { BundleEntry } from '../../format/project-index.js';

/** What a fetch is told as it goes. */
export interface FetchCallbacks {
  signal: AbortSignal;
  /** Bytes of the current attempt so far, of `total` (what this fetch downloads now). */
  onProgress?: (received: number, total: number) => void;
  /** A content passed its check: bytes the receiver owns. May come more than once for one content (a retry): ignore repeats. */
  onContent: (sha256: string, bytes: Uint8Array) => void;
}

/** A load that passed: what the cache should keep (copies no caller holds), or the write a worker makes itself. */
export interface Accepted {
  forCache: [string, Uint8Array][];
  stored?: Promise<void>;
}

/**
 * A plan the host could not serve as planned, said instead of contents (nothing was handed over):
 * `whole`, it refused ranges (or they could not be read); `separate`, it does not answer
 * multi-range requests. The load asks its planner again (load-planner.ts `replan`).
 */
export interface Replan {
  replan: 'whole' | 'separate';
}

/** What the reader does with a whole bundle that came for a range read (a server that ignores ranges): hold and cache its members. */
export type WholeHandler = (accepted: Accepted, contents: Map<string, Uint8Array>) => void;

/**
 * What a range read hands over beside its bytes: the whole bundle, when a server sent it for the
 * range (`onWhole`), and the cache write of its member once it passed (`onStored`: pending until
 * it settles, SourceParts `writes`).
 */
export interface RangeHandlers {
  onWhole: WholeHandler;
  onStored?: ((written: Promise<void>) => void) | undefined;
}

/** A bundle body of the wrong size, as the bundle's integrity error (SPEC §7 "Verified"), naming it (its URL is the error's `url`). */
export function bundleSizeError(error: unknown, bundle: BundleEntry, url: string): unknown {
  if (!(error instanceof ResponseSizeError)) return error;
  // The URL is the error's `url` (and holds the SHA-256): the message names the bundle once, and
  // says what arrived against what the index lists, the transport's "GET <url>: …" left as `cause`.
  const arrived =
    error.declaredBytes !== undefined
      ? `its Content-Length says ${error.declaredBytes}`
      : error.receivedBytes !== undefined
        ? `more arrived (${error.receivedBytes} bytes read, reading stopped)`
        : error.message;
  return new BundleIntegrityError('bundle', `bundle ${bundle.sha256}: ${arrived}, the index lists ${bundle.sizeBytes} bytes`, [], {
    url,
    cause: error,
  });
}
