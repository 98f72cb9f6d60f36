/**
 * What lets the API server use the kubelet API (`kubectl logs`, exec, port-forward): its
 * kubelet client certificate's user bound to ClusterRole system:kubelet-api-admin, which a
 * kubelet's webhook authorizer checks with a SubjectAccessReview. The binding is kubeadm's
 * (cmd/kubeadm/app/phases/bootstraptoken/node/tlsbootstrap.go AllowAPIServerToAccessKubeletAPI).
 */
import * as k8s from '@kubernetes/client-node';
import { isAlreadyExists } from '../../src/kube/client.ts';
import { kubeletClientCommonName } from './cluster-pki.ts';

export const kubeletApiAdminBinding = 'kubeadm:apiserver-kubelet-client';

/** Creates the binding (an existing one is kept). */
export async function grantKubeletApiAccess(kc: k8s.KubeConfig): Promise<void> {
  try {
    await kc.makeApiClient(k8s.RbacAuthorizationV1Api).createClusterRoleBinding({
      body: {
        metadata: { name: kubeletApiAdminBinding },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'system:kubelet-api-admin',
        },
        subjects: [
          { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: kubeletClientCommonName },
        ],
      },
    });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
}
