import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultConfig } from '../config/winfleet-config.ts';
import { createLogger } from '../log/logger.ts';
import { createCertificateAuthority, issueCertificate } from '../pki/certificates.ts';
import type { AdmissionServer } from './admission-server.ts';
import type { ServingCertificate } from './serving-certificate.ts';
import {
  reconcileWebhookCertificates,
  trackPublished,
  type WebhookCertificatesState,
  type WebhookServiceOptions,
  whenServable,
} from './webhook-service.ts';

const ca1 = await createCertificateAuthority('winfleet-webhook-ca', 30);
const ca2 = await createCertificateAuthority('winfleet-webhook-ca', 30);
const request = { commonName: 'localhost', dnsNames: ['localhost'], usage: 'server' as const };
const from1 = await issueCertificate(ca1, request);
const from2 = await issueCertificate(ca2, request);
const serving = (certPem: string, caBundle: string): ServingCertificate => ({
  certPem,
  keyPem: '',
  caBundle,
  renewAt: new Date(),
  changed: 'unchanged',
  trustDelayMs: 3_000,
});

test('published CAs keep the time they were first published, and start over once dropped', () => {
  const one = trackPublished(new Map(), ca1.certPem, 1_000);
  const both = trackPublished(one, `${ca1.certPem}\n${ca2.certPem}`, 5_000);
  assert.deepEqual(
    [...both.values()].map((c) => c.since),
    [1_000, 5_000],
  );
  const reverted = trackPublished(both, ca1.certPem, 6_000);
  assert.equal(reverted.size, 1);
  const again = trackPublished(reverted, `${ca1.certPem}\n${ca2.certPem}`, 7_000);
  assert.deepEqual(
    [...again.values()].map((c) => c.since),
    [1_000, 7_000],
  );
});

test('a certificate is served only once its CA has been in the published bundle for the delay', async () => {
  const bundle = `${ca1.certPem}\n${ca2.certPem}`;
  const published = trackPublished(trackPublished(new Map(), ca1.certPem, 0), bundle, 10_000);
  const next = serving(from2.certPem, bundle);
  // ca2 was published at 10 s: not before 13 s, even though its bundle is current.
  assert.equal(whenServable(next, from1.certPem, published, 11_000), 13_000);
  assert.ok(whenServable(next, from1.certPem, published, 13_000) <= 13_000);
  // Another certificate of the CA served now is served at once, however new that CA.
  const from2b = await issueCertificate(ca2, request);
  assert.equal(
    whenServable(serving(from2b.certPem, bundle), from2.certPem, published, 10_001),
    10_001,
  );
  // Another certificate of the long-published ca1 is served at once.
  assert.ok(
    whenServable(serving(from1.certPem, bundle), from2.certPem, published, 11_000) <= 11_000,
  );
  // A CA missing from the published bundle (a stale replica reverted it): never.
  const stale = trackPublished(published, ca1.certPem, 11_000);
  assert.equal(whenServable(next, from1.certPem, stale, 60_000), Number.POSITIVE_INFINITY);
  // Unless what is served now is no better (its CA is not published either).
  const onlyCa2 = trackPublished(new Map(), ca2.certPem, 11_000);
  assert.ok(
    whenServable(serving(from2.certPem, ca2.certPem), from1.certPem, onlyCa2, 12_000) <= 12_000,
  );
  // A PKI that is not winfleet's (cert-manager) has no delay.
  const theirs = { ...next, trustDelayMs: undefined };
  assert.equal(whenServable(theirs, from1.certPem, new Map(), 5), 5);
});

/** A reconcile state over a stated certificate sequence, a recording server and log lines. */
function certificatesState(served: string, certificates: ServingCertificate[]) {
  const lines: string[] = [];
  const updates: string[] = [];
  const state: WebhookCertificatesState = {
    options: {
      config: () => defaultConfig(),
      operatorNamespace: 'winfleet-system',
      endpoint: { url: 'https://127.0.0.1:9443' },
      configurations: 'none',
    } as WebhookServiceOptions,
    log: createLogger({ write: (line) => lines.push(JSON.parse(line).msg) }),
    certificate: async () => certificates.shift()!,
    server: {
      updateCertificate: (cert: string) => updates.push(cert),
    } as unknown as AdmissionServer,
    servedCert: served,
    publishedBundle: '',
    reported: '',
    published: new Map(),
  };
  return { state, lines, updates };
}

test('the certificates reconcile holds back a certificate of a newly published CA, then serves one of a trusted CA', async () => {
  const bundle = `${ca1.certPem}\n${ca2.certPem}`;
  const from1b = await issueCertificate(ca1, request);
  const renewAt = new Date(Date.now() + 24 * 60 * 60_000);
  const { state, lines, updates } = certificatesState(from1.certPem, [
    { ...serving(from2.certPem, bundle), renewAt, trustDelayMs: 10 * 60_000 },
    { ...serving(from1b.certPem, ca1.certPem), renewAt, trustDelayMs: 10 * 60_000 },
  ]);
  const first = await reconcileWebhookCertificates(state);
  assert.deepEqual(updates, [], 'a CA published just now is not trusted yet');
  assert.equal(state.servedCert, from1.certPem);
  assert.equal(state.publishedBundle, bundle);
  assert.ok(first.requeueAfterMs <= 10 * 60_000, 'looked at again once the CA is trusted');
  assert.ok(
    lines.includes('holding back a renewed serving certificate until its CA is trusted a while'),
  );

  const second = await reconcileWebhookCertificates(state);
  assert.deepEqual(updates, [from1b.certPem], 'the served CA signs it: served at once');
  assert.equal(state.servedCert, from1b.certPem);
  assert.ok(lines.includes('webhook caBundle updated'));
  assert.ok(lines.includes('serving certificate renewed'));
  assert.equal(second.requeueAfterMs, 60 * 60_000, 'at least hourly');
});

test('the certificates reconcile serves cert-manager certificates at once, and without a server only publishes', async () => {
  const theirs = { ...serving(from2.certPem, ca2.certPem), trustDelayMs: undefined };
  const { state, updates } = certificatesState(from1.certPem, [theirs, theirs]);
  const { requeueAfterMs } = await reconcileWebhookCertificates(state);
  assert.deepEqual(updates, [from2.certPem]);
  assert.equal(requeueAfterMs, 1000, 'a renewal already due is looked at again after a second');

  const alone = certificatesState(from1.certPem, [theirs]);
  alone.state.server = undefined;
  await reconcileWebhookCertificates(alone.state);
  assert.equal(alone.state.servedCert, from1.certPem);
  assert.equal(alone.state.publishedBundle, ca2.certPem);
});
