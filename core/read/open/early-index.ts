/**
 * The index a page preloads, read before the game opens it. The build plugins
 * preload the index with a link marked `data-awkb-index` (integrations/build/preload.ts). An
 * adapter, as it is imported, asks for that link's URL once the page is parsed, on the page's
 * thread as the reader would (the same request, so the browser hands over the preloaded
 * response). The game's own `IndexedAssetSource.open` of that URL then takes the answer
 * (`takeEarlyIndex`, once) instead of sending a request.
 *
 * Why: measured in Chromium (BENCHMARKS.md, "Start"), an index asked for only when the game opens
 * it is read after the engine's first frame. Phaser's first frame after a scene's `preload` is a
 * 170–240 ms task, and the response waits behind it, so the first bundle request went out
 * 200–300 ms after the adapter's call. With the index already in, the open, the files' routing
 * and the first load's plan run in the microtasks of the call's own task, so the first bundle
 * requests go out before that frame (the reader's own work, tens of ms, is what is left).
 *
 * The answer is only taken by an open with the platform's fetch (no `fetch` or `transport`
 * option: those would ask in their own way, with tokens, say). An early request that failed is
 * asked for again by the open, with its own attempts.
 */
import { Transport } from '../../net/transport.js';
import { DEFAULT_INDEX_TIMEOUT_MS, DEFAULT_MAX_INDEX_BYTES } from '../options.js';
import { nowMs } from '../plan/needed-bytes.js';
import { EARLY_INDEX_ATTRIBUTE } from './origins.js';

export interface EarlyIndex {
  /** The answer's bytes and headers, as `Transport.getBytesWithHeaders` gives them. */
  answer: Promise<{ bytes: Uint8Array; headers: Headers }>;
  /** When it was asked for, and when its first bytes came (`nowMs`), for the line's round trip. */
  askedMs: number;
  answeredMs?: number;
}

/** By absolute URL: asked for, not yet taken. */
const early = /* @__PURE__ */ new Map<string, EarlyIndex>();
let watching = false;

/**
 * Asks, once the page is parsed, for every index its marked preload links name. Acts once however
 * often called (an adapter calls it as it is imported); does nothing without a document.
 */
export function readMarkedIndexes(): void {
  const document = (globalThis as { document?: Document }).document;
  if (watching || !document?.querySelectorAll) return;
  watching = true;
  const start = (): void => {
    for (const link of document.querySelectorAll(`link[rel~="preload"][as="fetch"][${EARLY_INDEX_ATTRIBUTE}]`)) {
      const url = (link as HTMLLinkElement).href; // absolute, as the reader's own indexUrl
      if (/^https?:/.test(url) && !early.has(url)) early.set(url, ask(url));
    }
  };
  // The links follow the page's scripts (the build plugins put them at the end of the body): a
  // request made before they are parsed would not find their preloads and ask a second time.
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start, { once: true });
  else start();
}

function ask(url: string): EarlyIndex {
  const entry: EarlyIndex = { askedMs: nowMs(), answer: undefined! };
  entry.answer = new Transport({}).getBytesWithHeaders(url, {
    maxBytes: DEFAULT_MAX_INDEX_BYTES,
    timeoutMs: DEFAULT_INDEX_TIMEOUT_MS,
    attempts: 1,
    onProgress: (received) => {
      if (received > 0) entry.answeredMs ??= nowMs();
    },
  });
  entry.answer.catch(() => undefined); // taken, or never needed: either way not an unhandled rejection
  return entry;
}

/** The early request of `url`, if one was made and not taken yet; taken once. */
export function takeEarlyIndex(url: string): EarlyIndex | undefined {
  const found = early.get(url);
  if (found) early.delete(url);
  return found;
}
