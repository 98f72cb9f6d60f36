/**
 * Rolling a new payload out to joined hosts, and removing a host whose pods are protected by
 * a PodDisruptionBudget (the drain waits for the budget, never forces it).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { testNamespace } from '../../../sim/testkit/test-cluster.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { servicesVersionAnnotation } from '../../api/node-annotations.ts';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import { waitFor } from '../../kube/wait-for.ts';

test('a new payload rolls out to every host; a PDB holds a removal until it allows the eviction', async (t) => {
  const world = await joinWorld(t, { releases: ['2022', '2019'] });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const ready = () =>
    waitFor(
      async () => {
        const list = await listWindowsHosts(kc, world.namespace);
        return list.length === 2 && list.every(hostReady) ? list : undefined;
      },
      { description: 'both hosts Ready', timeoutMs: 90_000 },
    );
  const before = await ready();

  await t.test('a new payload version is rolled out to every node', async () => {
    const next = await writeStandInPayload(world.payloadDir, {
      kubernetesVersion: 'v1.36.6',
      version: '1.36.6-wf.1',
    });
    const upgraded = await waitFor(
      async () => {
        const list = await listWindowsHosts(kc, world.namespace);
        return list.every((h) => hostReady(h) && h.status?.servicesVersion === next.version)
          ? list
          : undefined;
      },
      { description: `every host on ${next.version}`, timeoutMs: 90_000 },
    );
    for (const host of upgraded) {
      const node = await core.readNode({ name: host.status!.nodeName! });
      assert.equal(node.metadata?.annotations?.[servicesVersionAnnotation], next.version);
      assert.equal(node.status?.nodeInfo?.kubeletVersion, 'v1.36.6', 'the new kubelet binary runs');
      const before1 = before.find((b) => b.metadata.name === host.metadata.name)!;
      assert.equal(
        host.status?.nodeName,
        before1.status?.nodeName,
        'the same node, upgraded in place',
      );
    }
    const sim = world.fleet.hosts[0]!;
    const kubelet = (await sim.hostOS().readFile('C:\\k\\kubelet.exe'))!.toString();
    assert.match(kubelet, /v1\.36\.6/);
  });

  await t.test('removal waits for a PodDisruptionBudget, then completes', async () => {
    const [host] = await listWindowsHosts(kc, world.namespace);
    const nodeName = host!.status!.nodeName!;
    const namespace = await testNamespace(kc, 'pdb');
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'guarded' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'guarded' } },
          template: {
            metadata: { labels: { app: 'guarded' } },
            spec: {
              nodeSelector: { 'kubernetes.io/hostname': nodeName },
              tolerations: [
                { key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' },
              ],
              containers: [{ name: 'app', image: 'mcr.microsoft.com/windows/nanoserver:ltsc2022' }],
            },
          },
        },
      },
    });
    await waitFor(
      async () =>
        (await core.listNamespacedPod({ namespace })).items.some(
          (p) => p.status?.phase === 'Running',
        ),
      { description: 'the guarded pod running' },
    );
    await kc.makeApiClient(k8s.PolicyV1Api).createNamespacedPodDisruptionBudget({
      namespace,
      body: {
        metadata: { name: 'keep-one' },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'guarded' } } },
      },
    });
    await k8s.KubernetesObjectApi.makeApiClient(kc).delete(host!);
    const draining = await waitFor(
      async () => {
        const h = (await listWindowsHosts(kc, world.namespace)).find(
          (x) => x.metadata.name === host!.metadata.name,
        );
        const c = h?.status?.conditions?.find((x) => x.type === ConditionType.Ready);
        return c?.reason === ConditionReason.Draining && /PodDisruptionBudget/.test(c.message)
          ? c
          : undefined;
      },
      { description: 'the drain to report the PodDisruptionBudget', timeoutMs: 30_000 },
    );
    assert.match(draining.message, new RegExp(`${namespace}/guarded-`));
    const node = await core.readNode({ name: nodeName });
    assert.equal(node.spec?.unschedulable, true, 'cordoned while draining');
    assert.ok(
      (await core.listNamespacedPod({ namespace })).items.some(
        (p) => !p.metadata?.deletionTimestamp,
      ),
      'the pod was not forced out',
    );
    // The budget is lifted: the eviction goes through and the host is removed.
    await kc
      .makeApiClient(k8s.PolicyV1Api)
      .deleteNamespacedPodDisruptionBudget({ name: 'keep-one', namespace });
    await waitFor(
      async () =>
        !(await listWindowsHosts(kc, world.namespace)).some(
          (x) => x.metadata.name === host!.metadata.name,
        ),
      {
        description: 'the host removed',
        timeoutMs: 60_000,
      },
    );
    assert.equal(
      (await core.listNode()).items.some((n) => n.metadata?.name === nodeName),
      false,
    );
  });
});
