/**
 * What every hand-made test server does to start and stop: listen on 127.0.0.1 at a free port,
 * keep its open connections, and on `close` end them at once (a held or endless answer would
 * otherwise keep `server.close` waiting).
 */
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export async function listenOnLoopback(server: Server): Promise<{ origin: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((closed) => server.close(closed));
    },
  };
}
