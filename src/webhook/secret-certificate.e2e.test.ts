/**
 * The webhook's certificate Secret read from the real API server by a ServiceAccount that may
 * only get Secrets in the operator's namespace (as the chart grants it with cert-manager): a
 * write, or a read anywhere else, would be answered 403 and fail the test.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { limitedServiceAccount } from '../../sim/testkit/limited-service-account.ts';
import { sharedCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { hasCode } from '../errors/catalog.ts';
import { httpStatus } from '../kube/client.ts';
import { createCertificateAuthority, issueCertificate } from '../pki/certificates.ts';
import { readServingCertificateSecret } from './secret-certificate.ts';

const ca = await createCertificateAuthority('test-ca', 30);
const issue = (commonName: string) =>
  issueCertificate(ca, {
    commonName,
    dnsNames: [commonName],
    ipAddresses: [],
    usage: 'server',
    days: 10,
  });

test('the Secret is read from the operator’s namespace and never written; a missing one says how it comes', async (t) => {
  const { kc: admin } = await sharedCluster();
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const namespace = await testNamespace(admin, 'webhook-cert');
  const sa = await limitedServiceAccount(admin, {
    namespace,
    name: 'winfleet',
    grants: [{ namespace, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }] }],
  });
  t.after(() => sa.remove());

  // As cert-manager writes it: a kubernetes.io/tls Secret with the issuing CA in ca.crt.
  const issued = await issue(`winfleet.${namespace}.svc`);
  const name = 'winfleet-webhook-cert';
  const secretData = (cert: { certPem: string; keyPem: string }) => ({
    'tls.crt': cert.certPem,
    'tls.key': cert.keyPem,
    'ca.crt': ca.certPem,
  });
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name }, type: 'kubernetes.io/tls', stringData: secretData(issued) },
  });

  const cert = await readServingCertificateSecret(sa.kc, namespace, name);
  assert.equal(cert.certPem, issued.certPem);
  assert.equal(cert.keyPem, issued.keyPem);
  assert.equal(cert.caBundle, ca.certPem.trim());

  // Renewed in place by its issuer: the next read serves the new certificate.
  const renewed = await issue(`winfleet.${namespace}.svc`);
  await core.replaceNamespacedSecret({
    namespace,
    name,
    body: { metadata: { name }, type: 'kubernetes.io/tls', stringData: secretData(renewed) },
  });
  const before = (await core.readNamespacedSecret({ namespace, name })).metadata?.resourceVersion;
  assert.equal(
    (await readServingCertificateSecret(sa.kc, namespace, name)).certPem,
    renewed.certPem,
  );
  assert.equal(
    (await core.readNamespacedSecret({ namespace, name })).metadata?.resourceVersion,
    before,
    'the Secret is left as it was',
  );

  // The account's rights are what makes "never written" hold: any write is refused.
  await assert.rejects(
    sa.kc
      .makeApiClient(k8s.CoreV1Api)
      .patchNamespacedSecret(
        { namespace, name, body: { metadata: { labels: { touched: 'yes' } } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
    (error) => httpStatus(error) === 403,
  );

  await assert.rejects(
    readServingCertificateSecret(sa.kc, namespace, 'missing'),
    (error: Error) =>
      hasCode(error, 'WF_WEBHOOK_CERTIFICATE_INVALID') &&
      new RegExp(
        `Secret ${namespace}/missing does not exist \\(yet\\): cert-manager creates it`,
      ).test(error.message),
  );
});
