/**
 * Patch mode's decision for one existing webhook configuration (webhookConfigurationPatch): the
 * strategic merge patch it sends and what it reports, from the object as the chart installs it
 * and the objects the operator's configuration describes. Whether the API server merges that
 * patch keeping the chart's other fields, what it received (its audit log), and that the
 * operator's RBAC (get and patch, no create) is enough are webhook-configurations.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultConfig, parseConfig } from '../config/winfleet-config.ts';
import { hasCode } from '../errors/catalog.ts';
import {
  type WebhookConfiguration,
  type WebhookEndpoint,
  webhookConfigurationPatch,
  webhookConfigurations,
} from './webhook-configurations.ts';

const service = { namespace: 'winfleet-system', name: 'winfleet', port: 443 };
/** The caBundle is only carried (base64), never read: any PEM text does. */
const ca =
  '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUwebhookca\n-----END CERTIFICATE-----\n';
const caBase64 = Buffer.from(ca).toString('base64');

type Objects = ReturnType<typeof webhookConfigurations>;

/** The objects as the chart installs them: the operator's, without a caBundle. */
function installed(config = defaultConfig(), endpoint: WebhookEndpoint = { service }): Objects {
  const objects = webhookConfigurations(config, 'winfleet-system', endpoint, '');
  for (const o of objects) for (const w of o.webhooks ?? []) delete w.clientConfig.caBundle;
  return objects;
}

/** The decision for each of the two objects, mutating first. */
const decide = (current: Objects, desired: Objects) =>
  [0, 1].map((i) =>
    webhookConfigurationPatch(
      current[i] as WebhookConfiguration,
      desired[i] as WebhookConfiguration,
    ),
  );

test('patch mode sets only the caBundle of the chart’s objects', () => {
  const desired = webhookConfigurations(defaultConfig(), 'winfleet-system', { service }, ca);
  const decisions = decide(installed(), desired);
  assert.deepEqual(
    decisions.map((d) => d.differences),
    [[], []],
  );
  assert.deepEqual(
    decisions.map((d) => d.patch),
    [
      { webhooks: [{ name: 'pods.mutate.winfleet.io', clientConfig: { caBundle: caBase64 } }] },
      { webhooks: [{ name: 'pods.validate.winfleet.io', clientConfig: { caBundle: caBase64 } }] },
    ],
  );
});

test('nothing is patched when the caBundle and endpoint are already right', () => {
  const desired = webhookConfigurations(defaultConfig(), 'winfleet-system', { service }, ca);
  assert.deepEqual(decide(desired, desired), [{ differences: [] }, { differences: [] }]);
  // The Service's port as the API server defaults it: left out is 443.
  const portless = structuredClone(desired);
  for (const o of portless) for (const w of o.webhooks ?? []) delete w.clientConfig.service?.port;
  assert.deepEqual(decide(portless, desired), [{ differences: [] }, { differences: [] }]);
});

test('an endpoint the operator was told otherwise is switched whole (URL in, Service out, and back)', () => {
  const url = 'https://127.0.0.1:9443';
  const toUrl = decide(
    installed(),
    webhookConfigurations(defaultConfig(), 'winfleet-system', { url }, ca),
  );
  assert.deepEqual(
    toUrl.map((d) => d.patch),
    [
      {
        webhooks: [
          {
            name: 'pods.mutate.winfleet.io',
            clientConfig: { caBundle: caBase64, url: `${url}/mutate/pods`, service: null },
          },
        ],
      },
      {
        webhooks: [
          {
            name: 'pods.validate.winfleet.io',
            clientConfig: { caBundle: caBase64, url: `${url}/validate/pods`, service: null },
          },
        ],
      },
    ],
  );
  const [toService] = decide(
    webhookConfigurations(defaultConfig(), 'winfleet-system', { url }, ca),
    webhookConfigurations(defaultConfig(), 'winfleet-system', { service }, ca),
  );
  assert.deepEqual(toService!.patch, {
    webhooks: [
      {
        name: 'pods.mutate.winfleet.io',
        clientConfig: { service: { ...service, path: '/mutate/pods' }, url: null },
      },
    ],
  });
});

test('what the configuration decides is reported, not changed, when the chart’s objects differ', () => {
  const config = parseConfig(
    'webhook:\n  validationFailurePolicy: Fail\n  excludedNamespaces: [kube-system, monitoring]\n',
  );
  const desired = webhookConfigurations(config, 'winfleet-system', { service }, ca);
  const decisions = decide(installed(), desired);
  const differences = decisions.flatMap((d) => d.differences);
  assert.equal(differences.length, 3, differences.join('\n'));
  assert.match(
    differences.join('\n'),
    /ValidatingWebhookConfiguration winfleet-pods webhook pods\.validate\.winfleet\.io: failurePolicy is Ignore, the configuration says Fail/,
  );
  assert.match(
    differences.join('\n'),
    /namespaceSelector is .*the configuration says .*monitoring/,
  );
  // The chart's failurePolicy and namespaceSelector stay: only the caBundle is patched.
  for (const { patch } of decisions)
    for (const webhook of patch!.webhooks) {
      assert.deepEqual(
        Object.keys(webhook),
        ['name', 'clientConfig'],
        'only clientConfig is patched',
      );
      assert.deepEqual(webhook.clientConfig, { caBundle: caBase64 });
    }
});

test('a missing webhook is WF_WEBHOOK_CONFIGURATION_MISSING naming the fix', () => {
  const desired = webhookConfigurations(defaultConfig(), 'winfleet-system', { service }, ca);
  const objects = installed();
  objects[1].webhooks = [];
  assert.throws(
    () => decide(objects, desired),
    (error: Error) => {
      assert.ok(hasCode(error, 'WF_WEBHOOK_CONFIGURATION_MISSING'));
      assert.match(
        error.message,
        /ValidatingWebhookConfiguration winfleet-pods has no webhook pods\.validate\.winfleet\.io: upgrade the Helm chart/,
      );
      return true;
    },
  );
});
