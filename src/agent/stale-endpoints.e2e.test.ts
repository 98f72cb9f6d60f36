/**
 * Stale HNS endpoints (issue 31 item 4) against the agent alone, with a real control plane: one
 * joined simulated host in routed mode, the operator stopped once the host is Ready. A pod's
 * sandbox is torn down by a CNI DEL interrupted after host-local released its address (a crash
 * mid-teardown): its endpoint stays on `winfleet`. The agent reports StaleHNSEndpoints, removes
 * the endpoint, and the condition clears; an endpoint on a network winfleet does not own stays.
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

test('a pod’s endpoint left behind by an interrupted CNI DEL: StaleHNSEndpoints, removed by the agent, cleared; another network’s endpoint stays', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022'],
    config: {
      hosts: {
        agentCheckIntervalSeconds: 1,
        joinTimeoutSeconds: 120,
        agentHealth: { staleEndpointSeconds: 2 },
      },
    },
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

  const namespace = await testNamespace(kc, 'stale-endpoints');
  await createWindowsPodOn(core, namespace, nodeName);
  const podIP = await waitFor(
    async () => {
      const pod = await core.readNamespacedPod({ namespace, name: 'web' });
      return pod.status?.phase === 'Running' ? pod.status.podIP : undefined;
    },
    { description: 'the pod Running with an IP', timeoutMs: 90_000, intervalMs: 500 },
  );
  const hns = sim.machine.hns;
  assert.ok(hns.find('winfleet'));
  // The pod's own endpoint is a pod's: the condition is False with the pod there.
  const healthy = await until('StaleHNSEndpoints', 'False');
  assert.equal(healthy.c.reason, 'NoStaleEndpoints');
  assert.equal(
    healthy.c.message,
    'Every pod endpoint on HNS network winfleet belongs to a pod on this node',
  );

  // A network winfleet does not own (another CNI's), with an endpoint no pod has.
  const foreignNetwork = hns.ensure('other-cni', 'L2Bridge', [
    { addressPrefix: '10.99.0.0/24', gateway: '10.99.0.1' },
  ]);
  const foreign = hns.ensureEndpoint(foreignNetwork.id, 'not-a-winfleet-sandbox', '10.99.0.7');

  // The pod goes; its CNI DEL is interrupted after the address's release.
  sim.faults.interruptCniDel();
  await core.deleteNamespacedPod({ namespace, name: 'web', gracePeriodSeconds: 0 });
  await waitFor(
    async () =>
      (await core.listNamespacedPod({ namespace })).items.length === 0 &&
      hns.endpoints().some((e) => e.ip === podIP) &&
      !(await sim.machine.fs.tryReadFile(`C:\\var\\lib\\cni\\networks\\winfleet\\${podIP}`)),
    {
      description: 'the pod gone, its address released, its endpoint left behind',
      timeoutMs: 30_000,
      intervalMs: 100,
    },
  );
  const gone = Date.now();

  const stale = await until('StaleHNSEndpoints', 'True');
  assert.equal(stale.c.reason, 'EndpointsLeftBehind');
  assert.match(
    stale.c.message!,
    new RegExp(
      `^1 HNS endpoint\\(s\\) on network winfleet hold an address no pod on this node has had for 2 s or more \\(${podIP.replaceAll('.', '\\.')}\\)`,
    ),
  );
  measured('pod gone, endpoint left → StaleHNSEndpoints=True', (Date.now() - gone) / 1000);
  const cleared = await until('StaleHNSEndpoints', 'False');
  measured('StaleHNSEndpoints=True → False (endpoint removed by the agent)', cleared.seconds);
  assert.equal(cleared.c.reason, 'NoStaleEndpoints');
  assert.equal(hns.answers(podIP), false, 'the left-behind endpoint is gone');
  assert.match(
    await agentLog(),
    new RegExp(
      `health repair \\(StaleHNSEndpoints\\): removed 1 HNS endpoint\\(s\\) left behind on winfleet: ${podIP.replaceAll('.', '\\.')}`,
    ),
  );
  assert.ok(
    hns.endpoints().some((e) => e.id === foreign.id),
    'the endpoint on a network winfleet does not own stays',
  );
  assert.equal((await condition('Ready'))?.status, 'True');
});
