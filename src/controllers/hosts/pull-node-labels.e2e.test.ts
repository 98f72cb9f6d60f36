/**
 * Attacker side of a Pull host's spec.labels (issue 33, item 4), against the real API server:
 * the operator labels a Pull host's Node with its own credentials, which NodeRestriction does
 * not limit, so whoever may edit a WindowsHost must not get labels onto that Node that no
 * kubelet may set (`node-restriction.kubernetes.io/*`, `node-role.kubernetes.io/*`).
 *
 * - the CRD refuses such a WindowsHost, naming the rule;
 * - one stored before the CRD had the rule (applied here as an older winfleet installed it)
 *   is adopted, but only its other labels reach the Node, with a NodeLabelsRefused Event.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import { windowsHostCrd } from '../../api/crds.ts';
import { hostAnnotation, managedNodeLabel } from '../../api/node-annotations.ts';
import { nodeLabelRules } from '../../api/node-labels.ts';
import { EventReason } from '../../api/reasons.ts';
import { waitFor } from '../../kube/wait-for.ts';

/** The WindowsHost CRD without the NodeRestriction rules on spec.labels (an older winfleet's). */
function crdWithoutLabelRules(): k8s.V1CustomResourceDefinition {
  const crd = structuredClone(windowsHostCrd);
  const labels = crd.spec.versions[0]!.schema!.openAPIV3Schema!.properties!.spec!.properties!
    .labels as k8s.V1JSONSchemaProps;
  const rules = nodeLabelRules.map((r) => r.rule);
  labels.x_kubernetes_validations = labels.x_kubernetes_validations!.filter(
    (v) => !rules.includes(v.rule),
  );
  return crd;
}

test('attacker: a WindowsHost cannot put labels NodeRestriction keeps from kubelets on its Node (issue 33)', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'], startOperator: false });
  const { kc, namespace } = world;
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const forbidden = {
    'node-restriction.kubernetes.io/tier': 'pci',
    'node-role.kubernetes.io/control-plane': '',
  };
  const host = (name: string, labels: Record<string, string>) => ({
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name, namespace },
    spec: { mode: 'Pull', nodeName: name, labels },
  });

  // Stored while the CRD had no such rule.
  await objects.patch(
    crdWithoutLabelRules(),
    undefined,
    undefined,
    'winfleet',
    true,
    k8s.PatchStrategy.ServerSideApply,
  );
  await waitFor(
    async () => {
      try {
        return await objects.create(host('stored', { ...forbidden, team: 'web' }));
      } catch (error) {
        // 404 until the CRD is served.
        if ((error as { code?: number }).code === 404) return undefined;
        throw error;
      }
    },
    { description: 'the WindowsHost stored under the older CRD', timeoutMs: 30_000 },
  );
  // The operator installs its CRD at start.
  const operator = await startTestOperator(kc, {
    namespace,
    payloadDir: world.payloadDir,
    config: { hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 } },
  });
  t.after(() => operator.stop());

  await t.test('the API server refuses such a WindowsHost, naming the rule', async () => {
    for (const [key, value] of Object.entries(forbidden)) {
      await assert.rejects(
        objects.create(host('refused', { [key]: value })),
        (error: { body?: string }) => {
          const { message } = JSON.parse(String(error.body)) as { message: string };
          assert.match(message, /spec\.labels: Invalid value/);
          assert.match(
            message,
            key.startsWith('node-restriction')
              ? /keys under node-restriction\.kubernetes\.io\/ are for administrators/
              : /keys under kubernetes\.io or k8s\.io must be ones a kubelet may set on its own Node \(NodeRestriction\)/,
          );
          return true;
        },
      );
    }
  });

  await t.test(
    'a stored one gets only its other labels onto its Node, with a Warning Event',
    async () => {
      // The machine's kubelet registered its Node after the operator created the WindowsHost.
      await core.createNode({
        body: { metadata: { name: 'stored', labels: { [managedNodeLabel]: 'true' } } },
      });
      const node = await waitFor(
        async () => {
          const n = await core.readNode({ name: 'stored' });
          return n.metadata?.annotations?.[hostAnnotation] && n.metadata.labels?.team
            ? n
            : undefined;
        },
        { description: 'the Node adopted and labelled', timeoutMs: 60_000 },
      );
      assert.equal(node.metadata?.labels?.team, 'web');
      for (const key of Object.keys(forbidden)) {
        assert.equal(node.metadata?.labels?.[key], undefined, `${key} is not on the Node`);
      }
      const [event] = await waitFor(
        async () => {
          const found = (
            await core.listNamespacedEvent({
              namespace,
              fieldSelector: `involvedObject.name=stored,reason=${EventReason.NodeLabelsRefused}`,
            })
          ).items;
          return found.length > 0 ? found : undefined;
        },
        { description: 'the NodeLabelsRefused Event', timeoutMs: 30_000 },
      );
      assert.equal(event!.type, 'Warning');
      assert.match(event!.message!, /node-restriction\.kubernetes\.io\/tier: labels under/);
      assert.match(event!.message!, /node-role\.kubernetes\.io\/control-plane: a label under/);
    },
  );
});
