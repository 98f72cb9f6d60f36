import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentExecutable, remoteCommand } from '../../src/hostaccess/remote-scripts.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { parsePowerShellJson } from '../../src/powershell/powershell.ts';
import { type SimulatedHosts, startSimulatedHosts } from './fleet.ts';
import { openLogFile } from './kube-log-runner.ts';
import { defaultPrograms, idleProgram } from './programs.ts';
import { SimHostOS } from './sim-host-os.ts';
import { connect, exec, generateTestKey, openSftp, sftpCall } from './ssh-test-client.ts';
import { installBinary, serviceConfig } from './test-machine.ts';

const key = generateTestKey();
const agentRunsLog = 'C:\\k\\winfleet\\agent-runs.log';
let nextAddress = 80;

/** One host with fast timings; its agent prints a line, then runs until stopped. */
async function oneHost(t: { after(fn: () => Promise<void>): void }): Promise<SimulatedHosts> {
  const fleet = await startSimulatedHosts({
    count: 1,
    baseAddress: `127.0.0.${nextAddress++}`,
    authorizedKeys: [key.publicKey],
    machine: {
      timings: {
        rebootDowntimeMs: 400,
        startPendingMs: 5,
        shutdownTimeoutMs: 300,
        delayedAutoStartMs: 100,
      },
    },
    programs: () =>
      defaultPrograms().register('winfleet-agent.exe', {
        run: async (context) => {
          // Its output reaches an SSH client; as a service it has no console, so it also
          // logs to a file.
          const line = `agent ${context.argv.join(' ')} started\n`;
          context.stdout(line);
          const log = await openLogFile(context, agentRunsLog);
          log.write(line);
          await log.close();
          await idleProgram(context);
          return 0;
        },
      }),
  });
  t.after(() => fleet.stop());
  await fleet.hosts[0]!.machine.fs.writeFileAtomic(agentExecutable, 'agent');
  return fleet;
}

test('refused connections: nothing listens until the fault is cleared', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  await host.faults.setRefuseConnections(true);
  await assert.rejects(connect(host, { key }), { code: 'ECONNREFUSED' });
  await host.faults.setRefuseConnections(false);
  const { client } = await connect(host, { key });
  client.end();
});

test('a connection dropped mid-command ends the command, bounded', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const { client } = await connect(host, { key });
  host.faults.dropConnection({
    when: { script: 'run-agent', agentCommand: 'bootstrap' },
    afterMs: 150,
  });
  const closed = new Promise<void>((resolve) => client.on('close', () => resolve()));
  const started = Date.now();
  const result = await exec(client, remoteCommand('run-agent', { args: ['bootstrap'] }), 5000);
  assert.equal(result.closedEarly, true);
  assert.equal(result.stdout, 'agent bootstrap started\n', 'the command had started');
  assert.ok(Date.now() - started < 2000);
  await closed;
  await waitFor(() => !host.machine.processes().some((p) => p.imageName === 'winfleet-agent.exe'), {
    description: 'the agent process to die with the session',
    timeoutMs: 2000,
    intervalMs: 20,
  });
  const again = await connect(host, { key });
  assert.equal(
    await exec(again.client, remoteCommand('run-agent', { args: ['status'] }), 500).catch(
      () => undefined,
    ),
    undefined,
    'still running (it idles), the fault fired once',
  );
  again.client.end();
});

test('a drop without a trigger drops the current connections now', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const { client } = await connect(host, { key });
  const closed = new Promise<void>((resolve) => client.on('close', () => resolve()));
  host.faults.dropConnection();
  await closed;
});

test('a slow link delays every chunk', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const { client } = await connect(host, { key });
  t.after(async () => client.end());
  const command = remoteCommand('host-facts', {});
  let started = Date.now();
  await exec(client, command);
  const fast = Date.now() - started;
  // 25 ms per chunk: the answer takes a few dozen chunks, so the delays dwarf timing noise.
  host.faults.slowLinkMs = 25;
  started = Date.now();
  assert.equal((await exec(client, command)).code, 0);
  const slow = Date.now() - started;
  assert.ok(slow >= fast + 75, `slow ${slow} ms vs fast ${fast} ms`);
});

test('a changed host key is seen by a client that pinned the old one', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const pinned = host.hostKeyFingerprint;
  const first = await connect(host, { key, pinned });
  first.client.end();
  const changed = host.faults.changeHostKey();
  assert.notEqual(changed, pinned);
  assert.equal(host.hostKeyFingerprint, changed);
  await assert.rejects(connect(host, { key, pinned }), /verification failed/i);
  const second = await connect(host, { key });
  assert.equal(second.hostKeyFingerprint, changed);
  second.client.end();
});

test('a full disk fails writes and reports no free space', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const { client } = await connect(host, { key });
  t.after(async () => client.end());
  host.faults.diskFull = true;
  const facts = parsePowerShellJson(
    (await exec(client, remoteCommand('host-facts', {}))).stdout,
    'facts',
  ) as { freeBytes: number };
  assert.equal(facts.freeBytes, 0);
  const sftp = await openSftp(client);
  await assert.rejects(
    sftpCall((d) => sftp.writeFile('/C:/k/big.bin', Buffer.alloc(10), d as never)),
    /There is not enough space on the disk/,
  );
  await assert.rejects(
    host.hostOS().writeFile('C:\\k\\x.yaml', 'x'),
    /There is not enough space on the disk/,
  );
  host.faults.diskFull = false;
  await host.hostOS().writeFile('C:\\k\\x.yaml', 'x');
});

test('a crashed service is restarted by its recovery actions', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const os = new SimHostOS(host.machine);
  await installBinary(host.machine, 'containerd');
  await os.createService(
    serviceConfig('containerd', {
      args: ['--run-service'],
      recovery: { restartDelaysMs: [50], resetPeriodSeconds: 60 },
    }),
  );
  await os.startService('containerd');
  const pid = (await os.queryService('containerd'))!.pid;
  assert.equal(host.faults.crashService('containerd'), true);
  await waitFor(
    async () => {
      const s = await os.queryService('containerd');
      return s?.state === 'running' && s.pid !== pid;
    },
    { description: 'containerd to be restarted', timeoutMs: 3000, intervalMs: 20 },
  );
});

test('a reboot drops connections, refuses new ones while down, and brings auto services back', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const os = new SimHostOS(host.machine);
  await os.createService(
    serviceConfig('winfleet-agent', {
      binaryPath: agentExecutable,
      args: ['run'],
      startType: 'auto',
    }),
  );
  await os.startService('winfleet-agent');
  await os.writeFile('C:\\k\\winfleet\\state.json', '{"step":3}');
  const { client } = await connect(host, { key });
  const closed = new Promise<void>((resolve) => client.on('close', () => resolve()));
  const bootId = host.machine.bootId;
  // Down long enough that the refused connection below is made while it is down, however
  // slowly this process gets the close event on a loaded machine (the default second was not).
  const rebooted = host.faults.reboot({ downtimeMs: 5000 });
  await closed;
  await assert.rejects(connect(host, { key }), { code: 'ECONNREFUSED' });
  await rebooted;
  assert.notEqual(host.machine.bootId, bootId);
  assert.equal((await os.queryService('winfleet-agent'))?.state, 'running');
  // The service is running once its program reported; the program writes its line after,
  // on its own time (a loaded machine showed the gap).
  const runs = async () =>
    (await host.machine.fs.readFile(agentRunsLog)).toString().split('\n').filter(Boolean);
  await waitFor(async () => (await runs()).length >= 2, {
    description: 'the agent to run again after the reboot',
    timeoutMs: 10_000,
  });
  assert.deepEqual(await runs(), ['agent run started', 'agent run started']);
  const again = await connect(host, { key });
  const hashes = await exec(
    again.client,
    remoteCommand('file-hashes', { paths: ['C:\\k\\winfleet\\state.json'] }),
  );
  assert.notEqual(Object.values(parsePowerShellJson(hashes.stdout, 'hashes') as object)[0], null);
  again.client.end();
});

test('a reboot in the middle of bootstrap: when the Nth exec runs, or when a service starts', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const { client } = await connect(host, { key });
  host.faults.rebootWhen({ when: { nthExec: 2 }, afterMs: 100, downtimeMs: 200 });
  const bootId = host.machine.bootId;
  assert.equal((await exec(client, remoteCommand('host-facts', {}))).code, 0);
  const second = await exec(client, remoteCommand('run-agent', { args: ['bootstrap'] }), 5000);
  assert.equal(second.closedEarly, true);
  await waitFor(() => host.machine.bootId !== bootId && host.machine.powerState === 'up', {
    description: 'the reboot',
    timeoutMs: 5000,
    intervalMs: 20,
  });

  const os = new SimHostOS(host.machine);
  await installBinary(host.machine, 'csi-proxy');
  await os.createService(
    serviceConfig('csi-proxy', { args: ['-windows-service'], startType: 'auto' }),
  );
  const before = host.machine.bootId;
  host.faults.rebootWhen({ when: { serviceStarted: 'CSI-PROXY' }, downtimeMs: 100 });
  await os.startService('csi-proxy');
  await waitFor(() => host.machine.bootId !== before && host.machine.powerState === 'up', {
    description: 'the reboot when csi-proxy started',
    timeoutMs: 5000,
    intervalMs: 20,
  });
  await waitFor(async () => (await os.queryService('csi-proxy'))?.state === 'running', {
    description: 'csi-proxy back after the reboot (auto start; the fault fired once)',
    timeoutMs: 3000,
    intervalMs: 20,
  });
});
