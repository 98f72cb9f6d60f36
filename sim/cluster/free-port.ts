/**
 * Free TCP ports on loopback, for components that need a port chosen up front.
 *
 * A port chosen up front is free only until someone else binds it. The OS hands out the
 * ephemeral range (/proc/sys/net/ipv4/ip_local_port_range, 32768–60999 by default) to every
 * `listen(0)` and every outgoing connection of every test running beside this one, so a port
 * taken from there and released can be handed out again before the component that was meant to
 * have it starts (a webhook process died with EADDRINUSE that way in a full run). These ports
 * come from below that range, where the OS never picks one by itself: only another caller of
 * this module could take the same one, and it picks at random among about 22,000.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The lowest port chosen: above the registered ports most services listen on. */
const lowestPort = 10_000;

/** The first port of the OS's ephemeral range (32768 when it cannot be read). */
export function ephemeralRangeStart(
  read: () => string = () => readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8'),
): number {
  try {
    const start = Number.parseInt(read().trim().split(/\s+/)[0] ?? '', 10);
    return Number.isInteger(start) && start > lowestPort + 1000 && start <= 65_535 ? start : 32_768;
  } catch {
    return 32_768;
  }
}

/** Whether `port` can be bound on `host` now (it is closed again before this resolves). */
function canBind(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE' || error.code === 'EACCES') resolve(false);
      else reject(error);
    });
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * Returns a TCP port that was free on `host` a moment ago, chosen at random below the OS's
 * ephemeral range (see the header).
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const end = ephemeralRangeStart();
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = lowestPort + Math.floor(Math.random() * (end - lowestPort));
    if (await canBind(host, port)) return port;
  }
  throw new Error(
    `No free TCP port on ${host} between ${lowestPort} and ${end - 1} after 100 tries`,
  );
}

/** Returns `count` distinct free ports. */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort(host));
  return [...ports];
}
