/**
 * The lab's faults against the agent alone (rung 1 of issue 13's ladder), with a real control
 * plane: one joined simulated host, the operator stopped once the host is Ready so that only the
 * agent acts (its check interval is 1 s). For each fault: the condition the agent sets, what the
 * agent repairs on its own, and what the Node shows. The times are printed as diagnostics
 * (measurements, not assertions).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { joinThenStopOperator } from '../../sim/testkit/agent-alone.ts';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import { nodeConditions } from '../../sim/testkit/node-conditions.ts';
import { createWindowsPodOn } from '../../sim/testkit/nodes.ts';
import { testNamespace } from '../../sim/testkit/test-cluster.ts';
import { waitFor } from '../kube/wait-for.ts';
import { paths } from './agent-config.ts';

test('each lab fault on one host: the agent’s condition, its local repair, and the Node', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022'],
    // The test's own limits: a restart loop is over after 10 s stable (default 60 s), and the
    // Node controller marks a silent host's Node Unknown after 20 s (its default 50 s).
    config: {
      hosts: {
        agentCheckIntervalSeconds: 1,
        joinTimeoutSeconds: 120,
        agentHealth: { restartLoop: { stableSeconds: 10 } },
      },
    },
    cluster: { scale: { nodeMonitorGracePeriodSeconds: 20 } },
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const sim = world.fleet.hosts[0]!;
  const nodeName = await joinThenStopOperator(world);
  const { condition, until, measured } = nodeConditions(core, nodeName, t);
  const agentLog = async () => {
    const names = (await sim.machine.fs.list(paths.agentLogs).catch(() => [])).map((e) => e.name);
    let text = '';
    for (const name of names)
      text += (await sim.machine.fs.tryReadFile(`${paths.agentLogs}\\${name}`))?.toString() ?? '';
    return text;
  };
  await until('HNSNetworkMissing', 'False');
  await until('ClockSkew', 'False');

  // A pod on the node, so the CNI creates its HNS network.
  const namespace = await testNamespace(kc, 'faults');
  await createWindowsPodOn(core, namespace, nodeName);
  const podIP = await waitFor(
    async () => {
      const pod = await core.readNamespacedPod({ namespace, name: 'web' });
      return pod.status?.phase === 'Running' ? pod.status.podIP : undefined;
    },
    { description: 'the pod Running with an IP', timeoutMs: 90_000, intervalMs: 500 },
  );
  assert.ok(sim.machine.hns.answers(podIP));
  const oldNetwork = sim.machine.hns.find('winfleet')!;
  // The agent reports a missing network only once it saw it in this boot.
  await waitFor(
    async () => (await condition('HNSNetworkMissing'))?.message === 'HNS network winfleet exists',
    { description: 'the agent to see the HNS network', timeoutMs: 30_000, intervalMs: 200 },
  );

  // HNS network deleted: HNSNetworkMissing, recreated by the agent, cleared.
  assert.equal(sim.faults.deleteHnsNetwork(), true);
  const hnsMissing = await until('HNSNetworkMissing', 'True');
  assert.equal(hnsMissing.c.reason, 'NetworkMissing');
  measured('HNS network deleted → HNSNetworkMissing=True', hnsMissing.seconds);
  const hnsBack = await until('HNSNetworkMissing', 'False');
  measured('HNSNetworkMissing=True → False (recreated by the agent)', hnsBack.seconds);
  const recreated = sim.machine.hns.find('winfleet');
  assert.ok(recreated && recreated.id !== oldNetwork.id);
  assert.equal(sim.machine.hns.answers(podIP), false, 'the old pod has no endpoint on it');
  assert.match(await agentLog(), /health repair \(HNSNetworkMissing\): recreated HNS network/);
  assert.equal((await condition('Ready'))?.status, 'True', 'the kubelet does not notice');

  // Clock 10 minutes ahead: ClockSkew, resynced by the agent, cleared.
  sim.faults.skewClock(10 * 60_000);
  const skewed = await until('ClockSkew', 'True');
  assert.match(skewed.c.message!, /10\.0 minutes ahead/);
  measured('clock skewed → ClockSkew=True', skewed.seconds);
  const synced = await until('ClockSkew', 'False');
  measured('ClockSkew=True → False (w32tm resync by the agent)', synced.seconds);
  assert.equal(sim.machine.clockOffsetMs, 0);

  // Disk full: SystemDiskLow (no local repair); cleared once space is back.
  sim.faults.diskFull = true;
  const full = await until('SystemDiskLow', 'True');
  measured('disk full → SystemDiskLow=True', full.seconds);
  const events = await core.listNamespacedEvent({
    namespace: 'default',
    fieldSelector: `involvedObject.name=${nodeName},reason=SystemDiskLow`,
  });
  assert.equal(events.items.length, 1);
  sim.faults.diskFull = false;
  measured('space back → SystemDiskLow=False', (await until('SystemDiskLow', 'False')).seconds);

  // kubelet down without a failure: the SCM does not restart it; the agent's converge does.
  const pid = sim.machine.scm.query('kubelet')!.pid;
  assert.equal(sim.faults.crashService('kubelet', { stayDown: true }), true);
  const restarted = Date.now();
  await waitFor(
    () => {
      const s = sim.machine.scm.query('kubelet');
      return s?.state === 'running' && s.pid !== pid;
    },
    { description: 'the agent to start the kubelet again', timeoutMs: 30_000, intervalMs: 100 },
  );
  measured(
    'kubelet stopped (stayDown) → running again (agent converge)',
    (Date.now() - restarted) / 1000,
  );

  // Unreachable (switched off until cleared): the Node goes Unknown; back once cleared.
  await sim.faults.setUnreachable(true);
  const unknown = await until('Ready', 'Unknown', 120_000);
  assert.equal(unknown.c.reason, 'NodeStatusUnknown');
  measured('host unreachable → Ready=Unknown', unknown.seconds);
  await sim.faults.setUnreachable(false);
  measured('host back → Ready=True', (await until('Ready', 'True', 120_000)).seconds);

  // Crash loop of the kubelet: FrequentServiceRestart; the Node goes NotReady (no lease).
  await sim.faults.crashLoop('kubelet');
  const loop = await until('FrequentServiceRestart', 'True', 180_000);
  assert.match(loop.c.message!, /kubelet restarted \d+ times/);
  measured('kubelet crash loop → FrequentServiceRestart=True', loop.seconds);
  const notReady = await waitFor(
    async () => {
      const ready = await condition('Ready');
      return ready?.status !== 'True' ? ready : undefined;
    },
    { description: 'the Node not Ready', timeoutMs: 120_000, intervalMs: 500 },
  );
  t.diagnostic(`Ready=${notReady.status} (${notReady.reason}) during the crash loop`);
  // What a re-bootstrap does for this fault: the config file written again.
  sim.faults.clear();
  const ready = await until('Ready', 'True', 120_000);
  measured('config rewritten → Ready=True', ready.seconds);
  // The loop is over once the kubelet has run stableSeconds without a restart (detector.ts).
  const settled = await until('FrequentServiceRestart', 'False', 180_000);
  measured('kubelet running again → FrequentServiceRestart=False', settled.seconds);
  assert.equal(sim.machine.scm.query('kubelet')?.state, 'running');
});
