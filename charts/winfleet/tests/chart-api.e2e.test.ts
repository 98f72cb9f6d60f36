/**
 * What only a real API server can say about the rendered chart, without installing it (the
 * install itself is rbac.e2e.test.ts): every object passes the API server's validation (a
 * server-side dry run), and the operator's pod passes the `restricted` Pod Security level, with
 * each payload source — kwok runs no containers, so this is as far as the pod itself is checked.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { kubectl } from '../../../sim/testkit/kubectl.ts';
import { sharedCluster, testNamespace } from '../../../sim/testkit/test-cluster.ts';
import { httpStatus } from '../../../src/kube/client.ts';
import { type K8sObject, only, render } from './render.ts';

/** Kinds whose CRDs a bare cluster lacks (cert-manager, prometheus-operator). */
const foreignKinds = new Set(['Certificate', 'Issuer', 'ServiceMonitor']);

const variants: [string, Record<string, unknown>][] = [
  ['defaults', {}],
  [
    'image payload, webhook URL, opted-in namespaces',
    {
      payload: { source: 'image', image: { reference: 'registry.example/winfleet-payload:1' } },
      webhook: { url: 'https://10.0.0.5:9443', pullSecretNamespaces: ['default'] },
      config: { hosts: { namespaces: ['default'] } },
    },
  ],
  [
    'PVC payload, cert-manager, one replica',
    {
      payload: { source: 'persistentVolumeClaim', persistentVolumeClaim: { claimName: 'payload' } },
      webhook: { certManager: { enabled: true } },
      replicaCount: 1,
      leaderElection: { enabled: false },
    },
  ],
];

test('the rendered chart passes the API server’s validation, and its pod the restricted Pod Security level', async (t) => {
  const { kc, kubeconfigPath } = await sharedCluster();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const namespace = await testNamespace(kc, 'chart-api');
  // Pod Security enforced; winfleet's own webhooks (other tests' operators) leave it alone.
  await core.patchNamespace(
    {
      name: namespace,
      body: {
        metadata: {
          labels: {
            'pod-security.kubernetes.io/enforce': 'restricted',
            'pod-security.kubernetes.io/enforce-version': 'latest',
            'winfleet.io/webhook': 'disabled',
          },
        },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
  const podOf = (objects: K8sObject[], name: string, deployment = 'winfleet'): k8s.V1Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    // The chart's ServiceAccount is not there (the apply was a dry run): the namespace's own.
    spec: {
      ...only(objects, 'Deployment', deployment).spec.template.spec,
      serviceAccountName: 'default',
    },
  });

  for (const [name, values] of variants) {
    await t.test(name, async () => {
      const objects = await render(values, { namespace });
      const checked = objects.filter((o) => !foreignKinds.has(o.kind));
      const manifest = checked.map((o) => `---\n${stringify(o)}`).join('');
      const applied = await kubectl(
        kubeconfigPath,
        [
          'apply',
          '--server-side',
          '--force-conflicts',
          '--field-manager=chart-test',
          '--dry-run=server',
          '-f',
          '-',
        ],
        manifest,
      );
      assert.equal(applied.code, 0, `kubectl apply --dry-run=server refused:\n${applied.stderr}`);
      assert.equal(
        applied.stdout.trim().split('\n').length,
        checked.length,
        `every object was checked:\n${applied.stdout}`,
      );
      assert.doesNotMatch(applied.stderr, /Warning/, 'no deprecation or validation warnings');
      const pod = await core.createNamespacedPod({
        namespace,
        body: podOf(objects, 'winfleet-operator'),
        dryRun: 'All',
      });
      assert.equal(pod.metadata?.namespace, namespace);
      // The webhook's pod too, when the variant runs it.
      if (objects.some((o) => o.kind === 'Deployment' && o.metadata.name === 'winfleet-webhook')) {
        const webhookPod = await core.createNamespacedPod({
          namespace,
          body: podOf(objects, 'winfleet-webhook', 'winfleet-webhook'),
          dryRun: 'All',
        });
        assert.equal(webhookPod.metadata?.namespace, namespace);
      }
    });
  }

  await t.test('the check is real: a pod that may escalate privileges is refused', async () => {
    const objects = await render(
      { securityContext: { allowPrivilegeEscalation: true, runAsNonRoot: true, runAsUser: 65532 } },
      { namespace },
    );
    let refusal: unknown;
    try {
      await core.createNamespacedPod({
        namespace,
        body: podOf(objects, 'escalating'),
        dryRun: 'All',
      });
    } catch (error) {
      refusal = error;
    }
    assert.equal(httpStatus(refusal), 403, 'Pod Security admission refuses it');
    const { message } = JSON.parse(String((refusal as { body?: unknown }).body)) as {
      message: string;
    };
    assert.match(
      message,
      /violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false/,
    );
  });
});
