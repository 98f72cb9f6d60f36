import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HostOS } from '../../src/agent/host-os.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { checkHostname, SimMachine } from './machine.ts';
import { idleProgram } from './programs.ts';
import { SimHostOS } from './sim-host-os.ts';
import type { ProgramContext } from './sim-process.ts';
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
  checkHostname('a-name-longer-than-15'); // Windows allows it; the NetBIOS name is cut
  assert.throws(() => checkHostname('x'.repeat(64)), /1 to 63 letters/);
  assert.throws(() => checkHostname('has.dot'), /1 to 63 letters/);
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
  // A test-local program that creates the HNS network at start (as a CNI plugin's daemon
  // would) and idles, so the reboot must bring the network back by restarting it.
  machine.programs.register('network.exe', {
    run: async (context: ProgramContext) => {
      context.machine.hns.ensure('winfleet', 'Overlay');
      return idleProgram(context);
    },
  });
  for (const name of ['containerd', 'network', 'exporter', 'manual'])
    await installBinary(machine, name);
  await os.createService(
    serviceConfig('network', {
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
  await os.startService('network');
  await os.writeFile('C:\\k\\kubelet-config.yaml', 'kind: KubeletConfiguration');
  await os.setMachineEnv('KUBE_NETWORK', 'winfleet');
  assert.deepEqual(
    (await os.listHnsNetworks()).map((n) => n.name),
    ['winfleet'],
    'network.exe created it',
  );
  const bootId = machine.bootId;
  const oldPid = (await os.queryService('network'))!.pid;
  const starts: string[] = [];
  machine.onServiceStarted((name) => starts.push(name));

  await machine.reboot();
  assert.notEqual(machine.bootId, bootId);
  assert.deepEqual(
    starts,
    ['containerd', 'network'],
    'dependencies first; demand services only as dependencies',
  );
  assert.equal((await os.queryService('manual'))?.state, 'stopped');
  assert.notEqual((await os.queryService('network'))?.pid, oldPid);
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

/** A program that records the KUBE_NETWORK and HTTP_PROXY its process sees, then idles. */
function envProgram(seen: Record<string, string | undefined>[]) {
  return async (context: ProgramContext) => {
    seen.push({
      KUBE_NETWORK: context.env.get('kube_network'),
      HTTP_PROXY: context.env.get('HTTP_PROXY'),
    });
    return idleProgram(context);
  };
}

test('a service sees the machine environment of boot time plus its own; a reboot brings the rest', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  const seen: Record<string, string | undefined>[] = [];
  machine.programs.register('proxy.exe', { run: envProgram(seen) });
  await installBinary(machine, 'proxy');
  await os.createService(
    serviceConfig('proxy', { startType: 'auto', environment: { HTTP_PROXY: 'http://own:3128' } }),
  );
  await os.setMachineEnv('KUBE_NETWORK', 'winfleet');
  await os.setMachineEnv('HTTP_PROXY', 'http://machine:3128');
  await os.startService('proxy');
  assert.deepEqual(seen.at(-1), { KUBE_NETWORK: undefined, HTTP_PROXY: 'http://own:3128' });
  // A new logon session (what an SSH command gets) reads the registry: it sees the change.
  const session = await machine.spawn({
    binaryPath: 'C:\\k\\proxy.exe',
    args: [],
    stdout: () => {},
    stderr: () => {},
  });
  assert.deepEqual(seen.at(-1), { KUBE_NETWORK: 'winfleet', HTTP_PROXY: 'http://machine:3128' });
  session.kill();
  await os.stopService('proxy');
  await os.startService('proxy');
  assert.equal(seen.at(-1)?.KUBE_NETWORK, undefined, 'a restart is not a reboot');
  await machine.reboot();
  await waitFor(() => seen.length === 4, { description: 'the auto start', timeoutMs: 5000 });
  assert.deepEqual(seen.at(-1), { KUBE_NETWORK: 'winfleet', HTTP_PROXY: 'http://own:3128' });
  assert.equal(machine.bootEnvironment.KUBE_NETWORK, 'winfleet');
});

test('a service environment is stored, read back, replaced and removed with its registration', async (t) => {
  const machine = await createTestMachine(t);
  const os = new SimHostOS(machine);
  await installBinary(machine, 'svc');
  await os.createService(serviceConfig('svc', { environment: { A: '1', B: 'x=y' } }));
  assert.deepEqual(await os.queryServiceEnvironment('SVC'), { A: '1', B: 'x=y' });
  await os.configureService(serviceConfig('svc', { environment: { A: '2' } }));
  assert.deepEqual(await os.queryServiceEnvironment('svc'), { A: '2' });
  await os.configureService(serviceConfig('svc'));
  assert.deepEqual(await os.queryServiceEnvironment('svc'), {});
  assert.equal(await os.queryServiceEnvironment('missing'), undefined);
  await assert.rejects(
    os.configureService(serviceConfig('svc', { environment: { A: '1', a: '2' } })),
    /env\.a: the same variable as "A" \(Windows environment names ignore case\)/,
  );
  await assert.rejects(
    os.createService(serviceConfig('other', { environment: { EMPTY: '' } })),
    /env\.EMPTY: the value must be 1 to 32767 characters/,
  );
});
