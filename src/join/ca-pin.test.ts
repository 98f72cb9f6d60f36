import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { caPublicKeyPin, parseCertificateBundle, pinnedCertificates } from './ca-pin.ts';

const fixture = (name: string) =>
  readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

// From OpenSSL (fixtures/README.md), not from this code.
const pins = {
  'ca-a.crt': 'sha256:779e02b29905ad34c557aa7f17466bf3c1c70d308712a146151e4fc51d0d2768',
  'ca-b.crt': 'sha256:5de12c820cf003f1f0e0baa527a32f39cdbe321ad46a285a69a3154f8ebc0aaf',
  'ca-rsa.crt': 'sha256:637736b16c1837ef1536bb1e98decaf1dce3901be4867b54b58ead1de92ccaef',
};

test('the pin is the SHA-256 of the SubjectPublicKeyInfo, as kubeadm and OpenSSL compute it', () => {
  for (const [file, pin] of Object.entries(pins)) {
    const [certificate] = parseCertificateBundle(fixture(file));
    assert.equal(caPublicKeyPin(certificate!), pin, file);
  }
});

test('only the certificates of a bundle that match the pin are kept', () => {
  const bundle = parseCertificateBundle(fixture('ca-a.crt') + fixture('ca-b.crt'));
  assert.equal(bundle.length, 2);
  const kept = pinnedCertificates(bundle, pins['ca-b.crt']);
  assert.equal(kept.length, 1);
  assert.equal(kept[0]!.subject, 'CN=test-cluster-ca-b');
  assert.deepEqual(pinnedCertificates(bundle, `sha256:${'0'.repeat(64)}`), []);
});

test('a bundle with anything but certificates is refused', () => {
  assert.throws(() => parseCertificateBundle(''), /holds no PEM certificate/);
  assert.throws(
    () => parseCertificateBundle(`${fixture('ca-a.crt')}\nhello`),
    /text other than PEM CERTIFICATE blocks/,
  );
  assert.throws(
    () => parseCertificateBundle('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'),
    /certificate 1 does not parse/,
  );
});
