/**
 * The in-namespace half of the API relay, run as
 *   ip netns exec NS node sim/netlab/api-relay-program.ts --port 6443 --socket /tmp/…/api.sock
 * It listens on 127.0.0.1:PORT inside the namespace and forwards each connection, byte for byte,
 * to the unix socket, which the test process bridges to the real API server's loopback port
 * (api-relay.ts). Unix sockets are files, so they cross namespace boundaries without a veth to
 * the machine's own namespace. TLS passes through untouched: clients check the API server's own
 * certificate, valid for 127.0.0.1. Prints "relay listening on 127.0.0.1:PORT" when ready.
 */
import { createConnection, createServer, type Socket } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { port: { type: 'string' }, socket: { type: 'string' } },
  strict: true,
});
const port = Number(values.port);
const socketPath = values.socket;
if (!Number.isInteger(port) || port <= 0 || port > 65535 || !socketPath) {
  process.stderr.write('usage: api-relay-program.ts --port PORT --socket UNIX-SOCKET-PATH\n');
  process.exit(2);
}

const open = new Set<Socket>();
const server = createServer((client) => {
  const upstream = createConnection(socketPath);
  open.add(client);
  open.add(upstream);
  const close = () => {
    client.destroy();
    upstream.destroy();
    open.delete(client);
    open.delete(upstream);
  };
  client.on('error', close).on('close', close);
  upstream.on('error', close).on('close', close);
  client.pipe(upstream);
  upstream.pipe(client);
});
server.on('error', (error) => {
  process.stderr.write(`relay: ${error.message}\n`);
  process.exit(1);
});
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`relay listening on 127.0.0.1:${port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    server.close();
    for (const s of open) s.destroy();
    process.exit(0);
  });
}
