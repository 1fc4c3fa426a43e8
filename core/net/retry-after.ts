/**
 * `Retry-After` (RFC 9110 §10.2.3): either delta seconds or an HTTP date. SPEC §7 "Retries"
 * honours both forms; the caller caps the result.
 */

/** Milliseconds to wait, or `undefined` when the header is absent or malformed. A past date waits 0. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value == null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // Only the date forms: a bare number like "1.5" or "-1" is malformed, not a date.
  if (!/[a-z]/i.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
