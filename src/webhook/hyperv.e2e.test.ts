/**
 * Hyper-V isolation end to end, through the real API server and scheduler, with kwok nodes and
 * the mirror registry: a 2019 image on a cluster whose only Windows node is 2022. Without a pool
 * that allows Hyper-V isolation the pod is refused, naming the image and the option; once the
 * node carries winfleet.io/hyperv-isolation=true (what the operator puts on the Nodes of a pool
 * with spec.isolation.hyperV: pool-isolation.test.ts), winfleet keeps windows-2019-hyperv and
 * the webhook admits the pod with it, with a warning, and it runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { startMirrorRegistry } from '../../sim/registry/mirror-registry.ts';
import { kubectl as runKubectl } from '../../sim/testkit/kubectl.ts';
import { createWindowsNode } from '../../sim/testkit/nodes.ts';
import { freshCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../sim/testkit/test-operator.ts';
import { waitFor } from '../kube/wait-for.ts';
import { hyperVIsolationLabel } from '../windows/isolation.ts';

test('a 2019 image on a 2022 node: refused without the Hyper-V opt-in, runs with it', async (t) => {
  const cluster = await freshCluster(t);
  const { kc } = cluster;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const registry = await startMirrorRegistry();
  t.after(() => registry.stop());
  const operator = await startTestOperator(kc, {
    config: { images: { mirrors: registry.mirrors, compatibility: 'enforce' } },
  });
  t.after(() => operator.stop());
  await createWindowsNode(kc, { name: 'win-2022', release: '2022', revision: 2582 });
  const namespace = await testNamespace(kc, 'hyperv');
  const kubectl = (args: string[], input: string) =>
    runKubectl(cluster.kubeconfigPath, args, input);
  const pod = (name: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name}, namespace: ${namespace} }
spec:
  nodeSelector: { kubernetes.io/os: windows }
  containers: [{ name: app, image: mcr.microsoft.com/windows/servercore:ltsc2019 }]
`;

  await t.test('the pool field is checked by the API server', async () => {
    const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    const body = (hyperV: unknown) => ({
      apiVersion: 'winfleet.io/v1alpha1',
      kind: 'WindowsNodePool',
      metadata: { name: 'win2022', namespace },
      spec: { selector: { matchLabels: { pool: 'win2022' } }, isolation: { hyperV } },
    });
    // The operator installs its CRDs at start; wait until they are served.
    await waitFor(
      () =>
        objects.list('winfleet.io/v1alpha1', 'WindowsNodePool', namespace).then(
          () => true,
          () => undefined,
        ),
      { description: 'the WindowsNodePool CRD served', timeoutMs: 30_000 },
    );
    await assert.rejects(objects.create(body('yes')), (error: { body?: string }) => {
      assert.match(String(error.body), /spec\.isolation\.hyperV/);
      return true;
    });
    await objects.create(body(true));
  });

  await t.test(
    'without a node that allows Hyper-V: refused, naming the image and the option',
    async () => {
      await waitFor(
        async () => {
          const r = await kubectl(['create', '-f', '-'], pod('old-app'));
          return r.code !== 0 &&
            /mcr\.microsoft\.com\/windows\/servercore:ltsc2019 \(built for 10\.0\.17763\.6054\) only under Hyper-V isolation/.test(
              r.stderr,
            ) &&
            /set spec\.isolation\.hyperV: true on a WindowsNodePool/.test(r.stderr)
            ? r
            : undefined;
        },
        { description: 'a refusal naming the image and spec.isolation.hyperV', timeoutMs: 30_000 },
      );
    },
  );

  await t.test(
    'with the node in a Hyper-V pool: windows-2019-hyperv, a warning, Running',
    async () => {
      await core.patchNode(
        { name: 'win-2022', body: { metadata: { labels: { [hyperVIsolationLabel]: 'true' } } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      const node = kc.makeApiClient(k8s.NodeV1Api);
      const rc = await waitFor(
        async () => node.readRuntimeClass({ name: 'windows-2019-hyperv' }).catch(() => undefined),
        { description: 'RuntimeClass windows-2019-hyperv', timeoutMs: 30_000 },
      );
      assert.equal(rc.handler, 'runhcs-wcow-hypervisor');
      assert.equal(rc.scheduling?.nodeSelector?.[hyperVIsolationLabel], 'true');
      const created = await waitFor(
        async () => {
          const r = await kubectl(['create', '-f', '-'], pod('old-app'));
          return r.code === 0 ? r : undefined;
        },
        {
          description: 'the pod admitted once the webhook sees the Hyper-V node',
          timeoutMs: 30_000,
        },
      );
      assert.match(
        created.stderr,
        /Warning: spec\.runtimeClassName: set to windows-2019-hyperv: the pod runs under Hyper-V isolation/,
      );
      const running = await waitFor(
        async () => {
          const p = await core.readNamespacedPod({ name: 'old-app', namespace });
          return p.status?.phase === 'Running' ? p : undefined;
        },
        { description: 'pod old-app Running', timeoutMs: 60_000 },
      );
      assert.equal(running.spec?.runtimeClassName, 'windows-2019-hyperv');
      assert.equal(running.spec?.nodeName, 'win-2022');
      assert.equal(running.spec?.nodeSelector?.[hyperVIsolationLabel], 'true');
    },
  );
});
