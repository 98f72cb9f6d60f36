/**
 * The credentials flanneld runs with: the ServiceAccount kube-flannel/flannel bound to a
 * ClusterRole with exactly the rules of upstream's manifest (flannel v0.28.10
 * Documentation/kube-flannel.yml: pods get; nodes get, list, watch; nodes/status patch), and a
 * TokenRequest token in a kubeconfig that points at the namespace's API relay. Chosen over the
 * admin kubeconfig so that the test also proves flanneld needs nothing its real deployment is not
 * granted: a request outside those rules would be refused by the real authorizer.
 */
import type * as k8s from '@kubernetes/client-node';
import { refuseSharedCluster } from '../testkit/test-cluster.ts';
import { createInNetnsAccount, type InNetnsAccount } from './in-netns-account.ts';

export const flannelNamespace = 'kube-flannel';
export const flannelServiceAccount = 'flannel';

/** kube-flannel.yml's ClusterRole rules. */
export const flannelClusterRoleRules: k8s.V1PolicyRule[] = [
  { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
];

export type FlannelAccount = InNetnsAccount;

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
  return createInNetnsAccount(admin, {
    namespace: flannelNamespace,
    createNamespace: true,
    serviceAccount: flannelServiceAccount,
    clusterRole: 'flannel',
    rules: flannelClusterRoleRules,
    labels: { 'k8s-app': 'flannel' },
    kubeconfigPath,
  });
}
