/**
 * Content caches (SPEC §7 "Cache"): the interface, an in-memory LRU, the browser stores, and the
 * IndexedDB store functions under `IndexedDBCache`, importable by a worker too.
 */
export type { ContentCache } from './content-cache.js';
export * from './memory.js';
export * from './browser.js';
export * from './browser-stores.js';
export * from './open-browser-cache.js';
export * from './idb-store.js';
