import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createAgentTestHost,
  prepareAsOperator,
  testNodeName,
} from '../../sim/hosts/agent-test-host.ts';
import type { SimMachine } from '../../sim/hosts/machine.ts';
import { hostLocalDataDir } from '../../sim/hosts/sim-cni.ts';
import { cniNetworkName } from '../servicesmanifest/host-paths.ts';
import { parseAgentConfig, paths } from './agent-config.ts';
import { agentServiceName } from './converge.ts';
import { runAgent } from './run-agent.ts';
import { checkOnce } from './run-loop.ts';

/** Bootstrap, one run-loop check, and the HNS network kube-proxy would create. */
async function joinedThenCleanedUp(
  t: Parameters<typeof createAgentTestHost>[0],
  prepareBefore: (machine: SimMachine) => Promise<void>,
) {
  const host = await createAgentTestHost(t);
  const { machine, context, stdout } = host;
  await prepareBefore(machine);
  const before = await machine.snapshot();

  await prepareAsOperator(machine);
  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));
  await checkOnce(
    context,
    parseAgentConfig((await machine.fs.readFile(paths.agentConfig)).toString()),
  );
  machine.hns.ensure('winfleet', 'Overlay');
  // What the host-local IPAM plugin records for a pod's address, where the simulated plugin
  // keeps it (sim-cni.ts: its data directory, then the CNI network's name).
  await machine.fs.writeFile(
    `${hostLocalDataDir}\\${cniNetworkName}\\10.244.3.2`,
    'sandbox\r\neth0',
    {
      createParents: true,
    },
  );
  const joined = await machine.snapshot();
  assert.ok(joined.services.length >= 5 && joined.hnsNetworks.includes('winfleet'));

  stdout.length = 0;
  assert.equal(await runAgent(['cleanup'], context), 0, stdout.join(''));
  const result = JSON.parse(stdout.join('')) as {
    removedServices: string[];
    removedNetworks: string[];
    removedEnv: string[];
    removeAfter: string[];
  };
  // What the operator does after the agent exits (the running agent cannot delete itself).
  for (const path of result.removeAfter) await machine.fs.remove(path, { recursive: true });
  return { before, after: await machine.snapshot(), result };
}

/** The empty parents of host-local's records: host-local made them, and they stay. */
const hostLocalParents = [
  'C:\\var',
  'C:\\var\\lib',
  'C:\\var\\lib\\cni',
  'C:\\var\\lib\\cni\\networks',
];

test('cleanup on a fresh host removes every service, file, network and variable winfleet added', async (t) => {
  const { before, after, result } = await joinedThenCleanedUp(t, async (machine) => {
    machine.env.set('PATH', 'C:\\Windows\\System32');
    machine.hns.ensure('nat', 'NAT');
  });
  // Everything but host-local's empty parent directories, which winfleet did not create.
  assert.deepEqual(
    after.files.filter((f) => f.toLowerCase().startsWith('c:\\var')),
    hostLocalParents,
  );
  assert.deepEqual(
    { ...after, files: after.files.filter((f) => !hostLocalParents.includes(f)) },
    before,
  );
  // Dependents first, the agent itself last.
  assert.deepEqual(result.removedServices, [
    'csi-proxy',
    'kube-proxy',
    'kubelet',
    'containerd',
    agentServiceName,
  ]);
  assert.deepEqual(result.removedNetworks, ['winfleet']);
  assert.deepEqual(result.removedEnv.sort(), ['CONTAINERD_LOG_LEVEL', 'KUBE_NETWORK']);
  assert.deepEqual(result.removeAfter, ['C:\\k\\winfleet', 'C:\\k']);
});

test('cleanup keeps what was on the host before: its C:\\k, files there and an empty C:\\var', async (t) => {
  const { before, after, result } = await joinedThenCleanedUp(t, async (machine) => {
    // An empty C:\var\lib\cni\networks that was there before winfleet: it stays.
    await machine.fs.mkdir('C:\\var\\lib\\cni\\networks', { recursive: true });
    await machine.fs.mkdir('C:\\k\\tools', { recursive: true });
    await machine.fs.writeFileAtomic('C:\\k\\tools\\notes.txt', `not winfleet's (${testNodeName})`);
  });
  assert.deepEqual(after, before);
  assert.deepEqual(result.removeAfter, ['C:\\k\\winfleet']);
});

test('cleanup stops the agent service before any other service: its run loop would restart them', async (t) => {
  const host = await createAgentTestHost(t);
  const { machine, context, stdout, calls } = host;
  await prepareAsOperator(machine);
  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));
  assert.equal(machine.scm.query(agentServiceName)?.state, 'running');
  calls.length = 0;
  assert.equal(await runAgent(['cleanup'], context), 0, stdout.join(''));
  const serviceCalls = calls.filter((c) => /^(stopService|deleteService) /.test(c));
  assert.equal(serviceCalls[0], `stopService ${agentServiceName}`, serviceCalls.join(', '));
  assert.equal(serviceCalls.at(-1), `deleteService ${agentServiceName}`, 'deleted last');
  assert.equal(machine.scm.names().length, 0);
});

test('cleanup of a host whose Containers feature (and with it the HNS cmdlets) is gone goes on without the networks', async (t) => {
  const host = await createAgentTestHost(t);
  const { machine, context, stdout } = host;
  await prepareAsOperator(machine);
  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));
  // Uninstall-WindowsFeature Containers and a restart: no HostNetworkingService module.
  machine.features.set('Containers', 'Available');
  stdout.length = 0;
  assert.equal(await runAgent(['cleanup'], context), 0, stdout.join(''));
  const result = JSON.parse(stdout.join('')) as { removedNetworks: string[] };
  assert.deepEqual(result.removedNetworks, []);
});
