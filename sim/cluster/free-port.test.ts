import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { ephemeralRangeStart, freePort, freePorts } from './free-port.ts';

test('ports come from below the ephemeral range, where listen(0) and outgoing connections never land', async () => {
  const start = ephemeralRangeStart();
  const ports = await freePorts(20);
  assert.equal(new Set(ports).size, 20);
  for (const port of ports) {
    assert.ok(port >= 10_000 && port < start, `${port} below ${start}`);
  }
  // A port it returns can be bound by the component it is meant for.
  const port = await freePort();
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port, exclusive: true }, resolve);
  });
  await new Promise((resolve) => server.close(resolve));
});

test('the ephemeral range is read from the kernel, with its default when that fails', () => {
  assert.equal(
    ephemeralRangeStart(() => '32768\t60999\n'),
    32_768,
  );
  assert.equal(
    ephemeralRangeStart(() => '40000 65000'),
    40_000,
  );
  assert.equal(
    ephemeralRangeStart(() => 'garbage'),
    32_768,
  );
  assert.equal(
    ephemeralRangeStart(() => '1024 65000'),
    32_768,
    'too low to leave room',
  );
  assert.equal(
    ephemeralRangeStart(() => {
      throw new Error('ENOENT');
    }),
    32_768,
  );
});
