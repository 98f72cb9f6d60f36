/**
 * The principal of security review 3's footholds that may only patch Nodes (cluster-autoscaler,
 * kured, node-feature-discovery, several CNI agents hold as much): a ServiceAccount bound to a
 * ClusterRole with get, list and patch of nodes and nothing else, acting with a token from the
 * TokenRequest API, as its pod would.
 */
import type { TestContext } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { httpStatus } from '../../src/kube/client.ts';
import { waitFor } from '../../src/kube/wait-for.ts';

export interface NodePatcher {
  kc: k8s.KubeConfig;
  /** Merge-patches the annotations of Node `name` (retrying while RBAC catches up with the binding). */
  annotate(name: string, annotations: Record<string, string | null>): Promise<void>;
}

/** Makes the principal (ServiceAccount `node-patcher` in `namespace`); removed after `t`. */
export async function nodePatcher(
  t: TestContext,
  admin: k8s.KubeConfig,
  namespace: string,
): Promise<NodePatcher> {
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  const name = `node-patcher-${namespace}`.slice(0, 63);
  await core.createNamespacedServiceAccount({
    namespace,
    body: { metadata: { name: 'node-patcher' } },
  });
  await rbac.createClusterRole({
    body: {
      metadata: { name },
      rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'patch'] }],
    },
  });
  t.after(() => rbac.deleteClusterRole({ name }).catch(() => undefined));
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name: 'node-patcher', namespace }],
    },
  });
  t.after(() => rbac.deleteClusterRoleBinding({ name }).catch(() => undefined));
  const token = await core.createNamespacedServiceAccountToken({
    namespace,
    name: 'node-patcher',
    body: { spec: { audiences: [], expirationSeconds: 600 } },
  });
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...admin.getCurrentCluster()!, name: 'c' }],
    users: [{ name: 'u', token: token.status!.token }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const nodes = kc.makeApiClient(k8s.CoreV1Api);
  const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  return {
    kc,
    annotate: async (node, annotations) => {
      await waitFor(
        () =>
          nodes.patchNode({ name: node, body: { metadata: { annotations } } }, merge).then(
            () => true,
            (error: unknown) => {
              // RBAC follows the new binding a moment later: 403 until then.
              if (httpStatus(error) === 403) return undefined;
              throw error;
            },
          ),
        {
          description: `the node patcher's patch of Node ${node}`,
          timeoutMs: 10_000,
          intervalMs: 100,
        },
      );
    },
  };
}
