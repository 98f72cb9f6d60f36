/**
 * The credentials flanneld runs with: the ServiceAccount kube-flannel/flannel bound to a
 * ClusterRole with exactly the rules of upstream's manifest (flannel v0.28.10
 * Documentation/kube-flannel.yml: pods get; nodes get, list, watch; nodes/status patch), and a
 * TokenRequest token in a kubeconfig that points at the namespace's API relay. Chosen over the
 * admin kubeconfig so that the test also proves flanneld needs nothing its real deployment is not
 * granted: a request outside those rules would be refused by the real authorizer.
 */
import * as k8s from '@kubernetes/client-node';
import { serviceAccountKubeconfig, waitUntilAllowed } from '../testkit/service-account.ts';
import { refuseSharedCluster } from '../testkit/test-cluster.ts';
import { inNetnsApiServer } from './api-relay.ts';

export const flannelNamespace = 'kube-flannel';
export const flannelServiceAccount = 'flannel';

/** kube-flannel.yml's ClusterRole rules. */
export const flannelClusterRoleRules: k8s.V1PolicyRule[] = [
  { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
];

export interface FlannelAccount {
  /** A kubeconfig for use inside a namespace with an API relay (inNetnsApiServer). */
  inNetnsKubeconfig: string;
  username: string;
}

/**
 * Creates the namespace, ServiceAccount, ClusterRole and ClusterRoleBinding as upstream names
 * them (on a fresh cluster: flanneld acts on every Node, so the shared cluster is refused) and
 * waits until the authorizer allows each rule.
 */
export async function createFlannelAccount(
  admin: k8s.KubeConfig,
  kubeconfigPath: string,
): Promise<FlannelAccount> {
  refuseSharedCluster(admin, 'flanneld');
  const cluster = admin.getCurrentCluster();
  if (!cluster?.caFile)
    throw new Error('the admin kubeconfig must name its certificate-authority file');
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  const labels = { 'k8s-app': 'flannel' };
  await core.createNamespace({ body: { metadata: { name: flannelNamespace, labels } } });
  await core.createNamespacedServiceAccount({
    namespace: flannelNamespace,
    body: { metadata: { name: flannelServiceAccount, labels } },
  });
  await rbac.createClusterRole({
    body: { metadata: { name: 'flannel', labels }, rules: flannelClusterRoleRules },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: 'flannel', labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'flannel' },
      subjects: [
        { kind: 'ServiceAccount', name: flannelServiceAccount, namespace: flannelNamespace },
      ],
    },
  });
  const account = await serviceAccountKubeconfig(admin, {
    namespace: flannelNamespace,
    name: flannelServiceAccount,
    server: inNetnsApiServer,
    caFile: cluster.caFile,
    path: kubeconfigPath,
    expirationSeconds: 3600,
  });
  // The same token, to the API server as the test process reaches it, to ask the authorizer.
  const token = account.kc.getCurrentUser()?.token;
  if (!token) throw new Error('the flannel kubeconfig holds no token');
  const direct = new k8s.KubeConfig();
  direct.loadFromOptions({
    clusters: [{ name: 'c', server: cluster.server, caFile: cluster.caFile }],
    users: [{ name: account.username, token }],
    contexts: [{ name: 'c', cluster: 'c', user: account.username }],
    currentContext: 'c',
  });
  await waitUntilAllowed(
    direct,
    flannelClusterRoleRules.flatMap((rule) =>
      rule.verbs.map((verb) => ({
        verb,
        resource: rule.resources![0]!.split('/')[0],
        subresource: rule.resources![0]!.split('/')[1],
      })),
    ),
    'flannel',
  );
  return { inNetnsKubeconfig: kubeconfigPath, username: account.username };
}
