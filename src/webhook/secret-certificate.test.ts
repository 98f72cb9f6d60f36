import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasCode } from '../errors/catalog.ts';
import { createCertificateAuthority, issueCertificate } from '../pki/certificates.ts';
import { secretRecheckMs, servingCertificateFromPems } from './secret-certificate.ts';

const ca = await createCertificateAuthority('test-ca', 30);
const issued = await issueCertificate(ca, {
  commonName: 'winfleet.winfleet-system.svc',
  dnsNames: ['winfleet.winfleet-system.svc'],
  ipAddresses: [],
  usage: 'server',
  days: 10,
});
const other = await issueCertificate(ca, {
  commonName: 'other',
  dnsNames: ['other'],
  ipAddresses: [],
  usage: 'server',
  days: 10,
});
const where = 'Secret winfleet-system/winfleet-webhook-cert';

test('a cert-manager Secret: its certificate and key are served, its ca.crt is the bundle', () => {
  const now = new Date();
  const cert = servingCertificateFromPems(
    where,
    { 'tls.crt': issued.certPem, 'tls.key': issued.keyPem, 'ca.crt': ca.certPem },
    now,
  );
  assert.equal(cert.certPem, issued.certPem);
  assert.equal(cert.keyPem, issued.keyPem);
  assert.equal(cert.caBundle, ca.certPem.trim());
  assert.equal(cert.renewAt.getTime(), now.getTime() + secretRecheckMs, 'read again in a while');
  // Without ca.crt, the last certificate of the chain is trusted (self-signed: itself).
  const selfSigned = servingCertificateFromPems(where, {
    'tls.crt': `${issued.certPem}\n${ca.certPem}`,
    'tls.key': issued.keyPem,
  });
  assert.equal(selfSigned.caBundle, ca.certPem.trim());
});

test('a Secret without a usable certificate and key is refused, naming the key and the fix', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ 'tls.key': issued.keyPem }, /has no PEM certificate in tls\.crt/],
    [{ 'tls.crt': issued.certPem }, /has no tls\.key/],
    [
      { 'tls.crt': issued.certPem, 'tls.key': other.keyPem },
      /holds a tls\.key that is not the key of tls\.crt/,
    ],
    [
      { 'tls.crt': issued.certPem, 'tls.key': 'not a key' },
      /holds a tls\.key that is not the key of tls\.crt/,
    ],
    [
      {
        'tls.crt': '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----',
        'tls.key': issued.keyPem,
      },
      /not an X\.509 certificate/,
    ],
  ];
  for (const [data, message] of cases) {
    assert.throws(
      () => servingCertificateFromPems(where, data),
      (error: Error) =>
        hasCode(error, 'WF_WEBHOOK_CERTIFICATE_INVALID') &&
        message.test(error.message) &&
        error.message.startsWith(where) &&
        /--webhook-cert-secret/.test(error.message),
    );
  }
  const later = new Date(Date.now() + 20 * 86_400_000);
  assert.throws(
    () =>
      servingCertificateFromPems(
        where,
        { 'tls.crt': issued.certPem, 'tls.key': issued.keyPem },
        later,
      ),
    /holds a tls\.crt that expired/,
  );
});
