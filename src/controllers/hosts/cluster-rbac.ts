/**
 * The RBAC winfleet needs in the cluster for joining nodes, applied with server-side apply:
 * its bootstrap group may create CSRs (the built-in system:node-bootstrapper role), its nodes'
 * kube-proxies (group winfleet:kube-proxies, src/api/kube-proxy-identity.ts) have the built-in
 * system:node-proxier role, and nodes may read winfleet's published services manifests and
 * their record by name (the names come from the record, never from a label anyone could set)
 * — nothing else in its namespace.
 *
 * Installed by the Helm chart, the two ClusterRoleBindings are the chart's
 * (`clusterBindings: false`, the operator's --no-cluster-bindings): binding a ClusterRole
 * cluster-wide would need the operator to hold all it grants, or the right to bind it.
 * The Role and RoleBinding stay the operator's, as the Role's names change with each
 * published manifest; the chart lets it create and patch only those two names.
 */
import * as k8s from '@kubernetes/client-node';
import {
  kubeProxyBindingName,
  kubeProxyClusterRole,
  kubeProxyGroup,
} from '../../api/kube-proxy-identity.ts';
import { bootstrapGroup } from './bootstrap-tokens.ts';

const fieldManager = 'winfleet';

/** The Role and RoleBinding that let nodes read the published manifests (by name). */
export const nodeManifestsRbacName = 'winfleet:node-manifests';
/** The ClusterRoleBinding of the bootstrap group to system:node-bootstrapper. */
export const nodeBootstrapperBindingName = 'winfleet:node-bootstrapper';

export async function applyJoinRbac(
  kc: k8s.KubeConfig,
  operatorNamespace: string,
  manifestConfigMaps: string[],
  options: { clusterBindings?: boolean } = {},
): Promise<void> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const labels = { 'app.kubernetes.io/managed-by': 'winfleet' };
  const apply = (o: k8s.KubernetesObject) =>
    objects.patch(o, undefined, undefined, fieldManager, true, k8s.PatchStrategy.ServerSideApply);
  if (options.clusterBindings ?? true) {
    for (const binding of joinClusterBindings(labels)) await apply(binding);
  }
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: nodeManifestsRbacName, namespace: operatorNamespace, labels },
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
    metadata: { name: nodeManifestsRbacName, namespace: operatorNamespace, labels },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: nodeManifestsRbacName,
    },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:nodes' }],
  } as k8s.V1RoleBinding);
}

/**
 * The two ClusterRoleBindings (the chart's, or the operator's without it): the bootstrap group
 * to system:node-bootstrapper (its tokens may ask for node certificates), and winfleet's
 * kube-proxies to system:node-proxier.
 */
export function joinClusterBindings(labels: Record<string, string>): k8s.V1ClusterRoleBinding[] {
  return [
    groupBinding(nodeBootstrapperBindingName, 'system:node-bootstrapper', bootstrapGroup, labels),
    groupBinding(kubeProxyBindingName, kubeProxyClusterRole, kubeProxyGroup, labels),
  ];
}

/**
 * A ClusterRoleBinding `name` of ClusterRole `clusterRole` to group `group`.
 */
export function groupBinding(
  name: string,
  clusterRole: string,
  group: string,
  labels: Record<string, string>,
): k8s.V1ClusterRoleBinding {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
  };
}
