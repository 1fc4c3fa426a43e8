/**
 * A node:http server on 127.0.0.1 that answers every GET with the whole file under `root` (200),
 * ignoring `Range`: the server a reader must cope with when ranges are not supported.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface WholeFileServer {
  /** `http://127.0.0.1:<port>/` */
  base: string;
  close(): Promise<void>;
}

export async function startWholeFileServer(root: string): Promise<WholeFileServer> {
  const server = createServer((request, response) => {
    try {
      const body = readFileSync(join(root, decodeURIComponent(new URL(request.url!, 'http://x').pathname)));
      response.writeHead(200, { 'content-length': body.length });
      response.end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
