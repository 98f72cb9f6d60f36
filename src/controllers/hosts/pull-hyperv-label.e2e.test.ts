/**
 * The Hyper-V label on Pull hosts' Nodes, against the real API server: the pool, never the
 * WindowsHost nor the kubelet, decides winfleet.io/hyperv-isolation.
 *
 * - a host of a pool with spec.isolation.hyperV: true gets the label on its Node;
 * - attacker: a host of no such pool whose spec.labels claims it, and whose kubelet registered
 *   its Node with it, ends up without it (its other labels still reach the Node).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import { hostAnnotation, managedNodeLabel } from '../../api/node-annotations.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { hyperVIsolationLabel } from '../../windows/isolation.ts';

test('the pool decides the Hyper-V label of a Pull host’s Node', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'], startOperator: false });
  const { kc, namespace } = world;
  const operator = await startTestOperator(kc, {
    namespace,
    payloadDir: world.payloadDir,
    config: { hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 } },
  });
  t.after(() => operator.stop());
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await waitFor(
    async () => {
      try {
        return await objects.create({
          apiVersion: 'winfleet.io/v1alpha1',
          kind: 'WindowsNodePool',
          metadata: { name: 'hv', namespace },
          spec: { selector: { matchLabels: { pool: 'hv' } }, isolation: { hyperV: true } },
        });
      } catch (error) {
        if ((error as { code?: number }).code === 404) return undefined; // CRD not served yet
        throw error;
      }
    },
    { description: 'the Hyper-V pool', timeoutMs: 30_000 },
  );
  const host = (name: string, labels: Record<string, string>, specLabels: Record<string, string>) =>
    objects.create({
      apiVersion: 'winfleet.io/v1alpha1',
      kind: 'WindowsHost',
      metadata: { name, namespace, labels },
      spec: { mode: 'Pull', nodeName: name, labels: specLabels },
    });
  await host('hv-1', { pool: 'hv' }, { team: 'web' });
  await host('claim-1', {}, { team: 'web', [hyperVIsolationLabel]: 'true' });
  // The machines' kubelets register their Nodes; the second claims the label itself.
  await core.createNode({
    body: { metadata: { name: 'hv-1', labels: { [managedNodeLabel]: 'true' } } },
  });
  await core.createNode({
    body: {
      metadata: {
        name: 'claim-1',
        labels: { [managedNodeLabel]: 'true', [hyperVIsolationLabel]: 'true' },
      },
    },
  });
  const adopted = (name: string) =>
    waitFor(
      async () => {
        const n = await core.readNode({ name });
        return n.metadata?.annotations?.[hostAnnotation] && n.metadata.labels?.team ? n : undefined;
      },
      { description: `Node ${name} adopted and labelled`, timeoutMs: 60_000 },
    );
  const hv = await adopted('hv-1');
  assert.equal(hv.metadata?.labels?.[hyperVIsolationLabel], 'true');
  const claim = await adopted('claim-1');
  assert.equal(claim.metadata?.labels?.team, 'web');
  assert.equal(claim.metadata?.labels?.[hyperVIsolationLabel], undefined);
});
