import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { pemToDer } from '../../src/agent/windows/root-certificates.ts';
import { createCertificateAuthority } from '../../src/pki/certificates.ts';
import { CertificateStore, notACertificate } from './certificate-store.ts';

test('the store computes the thumbprint itself, adds once and removes by thumbprint', async () => {
  const ca = await createCertificateAuthority('Corp Root CA');
  const store = new CertificateStore();
  const thumbprint = store.add(pemToDer(ca.certPem));
  assert.equal(thumbprint, new X509Certificate(ca.certPem).fingerprint.replaceAll(':', ''));
  assert.equal(store.add(pemToDer(ca.certPem)), thumbprint);
  assert.equal(store.list().length, 1);
  assert.match(store.list()[0]!.subject, /CN=Corp Root CA/);
  assert.ok(store.remove(thumbprint.toLowerCase()));
  assert.ok(!store.remove(thumbprint), 'a missing one: nothing to remove');
  assert.deepEqual(store.list(), []);
});

test('bytes that are not a DER certificate are refused as X509Certificate2 refuses them', async () => {
  const ca = await createCertificateAuthority('Corp Root CA');
  const store = new CertificateStore();
  assert.throws(() => store.add(Buffer.from('junk')), new RegExp(notACertificate));
  assert.throws(() => store.add(Buffer.from(ca.certPem)), new RegExp(notACertificate));
  assert.deepEqual(store.list(), []);
});
