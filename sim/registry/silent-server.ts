/**
 * A loopback TCP server that accepts connections and never answers: a registry that hangs.
 * Tests use it to check that lookups end within their time budget.
 */
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';

export interface SilentServer {
  /** "127.0.0.1:<port>". */
  host: string;
  /** Connections accepted so far. */
  readonly connections: number;
  stop(): Promise<void>;
}

/** Starts a server that holds every connection open without reading or writing. */
export async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    host: `127.0.0.1:${port}`,
    get connections() {
      return connections;
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close').catch(() => {});
    },
  };
}
