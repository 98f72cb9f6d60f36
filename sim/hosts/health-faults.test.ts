import assert from 'node:assert/strict';
import { test } from 'node:test';
import { containerdConfig } from '../../src/agent/node-files.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { hostPaths } from '../../src/servicesmanifest/host-paths.ts';
import { type SimulatedHosts, startSimulatedHosts } from './fleet.ts';
import { emptyKubeletConfigMessage } from './kubelet-standin.ts';
import { SimHostOS } from './sim-host-os.ts';
import { connect, generateTestKey } from './ssh-test-client.ts';
import { installBinary, serviceConfig } from './test-machine.ts';

const key = generateTestKey();
let nextAddress = 120;

async function oneHost(t: { after(fn: () => Promise<void>): void }): Promise<SimulatedHosts> {
  const fleet = await startSimulatedHosts({
    count: 1,
    baseAddress: `127.0.0.${nextAddress++}`,
    authorizedKeys: [key.publicKey],
    machine: {
      timings: {
        rebootDowntimeMs: 100,
        startPendingMs: 5,
        shutdownTimeoutMs: 300,
        delayedAutoStartMs: 50,
      },
    },
  });
  t.after(() => fleet.stop());
  return fleet;
}

/**
 * Runs an executable on the machine, as a command would; with `stop`, asked to stop at once (a
 * program that would run on exits 0). Its exit code and error output.
 */
async function run(
  host: SimulatedHosts['hosts'][number],
  binaryPath: string,
  args: string[],
  stop = true,
) {
  let stderr = '';
  const process = await host.machine.spawn({
    binaryPath,
    args,
    stdout: () => {},
    stderr: (text) => {
      stderr += text;
    },
  });
  if (stop) process.requestStop('test');
  const { code } = await process.exited;
  return { code, stderr };
}

test('crashService with stayDown: a stop without failure, no recovery action; an explicit start brings it back', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const os = new SimHostOS(host.machine);
  await installBinary(host.machine, 'containerd');
  await os.createService(
    serviceConfig('containerd', {
      args: ['--run-service'],
      recovery: { restartDelaysMs: [20], resetPeriodSeconds: 60 },
    }),
  );
  await os.startService('containerd');
  assert.equal(host.faults.crashService('containerd', { stayDown: true }), true);
  const status = await os.queryService('containerd');
  assert.equal(status?.state, 'stopped');
  assert.equal(status?.exitCode, 0);
  assert.equal(host.machine.scm.failureCount('containerd'), 0, 'not a failure');
  assert.deepEqual(host.machine.scm.failureTimes('containerd'), [], 'no 7031/7034 event');
  assert.match(
    host.machine.scm.events().at(-1)!,
    /The containerd service exited on its own \(exit code 0\)\.$/,
    'no corrective action scheduled',
  );
  assert.equal(host.faults.crashService('containerd', { stayDown: true }), false, 'not running');
  await os.startService('containerd');
  assert.equal((await os.queryService('containerd'))?.state, 'running');
  // Without stayDown the recovery action restarts it.
  const pid = (await os.queryService('containerd'))!.pid;
  assert.equal(host.faults.crashService('containerd'), true);
  await waitFor(
    async () => {
      const s = await os.queryService('containerd');
      return s?.state === 'running' && s.pid !== pid;
    },
    { description: 'containerd restarted by its recovery action', timeoutMs: 3000, intervalMs: 10 },
  );
  assert.equal(host.machine.scm.failureTimes('containerd').length, 1, 'one 7031 event');
  assert.equal((await os.serviceFailures('containerd', 0)).length, 1);
});

test('crashLoop(containerd): a zero-filled config.toml; every restart exits with containerd’s error until the file is rewritten', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const os = new SimHostOS(host.machine);
  await installBinary(host.machine, 'containerd');
  await os.writeFile(hostPaths.containerdConfig, containerdConfig());
  await os.createService(
    serviceConfig('containerd', {
      args: ['--run-service', '--config', hostPaths.containerdConfig],
      recovery: { restartDelaysMs: [20], resetPeriodSeconds: 60 },
    }),
  );
  await os.startService('containerd');
  assert.equal(await host.faults.crashLoop('containerd'), hostPaths.containerdConfig);
  const corrupted = await host.machine.fs.readFile(hostPaths.containerdConfig);
  assert.ok(corrupted.length > 0 && corrupted.every((b) => b === 0));
  await waitFor(() => host.machine.scm.failureCount('containerd') >= 4, {
    description: 'containerd to fail again after its restarts',
    timeoutMs: 5000,
    intervalMs: 10,
  });
  const direct = await run(host, 'C:\\k\\containerd.exe', ['--config', hostPaths.containerdConfig]);
  assert.equal(direct.code, 1);
  assert.match(
    direct.stderr,
    /^containerd: failed to unmarshal TOML at row 1 column 1: toml: .+\n$/,
  );
  // What a re-bootstrap does: the file written again. The next restart stays up.
  await os.writeFile(hostPaths.containerdConfig, containerdConfig());
  await waitFor(
    async () => {
      const s = await os.queryService('containerd');
      return s?.state === 'running' && host.machine.processes().some((p) => p.pid === s.pid);
    },
    { description: 'containerd running on the rewritten config', timeoutMs: 3000, intervalMs: 10 },
  );
  const failures = host.machine.scm.failureCount('containerd');
  const again = await run(host, 'C:\\k\\containerd.exe', ['--config', hostPaths.containerdConfig]);
  assert.deepEqual(again, { code: 0, stderr: '' }, 'the rewritten file loads');
  assert.equal(host.machine.scm.failureCount('containerd'), failures);
  await os.stopService('containerd');
});

test('crashLoop(kubelet): an empty --config file, refused with the kubelet’s own error; clear() puts it back', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const os = new SimHostOS(host.machine);
  await installBinary(host.machine, 'kubelet');
  const good = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
  await os.writeFile(hostPaths.kubeletConfig, good);
  await os.createService(
    serviceConfig('kubelet', {
      args: ['--windows-service', `--config=${hostPaths.kubeletConfig}`],
    }),
  );
  assert.equal(await host.faults.crashLoop('kubelet'), hostPaths.kubeletConfig);
  assert.equal((await host.machine.fs.readFile(hostPaths.kubeletConfig)).length, 0);
  const direct = await run(
    host,
    'C:\\k\\kubelet.exe',
    [`--config=${hostPaths.kubeletConfig}`],
    false,
  );
  assert.equal(direct.code, 1);
  assert.ok(
    direct.stderr.includes(emptyKubeletConfigMessage(hostPaths.kubeletConfig)),
    direct.stderr,
  );
  assert.equal(
    emptyKubeletConfigMessage('C:\\k\\kubelet-config.yaml'),
    'failed to load kubelet config file, path: C:\\k\\kubelet-config.yaml, error: failed to load Kubelet config file C:\\k\\kubelet-config.yaml, error kubelet config file "C:\\\\k\\\\kubelet-config.yaml" was empty',
  );
  host.faults.clear();
  await waitFor(
    async () => (await host.machine.fs.readFile(hostPaths.kubeletConfig)).toString() === good,
    { description: 'the config put back', timeoutMs: 2000, intervalMs: 10 },
  );
});

test('crashLoop refuses a service it does not model, and one not installed, naming the fix', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  await assert.rejects(host.faults.crashLoop('kube-proxy'), /give kubelet or containerd/);
  await assert.rejects(host.faults.crashLoop('kubelet'), /no such service .* bootstrap the host/);
});

test('deleteHnsNetwork: the network and its endpoints go; one created again does not bring them back', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const hns = host.machine.hns;
  const network = hns.ensure('winfleet', 'L2Bridge', [
    { addressPrefix: '10.244.3.0/24', gateway: '10.244.3.1' },
  ]);
  hns.ensureEndpoint(network.id, 'sandbox-a', '10.244.3.2');
  hns.ensure('nat', 'NAT');
  assert.ok(hns.answers('10.244.3.2'));
  assert.equal(host.faults.deleteHnsNetwork(), true);
  assert.deepEqual(
    hns.list().map((n) => n.name),
    ['nat'],
  );
  assert.equal(hns.answers('10.244.3.2'), false);
  assert.deepEqual(hns.endpoints(), []);
  assert.equal(host.faults.deleteHnsNetwork(), false, 'already gone');
  const again = hns.ensure('winfleet', 'L2Bridge');
  assert.notEqual(again.id, network.id);
  assert.equal(hns.answers('10.244.3.2'), false, 'the pod’s endpoint is not recreated');
});

test('skewClock: the host’s clock is off; w32tm resync sets it right, starting W32Time, not a disabled one', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const os = new SimHostOS(host.machine);
  host.faults.skewClock(3_600_000);
  const skew = (await os.localTime()) - Date.now();
  assert.ok(skew > 3_590_000 && skew <= 3_600_000, `skew ${skew}`);
  host.machine.timeService = 'stopped';
  await os.resyncClock();
  assert.equal(host.machine.clockOffsetMs, 0);
  assert.equal(host.machine.timeService, 'running', 'started first');
  host.faults.skewClock(-600_000);
  host.machine.timeService = 'disabled';
  await assert.rejects(os.resyncClock(), /W32Time.*1058/s);
  assert.equal(host.machine.clockOffsetMs, -600_000);
  host.faults.clear();
  assert.equal(host.machine.clockOffsetMs, 0);
  assert.throws(() => host.faults.skewClock(Number.NaN), /give a whole number of ms/);
});

test('diskFull: C: reports 0 bytes free while it is set', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const os = new SimHostOS(host.machine);
  assert.ok((await os.freeDiskBytes('C:\\')) > 0);
  host.faults.diskFull = true;
  assert.equal(await os.freeDiskBytes('C:\\'), 0);
  host.faults.clear();
  assert.ok((await os.freeDiskBytes('C:\\')) > 0);
});

test('setUnreachable: down (SSH refused, services stopped) until cleared, then boots again', async (t) => {
  const host = (await oneHost(t)).hosts[0]!;
  const os = new SimHostOS(host.machine);
  await installBinary(host.machine, 'containerd');
  await os.createService(
    serviceConfig('containerd', { args: ['--run-service'], startType: 'auto' }),
  );
  await os.startService('containerd');
  const bootId = host.machine.bootId;
  await host.faults.setUnreachable(true);
  assert.equal(host.faults.unreachable, true);
  assert.equal(host.machine.powerState, 'down');
  assert.equal(host.machine.scm.query('containerd')?.state, 'stopped');
  await assert.rejects(connect(host, { key }), { code: 'ECONNREFUSED' });
  await host.faults.setUnreachable(false);
  assert.equal(host.faults.unreachable, false);
  assert.equal(host.machine.powerState, 'up');
  assert.notEqual(host.machine.bootId, bootId);
  await waitFor(async () => (await os.queryService('containerd'))?.state === 'running', {
    description: 'the auto service started at boot',
    timeoutMs: 3000,
    intervalMs: 10,
  });
  const { client } = await connect(host, { key });
  client.end();
  // clear() ends it too.
  await host.faults.setUnreachable(true);
  host.faults.clear();
  await waitFor(() => host.machine.powerState === 'up', {
    description: 'the host back after clear()',
    timeoutMs: 3000,
    intervalMs: 10,
  });
});
