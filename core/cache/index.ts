/** Content caches (SPEC §7 "Cache"): the interface, an in-memory LRU, and the browser stores. */
export type { ContentCache } from './content-cache.js';
export * from './memory.js';
export * from './browser.js';
