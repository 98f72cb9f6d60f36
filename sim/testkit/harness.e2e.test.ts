/**
 * End to end through the real control plane: the seed's win-webserver Deployment stays
 * Pending on a tainted Windows node until it tolerates the taint, then runs there, while
 * plain Linux pods never land on Windows.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { applyManifests } from '../../src/kube/manifests.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { loadFixture } from './fixtures.ts';
import { createLinuxNode, createWindowsNode, windowsTaint } from './nodes.ts';
import { freshCluster, testNamespace } from './test-cluster.ts';

const selector = 'app=win-webserver';

test('win-webserver from seed 001 is placed only on a Windows node that it tolerates', async (t) => {
  // A private cluster: the assertions are about every node there is.
  const { kc } = await freshCluster(t);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const linux = await createLinuxNode(kc, { name: 'linux-1' });
  const windows = await createWindowsNode(kc, {
    name: 'win-2022-1',
    release: '2022',
    revision: 2582,
  });
  assert.equal(windows.status?.nodeInfo?.operatingSystem, 'windows');
  assert.equal(windows.status?.nodeInfo?.kernelVersion, '10.0.20348.2582');
  assert.equal(windows.metadata?.labels?.['node.kubernetes.io/windows-build'], '10.0.20348');
  assert.equal(linux.status?.nodeInfo?.operatingSystem, 'linux');
  const namespace = await testNamespace(kc, 'harness');

  await t.test(
    'as written, its pods stay Pending: nothing tolerates the Windows taint',
    async () => {
      await applyManifests(kc, loadFixture('seed-001-win-webserver.yaml'), {
        namespace,
        fieldManager: 'seed',
      });
      const pods = await waitFor(
        async () => {
          const list = await core.listNamespacedPod({ namespace, labelSelector: selector });
          const unschedulable = list.items.filter((p) =>
            p.status?.conditions?.some(
              (c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable',
            ),
          );
          return unschedulable.length === 2 ? list.items : undefined;
        },
        { description: 'both win-webserver pods to be found unschedulable', timeoutMs: 30_000 },
      );
      for (const pod of pods) {
        assert.equal(pod.spec?.nodeName, undefined, `${pod.metadata?.name} is not bound`);
        assert.equal(pod.status?.phase, 'Pending');
        const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
        // The Windows node is excluded by its taint, the Linux node by the nodeSelector.
        assert.match(scheduled?.message ?? '', /1 node\(s\) had untolerated taint/);
        assert.match(
          scheduled?.message ?? '',
          /1 node\(s\) didn't match Pod's node affinity\/selector/,
        );
      }
    },
  );

  await t.test('with the matching toleration both replicas run on the Windows node', async () => {
    await apps.patchNamespacedDeployment(
      {
        name: 'win-webserver',
        namespace,
        body: {
          spec: { template: { spec: { tolerations: [{ ...windowsTaint, operator: 'Equal' }] } } },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    );
    const running = await waitFor(
      async () => {
        const list = await core.listNamespacedPod({ namespace, labelSelector: selector });
        const live = list.items.filter((p) => !p.metadata?.deletionTimestamp);
        const ok = live.filter((p) => p.status?.phase === 'Running');
        return live.length === 2 && ok.length === 2 ? ok : undefined;
      },
      { description: 'two running win-webserver pods', timeoutMs: 60_000 },
    );
    for (const pod of running) assert.equal(pod.spec?.nodeName, 'win-2022-1');
    const deployment = await apps.readNamespacedDeployment({ name: 'win-webserver', namespace });
    assert.equal(deployment.spec?.template.spec?.nodeSelector?.['kubernetes.io/os'], 'windows');
  });

  await t.test('plain Linux pods never land on the Windows node', async () => {
    const names = Array.from({ length: 5 }, (_, i) => `plain-${i}`);
    for (const name of names) {
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name },
          spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
        },
      });
    }
    const pods = await waitFor(
      async () => {
        const list = await core.listNamespacedPod({ namespace, labelSelector: '!app' });
        return list.items.length === 5 && list.items.every((p) => p.status?.phase === 'Running')
          ? list.items
          : undefined;
      },
      { description: 'five plain pods running', timeoutMs: 60_000 },
    );
    for (const pod of pods)
      assert.equal(pod.spec?.nodeName, 'linux-1', `${pod.metadata?.name} is on Linux`);
  });
});
