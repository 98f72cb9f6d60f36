/**
 * Pods' image pull secrets read from the real API server by a ServiceAccount with the chart's
 * pull-secret rights (get Secrets and ServiceAccounts), in a private cluster whose audit log
 * lists every request that ServiceAccount made.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { type AuditEvent, serviceAccountsAuditPolicy } from '../../sim/testkit/audit-log.ts';
import {
  limitedServiceAccount,
  requestsMadeBy,
} from '../../sim/testkit/limited-service-account.ts';
import { freshCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { apiPullSecrets } from './pod-images.ts';

const cluster = await freshCluster(undefined, { auditPolicy: serviceAccountsAuditPolicy });
after(() => cluster.stop());
const { kc: admin } = cluster;
const auditLog = cluster.auditLogPath!;
const core = admin.makeApiClient(k8s.CoreV1Api);

const operatorNamespace = await testNamespace(admin, 'winfleet');
const apps = await testNamespace(admin, 'apps');
const other = await testNamespace(admin, 'other');
const dockerConfig = (namespace: string) =>
  JSON.stringify({
    auths: { 'registry.example': { auth: Buffer.from(namespace).toString('base64') } },
  });
// The same pull secrets and ServiceAccount in both namespaces: what differs is only where the
// webhook may look.
for (const namespace of [apps, other]) {
  for (const name of ['regcred', 'sa-cred', 'unused'])
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name },
        type: 'kubernetes.io/dockerconfigjson',
        stringData: { '.dockerconfigjson': dockerConfig(namespace) },
      },
    });
  await core.createNamespacedServiceAccount({
    namespace,
    body: { metadata: { name: 'app' }, imagePullSecrets: [{ name: 'sa-cred' }] },
  });
}

const pod = (namespace: string): k8s.V1Pod => ({
  metadata: { name: 'p', namespace },
  spec: { containers: [], imagePullSecrets: [{ name: 'regcred' }], serviceAccountName: 'app' },
});

/** A webhook ServiceAccount that may read pull secrets in both namespaces. */
async function webhookAccount(t: { after(fn: () => Promise<void>): void }, name: string) {
  const rules = [{ apiGroups: [''], resources: ['secrets', 'serviceaccounts'], verbs: ['get'] }];
  const account = await limitedServiceAccount(admin, {
    namespace: operatorNamespace,
    name,
    grants: [apps, other].map((namespace) => ({ namespace, rules })),
  });
  t.after(() => account.remove());
  return account;
}

const described = (requests: AuditEvent[]) =>
  requests
    .map(
      (e) =>
        `${e.verb} ${e.objectRef?.resource} ${e.objectRef?.namespace}/${e.objectRef?.name} ${e.responseStatus?.code}`,
    )
    .sort();

test('pull secrets are read from the pod’s namespace: the pod’s and its ServiceAccount’s, only those', async (t) => {
  const sa = await webhookAccount(t, 'webhook-all');
  const secrets = await apiPullSecrets(sa.kc)(pod(apps), apps);
  assert.deepEqual(secrets.map((s) => s.source).sort(), [
    `secret ${apps}/regcred`,
    `secret ${apps}/sa-cred`,
  ]);
  for (const s of secrets) assert.equal(s.config, dockerConfig(apps));
  assert.deepEqual(described(await requestsMadeBy(sa, auditLog)), [
    `get secrets ${apps}/regcred 200`,
    `get secrets ${apps}/sa-cred 200`,
    `get serviceaccounts ${apps}/app 200`,
  ]);
});

test('limited to some namespaces, pods elsewhere are looked up without credentials and nothing is asked of the API', async (t) => {
  const sa = await webhookAccount(t, 'webhook-limited');
  const source = apiPullSecrets(sa.kc, [apps]);
  assert.equal((await source(pod(apps), apps)).length, 2);
  // The account could read them in `other`, but was told not to look there.
  assert.deepEqual(await source(pod(other), other), []);
  assert.deepEqual(await apiPullSecrets(sa.kc, [])(pod(apps), apps), []);
  const requests = await requestsMadeBy(sa, auditLog);
  assert.deepEqual(
    requests.filter((e) => e.objectRef?.namespace !== apps).map((e) => e.requestURI),
    [],
    'no request for namespaces it may not read',
  );
  assert.equal(requests.length, 3, described(requests).join('\n'));
});
