/**
 * A host's outbound network faults: its programs' connections to a blocked endpoint fail as
 * Windows reports them (refused at once, or timed out), while the same endpoint answers code
 * outside the host (the operator, the test) and the other host's programs.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { MachineNetworkFaults, runWithMachineNetwork } from './network-faults.ts';
import type { ProgramContext } from './sim-process.ts';
import { createTestMachine } from './test-machine.ts';

async function server(t: { after(fn: () => Promise<void> | void): void }): Promise<number> {
  const s = http.createServer((_req, res) => res.end('ok')).listen(0, '127.0.0.1');
  await new Promise((resolve) => s.once('listening', resolve));
  t.after(() => {
    s.close();
  });
  return (s.address() as AddressInfo).port;
}

/** A GET over a fresh connection: "200", or the connect error's code. */
function get(port: number): Promise<string> {
  return new Promise((resolve) => {
    const req = http.get(`http://127.0.0.1:${port}/`, { agent: false }, (res) => {
      res.resume();
      resolve(String(res.statusCode));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

test('a blocked endpoint is refused to the faulted context only, then answers once lifted', async (t) => {
  const port = await server(t);
  const faults = new MachineNetworkFaults();
  const other = new MachineNetworkFaults();
  faults.block({ host: '127.0.0.1', port });
  assert.equal(await runWithMachineNetwork(faults, () => get(port)), 'ECONNREFUSED');
  assert.equal(await get(port), '200', 'outside every host: reachable');
  assert.equal(await runWithMachineNetwork(other, () => get(port)), '200', 'another host');
  // fetch (undici) dials through net too.
  const fetched = await runWithMachineNetwork(faults, () =>
    fetch(`http://127.0.0.1:${port}/`).then(
      (r) => String(r.status),
      (e: { cause?: { code?: string } }) => e.cause?.code,
    ),
  );
  assert.equal(fetched, 'ECONNREFUSED');
  faults.unblock({ host: '127.0.0.1', port });
  assert.equal(await runWithMachineNetwork(faults, () => get(port)), '200');
});

test('a dropped endpoint times out after the given time, as an unanswered SYN', async (t) => {
  const port = await server(t);
  const faults = new MachineNetworkFaults();
  faults.block({ host: '127.0.0.1', port, mode: 'drop', dropAfterMs: 300 });
  const started = Date.now();
  assert.equal(await runWithMachineNetwork(faults, () => get(port)), 'ETIMEDOUT');
  assert.ok(Date.now() - started >= 290, 'not before the timeout');
  assert.throws(() => faults.block({ host: '127.0.0.1', port: 0 }), /TCP port from 1 to 65535/);
});

test("a machine's programs meet its faults; a reboot keeps them; unblock lifts them", async (t) => {
  const port = await server(t);
  const machine = await createTestMachine(t);
  const results: string[] = [];
  machine.programs.register('probe.exe', {
    run: async (_context: ProgramContext) => {
      // After an await, as a program's later calls are: the context follows it.
      await new Promise((resolve) => setTimeout(resolve, 5));
      results.push(await get(port));
      return 0;
    },
  });
  await machine.fs.writeFileAtomic('C:\\probe.exe', Buffer.from('probe'));
  const run = async () => {
    const p = await machine.spawn({
      binaryPath: 'C:\\probe.exe',
      args: [],
      stdout: () => {},
      stderr: () => {},
    });
    await p.exited;
  };
  machine.network.block({ host: '127.0.0.1', port });
  await run();
  await machine.reboot({ reason: 'test' });
  await run();
  machine.network.unblock();
  await run();
  assert.deepEqual(results, ['ECONNREFUSED', 'ECONNREFUSED', '200']);
});
