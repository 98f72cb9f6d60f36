import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { createCertificateAuthority, issueCertificate } from './certificates.ts';
import { parseCaBundle, trustedCertificateProblem } from './trusted-ca-bundle.ts';

test('a bundle of CAs, with comments, gives each CA once with its Windows thumbprint', async () => {
  const one = await createCertificateAuthority('Corp Root CA');
  const two = await createCertificateAuthority('Corp Registry CA');
  const text = `# corporate roots\n${one.certPem}\n\n# registry\n${two.certPem}${one.certPem}`;
  const { certificates, problems } = parseCaBundle(text);
  assert.deepEqual(problems, []);
  assert.equal(certificates.length, 2);
  // Node's own SHA-1 fingerprint, colons removed: what Windows shows as the thumbprint.
  const expected = new X509Certificate(one.certPem).fingerprint.replaceAll(':', '');
  assert.equal(certificates[0]!.thumbprint, expected);
  assert.match(certificates[0]!.thumbprint, /^[0-9A-F]{40}$/);
  assert.match(certificates[1]!.subject, /Corp Registry CA/);
  assert.equal(trustedCertificateProblem(certificates[0]!), undefined);
});

test('an empty bundle trusts nothing', () => {
  assert.deepEqual(parseCaBundle('\n# nothing yet\n'), { certificates: [], problems: [] });
});

test('attacker side: a leaf certificate, a private key and junk are refused, the field named', async () => {
  const ca = await createCertificateAuthority('Corp Root CA');
  const leaf = await issueCertificate(ca, { commonName: 'evil.example', usage: 'server' });
  const leafProblems = parseCaBundle(`${ca.certPem}${leaf.certPem}`).problems;
  assert.equal(leafProblems.length, 1);
  assert.match(
    leafProblems[0]!,
    /^ca-bundle\.crt block 2: "CN=evil\.example" is not a certificate authority/,
  );

  const keyProblems = parseCaBundle(`${ca.certPem}${leaf.keyPem}`).problems;
  assert.match(keyProblems[0]!, /^ca-bundle\.crt block 2: is a "PRIVATE KEY" block.*private key/);
  assert.doesNotMatch(keyProblems.join('\n'), new RegExp(leaf.keyPem.split('\n')[1]!.slice(0, 20)));

  const junk = parseCaBundle(`${ca.certPem}\nhello world\n`).problems;
  assert.match(junk[0]!, /^ca-bundle\.crt: has text outside PEM blocks/);

  const garbled = parseCaBundle('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
  assert.match(garbled.problems[0]!, /^ca-bundle\.crt block 1: is not an X\.509 certificate/);

  const notBase64 = parseCaBundle('-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n');
  assert.match(notBase64.problems[0]!, /not base64/);
  // Nothing is trusted from a bundle with a problem: no half-applied trust.
  assert.deepEqual(parseCaBundle(`${ca.certPem}${leaf.certPem}`).certificates, []);
});

test('an expired CA is refused; the agent still accepts it by thumbprint from a manifest', async () => {
  const ca = await createCertificateAuthority('Old Root CA', 1);
  const later = new Date(Date.now() + 3 * 24 * 3600 * 1000);
  assert.match(parseCaBundle(ca.certPem, 'ca-bundle.crt', later).problems[0]!, /expired/);
  const [cert] = parseCaBundle(ca.certPem).certificates;
  assert.equal(trustedCertificateProblem(cert!), undefined);
  assert.match(
    trustedCertificateProblem({ ...cert!, thumbprint: '0'.repeat(40) })!,
    /is not the certificate's/,
  );
});
