/**
 * The chart's webhook configurations are what the operator would build from the same
 * configuration (src/webhook/webhook-configurations.ts), so the operator never has a reason to
 * change more than their caBundle; the URL and Service variants; the cert-manager variant.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { parseConfig } from '../../../src/config/winfleet-config.ts';
import { webhookConfigurations } from '../../../src/webhook/webhook-configurations.ts';
import { type K8sObject, namespace, only, operatorContainer, render } from './render.ts';

/** The webhooks without the caBundle, which the operator or cert-manager fills in. */
function webhooksOf(object: unknown): unknown {
  return (
    (object as { webhooks: unknown }).webhooks as { clientConfig: Record<string, unknown> }[]
  ).map((w) => {
    const { caBundle: _ca, ...clientConfig } = w.clientConfig;
    return { ...w, clientConfig };
  });
}

const configs: [string, Record<string, unknown>, Record<string, unknown>][] = [
  ['defaults', {}, {}],
  [
    'excluded namespaces, opt-out label, timeout, Fail',
    {
      webhook: {
        excludedNamespaces: ['kube-system', 'monitoring', namespace],
        optOutLabel: { key: 'example.com/no-windows', value: 'true' },
        timeoutSeconds: 3,
      },
    },
    { failurePolicy: 'Fail' },
  ],
  ['no excluded namespaces', { webhook: { excludedNamespaces: [] } }, {}],
];

for (const [name, config, webhookValues] of configs) {
  for (const url of ['', 'https://winfleet.example.com:9443/']) {
    test(`the webhook configurations equal the operator’s (${name}; ${url ? 'URL' : 'Service'})`, async () => {
      const objects = await render({ config, webhook: { ...webhookValues, url } });
      const configText = only(objects, 'ConfigMap', 'winfleet-config').data['config.yaml'];
      const endpoint = url
        ? { url }
        : { service: { namespace, name: 'winfleet-webhook', port: 443 } };
      const [mutating, validating] = webhookConfigurations(
        parseConfig(configText),
        namespace,
        endpoint,
        '',
      );
      assert.deepEqual(
        webhooksOf(only(objects, 'MutatingWebhookConfiguration')),
        webhooksOf(mutating),
      );
      assert.deepEqual(
        webhooksOf(only(objects, 'ValidatingWebhookConfiguration')),
        webhooksOf(validating),
      );
      for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
        const object = only(objects, kind);
        assert.equal(object.metadata.name, 'winfleet-pods');
        assert.equal(
          object.webhooks[0].clientConfig.caBundle,
          undefined,
          'no caBundle until the operator sets it',
        );
      }
    });
  }
}

test('the release namespace and kube-system are never sent to the webhook, whatever the config says', async () => {
  const objects = await render(
    { config: { webhook: { excludedNamespaces: ['kube-system'] } } },
    { namespace: 'ops' },
  );
  for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
    const [expression] = only(objects, kind).webhooks[0].namespaceSelector.matchExpressions;
    assert.deepEqual(expression, {
      key: 'kubernetes.io/metadata.name',
      operator: 'NotIn',
      values: ['kube-system', 'ops'],
    });
  }
  assert.equal(only(objects, 'MutatingWebhookConfiguration').webhooks[0].failurePolicy, 'Ignore');
});

test('webhook.url: the configurations call the URL, the operator runs with --webhook-url', async () => {
  const url = 'https://127.0.0.1:19443';
  const objects = await render({ webhook: { url } });
  assert.deepEqual(only(objects, 'ValidatingWebhookConfiguration').webhooks[0].clientConfig, {
    url: `${url}/validate/pods`,
  });
  assert.deepEqual(only(objects, 'MutatingWebhookConfiguration').webhooks[0].clientConfig, {
    url: `${url}/mutate/pods`,
  });
  const args = operatorContainer(objects).args as string[];
  assert.ok(args.includes(`--webhook-url=${url}`));
  assert.ok(args.includes('--webhook-configurations=patch'));
  assert.ok(args.includes('--mode=controllers'));
});

test('cert-manager: a self-signed Issuer and a Certificate for the Service, CA injection, the webhook’s pods mounting its Secret', async () => {
  const objects = await render({ webhook: { certManager: { enabled: true } } });
  const issuer = only(objects, 'Issuer');
  assert.deepEqual(issuer.spec, { selfSigned: {} });
  const certificate = only(objects, 'Certificate');
  assert.equal(certificate.spec.secretName, 'winfleet-webhook-cert');
  assert.deepEqual(certificate.spec.dnsNames, [
    `winfleet-webhook.${namespace}.svc`,
    `winfleet-webhook.${namespace}.svc.cluster.local`,
  ]);
  assert.deepEqual(certificate.spec.issuerRef, {
    name: issuer.metadata.name,
    kind: 'Issuer',
    group: 'cert-manager.io',
  });
  for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
    assert.equal(
      only(objects, kind).metadata.annotations?.['cert-manager.io/inject-ca-from'],
      `${namespace}/${certificate.metadata.name}`,
    );
  }
  // cert-manager keeps the certificate and the caBundle: the operator has nothing to do for
  // the webhook, whose pods mount the Secret.
  const args = operatorContainer(objects).args as string[];
  assert.ok(args.includes('--no-webhook'));
  assert.ok(!args.some((a) => a.startsWith('--mode=')));
  const webhook = only(objects, 'Deployment', 'winfleet-webhook').spec.template.spec;
  assert.equal(
    webhook.volumes.find((v: { name: string }) => v.name === 'webhook-tls').secret.secretName,
    'winfleet-webhook-cert',
  );
  const noCertManager = await render();
  for (const kind of ['Issuer', 'Certificate']) {
    assert.equal(noCertManager.filter((o: K8sObject) => o.kind === kind).length, 0);
  }
});

test('cert-manager with an issuerRef and a webhook URL: no Issuer of the chart, the URL host in the certificate', async () => {
  const objects = await render({
    webhook: {
      url: 'https://10.0.0.5:9443',
      certManager: { enabled: true, issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer' } },
    },
  });
  assert.equal(objects.filter((o) => o.kind === 'Issuer').length, 0);
  const certificate = only(objects, 'Certificate');
  assert.deepEqual(certificate.spec.issuerRef, {
    name: 'corp-ca',
    kind: 'ClusterIssuer',
    group: 'cert-manager.io',
  });
  assert.deepEqual(certificate.spec.ipAddresses, ['10.0.0.5']);
  const named = only(
    await render({
      webhook: { url: 'https://winfleet.example.com:9443', certManager: { enabled: true } },
    }),
    'Certificate',
  );
  assert.ok(named.spec.dnsNames.includes('winfleet.example.com'));
  assert.equal(named.spec.ipAddresses, undefined);
});

test('the configuration the chart writes parses as the operator’s configuration', async () => {
  const values = {
    config: {
      images: { mirrors: { 'mcr.microsoft.com': [{ endpoint: 'https://mirror.example.com' }] } },
      hosts: { namespaces: ['team-a'], apiServer: 'https://k8s.example.com:6443' },
    },
  };
  const text = only(await render(values), 'ConfigMap', 'winfleet-config').data['config.yaml'];
  const parsed = parseConfig(text);
  assert.deepEqual(parsed.hosts.namespaces, ['team-a']);
  assert.equal(parsed.webhook.validationFailurePolicy, 'Ignore');
  assert.ok(stringify(parsed).length > 0);
});
