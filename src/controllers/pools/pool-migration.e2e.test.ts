/**
 * Pool-to-pool migration end to end (issue 35, item 2), with a real control plane, simulated
 * hosts, the operator's webhook and the mirror registry: a 2019 pool serves a Deployment of a
 * multi-build image (2019 and 2022 variants) under a PodDisruptionBudget, and a Deployment whose
 * image exists only for 2019. A 2022 pool that replaces it waits for its host, then stops,
 * MigrationBlocked naming the 2019-only workload, with no old node cordoned and every pod still
 * Running there. Once that workload is gone the migration goes on: the old hosts are drained one
 * at a time (the old pool's maxUnavailable 1) and left cordoned — the operator stopped once a
 * retirement is recorded and a fresh one resuming it — the budget is never broken, and every pod
 * ends on the 2022 node.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { startMirrorRegistry } from '../../../sim/registry/mirror-registry.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { createPool, readPool, sampleRollout } from '../../../sim/testkit/pools.ts';
import { testNamespace } from '../../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  listWindowsHosts,
  waitForReadyHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import { waitFor } from '../../kube/wait-for.ts';

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

function migrated(pool: WindowsNodePool) {
  return pool.status?.conditions?.find((c) => c.type === 'Migrated');
}

test('a 2019 pool migrates to a 2022 pool within its PDB, and stops at a workload with no 2022 image', async (t) => {
  const registry = await startMirrorRegistry();
  t.after(() => registry.stop());
  const operatorConfig = {
    hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 },
    images: { mirrors: registry.mirrors },
  };
  const world = await joinWorld(t, { releases: ['2019', '2019', '2022'], config: operatorConfig });
  const { kc, namespace } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const oldFleet = world.fleet.hosts.filter((h) => h.release === '2019');
  const newFleet = world.fleet.hosts.filter((h) => h.release === '2022');
  const label = async (hosts: { name: string }[], pool: string) => {
    for (const h of hosts)
      await custom.patchNamespacedCustomObject(
        {
          group: 'winfleet.io',
          version: 'v1alpha1',
          namespace,
          plural: 'windowshosts',
          name: h.name.toLowerCase(),
          body: { metadata: { labels: { pool } } },
        },
        mergePatch,
      );
  };

  // The 2019 pool and its two hosts, serving the workloads.
  await createWindowsHosts(kc, namespace, oldFleet);
  const oldHosts = await waitForReadyHosts(kc, namespace, 2);
  const oldNodes = oldHosts.map((h) => h.status!.nodeName!);
  await label(oldFleet, 'win2019');
  await createPool(kc, namespace, 'win2019', {
    selector: { matchLabels: { pool: 'win2019' } },
    maxUnavailable: 1,
    drainTimeout: '2m',
  });
  const workloads = await testNamespace(kc, 'migrate');
  const deployment = (name: string, image: string, replicas: number): k8s.V1Deployment => ({
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { 'kubernetes.io/os': 'windows' },
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'ScheduleAnyway',
              labelSelector: { matchLabels: { app: name } },
            },
          ],
          containers: [{ name, image }],
        },
      },
    },
  });
  // iis:latest has a 2019 and a 2022 variant; servercore:ltsc2019 only a 2019 one.
  await apps.createNamespacedDeployment({
    namespace: workloads,
    body: deployment('web', 'mcr.microsoft.com/windows/servercore/iis:latest', 2),
  });
  await kc.makeApiClient(k8s.PolicyV1Api).createNamespacedPodDisruptionBudget({
    namespace: workloads,
    body: {
      metadata: { name: 'web' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
    },
  });
  await apps.createNamespacedDeployment({
    namespace: workloads,
    body: deployment('legacy', 'mcr.microsoft.com/windows/servercore:ltsc2019', 1),
  });
  const runningPods = async (app: string) =>
    (
      await core.listNamespacedPod({ namespace: workloads, labelSelector: `app=${app}` })
    ).items.filter(
      (p) =>
        !p.metadata?.deletionTimestamp &&
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
  await waitFor(
    async () =>
      (await runningPods('web')).length === 2 && (await runningPods('legacy')).length === 1,
    { description: '2 web pods and 1 legacy pod Ready on the 2019 nodes', timeoutMs: 90_000 },
  );

  // Watched from the outside for the whole migration: cordons and Ready web pods.
  const newNodes: string[] = [];
  const sampler = sampleRollout(kc, {
    nodeNames: () => [...oldNodes, ...newNodes],
    pods: { namespace: workloads, labelSelector: 'app=web' },
  });
  t.after(() => sampler.stop());

  await t.test(
    'the 2022 pool waits for its host, then stops at the 2019-only workload',
    async () => {
      await createPool(kc, namespace, 'win2022', {
        selector: { matchLabels: { pool: 'win2022' } },
        replaces: 'win2019',
      });
      await waitFor(
        async () => {
          const pool = await readPool(kc, namespace, 'win2022');
          return migrated(pool)?.reason === 'MigrationWaiting' ? pool : undefined;
        },
        { description: 'win2022 Migrated=False MigrationWaiting (no hosts yet)' },
      );
      await createWindowsHosts(kc, namespace, newFleet);
      const all = await waitForReadyHosts(kc, namespace, 3);
      const newHost = all.find(
        (h: WindowsHost) => h.metadata.name === newFleet[0]!.name.toLowerCase(),
      )!;
      newNodes.push(newHost.status!.nodeName!);
      await label(newFleet, 'win2022');
      const blocked = await waitFor(
        async () => {
          const pool = await readPool(kc, namespace, 'win2022');
          return migrated(pool)?.reason === 'MigrationBlocked' ? pool : undefined;
        },
        { description: 'win2022 Migrated=False MigrationBlocked', timeoutMs: 90_000 },
      );
      const condition = migrated(blocked)!;
      assert.equal(condition.status, 'False');
      assert.match(condition.message, new RegExp(`${workloads}/Deployment/legacy`));
      assert.doesNotMatch(condition.message, /Deployment\/web\b/);
      assert.equal(blocked.status?.migration?.phase, 'Blocked');
      assert.deepEqual(
        blocked.status?.migration?.blockedWorkloads?.map((w) => [w.kind, w.name, w.images]),
        [['Deployment', 'legacy', ['mcr.microsoft.com/windows/servercore:ltsc2019']]],
      );
      // The old pool keeps serving: no node of it cordoned, every pod still Running there.
      const nodes = await Promise.all(oldNodes.map((name) => core.readNode({ name })));
      assert.ok(
        nodes.every((n) => !n.spec?.unschedulable),
        'no 2019 node cordoned',
      );
      const pods = [...(await runningPods('web')), ...(await runningPods('legacy'))];
      assert.equal(pods.length, 3);
      assert.ok(
        pods.every((p) => oldNodes.includes(p.spec!.nodeName!)),
        'all on the 2019 nodes',
      );
      assert.ok(
        sampler.samples.every((s) => !s.cordoned.some((n) => oldNodes.includes(n))),
        'nothing was cordoned while the migration was blocked',
      );
    },
  );

  await t.test('without it the migration completes: budget kept, every pod on 2022', async () => {
    await apps.deleteNamespacedDeployment({ name: 'legacy', namespace: workloads });
    // The operator goes once a retirement is recorded; a fresh one (nothing in memory) resumes
    // from status.rollout and status.migration.
    const oldNames = oldFleet.map((h) => h.name.toLowerCase());
    await waitFor(
      async () =>
        (await listWindowsHosts(kc, namespace)).some(
          (h) =>
            oldNames.includes(h.metadata.name) &&
            (h.status?.rollout?.current?.changes.includes('retire') || h.status?.rollout?.retired),
        ),
      { description: 'an old host retiring', timeoutMs: 60_000 },
    );
    await world.operator!.stop();
    world.operator = await startTestOperator(kc, {
      namespace,
      payloadDir: world.payloadDir,
      config: operatorConfig,
    });
    const done = await waitFor(
      async () => {
        const pool = await readPool(kc, namespace, 'win2022');
        return migrated(pool)?.reason === 'MigrationComplete' ? pool : undefined;
      },
      { description: 'win2022 Migrated=True MigrationComplete', timeoutMs: 150_000 },
    );
    assert.equal(migrated(done)!.status, 'True');
    assert.deepEqual(
      [done.status?.migration?.oldHosts, done.status?.migration?.retiredHosts],
      [2, 2],
    );
    const web = await waitFor(
      async () => {
        const pods = await runningPods('web');
        return pods.length === 2 && pods.every((p) => newNodes.includes(p.spec!.nodeName!))
          ? pods
          : undefined;
      },
      { description: 'both web pods Ready on the 2022 node' },
    );
    assert.equal(web.length, 2);
    // The old hosts are drained and left cordoned for removal.
    const nodes = await Promise.all(oldNodes.map((name) => core.readNode({ name })));
    assert.ok(
      nodes.every((n) => n.spec?.unschedulable === true),
      'the 2019 nodes stay cordoned',
    );
    const samples = await sampler.stop();
    assert.ok(samples.length > 0);
    const fewestReady = Math.min(...samples.map((s) => s.readyPods ?? 0));
    assert.ok(fewestReady >= 1, `the budget (minAvailable 1) held: at worst ${fewestReady} Ready`);
    const mostCordonedOld = Math.max(
      ...samples.map((s) => s.cordoned.filter((n) => oldNodes.includes(n)).length),
    );
    assert.equal(mostCordonedOld, 2, 'both ended cordoned');
  });
});
