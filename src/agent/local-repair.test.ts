import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { createAgentTestHost, prepareAsOperator } from '../../sim/hosts/agent-test-host.ts';
import { NodeHealthCondition } from '../api/reasons.ts';
import { parseAgentConfig, paths } from './agent-config.ts';
import { syncCniConfig } from './cni-config.ts';
import { repairLocally } from './local-repair.ts';
import { runAgent } from './run-agent.ts';

const podCIDR = '10.244.5.64/26';

/** A bootstrapped simulated host whose Node has a pod CIDR and whose CNI config is written. */
async function world(t: Parameters<typeof createAgentTestHost>[0]) {
  const host = await createAgentTestHost(t);
  await prepareAsOperator(host.machine);
  assert.equal(await runAgent(['bootstrap'], host.context), 0, host.stdout.join(''));
  const config = parseAgentConfig((await host.machine.fs.readFile(paths.agentConfig)).toString());
  const node: k8s.V1Node = { metadata: { name: config.nodeName }, spec: { podCIDR } };
  assert.equal(await syncCniConfig(host.context, config, node), 'written');
  host.stderr.length = 0;
  const repair = (...problems: NodeHealthCondition[]) =>
    repairLocally(host.context, config, node, new Set(problems));
  return { ...host, config, node, repair };
}

test('HNSNetworkMissing: the network is created again from the CNI config, once', async (t) => {
  const w = await world(t);
  const [repair] = await w.repair(NodeHealthCondition.HNSNetworkMissing);
  assert.equal(repair?.outcome, 'done', repair?.message);
  const networks = w.machine.hns.list();
  assert.deepEqual(
    networks.map((n) => [n.name, n.type]),
    [['winfleet', 'L2Bridge']],
  );
  assert.deepEqual(w.machine.hns.subnets(networks[0]!.id), [
    { addressPrefix: '10.244.5.64/26', gateway: '10.244.5.65' },
  ]);
  assert.match(
    w.stderr.join(''),
    /^health repair \(HNSNetworkMissing\): recreated HNS network winfleet \(L2Bridge, 10\.244\.5\.64\/26, gateway 10\.244\.5\.65, id [0-9A-F-]{36}\) from C:\\k\\cni\\config\\10-winfleet\.conflist; .*pods that were on the old network have none and stay without network until they are recreated/,
  );
  const [again] = await w.repair(NodeHealthCondition.HNSNetworkMissing);
  assert.match(again!.message, /exists again .*nothing to create/);
  assert.equal(w.machine.hns.list().length, 1, 'not created twice');
});

test('HNSNetworkMissing: pods on the old network stay without an endpoint on the new one', async (t) => {
  const w = await world(t);
  const old = w.machine.hns.ensure('winfleet', 'L2Bridge', [
    { addressPrefix: '10.244.5.64/26', gateway: '10.244.5.65' },
  ]);
  w.machine.hns.ensureEndpoint(old.id, 'sandbox-a', '10.244.5.66');
  w.machine.removeHnsNetwork(old.id);
  await w.repair(NodeHealthCondition.HNSNetworkMissing);
  const [recreated] = w.machine.hns.list();
  assert.ok(recreated && recreated.id !== old.id);
  assert.equal(w.machine.hns.answers('10.244.5.66'), false);
});

test('attacker side: a pod CIDR that is not an IPv4 network of this cluster, or a CNI config not rendered for it, creates nothing', async (t) => {
  const w = await world(t);
  for (const bad of [
    'fd00:10:244::/64',
    '10.244.5.64/26\r\nNew-HnsNetwork',
    '10.244.6.0/24',
    '10.244.5.66/26',
    '0.0.0.0/0',
    '',
  ]) {
    w.node.spec = { podCIDR: bad };
    const [repair] = await w.repair(NodeHealthCondition.HNSNetworkMissing);
    assert.equal(repair?.outcome, 'refused', `${JSON.stringify(bad)}: ${repair?.message}`);
    assert.match(repair!.message, /^not recreating HNS network winfleet: Node win-agent-test /);
  }
  w.node.spec = { podCIDR };
  // A config on disk that differs from the one rendered for the Node (tampered, or stale).
  const conflist = (await w.machine.fs.readFile(paths.cniConfig)).toString();
  await w.machine.fs.writeFileAtomic(
    paths.cniConfig,
    conflist.replace('10.244.5.64/26', '10.244.5.0/24'),
  );
  const [tampered] = await w.repair(NodeHealthCondition.HNSNetworkMissing);
  assert.equal(tampered?.outcome, 'refused');
  assert.match(tampered!.message, /is not the config for this Node's pod CIDR 10\.244\.5\.64\/26/);
  await w.machine.fs.remove(paths.cniConfig);
  const [missing] = await w.repair(NodeHealthCondition.HNSNetworkMissing);
  assert.match(missing!.message, /10-winfleet\.conflist is missing/);
  assert.deepEqual(w.machine.hns.list(), [], 'nothing created');
  // A refusal repeated on every pass is logged once.
  const logged = w.stderr.length;
  await w.repair(NodeHealthCondition.HNSNetworkMissing);
  assert.equal(w.stderr.length, logged);
});

test('ClockSkew: W32Time resyncs the clock; a disabled W32Time is reported, not worked around', async (t) => {
  const w = await world(t);
  w.machine.clockOffsetMs = 5 * 60_000;
  w.machine.timeService = 'stopped';
  const [repair] = await w.repair(NodeHealthCondition.ClockSkew);
  assert.equal(repair?.outcome, 'done');
  assert.equal(w.machine.clockOffsetMs, 0);
  assert.equal(w.machine.timeService, 'running');
  assert.match(w.stderr.join(''), /health repair \(ClockSkew\): .*w32tm \/resync \/force/);
  w.machine.clockOffsetMs = -5 * 60_000;
  w.machine.timeService = 'disabled';
  const [failed] = await w.repair(NodeHealthCondition.ClockSkew);
  assert.equal(failed?.outcome, 'failed');
  assert.match(failed!.message, /^cannot resync the clock: .*1058/);
  assert.equal(w.machine.clockOffsetMs, -5 * 60_000);
});

test('no local repair for a low disk, nor for what the agent did not publish', async (t) => {
  const w = await world(t);
  w.machine.fs.diskFull = true;
  assert.deepEqual(await w.repair(NodeHealthCondition.SystemDiskLow), []);
  assert.deepEqual(await w.repair(), []);
  assert.deepEqual(w.stderr, []);
});
