/**
 * A TCP echo server and client, run inside pod namespaces with `ip netns exec NS node …`:
 *   tcp-echo-program.ts server --port P
 *     listens on 0.0.0.0:P, prints "echo listening on 0.0.0.0:P"; to each connection it answers
 *     the first line it reads as JSON {"from":<peer address>,"to":<its own address>,"line":…}
 *     and closes, so the client learns which address its packets arrived from (no NAT between).
 *   tcp-echo-program.ts client --host H --port P --message M --timeout-ms T
 *     sends M, prints {"local":<its own address>,"reply":<the server's JSON>} and exits 0; exits 1
 *     with the reason on stderr when there is no answer within T ms.
 */
import { createConnection, createServer } from 'node:net';
import { parseArgs } from 'node:util';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    message: { type: 'string' },
    'timeout-ms': { type: 'string' },
  },
  strict: true,
});
const mode = positionals[0];
const port = Number(values.port);
if (!Number.isInteger(port) || port <= 0 || port > 65535) fail(2, 'a --port 1-65535 is required');

function fail(code: number, message: string): never {
  process.stderr.write(`tcp-echo: ${message}\n`);
  process.exit(code);
}

if (mode === 'server') {
  const server = createServer((socket) => {
    let buffered = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      const newline = buffered.indexOf('\n');
      if (newline < 0) return;
      const answer = {
        from: socket.remoteAddress,
        to: socket.localAddress,
        line: buffered.slice(0, newline),
      };
      socket.end(`${JSON.stringify(answer)}\n`);
    });
    socket.on('error', () => socket.destroy());
  });
  server.on('error', (error) => fail(1, error.message));
  server.listen(port, '0.0.0.0', () => process.stdout.write(`echo listening on 0.0.0.0:${port}\n`));
  process.on('SIGTERM', () => process.exit(0));
} else if (mode === 'client') {
  const host = values.host;
  const message = values.message;
  const timeoutMs = Number(values['timeout-ms'] ?? '5000');
  if (!host || message === undefined || message.includes('\n'))
    fail(2, 'client needs --host and a one-line --message');
  const timer = setTimeout(
    () => fail(1, `no answer from ${host}:${port} within ${timeoutMs} ms`),
    timeoutMs,
  );
  const socket = createConnection({ host, port });
  let reply = '';
  socket.setEncoding('utf8');
  socket.on('connect', () => socket.write(`${message}\n`));
  socket.on('data', (chunk: string) => {
    reply += chunk;
  });
  socket.on('error', (error) => fail(1, `${host}:${port}: ${error.message}`));
  socket.on('end', () => {
    clearTimeout(timer);
    process.stdout.write(
      `${JSON.stringify({ local: socket.localAddress, reply: reply.trim() })}\n`,
    );
    process.exit(0);
  });
} else {
  fail(
    2,
    'usage: tcp-echo-program.ts server --port P | client --host H --port P --message M [--timeout-ms T]',
  );
}
