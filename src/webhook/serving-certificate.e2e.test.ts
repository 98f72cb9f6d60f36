/**
 * The webhook PKI Secret on a real API server: the two-step CA rotation walked through with a
 * clock, and replicas renewing at the same moment converging on one Secret.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { sharedCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import {
  ensureServingCertificate,
  issuedBy,
  readStoredPki,
  type ServingCertificateOptions,
  splitPems,
} from './serving-certificate.ts';

const dayMs = 86_400_000;
const fp = (pem: string) => new X509Certificate(pem).fingerprint256;
const expiry = (pem: string) => new Date(new X509Certificate(pem).validTo).getTime();

async function setup(prefix: string) {
  const { kc } = await sharedCluster();
  const namespace = await testNamespace(kc, prefix);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const t0 = Date.now();
  const clock = { now: t0 };
  // Certificates carry the real time; the clock walks ahead of it. CAs made after the first
  // live longer, so the first one's expiry can be walked past on its own.
  const options = (caDays: number): ServingCertificateOptions => ({
    namespace,
    secretName: 'winfleet-webhook-tls',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    caValidityMs: caDays * dayMs,
    certValidityMs: 365 * dayMs,
    now: () => new Date(clock.now),
  });
  const stored = async () => {
    const secret = await core.readNamespacedSecret({ name: 'winfleet-webhook-tls', namespace });
    return { secret, pki: readStoredPki(secret)! };
  };
  return { kc, t0, clock, options, stored };
}

test('the CA rotates in two steps in the Secret: prepared, promoted after the delay, the old one dropped on expiry', async () => {
  const { kc, t0, clock, options, stored } = await setup('pki-walk');

  const created = await ensureServingCertificate(kc, options(10));
  assert.equal(created.changed, 'created');
  const s1 = await stored();
  const ca1 = s1.pki.caCert;
  assert.equal(s1.pki.nextCaCert, undefined);
  assert.deepEqual(s1.pki.bundle.map(fp), [fp(ca1)]);
  assert.equal(s1.pki.tlsCert, created.certPem);
  assert.ok(issuedBy(created.certPem, ca1));

  // At the CA's renewal point: the next CA joins the bundle; the serving certificate stays.
  clock.now = t0 + 7 * dayMs;
  const prepared = await ensureServingCertificate(kc, options(100));
  assert.equal(prepared.changed, 'prepared-ca');
  const s2 = await stored();
  const ca2 = s2.pki.nextCaCert!;
  assert.ok(ca2, 'next-ca.crt is in the Secret');
  assert.ok(s2.pki.nextCaKey, 'next-ca.key is in the Secret');
  assert.equal(s2.pki.caCert, ca1, 'the current CA still signs');
  assert.deepEqual(s2.pki.bundle.map(fp), [fp(ca1), fp(ca2)]);
  assert.equal(s2.pki.tlsCert, created.certPem);
  assert.ok(issuedBy(s2.pki.tlsCert!, ca1));
  assert.equal(prepared.caBundle, s2.pki.bundle.join('\n'));
  const promoteAt = prepared.renewAt.getTime();
  assert.ok(promoteAt > clock.now, 'the promotion is due later');

  // Before the delay is over nothing is written.
  clock.now = promoteAt - 1000;
  const waiting = await ensureServingCertificate(kc, options(100));
  assert.equal(waiting.changed, 'unchanged');
  assert.equal(
    (await stored()).secret.metadata?.resourceVersion,
    s2.secret.metadata?.resourceVersion,
  );

  // Promoted: the serving certificate comes from the new CA; both are trusted.
  clock.now = promoteAt;
  const promoted = await ensureServingCertificate(kc, options(100));
  assert.equal(promoted.changed, 'renewed-ca');
  const s3 = await stored();
  assert.equal(fp(s3.pki.caCert), fp(ca2));
  assert.equal(s3.pki.nextCaCert, undefined);
  assert.equal(s3.secret.data?.['next-ca.key'], undefined, 'the next key is not left behind');
  assert.ok(issuedBy(s3.pki.tlsCert!, ca2));
  assert.equal(s3.pki.tlsCert, promoted.certPem);
  assert.deepEqual(s3.pki.bundle.map(fp), [fp(ca2), fp(ca1)]);

  // The old CA expired: dropped.
  clock.now = expiry(ca1) + 1000;
  const dropped = await ensureServingCertificate(kc, options(100));
  assert.equal(dropped.changed, 'updated-bundle');
  const s4 = await stored();
  assert.deepEqual(s4.pki.bundle.map(fp), [fp(ca2)]);
  assert.equal(s4.pki.tlsCert, promoted.certPem);
});

test('two replicas renewing at the same moment end with one Secret that trusts the CA signing tls.crt', async () => {
  const { kc, t0, clock, options, stored } = await setup('pki-race');
  await ensureServingCertificate(kc, options(10));

  // Both at the renewal point: each makes a next CA; one write wins, the other adopts it.
  clock.now = t0 + 7 * dayMs;
  const [a, b] = await Promise.all([
    ensureServingCertificate(kc, options(100)),
    ensureServingCertificate(kc, options(100)),
  ]);
  const prepared = await stored();
  assert.ok(prepared.pki.nextCaCert);
  assert.equal(a.caBundle, b.caBundle, 'both publish the same bundle');
  assert.equal(a.caBundle, prepared.pki.bundle.join('\n'));
  assert.equal(splitPems(a.caBundle).length, 2, 'one next CA, not two');
  assert.equal(a.certPem, prepared.pki.tlsCert);
  assert.equal(b.certPem, prepared.pki.tlsCert);
  assert.ok(splitPems(a.caBundle).some((ca) => issuedBy(prepared.pki.tlsCert!, ca)));

  // Both at the promotion point: each would re-issue; they converge on one certificate.
  clock.now = a.renewAt.getTime();
  const [c, d] = await Promise.all([
    ensureServingCertificate(kc, options(100)),
    ensureServingCertificate(kc, options(100)),
  ]);
  const promoted = await stored();
  assert.equal(fp(promoted.pki.caCert), fp(prepared.pki.nextCaCert!));
  assert.equal(c.certPem, promoted.pki.tlsCert);
  assert.equal(d.certPem, promoted.pki.tlsCert);
  assert.equal(c.caBundle, d.caBundle);
  assert.ok(issuedBy(promoted.pki.tlsCert!, promoted.pki.caCert));
  assert.ok(splitPems(c.caBundle).some((ca) => fp(ca) === fp(promoted.pki.caCert)));
  assert.equal(splitPems(c.caBundle).length, 2);
});
