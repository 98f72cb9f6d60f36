/**
 * The credentials a real component in a lab namespace runs with, as its upstream manifest
 * grants them: a ServiceAccount bound to a ClusterRole with exactly the manifest's rules, and a
 * TokenRequest token in a kubeconfig that points at the namespace's API relay. Chosen over the
 * admin kubeconfig so that a test also proves the component needs nothing its real deployment
 * is not granted: a request outside those rules is refused by the real authorizer.
 */
import * as k8s from '@kubernetes/client-node';
import { serviceAccountKubeconfig, waitUntilAllowed } from '../testkit/service-account.ts';
import { inNetnsApiServer } from './api-relay.ts';

export interface InNetnsAccountOptions {
  namespace: string;
  /** Create the namespace too (false: it exists, as kube-system does). */
  createNamespace: boolean;
  serviceAccount: string;
  /** The ClusterRole's and its binding's name. */
  clusterRole: string;
  rules: k8s.V1PolicyRule[];
  labels: Record<string, string>;
  /** Where the kubeconfig is written. */
  kubeconfigPath: string;
}

export interface InNetnsAccount {
  /** A kubeconfig for use inside a namespace with an API relay (inNetnsApiServer). */
  inNetnsKubeconfig: string;
  username: string;
}

/**
 * Creates the objects and waits until the authorizer allows each rule (every verb on the first
 * resource of each rule) to the account's token.
 */
export async function createInNetnsAccount(
  admin: k8s.KubeConfig,
  o: InNetnsAccountOptions,
): Promise<InNetnsAccount> {
  const cluster = admin.getCurrentCluster();
  if (!cluster?.caFile)
    throw new Error('the admin kubeconfig must name its certificate-authority file');
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  const labels = o.labels;
  if (o.createNamespace)
    await core.createNamespace({ body: { metadata: { name: o.namespace, labels } } });
  await core.createNamespacedServiceAccount({
    namespace: o.namespace,
    body: { metadata: { name: o.serviceAccount, labels } },
  });
  await rbac.createClusterRole({
    body: { metadata: { name: o.clusterRole, labels }, rules: o.rules },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: o.clusterRole, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: o.clusterRole },
      subjects: [{ kind: 'ServiceAccount', name: o.serviceAccount, namespace: o.namespace }],
    },
  });
  const account = await serviceAccountKubeconfig(admin, {
    namespace: o.namespace,
    name: o.serviceAccount,
    server: inNetnsApiServer,
    caFile: cluster.caFile,
    path: o.kubeconfigPath,
    expirationSeconds: 3600,
  });
  // The same token, to the API server as the test process reaches it, to ask the authorizer.
  const token = account.kc.getCurrentUser()?.token;
  if (!token) throw new Error(`the ${o.serviceAccount} kubeconfig holds no token`);
  const direct = new k8s.KubeConfig();
  direct.loadFromOptions({
    clusters: [{ name: 'c', server: cluster.server, caFile: cluster.caFile }],
    users: [{ name: account.username, token }],
    contexts: [{ name: 'c', cluster: 'c', user: account.username }],
    currentContext: 'c',
  });
  await waitUntilAllowed(
    direct,
    o.rules.flatMap((rule) =>
      rule.verbs.map((verb) => ({
        verb,
        group: rule.apiGroups?.[0] || undefined,
        resource: rule.resources![0]!.split('/')[0],
        subresource: rule.resources![0]!.split('/')[1],
      })),
    ),
    o.serviceAccount,
  );
  return { inNetnsKubeconfig: o.kubeconfigPath, username: account.username };
}
