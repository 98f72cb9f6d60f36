/**
 * A payload whose kubelet is outside the skew policy never reaches a host that joins (issue
 * 12: "refused before any host is touched"; the pools refuse it for joined hosts, the join path
 * for new ones): the host is reported Degraded with the rule, nothing is copied to it, and no
 * Node registers. A payload within the policy then joins it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import {
  createWindowsHosts,
  listWindowsHosts,
  waitForReadyHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import { waitFor } from '../../kube/wait-for.ts';

test('a joining host is not touched while the payload’s kubelet is outside the skew policy', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc } = world;
  // The test cluster's API server is v1.36.x: a v1.37 kubelet may not join it.
  await writeStandInPayload(world.payloadDir, {
    kubernetesVersion: 'v1.37.0',
    version: '1.37.0-wf.1',
  });
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  // What the condition says (the rule, both versions) is host-join-skew.test.ts.
  await waitFor(
    async () => {
      const [host] = await listWindowsHosts(kc, world.namespace);
      const c = host?.status?.conditions?.find((x) => x.type === ConditionType.Degraded);
      return c?.reason === ConditionReason.KubeletVersionSkew ? c : undefined;
    },
    { description: 'the host Degraded: KubeletVersionSkew', timeoutMs: 60_000 },
  );
  const sim = world.fleet.hosts[0]!;
  assert.equal(await sim.hostOS().readFile('C:\\k\\kubelet.exe'), undefined, 'no kubelet copied');
  const nodes = await kc.makeApiClient(k8s.CoreV1Api).listNode();
  assert.ok(
    nodes.items.every((n) => n.metadata?.labels?.['kubernetes.io/os'] !== 'windows'),
    'no Windows Node registered',
  );
  await writeStandInPayload(world.payloadDir, {
    kubernetesVersion: 'v1.36.5',
    version: '1.36.5-wf.1',
  });
  const [host] = await waitForReadyHosts(kc, world.namespace, 1, 120_000);
  assert.equal(host!.status?.servicesVersion, '1.36.5-wf.1');
});
