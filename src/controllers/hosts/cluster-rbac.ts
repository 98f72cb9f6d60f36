/**
 * The RBAC winfleet needs in the cluster for joining nodes, applied with server-side apply:
 * its bootstrap group may create CSRs (the built-in system:node-bootstrapper role), its nodes'
 * kube-proxies (group winfleet:kube-proxies, src/api/kube-proxy-identity.ts) have the built-in
 * system:node-proxier role, and nodes and winfleet's bootstrap group (hosts joining by
 * command read them with their join token, before they are nodes) may read by name winfleet's
 * published services manifests and their record (the names come from the record, never from a
 * label anyone could set) and the public key of the operator's node commands, the winfleet-join ConfigMap and the payload's pull Secret when there
 * is one — nothing else in its namespace. Where winfleet made kube-public/cluster-info, anyone
 * may read it (as kubeadm lets them): a joining host reads it before it trusts the cluster.
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
import { commandKeyConfigMapName } from '../../api/node-commands.ts';
import { bootstrapGroup } from '../../join/bootstrap-tokens.ts';
import { joinInfoConfigMapName } from '../../join/join-info.ts';

const fieldManager = 'winfleet';

/** The Role and RoleBinding that let nodes read the published manifests (by name). */
export const nodeManifestsRbacName = 'winfleet:node-manifests';
/** The ClusterRoleBinding of the bootstrap group to system:node-bootstrapper. */
export const nodeBootstrapperBindingName = 'winfleet:node-bootstrapper';
/** The Role and RoleBinding that let joining hosts and nodes read winfleet-join (by name). */
export const joinInfoRbacName = 'winfleet:join-info';
/** The Role and RoleBinding in kube-public that let anyone read cluster-info (by name). */
export const clusterInfoReaderRbacName = 'winfleet:cluster-info-reader';

const labels = { 'app.kubernetes.io/managed-by': 'winfleet' };

/** Who reads what winfleet publishes for nodes: its nodes, and hosts joining with its tokens. */
function readersOfPublished(): k8s.RbacV1Subject[] {
  return [
    { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:nodes' },
    { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: bootstrapGroup },
  ];
}

/** Server-side apply with winfleet's field manager. */
export function applier(kc: k8s.KubeConfig) {
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  return (o: k8s.KubernetesObject) =>
    objects.patch(o, undefined, undefined, fieldManager, true, k8s.PatchStrategy.ServerSideApply);
}

export async function applyJoinRbac(
  kc: k8s.KubeConfig,
  operatorNamespace: string,
  manifestConfigMaps: string[],
  options: { clusterBindings?: boolean } = {},
): Promise<void> {
  const apply = applier(kc);
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
        // And the public key that checks the operator's commands (src/api/node-commands.ts).
        resourceNames: [...new Set([...manifestConfigMaps, commandKeyConfigMapName])].sort(),
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
    subjects: readersOfPublished(),
  } as k8s.V1RoleBinding);
}

/**
 * The Role and RoleBinding `winfleet:join-info`: nodes and winfleet's bootstrap group may get
 * the winfleet-join ConfigMap and, when the payload has one, its pull Secret — by name, nothing
 * else. Applied by the winfleet-join controller whenever the pull Secret's name changes.
 */
export async function applyJoinInfoRbac(
  kc: k8s.KubeConfig,
  operatorNamespace: string,
  pullSecretName: string | undefined,
): Promise<void> {
  const apply = applier(kc);
  const rules: k8s.V1PolicyRule[] = [
    {
      apiGroups: [''],
      resources: ['configmaps'],
      verbs: ['get'],
      resourceNames: [joinInfoConfigMapName],
    },
  ];
  if (pullSecretName) {
    rules.push({
      apiGroups: [''],
      resources: ['secrets'],
      verbs: ['get'],
      resourceNames: [pullSecretName],
    });
  }
  const metadata = { name: joinInfoRbacName, namespace: operatorNamespace, labels };
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata,
    rules,
  } as k8s.V1Role);
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata,
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: joinInfoRbacName },
    subjects: readersOfPublished(),
  } as k8s.V1RoleBinding);
}

/**
 * The Role and RoleBinding `winfleet:cluster-info-reader` in kube-public: anyone, anonymous
 * included, may get the ConfigMap cluster-info and nothing else — what kubeadm grants with its
 * own Role where it made cluster-info. A joining host reads it before it has any credential
 * the cluster knows, and trusts it only once a token's signature and the CA hash check out.
 * The chart renders the same two objects (then the operator, --no-cluster-bindings, does not).
 */
export function clusterInfoReaderRbac(
  objectLabels: Record<string, string>,
): [k8s.V1Role, k8s.V1RoleBinding] {
  const metadata = {
    name: clusterInfoReaderRbacName,
    namespace: 'kube-public',
    labels: objectLabels,
  };
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata,
      rules: [
        {
          apiGroups: [''],
          resources: ['configmaps'],
          verbs: ['get'],
          resourceNames: ['cluster-info'],
        },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata,
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: clusterInfoReaderRbacName,
      },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'system:anonymous' }],
    },
  ];
}

/** Applies clusterInfoReaderRbac (the operator's own, without the chart). */
export async function applyClusterInfoReaderRbac(kc: k8s.KubeConfig): Promise<void> {
  const apply = applier(kc);
  for (const object of clusterInfoReaderRbac(labels)) await apply(object);
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
