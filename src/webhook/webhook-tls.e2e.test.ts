/**
 * The webhook's certificates renew while pods are being admitted, without a single admission
 * going unanswered; and a broken webhook never blocks the cluster.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { connect } from 'node:tls';
import * as k8s from '@kubernetes/client-node';
import { createLinuxNode, createWindowsNode } from '../../sim/testkit/nodes.ts';
import { freshCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../sim/testkit/test-operator.ts';
import { waitFor } from '../kube/wait-for.ts';
import { mutationsAnnotation } from './mutate-pod.ts';
import { webhookConfigurationName } from './webhook-configurations.ts';

function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const cert = socket.getPeerX509Certificate();
      socket.end();
      if (cert) resolve(cert.fingerprint256);
      else reject(new Error('no certificate'));
    });
    socket.on('error', reject);
  });
}

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
