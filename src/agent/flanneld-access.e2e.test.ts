/**
 * flanneldHoldBack against the real API server: a principal that may not list Nodes has
 * flanneld held back; once a ClusterRoleBinding grants it winfleet:flanneld-node-reader's rule,
 * flanneld runs, and the agent stops asking.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { sharedCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { waitFor } from '../kube/wait-for.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import type { AgentContext } from './agent-context.ts';
import { flanneldHoldBack } from './flanneld-access.ts';

test('flanneld waits until the API server lets its principal list Nodes, then runs', async (t) => {
  const { kc } = await sharedCluster();
  const namespace = await testNamespace(kc, 'flanneld-access');
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'node' } } });
  const token = await core.createNamespacedServiceAccountToken({
    namespace,
    name: 'node',
    body: { spec: { audiences: [], expirationSeconds: 600 } },
  });
  const principal = new k8s.KubeConfig();
  principal.loadFromOptions({
    clusters: [{ ...kc.getCurrentCluster()!, name: 'c' }],
    users: [{ name: 'u', token: token.status!.token }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const log: string[] = [];
  const context = {
    stderr: (text: string) => {
      log.push(text);
    },
  } as unknown as AgentContext;
  const manifest = {
    version: 'v',
    services: [{ name: 'kubelet' }, { name: 'flanneld' }],
    files: [],
  } as unknown as ServicesManifest;

  assert.deepEqual([...(await flanneldHoldBack(context, manifest, principal))], ['flanneld']);
  assert.match(log.join(''), /flanneld waits: this node may not list Nodes yet/);

  // A binding to a role that lists Nodes, as the operator keeps winfleet:flanneld-node-reader
  // (system:node-proxier here: the shared cluster has no winfleet role; a unique name).
  const name = `${namespace}-node-reader`;
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'system:node-proxier',
      },
      subjects: [{ kind: 'ServiceAccount', name: 'node', namespace }],
    },
  });
  t.after(() => rbac.deleteClusterRoleBinding({ name }));
  await waitFor(
    async () => (await flanneldHoldBack(context, manifest, principal)).size === 0 || undefined,
    { description: 'flanneld no longer held back', timeoutMs: 30_000 },
  );
  assert.match(log.join(''), /flanneld may list Nodes: it runs/);
  // Allowed once: not asked again, even by a principal that could not ask at all.
  const broken = new k8s.KubeConfig();
  broken.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  assert.deepEqual([...(await flanneldHoldBack(context, manifest, broken))], []);

  // An API server that cannot be asked holds nothing back (an outage never stops flanneld).
  const fresh = { stderr: () => {} } as unknown as AgentContext;
  assert.deepEqual([...(await flanneldHoldBack(fresh, manifest, broken))], []);
});
