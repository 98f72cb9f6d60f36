/**
 * Changing the pod network of a running cluster is a pool rollout, not a flag day (issue 31):
 * two hosts of a pool join routed; Flannel is installed and network.mode set to flannel-vxlan;
 * the new mode reaches the hosts through the pool's rollout, one node down at a time
 * (maxUnavailable 1), each ending with flanneld, flannel's CNI config and its Overlay network.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { installFlannelObjects } from '../../sim/testkit/cluster-cni.ts';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import { createPool, labelHosts, readPool, sampleRollout } from '../../sim/testkit/pools.ts';
import { startTestOperator, writeOperatorConfig } from '../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  listWindowsHosts,
  waitForReadyHosts,
} from '../../sim/testkit/windows-hosts.ts';
import { waitFor } from '../kube/wait-for.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';

const hosts = { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 };

test('routed → flannel-vxlan rolls through the pool one node at a time', async (t) => {
  const world = await joinWorld(t, { releases: ['2022', '2022'], startOperator: false });
  const { kc } = world;
  world.operator = await startTestOperator(kc, {
    namespace: world.namespace,
    payloadDir: world.payloadDir,
    config: { hosts, network: { mode: 'routed' } },
  });
  t.after(() => world.operator?.stop());
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const joined = await waitForReadyHosts(kc, world.namespace, 2);
  const nodeNames = joined.map((h) => h.status!.nodeName!);
  const routedVersion = joined[0]!.status!.servicesVersion!;
  assert.doesNotMatch(routedVersion, /-n[0-9a-f]{8}$/);
  await labelHosts(kc, world.namespace, { pool: 'net' });
  await createPool(kc, world.namespace, 'net', {
    selector: { matchLabels: { pool: 'net' } },
    maxUnavailable: 1,
    drainTimeout: '2m',
    readyTimeout: '2m',
  });
  await waitFor(
    async () => (await readPool(kc, world.namespace, 'net')).status?.readyHosts === 2 || undefined,
    { description: 'the pool counting its 2 Ready hosts' },
  );
  for (const sim of world.fleet.hosts) {
    assert.equal(sim.machine.scm.query('flanneld'), undefined);
    assert.match((await sim.machine.fs.readFile(hostPaths.cniConfig)).toString(), /sdnbridge/);
  }

  const sampler = sampleRollout(kc, { nodeNames: () => nodeNames });
  await installFlannelObjects(kc);
  await writeOperatorConfig(kc, world.namespace, { hosts, network: { mode: 'flannel-vxlan' } });
  const rolled = await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, world.namespace);
      return list.length === 2 &&
        list.every(
          (h) =>
            /-n[0-9a-f]{8}$/.test(h.status?.servicesVersion ?? '') &&
            h.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        )
        ? list
        : undefined;
    },
    { description: 'both hosts on a flannel-vxlan manifest and Ready', timeoutMs: 180_000 },
  );
  const samples = await sampler.stop();
  assert.ok(rolled.every((h) => h.status!.servicesVersion !== routedVersion));
  // Never both nodes down or cordoned at once; each was taken down in turn.
  assert.ok(samples.length > 0);
  assert.ok(
    samples.every((s) => s.unavailable.length <= 1),
    `at most one node unavailable: ${JSON.stringify(samples.filter((s) => s.unavailable.length > 1).slice(0, 3))}`,
  );
  for (const name of nodeNames)
    assert.ok(
      samples.some((s) => s.cordoned.includes(name)),
      `${name} was cordoned for the rollout`,
    );
  // Each host now runs flannel: flanneld, flannel's CNI config, its Overlay network.
  for (const sim of world.fleet.hosts) {
    await waitFor(() => sim.machine.hns.find('flannel.4096'), {
      description: `${sim.name}'s flannel.4096`,
      timeoutMs: 60_000,
    });
    assert.equal(sim.machine.scm.query('flanneld')?.state, 'running');
    assert.match(
      (await sim.machine.fs.readFile(hostPaths.cniConfig)).toString(),
      /"type":\s*"flannel"/,
    );
  }
  const core = kc.makeApiClient(k8s.CoreV1Api);
  for (const name of nodeNames) {
    const node = await core.readNode({ name });
    assert.equal(node.spec?.unschedulable ?? false, false, `${name} uncordoned`);
  }
});
