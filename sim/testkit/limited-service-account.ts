/**
 * A ServiceAccount that may do exactly what a test grants it and nothing else, and a client
 * acting as it (a TokenRequest token, see service-account.ts). Code run with that client gets
 * 403 Forbidden for any request it was not meant to make, so "never reads X" or "only patches
 * Y" is checked by the real authorizer rather than by recording requests.
 */
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { createOwnedTempDir, removeOwnedTempDir } from '../cluster/owned-temp-dir.ts';
import { type AuditEvent, auditLogUpTo, requestsBy } from './audit-log.ts';
import {
  type ServiceAccountKubeconfig,
  serviceAccountKubeconfig,
  waitUntilAllowed,
} from './service-account.ts';

export interface Grant {
  /** A Role and RoleBinding in this namespace; a ClusterRole and ClusterRoleBinding without. */
  namespace?: string;
  rules: k8s.V1PolicyRule[];
}

export interface LimitedServiceAccountOptions {
  /** Where the ServiceAccount is made (it must exist). */
  namespace: string;
  name: string;
  /** What it may do; nothing at all (beyond what every authenticated user may) when empty. */
  grants: Grant[];
}

export interface LimitedServiceAccount extends ServiceAccountKubeconfig {
  /** Deletes the ServiceAccount, its roles and bindings, and its kubeconfig. */
  remove(): Promise<void>;
}

const rbacGroup = 'rbac.authorization.k8s.io';

/**
 * Makes the ServiceAccount and one role and binding per grant (named `test:<namespace>:<name>`,
 * so that tests on a shared cluster do not collide), and returns a client acting as it once
 * the authorizer allows every granted rule. `admin` must be able to grant all of it.
 */
export async function limitedServiceAccount(
  admin: k8s.KubeConfig,
  options: LimitedServiceAccountOptions,
): Promise<LimitedServiceAccount> {
  const { namespace, name, grants } = options;
  const cluster = admin.getCurrentCluster();
  if (!cluster?.server || !cluster.caFile)
    throw new Error(
      'limitedServiceAccount: the admin kubeconfig must name its cluster’s server and certificate-authority file (as sim/cluster writes it)',
    );
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  const roleName = `test:${namespace}:${name}`;
  const subjects = [{ kind: 'ServiceAccount', name, namespace }];
  const dir = await createOwnedTempDir('winfleet-sa-');
  const undo: (() => Promise<unknown>)[] = [() => removeOwnedTempDir(dir)];
  const remove = async () => {
    for (const step of undo.reverse()) await step().catch(() => {});
  };
  try {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
    undo.push(() => core.deleteNamespacedServiceAccount({ namespace, name }));
    for (const grant of grants) {
      const metadata = { name: roleName, labels: { 'winfleet.io/test': 'true' } };
      if (grant.namespace) {
        const ns = grant.namespace;
        await rbac.createNamespacedRole({ namespace: ns, body: { metadata, rules: grant.rules } });
        undo.push(() => rbac.deleteNamespacedRole({ namespace: ns, name: roleName }));
        await rbac.createNamespacedRoleBinding({
          namespace: ns,
          body: {
            metadata,
            roleRef: { apiGroup: rbacGroup, kind: 'Role', name: roleName },
            subjects,
          },
        });
        undo.push(() => rbac.deleteNamespacedRoleBinding({ namespace: ns, name: roleName }));
      } else {
        await rbac.createClusterRole({ body: { metadata, rules: grant.rules } });
        undo.push(() => rbac.deleteClusterRole({ name: roleName }));
        await rbac.createClusterRoleBinding({
          body: {
            metadata,
            roleRef: { apiGroup: rbacGroup, kind: 'ClusterRole', name: roleName },
            subjects,
          },
        });
        undo.push(() => rbac.deleteClusterRoleBinding({ name: roleName }));
      }
    }
    const account = await serviceAccountKubeconfig(admin, {
      namespace,
      name,
      server: cluster.server,
      caFile: cluster.caFile,
      path: join(dir, 'kubeconfig'),
      expirationSeconds: 3600,
    });
    await waitUntilAllowed(account.kc, grantedChecks(grants), 'the test ServiceAccount');
    return { ...account, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

/** Every granted rule, as the authorizer checks it (its first verb, resource and name). */
function grantedChecks(grants: Grant[]): k8s.V1ResourceAttributes[] {
  return grants.flatMap((grant) =>
    grant.rules.map((rule) => ({
      namespace: grant.namespace,
      verb: rule.verbs[0],
      group: rule.apiGroups?.[0],
      resource: rule.resources?.[0]?.split('/')[0],
      subresource: rule.resources?.[0]?.split('/')[1],
      name: rule.resourceNames?.[0],
    })),
  );
}

/**
 * The API requests the account made so far, as the cluster's audit log
 * (ClusterOptions.auditPolicy, e.g. serviceAccountsAuditPolicy) has them: one event per request,
 * in order, leaving out discovery and the self reviews this module and auditLogUpTo make.
 */
export async function requestsMadeBy(
  account: LimitedServiceAccount,
  auditLogPath: string,
): Promise<AuditEvent[]> {
  const events = await auditLogUpTo(auditLogPath, account.kc);
  return requestsBy(events, account.username).filter(
    (e) =>
      e.objectRef?.resource !== undefined &&
      !['selfsubjectaccessreviews', 'selfsubjectreviews'].includes(e.objectRef.resource),
  );
}
