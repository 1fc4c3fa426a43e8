/** The browser-safe network layer (SPEC §7 "Retries", "Range reads", "Tokens"). No `node:` imports. */
export {
  Transport,
  type RetryOptions,
  type RetryEvent,
  type TransportOptions,
  type RequestOptions,
  type BodyRequestOptions,
  type RangeResult,
  type RangeSink,
  type StreamedRanges,
  type RangeRefusal,
} from './transport.js';
export { tokenAuthorizedFetch, bindTokenOrigin, needsTokenOrigin, type TokenAuthorizedFetchOptions } from './token-fetch.js';
export { parseRetryAfter } from './retry-after.js';
