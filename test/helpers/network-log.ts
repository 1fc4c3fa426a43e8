/**
 * What Chromium's network stack says of a page's requests and of its dedicated workers' (CDP
 * `Network` events): the page's session alone does not see a worker's requests, so every worker
 * is attached as it starts (`Target.setAutoAttach`, flattened) and its session enabled too.
 * Chromium only: Firefox under WebDriver BiDi has no CDP.
 *
 *   const log = await logNetwork(page);
 *   … load …
 *   expect(log.requests(/\.awkb$/).filter((r) => r.outcome !== 'finished')).toEqual([]);
 */
import type { CDPSession, Page } from 'puppeteer-core';

export interface LoggedRequest {
  url: string;
  /** Who sent it: the page, or a worker (its target type). */
  by: string;
  /** `finished` (Network.loadingFinished), `failed` (Network.loadingFailed), or still `pending`. */
  outcome: 'pending' | 'finished' | 'failed';
  /** For a failed request: its errorText, and whether CDP calls it canceled. */
  errorText?: string;
  canceled?: boolean;
}

export interface NetworkLog {
  /** Requests whose URL matches, in the order they were sent. */
  requests(url?: RegExp): LoggedRequest[];
  /**
   * Resolves once no matching request is pending: the protocol's events may come after the page
   * has every byte (a load ends when the network says so, not when a body is read).
   */
  settled(url?: RegExp): Promise<LoggedRequest[]>;
}

interface NetworkEvents {
  requestWillBeSent: { requestId: string; request: { url: string } };
  loadingFinished: { requestId: string };
  loadingFailed: { requestId: string; errorText: string; canceled?: boolean };
  attachedToTarget: { sessionId: string; targetInfo: { type: string } };
}

export async function logNetwork(page: Page): Promise<NetworkLog> {
  const all: LoggedRequest[] = [];
  const waiters = new Set<() => void>();
  const changed = () => {
    for (const check of [...waiters]) check();
  };
  const attach = async (session: CDPSession, by: string): Promise<void> => {
    const byId = new Map<string, LoggedRequest>();
    session.on('Network.requestWillBeSent', (event: NetworkEvents['requestWillBeSent']) => {
      // A redirect sends the same id again: one record per id, its last URL.
      const known = byId.get(event.requestId);
      if (known) return void (known.url = event.request.url);
      const record: LoggedRequest = { url: event.request.url, by, outcome: 'pending' };
      byId.set(event.requestId, record);
      all.push(record);
    });
    session.on('Network.loadingFinished', (event: NetworkEvents['loadingFinished']) => {
      const record = byId.get(event.requestId);
      if (record) record.outcome = 'finished';
      changed();
    });
    session.on('Network.loadingFailed', (event: NetworkEvents['loadingFailed']) => {
      const record = byId.get(event.requestId);
      if (record) Object.assign(record, { outcome: 'failed', errorText: event.errorText, canceled: event.canceled ?? false });
      changed();
    });
    // A worker waits until its session logs its network, so not even its first request is missed.
    session.on('Target.attachedToTarget', (event: NetworkEvents['attachedToTarget']) => {
      const child = session.connection()?.session(event.sessionId);
      if (!child) return;
      void attach(child, event.targetInfo.type).finally(() => child.send('Runtime.runIfWaitingForDebugger').catch(() => undefined));
    });
    await session.send('Network.enable');
    await session.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true });
  };
  await attach(await page.createCDPSession(), 'page');
  const requests = (url?: RegExp) => all.filter((record) => url === undefined || url.test(record.url));
  const settled = (url?: RegExp) =>
    new Promise<LoggedRequest[]>((resolve) => {
      const check = () => {
        if (requests(url).some((record) => record.outcome === 'pending')) return;
        waiters.delete(check);
        resolve(requests(url));
      };
      waiters.add(check);
      check();
    });
  return { requests, settled };
}
