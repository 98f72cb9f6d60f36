/**
 * kube-proxy's identity on a winfleet node, shared by the agent that requests its certificate
 * (src/agent/kube-proxy-credentials.ts), the approver that decides it
 * (src/controllers/csr/kube-proxy-csr-policy.ts) and the ClusterRoleBinding that gives its
 * group what kube-proxy needs (src/controllers/hosts/cluster-rbac.ts and the Helm chart).
 *
 * kube-proxy cannot run with the node's own credentials: the Node authorizer and the
 * system:node role let a node list Services but not discovery.k8s.io EndpointSlices, so
 * kube-proxy gets 403 and programs no Service. Its own certificate is an ordinary API client
 * certificate (signer kubernetes.io/kube-apiserver-client) whose group is bound to the
 * built-in ClusterRole system:node-proxier.
 */

/** The signer of kube-proxy's client certificate. */
export const kubeProxySignerName = 'kubernetes.io/kube-apiserver-client';
/** The prefix of kube-proxy's user name (the CN): the node's name follows. */
export const kubeProxyUserPrefix = 'winfleet:kube-proxy:';
/** kube-proxy's only group (the O), bound to system:node-proxier. */
export const kubeProxyGroup = 'winfleet:kube-proxies';
/** The ClusterRoleBinding of kubeProxyGroup to kubeProxyClusterRole. */
export const kubeProxyBindingName = 'winfleet:kube-proxies';
/** The built-in ClusterRole kube-proxy needs (Services, EndpointSlices, Nodes, Events). */
export const kubeProxyClusterRole = 'system:node-proxier';
/**
 * The usages requested, exactly: the kube-apiserver-client signer requires client auth and
 * allows digital signature and key encipherment; an ECDSA key has no use for the latter.
 */
export const kubeProxyUsages: readonly string[] = ['digital signature', 'client auth'];

/** kube-proxy's user name (certificate CN) on node `nodeName`. */
export function kubeProxyUserName(nodeName: string): string {
  return `${kubeProxyUserPrefix}${nodeName}`;
}
