/**
 * `awake-bundle/sw`: serve a page's requests for indexed URLs from verified bundles in a service
 * worker of your own. `npx awake-bundle sw` writes a ready-built worker instead.
 */
export { bytesResponse, createAwkbFetchHandler, failure, headResponse, installAwkbServiceWorker, REFRESH_MESSAGE, respond, UPDATED_MESSAGE } from './handler.js';
export type { AwkbFetchHandler, AwkbFetchHandlerOptions, FetchEventLike, IndexStore, ServiceWorkerScopeLike } from './handler.js';
