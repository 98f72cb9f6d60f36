import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HostOS } from '../../src/agent/host-os.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { checkHostname, SimMachine } from './machine.ts';
import { SimHostOS } from './sim-host-os.ts';
import {
  createTestMachine,
  installBinary,
  recordingProgram,
  serviceConfig,
} from './test-machine.ts';

test('a machine reports its release, build, revision and hostname', async (t) => {
  const machine = await createTestMachine(t, { release: '2019', ubr: 1234, hostname: 'WIN-ABC' });
  const os = new SimHostOS(machine);
  assert.deepEqual(await os.osVersion(), {
    major: 10,
    minor: 0,
    build: 17763,
    ubr: 1234,
    productName: 'Windows Server 2019 Datacenter',
  });
  assert.equal(await os.hostname(), 'WIN-ABC');
  assert.equal(machine.kernelVersion, '10.0.17763.1234');
  assert.ok((await os.freeDiskBytes('C:\\')) > 0);
});

test('hostnames, releases and addresses are checked', async () => {
  assert.throws(() => checkHostname('a-name-longer-than-15'), /1 to 15 letters/);
  assert.throws(() => checkHostname('has.dot'), /1 to 15 letters/);
  assert.throws(() => checkHostname('12345'), /not all digits/);
  const base = { hostname: 'OK', rootDir: '/tmp/unused-simhost', address: '127.0.0.9' };
  await assert.rejects(
    SimMachine.create({ ...base, release: '2016' }),
    /Unknown Windows release "2016"/,
  );
  await assert.rejects(
    SimMachine.create({ ...base, release: '2022', address: '10.0.0.1' }),
    /loopback/,
  );
  await assert.rejects(
    SimMachine.create({ ...base, release: '2022', address: '127.0.0.1' }),
    /127\.0\.0\.2/,
  );
});

test('machine environment variables are case-insensitive and a fresh machine has the defaults', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  assert.equal(await os.getMachineEnv('path'), machine.env.get('Path'));
  await os.setMachineEnv('KUBE_NETWORK', 'winfleet');
  assert.equal(await os.getMachineEnv('kube_network'), 'winfleet');
  await os.setMachineEnv('Kube_Network', undefined);
  assert.equal(await os.getMachineEnv('KUBE_NETWORK'), undefined);
});

test('a reboot keeps files, environment and services, restarts auto services in order and takes a new boot id', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  for (const name of ['containerd', 'kube-proxy', 'exporter', 'manual'])
    await installBinary(machine, name);
  await os.createService(
    serviceConfig('kube-proxy', {
      args: ['--windows-service'],
      dependencies: ['containerd'],
      startType: 'auto',
    }),
  );
  await os.createService(
    serviceConfig('containerd', { args: ['--run-service'], startType: 'demand' }),
  );
  await os.createService(serviceConfig('exporter', { startType: 'delayed-auto' }));
  await os.createService(serviceConfig('manual', { startType: 'demand' }));
  await os.startService('manual');
  await os.startService('kube-proxy');
  await os.writeFile('C:\\k\\kubelet-config.yaml', 'kind: KubeletConfiguration');
  await os.setMachineEnv('KUBE_NETWORK', 'winfleet');
  assert.deepEqual(
    (await os.listHnsNetworks()).map((n) => n.name),
    ['winfleet'],
    'kube-proxy created it',
  );
  const bootId = machine.bootId;
  const oldPid = (await os.queryService('kube-proxy'))!.pid;
  const starts: string[] = [];
  machine.onServiceStarted((name) => starts.push(name));

  await machine.reboot();
  assert.notEqual(machine.bootId, bootId);
  assert.deepEqual(
    starts,
    ['containerd', 'kube-proxy'],
    'dependencies first; demand services only as dependencies',
  );
  assert.equal((await os.queryService('manual'))?.state, 'stopped');
  assert.notEqual((await os.queryService('kube-proxy'))?.pid, oldPid);
  assert.equal(
    (await os.readFile('C:\\k\\kubelet-config.yaml'))?.toString(),
    'kind: KubeletConfiguration',
  );
  assert.equal(await os.getMachineEnv('KUBE_NETWORK'), 'winfleet');
  assert.equal((await os.queryService('exporter'))?.state, 'stopped', 'delayed-auto waits');
  await waitFor(async () => (await os.queryService('exporter'))?.state === 'running', {
    description: 'the delayed-auto service',
    timeoutMs: 3000,
    intervalMs: 20,
  });
  assert.deepEqual(
    (await os.listHnsNetworks()).map((n) => n.name),
    ['winfleet'],
    'recreated after boot',
  );
});

test('HostOS.reboot schedules a reboot and returns', async (t) => {
  const machine = await createTestMachine(t);
  const bootId = machine.bootId;
  await new SimHostOS(machine).reboot('patch Tuesday');
  assert.equal(machine.bootId, bootId);
  await waitFor(() => machine.bootId !== bootId && machine.powerState === 'up', {
    description: 'the reboot',
    timeoutMs: 3000,
    intervalMs: 20,
  });
});

test('a dead process gets no answer from its HostOS', async (t) => {
  const machine = await createTestMachine(t);
  let captured: HostOS | undefined;
  machine.programs.register('holder.exe', {
    run: async (context) => {
      captured = context.hostOS;
      return recordingProgram([])(context);
    },
  });
  await installBinary(machine, 'holder');
  const process = await machine.spawn({
    binaryPath: 'C:\\k\\holder.exe',
    args: [],
    stdout: () => {},
    stderr: () => {},
  });
  await waitFor(() => captured, {
    description: 'the program to start',
    timeoutMs: 1000,
    intervalMs: 5,
  });
  assert.equal(await captured!.hostname(), 'SIMTEST');
  process.kill();
  let answered = false;
  void captured!.hostname().then(() => {
    answered = true;
  });
  // The machine answers a live caller who asked later: the dead process's call had its turn.
  assert.equal(await new SimHostOS(machine).hostname(), 'SIMTEST');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(answered, false, 'a dead process gets no answer');
});

test('files, services, environment and HNS networks are in the snapshot', async (t) => {
  const machine = await createTestMachine(t);
  const before = await machine.snapshot();
  assert.ok(before.files.includes('C:\\Windows\\System32'));
  const os = new SimHostOS(machine);
  await os.writeFile('C:\\k\\winfleet\\agent.json', '{}');
  await os.createService(serviceConfig('winfleet-agent'));
  const after = await machine.snapshot();
  assert.deepEqual(
    after.files.filter((f) => !before.files.includes(f)),
    ['C:\\k', 'C:\\k\\winfleet', 'C:\\k\\winfleet\\agent.json'],
  );
  assert.deepEqual(after.services, ['winfleet-agent']);
  await os.deleteService('winfleet-agent');
  await os.removePath('C:\\k');
  assert.deepEqual(await machine.snapshot(), before);
});
