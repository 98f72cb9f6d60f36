/**
 * Patch mode against the real API server, in a private cluster (the webhook configurations are
 * cluster-wide): the chart's objects are created as the chart installs them, and the operator's
 * side runs as a ServiceAccount with the chart's rights on them (get and patch, on these names
 * only; no create). The audit log records that ServiceAccount's requests to these objects at
 * Request level, so each patch's body is checked as the API server received it. (What patch
 * mode decides from two objects alone — the patch, the differences it reports, a missing
 * webhook — is webhook-configurations.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import type { AuditPolicy } from '../../sim/cluster/start-cluster.ts';
import { type AuditEvent, serviceAccountsAuditPolicy } from '../../sim/testkit/audit-log.ts';
import {
  limitedServiceAccount,
  requestsMadeBy,
} from '../../sim/testkit/limited-service-account.ts';
import { freshCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { defaultConfig, parseConfig } from '../config/winfleet-config.ts';
import { hasCode } from '../errors/catalog.ts';
import { isNotFound } from '../kube/client.ts';
import { createCertificateAuthority } from '../pki/certificates.ts';
import {
  patchWebhookConfigurations,
  type WebhookEndpoint,
  webhookConfigurationName,
  webhookConfigurations,
} from './webhook-configurations.ts';

const resources = ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'];
const group = 'admissionregistration.k8s.io';
const auditPolicy: AuditPolicy = {
  ...serviceAccountsAuditPolicy,
  rules: [
    // Request level keeps each patch's body (requestObject).
    { level: 'Request', userGroups: ['system:serviceaccounts'], resources: [{ group, resources }] },
    ...serviceAccountsAuditPolicy.rules,
  ],
};
const cluster = await freshCluster(undefined, { auditPolicy });
after(() => cluster.stop());
const { kc: admin } = cluster;
const admission = admin.makeApiClient(k8s.AdmissionregistrationV1Api);
const operatorNamespace = await testNamespace(admin, 'winfleet');
const name = webhookConfigurationName;
const service = { namespace: 'winfleet-system', name: 'winfleet', port: 443 };
const ca = (await createCertificateAuthority('webhook-ca', 30)).certPem;
const caBase64 = Buffer.from(ca).toString('base64');

type Objects = ReturnType<typeof webhookConfigurations>;

/** The objects as the chart installs them: the operator's, without a caBundle. */
function installed(config = defaultConfig(), endpoint: WebhookEndpoint = { service }): Objects {
  const objects = webhookConfigurations(config, 'winfleet-system', endpoint, '');
  for (const o of objects) for (const w of o.webhooks ?? []) delete w.clientConfig.caBundle;
  return objects;
}

/** Replaces whatever is there with `objects` (none: both deleted), as the admin. */
async function install(objects?: Objects): Promise<void> {
  // One after the other: a second request started before the first is awaited would reject
  // with nothing attached to it yet (an unhandled rejection that fails the test).
  for (const remove of [
    () => admission.deleteMutatingWebhookConfiguration({ name }),
    () => admission.deleteValidatingWebhookConfiguration({ name }),
  ])
    await remove().catch((error) => {
      if (!isNotFound(error)) throw error;
    });
  if (!objects) return;
  await admission.createMutatingWebhookConfiguration({ body: objects[0] });
  await admission.createValidatingWebhookConfiguration({ body: objects[1] });
}

/** The client's model objects as plain JSON, to compare with literals. */
const plain = <T>(value: T) => JSON.parse(JSON.stringify(value)) as T;

/** Both objects as they are now. */
async function current() {
  return [
    plain(await admission.readMutatingWebhookConfiguration({ name })),
    plain(await admission.readValidatingWebhookConfiguration({ name })),
  ] as const;
}

/** The webhooks of `objects` with the caBundle set and nothing else changed. */
const withCaBundle = (objects: Awaited<ReturnType<typeof current>>) =>
  objects.map((o) =>
    (o.webhooks as k8s.V1ValidatingWebhook[]).map((w) => ({
      ...w,
      clientConfig: { ...w.clientConfig, caBundle: caBase64 },
    })),
  );

/** A ServiceAccount with the chart's rights on the two objects (rbac.yaml). */
async function operatorAccount(t: { after(fn: () => Promise<void>): void }, account: string) {
  const sa = await limitedServiceAccount(admin, {
    namespace: operatorNamespace,
    name: account,
    grants: [
      {
        rules: [{ apiGroups: [group], resources, resourceNames: [name], verbs: ['get', 'patch'] }],
      },
    ],
  });
  t.after(() => sa.remove());
  return sa;
}

type Logged = AuditEvent & { requestObject?: unknown };

/** What the account asked of the API server, and the bodies of its patches. */
async function requestsOf(sa: Awaited<ReturnType<typeof operatorAccount>>) {
  const requests = (await requestsMadeBy(sa, cluster.auditLogPath!)) as Logged[];
  return {
    described: requests.map(
      (e) => `${e.verb} ${e.objectRef?.resource}/${e.objectRef?.name} ${e.responseStatus?.code}`,
    ),
    patches: requests.filter((e) => e.verb === 'patch').map((e) => e.requestObject),
  };
}

const getPatchBoth = [
  `get mutatingwebhookconfigurations/${name} 200`,
  `patch mutatingwebhookconfigurations/${name} 200`,
  `get validatingwebhookconfigurations/${name} 200`,
  `patch validatingwebhookconfigurations/${name} 200`,
];

test('patch mode sets only the caBundle of the chart’s objects, keeping the rest, and creates nothing', async (t) => {
  await install(installed());
  const before = await current();
  const sa = await operatorAccount(t, 'patch-ca');
  const desired = webhookConfigurations(defaultConfig(), 'winfleet-system', { service }, ca);
  assert.deepEqual(await patchWebhookConfigurations(sa.kc, desired), []);

  const now = await current();
  assert.deepEqual(
    now.map((o) => o.webhooks),
    withCaBundle(before),
    'every other field of the webhooks as the chart set it (a strategic merge by webhook name)',
  );
  assert.deepEqual(
    now.map((o) => o.metadata?.labels),
    before.map((o) => o.metadata?.labels),
  );
  const { described, patches } = await requestsOf(sa);
  assert.deepEqual(described, getPatchBoth);
  assert.deepEqual(patches, [
    { webhooks: [{ name: 'pods.mutate.winfleet.io', clientConfig: { caBundle: caBase64 } }] },
    { webhooks: [{ name: 'pods.validate.winfleet.io', clientConfig: { caBundle: caBase64 } }] },
  ]);
});

test('nothing is patched when the caBundle and endpoint are already right', async (t) => {
  const desired = webhookConfigurations(defaultConfig(), 'winfleet-system', { service }, ca);
  await install(desired);
  const before = await current();
  const sa = await operatorAccount(t, 'patch-nothing');
  assert.deepEqual(await patchWebhookConfigurations(sa.kc, desired), []);
  assert.deepEqual((await requestsOf(sa)).described, [
    `get mutatingwebhookconfigurations/${name} 200`,
    `get validatingwebhookconfigurations/${name} 200`,
  ]);
  assert.deepEqual(
    (await current()).map((o) => o.metadata?.resourceVersion),
    before.map((o) => o.metadata?.resourceVersion),
  );
});

test('an endpoint the operator was told otherwise is switched whole (URL in, Service out)', async (t) => {
  await install(installed());
  const sa = await operatorAccount(t, 'patch-url');
  const url = 'https://127.0.0.1:9443';
  const desired = webhookConfigurations(defaultConfig(), 'winfleet-system', { url }, ca);
  await patchWebhookConfigurations(sa.kc, desired);

  const [mutating, validating] = await current();
  assert.deepEqual(mutating.webhooks?.[0]?.clientConfig, {
    url: `${url}/mutate/pods`,
    caBundle: caBase64,
  });
  assert.deepEqual(validating.webhooks?.[0]?.clientConfig, {
    url: `${url}/validate/pods`,
    caBundle: caBase64,
  });
  const { described, patches } = await requestsOf(sa);
  assert.deepEqual(described, getPatchBoth);
  assert.deepEqual(patches[0], {
    webhooks: [
      {
        name: 'pods.mutate.winfleet.io',
        clientConfig: { caBundle: caBase64, url: `${url}/mutate/pods`, service: null },
      },
    ],
  });
});

test('what the configuration decides is left as the chart set it when the chart’s objects differ', async (t) => {
  await install(installed());
  const before = await current();
  const sa = await operatorAccount(t, 'patch-differences');
  const config = parseConfig(
    'webhook:\n  validationFailurePolicy: Fail\n  excludedNamespaces: [kube-system, monitoring]\n',
  );
  const desired = webhookConfigurations(config, 'winfleet-system', { service }, ca);
  // What is reported (failurePolicy, both namespaceSelectors) is webhookConfigurationPatch's:
  // webhook-configurations.test.ts. The first test shows the API server's copy of the chart's
  // objects differs from the operator's in nothing it compares.
  await patchWebhookConfigurations(sa.kc, desired);

  // The chart's failurePolicy and namespaceSelector stay; only the caBundle is set.
  assert.deepEqual(
    (await current()).map((o) => o.webhooks),
    withCaBundle(before),
  );
  const { described, patches } = await requestsOf(sa);
  assert.deepEqual(described, getPatchBoth);
  for (const patch of patches as { webhooks: Record<string, unknown>[] }[])
    for (const webhook of patch.webhooks)
      assert.deepEqual(
        Object.keys(webhook),
        ['name', 'clientConfig'],
        'only clientConfig is patched',
      );
});

test('a missing object or webhook is WF_WEBHOOK_CONFIGURATION_MISSING naming the fix, never a create', async (t) => {
  await install();
  const sa = await operatorAccount(t, 'patch-missing');
  const desired = webhookConfigurations(defaultConfig(), 'winfleet-system', { service }, ca);
  await assert.rejects(patchWebhookConfigurations(sa.kc, desired), (error: Error) => {
    assert.ok(hasCode(error, 'WF_WEBHOOK_CONFIGURATION_MISSING'));
    assert.match(
      error.message,
      /MutatingWebhookConfiguration winfleet-pods does not exist.*install or upgrade the Helm chart with webhook\.enabled=true/,
    );
    return true;
  });
  await assert.rejects(admission.readMutatingWebhookConfiguration({ name }), isNotFound);
  await assert.rejects(admission.readValidatingWebhookConfiguration({ name }), isNotFound);

  const objects = installed();
  objects[1].webhooks = [];
  await install(objects);
  await assert.rejects(
    patchWebhookConfigurations(sa.kc, desired),
    /ValidatingWebhookConfiguration winfleet-pods has no webhook pods\.validate\.winfleet\.io: upgrade the Helm chart/,
  );
  assert.deepEqual((await current())[1].webhooks ?? [], []);
  // Every request, both attempts: reads, and the one patch of the object that was there.
  assert.deepEqual((await requestsOf(sa)).described, [
    `get mutatingwebhookconfigurations/${name} 404`,
    ...getPatchBoth.slice(0, 3),
  ]);
});
