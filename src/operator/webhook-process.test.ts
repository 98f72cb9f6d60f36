import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createCertificateAuthority, issueCertificate } from '../pki/certificates.ts';
import { readCertificateFiles } from './webhook-process.ts';

test('the certificate files: checked as a pair, each problem naming the flag and file, never the key', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-webhook-files-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const ca = await createCertificateAuthority('test-ca');
  const served = await issueCertificate(ca, {
    commonName: 'webhook',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const other = await issueCertificate(ca, {
    commonName: 'other',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const cert = join(dir, 'tls.crt');
  const key = join(dir, 'tls.key');
  await writeFile(cert, served.certPem);
  await writeFile(key, served.keyPem);
  assert.deepEqual(await readCertificateFiles(cert, key), {
    certPem: served.certPem,
    keyPem: served.keyPem,
  });
  // Another certificate's key (a half-swapped mount, or someone else's key): refused.
  await writeFile(key, other.keyPem);
  const refusal = await readCertificateFiles(cert, key).then(
    () => assert.fail('a key of another certificate was accepted'),
    (error: Error) => error.message,
  );
  assert.match(
    refusal,
    /--tls-cert-file .*tls\.crt with --tls-key-file holds a tls\.key that is not the key of tls\.crt/,
  );
  assert.ok(!refusal.includes('PRIVATE KEY'), 'no key material in the message');
  await writeFile(cert, 'not a certificate');
  await assert.rejects(readCertificateFiles(cert, key), /has no PEM certificate in tls\.crt/);
  await assert.rejects(readCertificateFiles(join(dir, 'missing.crt'), key), /ENOENT/);
});
