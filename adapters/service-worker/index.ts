/**
 * `awake-bundle/sw`: serve a page's requests for indexed URLs from verified bundles in a service
 * worker of your own (`npx awake-bundle sw` writes a ready-built one), and register it from a page.
 */
export {
  bytesResponse,
  createAwkbFetchHandler,
  DEFAULT_INDEX_WAIT_MS,
  failure,
  headResponse,
  installAwkbServiceWorker,
  REFRESH_MESSAGE,
  respond,
  STORED_MESSAGE,
  UPDATED_MESSAGE,
} from './handler.js';
export type {
  AwkbFetchHandler,
  AwkbFetchHandlerOptions,
  FetchEventLike,
  IndexStore,
  IndexUpdate,
  ServiceWorkerScopeLike,
} from './handler.js';
export { registerAwkbServiceWorker } from './page.js';
export type { AwkbServiceWorkerPage, RegisterServiceWorkerOptions } from './page.js';
