/**
 * The entry of the prebuilt `awake-bundle-sw.js` (dist/sw/, written into a site by
 * `npx awake-bundle sw`). Its index URL, in this order: the `index` query of the worker's own
 * URL (`register('awake-bundle-sw.js?index=published/project.index.json')`), the URL that
 * `awake-bundle sw --index` baked into the file (`self.AWKB_SW_INDEX_URL`), else
 * `project.index.json`; relative URLs resolve against the worker's URL.
 */
import { installAwkbServiceWorker, type ServiceWorkerScopeLike } from './handler.js';

const scope = globalThis as unknown as ServiceWorkerScopeLike & { location: { href: string }; AWKB_SW_INDEX_URL?: string };
const here = new URL(scope.location.href);
const indexUrl = here.searchParams.get('index') ?? scope.AWKB_SW_INDEX_URL ?? 'project.index.json';
installAwkbServiceWorker(scope, { indexUrl: new URL(indexUrl, here).href });
