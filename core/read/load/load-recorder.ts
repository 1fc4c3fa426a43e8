/**
 * Recorded loads (SPEC §6 "Loads"): per load name, the paths a source was asked to read, load or
 * prefetch, first use first, as the loads file's JSON (`awkb-loads.json`). A development server
 * collects them: the index it answers with names, in `X-Awake-Bundle-Loads`, the URL to post them
 * to, and `post` sends them there. A published index never carries that header, so nothing is
 * ever posted in production.
 */
import { InvalidOptionError } from '../../errors.js';
import type { LoadsFile } from '../../publish/loads.js';

import { DEFAULT_LOAD_NAME } from './load-names.js';

export { DEFAULT_LOAD_NAME, LOADS_ENDPOINT_HEADER, loadsEndpointOf } from './load-names.js';

/** A `keepalive` request may carry at most 64 KiB of body (Fetch standard); a larger post goes without it. */
const KEEPALIVE_MAX_BYTES = 64 * 1024;

/** Batches recorded before they are folded into the record: a bound on what waits (reads record one path each). */
const FOLD_AFTER_BATCHES = 1024;

export class LoadRecorder {
  /** Paths by load name: a Map and Sets keep the order of first use. */
  readonly #loads = new Map<string, Set<string>>();
  /**
   * What was recorded and not yet folded into `#loads`, in order: a load of many paths records
   * in one step, and its paths are gone through when the record is asked for (or past the bound).
   */
  #batches: [string, readonly string[]][] = [];
  /** Paths recorded so far, and when the last post went out, so an unchanged record is not posted again. */
  #recorded = 0;
  #posted = 0;
  #warned = false;

  constructor(readonly enabled: boolean) {}

  /**
   * Records `paths` under `name` (the default load when none), keeping the array (the caller
   * leaves it unchanged); checks the name even when recording is off.
   */
  record(name: string | undefined, paths: readonly string[]): void {
    if (name !== undefined && (typeof name !== 'string' || name === ''))
      throw new InvalidOptionError('loadName', `loadName must be a non-empty string, got ${JSON.stringify(name)}`);
    if (!this.enabled) return;
    this.#batches.push([name ?? DEFAULT_LOAD_NAME, paths]);
    if (this.#batches.length > FOLD_AFTER_BATCHES) this.#fold();
  }

  #fold(): void {
    for (const [load, paths] of this.#batches) {
      let known = this.#loads.get(load);
      if (!known) {
        known = new Set();
        this.#loads.set(load, known);
      }
      for (const path of paths) {
        if (known.has(path)) continue;
        known.add(path);
        this.#recorded++;
      }
    }
    this.#batches = [];
  }

  /** The loads file's JSON: loads in order of first use, each with its paths in order of first use. */
  loadsFile(): LoadsFile {
    this.#fold();
    return { formatVersion: 1, loads: [...this.#loads].map(([name, paths]) => ({ name, paths: [...paths] })) };
  }

  /**
   * Posts the loads file to `endpoint` when something was recorded since the last post; resolves
   * with whether it did. A failure is one console warning per source, never an exception: it is
   * a development aid, and the game goes on.
   */
  async post(endpoint: string, fetch: typeof globalThis.fetch): Promise<boolean> {
    this.#fold();
    if (this.#recorded === this.#posted || this.#loads.size === 0) return false;
    const recorded = this.#recorded;
    // Counted as posted from now on, so a second post meanwhile does not send the same again.
    const before = this.#posted;
    this.#posted = recorded;
    const body = new TextEncoder().encode(JSON.stringify(this.loadsFile()));
    try {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
        // Sent even when the page goes away right after a load.
        keepalive: body.length <= KEEPALIVE_MAX_BYTES,
      });
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}`.trim());
      return true;
    } catch (error) {
      if (this.#posted === recorded) this.#posted = before; // the next post sends it again
      if (!this.#warned)
        console.warn(
          `awake-bundle: the recorded loads could not be posted to ${endpoint}: ${error instanceof Error ? error.message : String(error)}`,
        );
      this.#warned = true;
      return false;
    }
  }
}
