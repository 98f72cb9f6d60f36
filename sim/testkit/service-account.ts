/**
 * Acting as a ServiceAccount from outside the cluster: a token from the TokenRequest API and a
 * kubeconfig holding only that token and the cluster's CA, as a pod of that ServiceAccount
 * would have (its projected token and ca.crt) and nothing else.
 */
import { writeFile } from 'node:fs/promises';
import * as k8s from '@kubernetes/client-node';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { renderKubeconfig } from '../cluster/kubeconfig.ts';
import { serviceAccountUsername } from './audit-log.ts';

export interface ServiceAccountKubeconfigOptions {
  /** Where the ServiceAccount lives. */
  namespace: string;
  name: string;
  /** The API server's URL and the file of the CA it is trusted with. */
  server: string;
  caFile: string;
  /** Where to write the kubeconfig (mode 0600: it holds a token). */
  path: string;
  /** Token lifetime (default 1 h; the API server allows no less than 10 min). */
  expirationSeconds?: number;
}

export interface ServiceAccountKubeconfig {
  path: string;
  /** The username the API server sees: system:serviceaccount:<namespace>:<name>. */
  username: string;
  kc: k8s.KubeConfig;
  expiresAt: Date;
}

/**
 * Requests a token for the ServiceAccount with `admin` (TokenRequest, `serviceaccounts/token`
 * create) and writes a kubeconfig with it. The token is never logged or returned.
 */
export async function serviceAccountKubeconfig(
  admin: k8s.KubeConfig,
  options: ServiceAccountKubeconfigOptions,
): Promise<ServiceAccountKubeconfig> {
  const { namespace, name } = options;
  const answer = await admin.makeApiClient(k8s.CoreV1Api).createNamespacedServiceAccountToken({
    namespace,
    name,
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { audiences: [], expirationSeconds: options.expirationSeconds ?? 3600 },
    },
  });
  const token = answer.status?.token;
  if (!token)
    throw new Error(
      `the TokenRequest for ServiceAccount ${namespace}/${name} returned no token; does the ServiceAccount exist?`,
    );
  const username = serviceAccountUsername(namespace, name);
  await writeFile(
    options.path,
    renderKubeconfig({ server: options.server, caFile: options.caFile, user: username, token }),
    { mode: 0o600 },
  );
  return {
    path: options.path,
    username,
    kc: loadKubeConfig(options.path),
    expiresAt: new Date(answer.status?.expirationTimestamp ?? Date.now()),
  };
}

/**
 * The API server's RBAC authorizer follows new Roles and bindings through its informers, a
 * moment after they are written: waits, as the account `kc` holds (a SelfSubjectAccessReview
 * each), until every one of `checks` is allowed.
 */
export async function waitUntilAllowed(
  kc: k8s.KubeConfig,
  checks: k8s.V1ResourceAttributes[],
  who: string,
): Promise<void> {
  const authorization = kc.makeApiClient(k8s.AuthorizationV1Api);
  for (const resourceAttributes of checks) {
    await waitFor(
      async () =>
        (
          await authorization.createSelfSubjectAccessReview({
            body: { spec: { resourceAttributes } },
          })
        ).status?.allowed === true,
      {
        description: `the authorizer to allow ${JSON.stringify(resourceAttributes)} to ${who}`,
        timeoutMs: 30_000,
      },
    );
  }
}
