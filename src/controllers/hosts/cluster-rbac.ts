/**
 * The RBAC winfleet needs in the cluster for joining nodes, applied with server-side apply:
 * its bootstrap group may create CSRs (the built-in system:node-bootstrapper role), and nodes
 * may read winfleet's published services manifests and their record by name (the names come
 * from the record, never from a label anyone could set) — nothing else in its namespace.
 */
import * as k8s from '@kubernetes/client-node';
import { bootstrapGroup } from './bootstrap-tokens.ts';

const fieldManager = 'winfleet';

export async function applyJoinRbac(
  kc: k8s.KubeConfig,
  operatorNamespace: string,
  manifestConfigMaps: string[],
): Promise<void> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const labels = { 'app.kubernetes.io/managed-by': 'winfleet' };
  const apply = (o: k8s.KubernetesObject) =>
    objects.patch(o, undefined, undefined, fieldManager, true, k8s.PatchStrategy.ServerSideApply);
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'winfleet:node-bootstrapper', labels },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'system:node-bootstrapper',
    },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: bootstrapGroup }],
  } as k8s.V1ClusterRoleBinding);
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'winfleet:node-manifests', namespace: operatorNamespace, labels },
    rules: [
      {
        apiGroups: [''],
        resources: ['configmaps'],
        verbs: ['get'],
        resourceNames: [...new Set(manifestConfigMaps)].sort(),
      },
    ],
  } as k8s.V1Role);
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'winfleet:node-manifests', namespace: operatorNamespace, labels },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'winfleet:node-manifests',
    },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:nodes' }],
  } as k8s.V1RoleBinding);
}
