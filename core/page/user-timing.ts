/**
 * A User Timing mark where an adapter is first asked to load (`awake-bundle:awkbIndex`,
 * `awake-bundle:registerAwkb`): DevTools' Performance panel shows it among its timings, and
 * bench/engines.mjs measures from it to the index request. Nothing where there is no
 * `performance.mark` (Node's has one: a mark costs nothing there either).
 */
export function markAdapterCall(name: string): void {
  globalThis.performance?.mark?.(`awake-bundle:${name}`);
}
