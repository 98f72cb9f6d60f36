/**
 * The webhook's certificates renew while pods are being admitted, without a single admission
 * going unanswered; and a broken webhook never blocks the cluster.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { connect } from 'node:tls';
import * as k8s from '@kubernetes/client-node';
import { freePort } from '../../sim/cluster/free-port.ts';
import { createLinuxNode, createWindowsNode } from '../../sim/testkit/nodes.ts';
import { freshCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../sim/testkit/test-operator.ts';
import { parseConfig } from '../config/winfleet-config.ts';
import { waitFor } from '../kube/wait-for.ts';
import { silentLogger } from '../log/logger.ts';
import { createWebhookMetrics } from './metrics.ts';
import { mutationsAnnotation } from './mutate-pod.ts';
import { issuedBy, splitPems } from './serving-certificate.ts';
import { webhookConfigurationName } from './webhook-configurations.ts';
import { startWebhookService } from './webhook-service.ts';

function servedCertificate(port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const cert = socket.getPeerX509Certificate();
      socket.end();
      if (cert) resolve(cert);
      else reject(new Error('no certificate'));
    });
    socket.on('error', reject);
  });
}

const servedFingerprint = async (port: number) => (await servedCertificate(port)).fingerprint256;

const windowsPod = (name: string): k8s.V1Pod => ({
  metadata: { name },
  spec: {
    nodeSelector: { 'kubernetes.io/os': 'windows' },
    containers: [{ name: 'c', image: 'example.invalid/app:1' }],
  },
});

test('certificates and the CA renew under load without dropping an admission', async (t) => {
  const { kc } = await freshCluster(t);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  // A 9 s serving certificate renews every ~6 s; the CA (24 s) renews once in the run.
  const operator = await startTestOperator(kc, {
    certValidityMs: 9_000,
    caValidityMs: 24_000,
    config: { images: { lookupBudgetMs: 200 } },
  });
  t.after(() => operator.stop());
  const namespace = await testNamespace(kc, 'tls');
  const port = operator.webhook!.port;
  const mutated = async (name: string) => {
    const pod = await core.createNamespacedPod({
      namespace,
      body: windowsPod(name),
      dryRun: 'All',
    });
    return Boolean(pod.metadata?.annotations?.[mutationsAnnotation]);
  };
  // The API server calls the webhook only once its informer has the webhook configurations
  // the operator publishes as it starts; a pod created before that is never sent to the
  // webhook. Count from the first pod the webhook mutated: what is measured is rotation.
  await waitFor(async () => (await mutated('probe')) || undefined, {
    description: 'the API server to send pods to the webhook',
    timeoutMs: 30_000,
  });
  const fingerprints = new Set<string>();
  const secretCas = new Set<string>();
  let admitted = 0;
  const unmutated: string[] = [];
  const failures: string[] = [];
  const deadline = Date.now() + 20_000;
  for (let i = 0; i < 400 && Date.now() < deadline; i++) {
    try {
      const name = `p-${i}`;
      if (!(await mutated(name))) unmutated.push(name);
      admitted++;
    } catch (error) {
      failures.push(String((error as { body?: string }).body ?? error));
    }
    if (i % 10 === 0) {
      fingerprints.add(await servedFingerprint(port));
      const secret = await core.readNamespacedSecret({
        name: 'winfleet-webhook-tls',
        namespace: operator.namespace,
      });
      secretCas.add(secret.data?.['ca.crt'] ?? '');
    }
    await new Promise((r) => setTimeout(r, 40));
  }
  assert.deepEqual(failures, []);
  assert.ok(admitted > 100, `admitted ${admitted}`);
  assert.deepEqual(
    unmutated,
    [],
    'every admission reached the webhook (failurePolicy Ignore would hide misses)',
  );
  assert.ok(
    fingerprints.size >= 3,
    `the serving certificate changed at least twice (${fingerprints.size} seen)`,
  );
  assert.ok(secretCas.size >= 2, `the CA was replaced at least once (${secretCas.size} seen)`);
  const ca = new X509Certificate(Buffer.from([...secretCas].at(-1)!, 'base64'));
  assert.ok(new Date(ca.validTo).getTime() > Date.now(), 'the CA in use is valid');
});

test('replicas publishing bundles from one Secret, one of them lagging: the CA rotates without dropping an admission', async (t) => {
  const { kc } = await freshCluster(t);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  const config = 'images:\n  lookupBudgetMs: 200\n';
  const operator = await startTestOperator(kc, {
    certValidityMs: 9_000,
    caValidityMs: 24_000,
    config,
  });
  t.after(() => operator.stop());
  const port = operator.webhook!.port;
  // A second replica: its own server (never called), the same Secret, and it publishes the
  // webhook configurations (the API server calls one URL, the first replica's) with the
  // bundle it reads, on its own timers: the race of two replicas' views of the Secret. Both
  // may renew at the same moment; the Secret's resourceVersion makes one of them win.
  const parsed = parseConfig(config);
  const second = await startWebhookService({
    kc,
    operatorNamespace: operator.namespace,
    config: () => parsed,
    facts: {
      readyWindowsBuilds: () => [],
      readyHyperVBuilds: () => [],
      readyWindowsNodeCounts: () => new Map(),
      runtimeClasses: () => undefined,
      namespaceOptedOut: () => false,
      gmsaCredentialSpecs: async () => undefined,
    },
    isCompatible: () => false,
    host: '127.0.0.1',
    port: await freePort(),
    endpoint: { url: `https://127.0.0.1:${port}` },
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    certValidityMs: 9_000,
    caValidityMs: 24_000,
    metrics: createWebhookMetrics(),
    log: silentLogger,
  });
  t.after(() => second.stop());
  const namespace = await testNamespace(kc, 'tls2');
  const mutated = async (name: string) => {
    const pod = await core.createNamespacedPod({
      namespace,
      body: windowsPod(name),
      dryRun: 'All',
    });
    return Boolean(pod.metadata?.annotations?.[mutationsAnnotation]);
  };
  await waitFor(async () => (await mutated('probe')) || undefined, {
    description: 'the API server to send pods to the webhook',
    timeoutMs: 30_000,
  });
  const servingCas = new Set<string>();
  const untrusted: string[] = [];
  let admitted = 0;
  const unmutated: string[] = [];
  const failures: string[] = [];
  const deadline = Date.now() + 20_000;
  // A third replica that lags: it publishes the bundle it read from the Secret 0.7 s earlier,
  // over and over (a stale view, well within the 3 s promotion delay of a 24 s CA).
  const laggingErrors: string[] = [];
  let lagged = 0;
  const lagging = (async () => {
    for (let i = 0; i < 100 && Date.now() < deadline; i++) {
      try {
        const secret = await core.readNamespacedSecret({
          name: 'winfleet-webhook-tls',
          namespace: operator.namespace,
        });
        const bundle = secret.data?.['ca-bundle.crt'] ?? '';
        await new Promise((r) => setTimeout(r, 700));
        const mutating = await admission.readMutatingWebhookConfiguration({
          name: webhookConfigurationName,
        });
        for (const w of mutating.webhooks ?? []) w.clientConfig.caBundle = bundle;
        await admission.replaceMutatingWebhookConfiguration({
          name: webhookConfigurationName,
          body: mutating,
        });
        const validating = await admission.readValidatingWebhookConfiguration({
          name: webhookConfigurationName,
        });
        for (const w of validating.webhooks ?? []) w.clientConfig.caBundle = bundle;
        await admission.replaceValidatingWebhookConfiguration({
          name: webhookConfigurationName,
          body: validating,
        });
        lagged++;
      } catch (error) {
        // Another replica wrote in between (409): as a replica would, try again next round.
        if ((error as { code?: number }).code !== 409) laggingErrors.push(String(error));
      }
    }
  })();
  for (let i = 0; i < 400 && Date.now() < deadline; i++) {
    try {
      const name = `p-${i}`;
      if (!(await mutated(name))) unmutated.push(name);
      admitted++;
    } catch (error) {
      failures.push(String((error as { body?: string }).body ?? error));
    }
    if (i % 5 === 0) {
      // The certificate served must chain to a CA of the bundle published now.
      const served = (await servedCertificate(port)).toString();
      const mutating = await admission.readMutatingWebhookConfiguration({
        name: webhookConfigurationName,
      });
      const bundle = Buffer.from(
        mutating.webhooks?.[0]?.clientConfig.caBundle ?? '',
        'base64',
      ).toString('utf8');
      const issuer = splitPems(bundle).find((ca) => issuedBy(served, ca));
      if (issuer) servingCas.add(new X509Certificate(issuer).fingerprint256);
      else untrusted.push(`sample ${i}`);
    }
    await new Promise((r) => setTimeout(r, 40));
  }
  await lagging;
  assert.deepEqual(laggingErrors, []);
  assert.ok(lagged > 5, `the lagging replica published ${lagged} times`);
  assert.deepEqual(failures, []);
  assert.ok(admitted > 100, `admitted ${admitted}`);
  assert.deepEqual(unmutated, [], 'every admission reached the webhook');
  assert.deepEqual(untrusted, [], 'the served certificate always chained to the published bundle');
  assert.ok(servingCas.size >= 2, `a certificate of a new CA was served (${servingCas.size} CAs)`);
});

test('a webhook that is down or untrusted does not block pods; Fail mode still spares kube-system and the operator', async (t) => {
  const { kc } = await freshCluster(t);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  await createLinuxNode(kc, { name: 'linux-1' });
  await createWindowsNode(kc, { name: 'win-1', release: '2022' });
  const operator = await startTestOperator(kc, {
    config: { webhook: { validationFailurePolicy: 'Fail' } },
  });
  const namespace = await testNamespace(kc, 'down');
  await waitFor(
    async () =>
      (await admission.readValidatingWebhookConfiguration({ name: webhookConfigurationName })) &&
      true,
    {
      description: 'webhook configurations',
    },
  );
  // Mutating webhook: a wrong caBundle (as in the gMSA webhook incident) must not block anything.
  const mutating = await admission.readMutatingWebhookConfiguration({
    name: webhookConfigurationName,
  });
  mutating.webhooks![0]!.clientConfig.caBundle = Buffer.from(
    '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
  ).toString('base64');
  await operator.stop(); // the webhook is gone too; its configurations stay behind
  await admission.replaceMutatingWebhookConfiguration({
    name: webhookConfigurationName,
    body: mutating,
  });

  const started = Date.now();
  const linux = await core.createNamespacedPod({
    namespace: 'kube-system',
    body: { metadata: { name: 'repair' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
  });
  assert.ok(linux.metadata?.uid, 'kube-system is never sent to the webhook');
  const own = await core.createNamespacedPod({
    namespace: operator.namespace,
    body: {
      metadata: { name: 'operator-2' },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    },
  });
  assert.ok(own.metadata?.uid, "the operator's namespace is never sent to the webhook");
  assert.ok(Date.now() - started < 5_000, 'no waiting on a dead webhook');
  // Elsewhere, Fail mode (chosen by the administrator) refuses while validation is down.
  await assert.rejects(
    core.createNamespacedPod({ namespace, body: windowsPod('w') }),
    /failed calling webhook .*pods\.validate\.winfleet\.io.*connection refused/,
  );
  // With the default Ignore, nothing is blocked.
  const validating = await admission.readValidatingWebhookConfiguration({
    name: webhookConfigurationName,
  });
  validating.webhooks![0]!.failurePolicy = 'Ignore';
  await admission.replaceValidatingWebhookConfiguration({
    name: webhookConfigurationName,
    body: validating,
  });
  await waitFor(
    async () =>
      (await core.createNamespacedPod({ namespace, body: windowsPod(`w-${Date.now()}`) })).metadata
        ?.uid,
    {
      description: 'pods to be admitted with the webhook down and failurePolicy Ignore',
      timeoutMs: 10_000,
    },
  );
});
