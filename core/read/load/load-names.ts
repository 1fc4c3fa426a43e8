/**
 * The names recorded loads go by (SPEC §6 "Loads"), apart from the recorder (load-recorder.ts):
 * what the reader's opening and the adapters need of them even where nothing is recorded.
 */

/** The load a read, load or prefetch is recorded under when it names none. */
export const DEFAULT_LOAD_NAME = 'main';

/** The header of a development index's answer that asks for the recorded loads: where to post them (relative to the index). */
export const LOADS_ENDPOINT_HEADER = 'X-Awake-Bundle-Loads';

/**
 * The URL a development index asked the recorded loads to be posted to (its header, resolved
 * against the index URL), when it is on the index's own origin; anything else is not an ask.
 */
export function loadsEndpointOf(headerValue: string | null, indexUrl: string): string | undefined {
  if (!headerValue) return undefined;
  try {
    const endpoint = new URL(headerValue, indexUrl);
    return endpoint.origin === new URL(indexUrl).origin && /^https?:$/.test(endpoint.protocol) ? endpoint.href : undefined;
  } catch {
    return undefined;
  }
}
