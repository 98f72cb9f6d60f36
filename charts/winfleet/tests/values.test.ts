/**
 * values.schema.json: every object level refuses unknown keys and wrong types, naming the key;
 * and helm v4 reports the Kubernetes version (`.Capabilities.KubeVersion`) without flags, so the
 * chart's kubeVersion range and its version checks work on a plain `helm template`/`install`.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { runHelm } from '../../../sim/testkit/helm.ts';
import { chartDir, render, renderError } from './render.ts';

test('an unknown key is refused at every level, naming it', async () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ bogus: 1 }, /at '': additional properties 'bogus' not allowed/],
    [
      { webhook: { certManager: { bogus: true } } },
      /at '\/webhook\/certManager': additional properties 'bogus' not allowed/,
    ],
    [
      { networkPolicy: { egress: { hosts: { cidrs: ['10.0.0.0/8'], ports: [22], bogus: 1 } } } },
      /at '\/networkPolicy\/egress\/hosts': additional properties 'bogus' not allowed/,
    ],
    [
      { config: { hosts: { kubelet: { bogus: 1 } } } },
      /at '\/config\/hosts\/kubelet': additional properties 'bogus' not allowed/,
    ],
    [
      { securityContext: { privilegd: true } },
      /at '\/securityContext': additional properties 'privilegd' not allowed/,
    ],
  ];
  for (const [values, message] of cases) assert.match(await renderError(values), message);
});

test('a wrong type or value is refused, naming the key', async () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ replicaCount: 'two' }, /at '\/replicaCount': got string, want integer/],
    [{ crds: { install: 'sure' } }, /at '\/crds\/install': got string, want boolean/],
    [{ webhook: { failurePolicy: 'Sometimes' } }, /at '\/webhook\/failurePolicy'/],
    [{ webhook: { url: 'http://127.0.0.1:9443' } }, /at '\/webhook\/url'/],
    [{ image: { digest: 'latest' } }, /at '\/image\/digest'/],
    [{ config: { hosts: { concurrency: 0 } } }, /at '\/config\/hosts\/concurrency'/],
    [
      { webhook: { pullSecretNamespaces: ['Not_A_Namespace'] } },
      /at '\/webhook\/pullSecretNamespaces\/0'/,
    ],
  ];
  for (const [values, message] of cases) assert.match(await renderError(values), message);
});

test('every object the schema defines has additionalProperties: false', async () => {
  const schema = JSON.parse(await readFile(`${chartDir}/values.schema.json`, 'utf8'));
  const open: string[] = [];
  const walk = (node: Record<string, unknown>, path: string) => {
    if (node.type === 'object' && node.properties) {
      if (node.additionalProperties !== false) open.push(path || '(top)');
      for (const [key, child] of Object.entries(
        node.properties as Record<string, Record<string, unknown>>,
      )) {
        walk(child, `${path}.${key}`);
      }
    }
    if (node.items && typeof node.items === 'object')
      walk(node.items as Record<string, unknown>, `${path}[]`);
    if (node.additionalProperties && typeof node.additionalProperties === 'object') {
      walk(node.additionalProperties as Record<string, unknown>, `${path}.*`);
    }
  };
  walk(schema, '');
  assert.deepEqual(open, []);
});

test('helm v4 reports the Kubernetes version without flags; the kubeVersion range and version checks use it', async () => {
  const { stdout } = await runHelm(['version', '--template', '{{ .KubeClientVersion }}']);
  assert.match(stdout, /^v1\.(3[0-9]|[4-9][0-9])$/, 'helm v4 knows its Kubernetes client version');
  // Helm v3 built without its k8sVersionMinor ldflags would say v1.20 and fail kubeVersion >=1.30.
  assert.ok((await render()).length > 0, 'the range is met without --kube-version');
  assert.match(
    await renderError({}, { kubeVersion: '1.29.9' }),
    /chart requires kubeVersion: >=1\.30\.0-0 which is incompatible with Kubernetes v1\.29\.9/,
  );
  // Image volumes (the payload) need 1.35: refused on 1.34, rendered without a flag.
  const imagePayload = {
    payload: { source: 'image', image: { reference: 'registry.example/payload:1' } },
  };
  assert.match(
    await renderError(imagePayload, { kubeVersion: '1.34.2' }),
    /payload\.source=image mounts an image volume, which needs Kubernetes 1\.35 or later \(this is v1\.34\.2\)/,
  );
  assert.ok((await render(imagePayload)).some((o) => o.kind === 'Deployment'));
  assert.ok(
    (await render(imagePayload, { kubeVersion: '1.35.0' })).some((o) => o.kind === 'Deployment'),
  );
});

test('caBundle becomes key ca-bundle.crt of winfleet-config, beside config.yaml; none by default', async () => {
  const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const configMap = (objects: Awaited<ReturnType<typeof render>>) =>
    objects.find((o) => o.kind === 'ConfigMap' && o.metadata?.name === 'winfleet-config') as
      | { data?: Record<string, string> }
      | undefined;
  const withBundle = configMap(await render({ caBundle: pem }));
  assert.equal(withBundle?.data?.['ca-bundle.crt'], pem);
  assert.ok(withBundle?.data?.['config.yaml'] !== undefined);
  assert.equal(configMap(await render({}))?.data?.['ca-bundle.crt'], undefined);
});
