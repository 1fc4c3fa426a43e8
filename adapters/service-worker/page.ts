/**
 * The page side of the service worker: register it, wait until it controls the page, hear of new
 * versions, ask for a refresh. No imports, so a page can load this module alone.
 *
 *   const awkb = await registerAwkbServiceWorker('awake-bundle-sw.js', {
 *     onUpdate: (indexUrl) => console.log('a new version is served from', indexUrl),
 *   });
 *   await awkb.refresh();   // read the index again now
 *   await awkb.stored();    // what was read so far now loads offline
 */

export interface RegisterServiceWorkerOptions {
  /** The worker's scope (default: the folder it is served from). */
  scope?: string;
  /**
   * Called when the worker serves a new version of the index (its `awkb:updated` message), after
   * it brought the changed files this player had loaded: a reload now runs the new version.
   */
  onUpdate?: (indexUrl: string, update: { prefetchedFiles: number; prefetchError?: string }) => void;
  /** How long to wait for the worker to control the page, in ms (default 10 000); it rejects after. */
  timeoutMs?: number;
}

export interface AwkbServiceWorkerPage {
  registration: ServiceWorkerRegistration;
  /** Asks the worker to read the index again; resolves once it serves the new one and brought its changed files (or kept the old: same index). */
  refresh(): Promise<void>;
  /** Resolves once what the worker read so far is in its persistent cache: from then on, those files load offline. */
  stored(): Promise<void>;
  /** Stops listening for updates (the worker stays registered). */
  dispose(): void;
}

/** Registers the worker and resolves once it controls this page, so the loads that follow are served from bundles. */
export async function registerAwkbServiceWorker(
  scriptUrl = 'awake-bundle-sw.js',
  options: RegisterServiceWorkerOptions = {},
): Promise<AwkbServiceWorkerPage> {
  const container = navigator.serviceWorker;
  if (!container) throw new Error('service workers are not available here (a secure context, https or localhost, is needed)');
  const registration = await container.register(scriptUrl, options.scope === undefined ? {} : { scope: options.scope });
  await controlled(container, options.timeoutMs ?? 10_000);
  const onMessage = (event: MessageEvent) => {
    const data = event.data as { type?: unknown; indexUrl?: unknown; prefetchedFiles?: unknown; prefetchError?: unknown } | null;
    if (data?.type !== 'awkb:updated' || typeof data.indexUrl !== 'string') return;
    const prefetchedFiles = typeof data.prefetchedFiles === 'number' ? data.prefetchedFiles : 0;
    options.onUpdate?.(
      data.indexUrl,
      typeof data.prefetchError === 'string' ? { prefetchedFiles, prefetchError: data.prefetchError } : { prefetchedFiles },
    );
  };
  container.addEventListener('message', onMessage);
  container.startMessages();
  return {
    registration,
    refresh: () => ask(container, 'awkb:refresh', 'awkb:refreshed', 'could not read the index'),
    stored: () => ask(container, 'awkb:stored', 'awkb:stored', 'could not store what it read'),
    dispose: () => container.removeEventListener('message', onMessage),
  };
}

function controlled(container: ServiceWorkerContainer, timeoutMs: number): Promise<void> {
  if (container.controller) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the service worker did not control this page within ${timeoutMs} ms (is the page within its scope?)`)),
      timeoutMs,
    );
    container.addEventListener(
      'controllerchange',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** Posts `{ type }` to the controlling worker and waits for its answer on a port of our own. */
function ask(container: ServiceWorkerContainer, type: string, done: string, failure: string): Promise<void> {
  const worker = container.controller;
  if (!worker) return Promise.reject(new Error('no service worker controls this page'));
  const channel = new MessageChannel();
  return new Promise((resolve, reject) => {
    channel.port1.onmessage = (event: MessageEvent) => {
      channel.port1.close();
      const data = event.data as { type?: unknown; message?: unknown };
      if (data.type === done) resolve();
      else reject(new Error(`the service worker ${failure}: ${String(data.message)}`));
    };
    worker.postMessage({ type }, [channel.port2]);
  });
}
