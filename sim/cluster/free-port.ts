/** Free TCP ports on loopback, for components that need a port chosen up front. */
import { createServer } from 'node:net';

/** Returns a TCP port that was free on `host` a moment ago (the OS picks it). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error(`Cannot read the port the OS gave on ${host}`));
      });
    });
  });
}

/** Returns `count` distinct free ports. */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort(host));
  return [...ports];
}
