import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { createAgentTestHost, prepareAsOperator } from '../../sim/hosts/agent-test-host.ts';
import { parseAgentConfig, paths } from './agent-config.ts';
import { syncCniConfig } from './cni-config.ts';
import { runAgent } from './run-agent.ts';

function node(podCIDR?: string): k8s.V1Node {
  return { metadata: { name: 'win-agent-test' }, spec: podCIDR ? { podCIDR } : {} };
}

async function bootstrapped(t: Parameters<typeof createAgentTestHost>[0]) {
  const host = await createAgentTestHost(t);
  await prepareAsOperator(host.machine);
  assert.equal(await runAgent(['bootstrap'], host.context), 0, host.stdout.join(''));
  const config = {
    ...parseAgentConfig((await host.machine.fs.readFile(paths.agentConfig)).toString()),
    podCIDR: '10.244.0.0/16',
  };
  return { ...host, config };
}

async function subnetOnDisk(machine: Awaited<ReturnType<typeof bootstrapped>>['machine']) {
  const text = await machine.fs.tryReadFile(paths.cniConfig);
  if (!text) return undefined;
  return (JSON.parse(text.toString()) as { plugins: { ipam: { subnet: string } }[] }).plugins[0]!
    .ipam.subnet;
}

test('the CNI config is written only once the Node has a pod CIDR, follows it, and goes when it goes', async (t) => {
  const { machine, context, config, stderr } = await bootstrapped(t);
  assert.equal(await subnetOnDisk(machine), undefined, 'bootstrap writes no CNI config');

  // Registered, no pod CIDR allocated yet: still none, and the log says what allocates one.
  assert.equal(await syncCniConfig(context, config, node()), 'absent');
  assert.equal(await subnetOnDisk(machine), undefined);
  assert.match(
    stderr.join(''),
    /has no spec\.podCIDR yet.*--allocate-node-cidrs=true --cluster-cidr=10\.244\.0\.0\/16/,
  );

  assert.equal(await syncCniConfig(context, config, node('10.244.3.0/24')), 'written');
  assert.equal(await subnetOnDisk(machine), '10.244.3.0/24');
  assert.equal(await syncCniConfig(context, config, node('10.244.3.0/24')), 'unchanged');

  // The Node was deleted and registered again with another pod CIDR.
  assert.equal(await syncCniConfig(context, config, node()), 'removed');
  assert.equal(await subnetOnDisk(machine), undefined);
  assert.equal(await syncCniConfig(context, config, node('10.244.9.0/24')), 'written');
  assert.equal(await subnetOnDisk(machine), '10.244.9.0/24');
});

test('a pod CIDR outside hosts.podCIDR leaves no CNI config and says so once', async (t) => {
  const { machine, context, config, stderr } = await bootstrapped(t);
  await syncCniConfig(context, config, node('10.244.3.0/24'));
  stderr.length = 0;
  for (let i = 0; i < 3; i++) {
    assert.equal(await syncCniConfig(context, config, node('172.16.3.0/24')), 'refused');
  }
  assert.equal(await subnetOnDisk(machine), undefined);
  const said = stderr.join('');
  assert.equal(said.match(/No CNI config for this node/g)?.length, 1, said);
  assert.match(said, /outside the cluster pod CIDR 10\.244\.0\.0\/16 \(hosts\.podCIDR\)/);
});

test('a re-bootstrap removes a CNI config left from an earlier join', async (t) => {
  const { machine, context, config, stdout } = await bootstrapped(t);
  await syncCniConfig(context, config, node('10.244.3.0/24'));
  assert.equal(await subnetOnDisk(machine), '10.244.3.0/24');
  // The Node may come back with another pod CIDR; until the run loop sees it, none.
  assert.equal(await runAgent(['bootstrap'], context), 0, stdout.join(''));
  assert.equal(await subnetOnDisk(machine), undefined);
});

test('flannel-host-gw: net-conf.json for flanneld and flannel’s config delegating to win-bridge on cbr0', async (t) => {
  const { machine, context, config } = await bootstrapped(t);
  const netConf = '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}';
  const network = { mode: 'flannel-host-gw' as const, networkName: 'cbr0', netConf };
  assert.equal(await syncCniConfig(context, config, node(), network), 'written');
  const list = JSON.parse((await machine.fs.readFile(paths.cniConfig)).toString()) as {
    name: string;
    plugins: { type: string; delegate: { type: string } }[];
  };
  assert.equal(list.name, 'cbr0');
  assert.equal(list.plugins[0]!.type, 'flannel');
  assert.equal(list.plugins[0]!.delegate.type, 'win-bridge');
  assert.equal((await machine.fs.readFile('C:\\k\\flannel\\net-conf.json')).toString(), netConf);
  assert.equal(await syncCniConfig(context, config, node('10.244.3.0/24'), network), 'unchanged');
});

test('ovn-hybrid: win-overlay on the hybrid overlay subnet OVN’s master annotated, none before, none for a bad one', async (t) => {
  const { machine, context, config, stderr } = await bootstrapped(t);
  const network = { mode: 'ovn-hybrid' as const };
  const annotated = (subnet: string | undefined): k8s.V1Node => ({
    metadata: {
      name: 'win-agent-test',
      ...(subnet ? { annotations: { 'k8s.ovn.org/hybrid-overlay-node-subnet': subnet } } : {}),
    },
    // spec.podCIDR is not what ovn-hybrid uses (OpenShift allocates none).
    spec: { podCIDR: '10.244.3.0/24' },
  });
  assert.equal(await syncCniConfig(context, config, annotated(undefined), network), 'absent');
  assert.match(stderr.join(''), /has no k8s\.ovn\.org\/hybrid-overlay-node-subnet yet/);
  assert.equal(
    await syncCniConfig(context, config, annotated('10.132.4.0/24'), network),
    'written',
  );
  const list = JSON.parse((await machine.fs.readFile(paths.cniConfig)).toString()) as {
    name: string;
    plugins: {
      type: string;
      apiVersion: number;
      ipam: { type: string; subnet: string; routes: { gw: string }[] };
      Policies: { Value: { Type: string; Settings: Record<string, unknown> } }[];
    }[];
  };
  assert.equal(list.name, 'OVNKubernetesHybridOverlayNetwork');
  const plugin = list.plugins[0]!;
  assert.equal(plugin.type, 'win-overlay');
  assert.equal(plugin.apiVersion, 2);
  assert.deepEqual(
    [plugin.ipam.type, plugin.ipam.subnet, plugin.ipam.routes[0]!.gw],
    ['host-local', '10.132.4.0/24', '10.132.4.1'],
  );
  const policies = Object.fromEntries(plugin.Policies.map((p) => [p.Value.Type, p.Value.Settings]));
  assert.deepEqual(policies.OutBoundNAT, { Exceptions: [config.serviceCIDR] });
  assert.deepEqual(policies.SDNRoute, { DestinationPrefix: config.serviceCIDR, NeedEncap: true });
  assert.deepEqual(policies.ProviderAddress, { ProviderAddress: config.nodeIP });
  assert.equal(
    await syncCniConfig(context, config, annotated('10.132.4.0/24'), network),
    'unchanged',
  );
  // A subnet that is not a network address (host bits), or too small, leaves no config.
  for (const bad of ['10.132.4.7/24', '10.132.4.0/31', 'fd00::/64', '10.132.4.0/24,evil']) {
    assert.equal(await syncCniConfig(context, config, annotated(bad), network), 'refused', bad);
    assert.equal(await machine.fs.tryReadFile(paths.cniConfig), undefined, bad);
  }
  assert.match(stderr.join(''), /hybridOverlayConfig\.hybridClusterNetwork/);
});
