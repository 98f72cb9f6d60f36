import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { createCertificateAuthority, issueCertificate } from '../pki/certificates.ts';
import {
  caPromotionDelayMs,
  issuedBy,
  nextCaSinceAnnotation,
  planServingCertificate,
  readStoredPki,
  type StoredPki,
  splitPems,
  storedPkiSecret,
} from './serving-certificate.ts';

const dayMs = 86_400_000;
const names = { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] };
const where = { namespace: 'winfleet-system', secretName: 'winfleet-webhook-tls' };
const fp = (pem: string) => new X509Certificate(pem).fingerprint256;
const expiry = (pem: string) => new Date(new X509Certificate(pem).validTo).getTime();

/** Stores and reloads, as a Secret round trip would. */
const roundTrip = (pki: StoredPki) => readStoredPki(storedPkiSecret(pki, where, '1'));

test('the CA rotates in two steps: prepared next to the current one, promoted after a delay, the old one dropped when it expires', async () => {
  const t0 = Date.now();
  let clock = t0;
  // Certificates are stamped with the real time; the clock walks ahead of it. Later CAs live
  // longer than the first so that the first one's expiry can be walked past on its own.
  const opts = (caDays: number) => ({
    ...names,
    caValidityMs: caDays * dayMs,
    certValidityMs: 365 * dayMs,
    now: () => new Date(clock),
  });
  const created = await planServingCertificate(undefined, opts(10));
  assert.equal(created.result.changed, 'created');
  assert.ok(created.write);
  const ca1 = created.pki.caCert;
  assert.deepEqual(splitPems(created.result.caBundle).map(fp), [fp(ca1)]);
  assert.ok(issuedBy(created.result.certPem, ca1));

  // Not due yet: nothing changes, nothing is written.
  clock = t0 + 1 * dayMs;
  const quiet = await planServingCertificate(roundTrip(created.pki), opts(10));
  assert.equal(quiet.result.changed, 'unchanged');
  assert.equal(quiet.write, false);
  assert.equal(quiet.result.certPem, created.result.certPem);

  // The CA's renewal point (2/3 of 10 days): the next CA is prepared and trusted, not used.
  clock = t0 + 7 * dayMs;
  const prepared = await planServingCertificate(roundTrip(quiet.pki), opts(100));
  assert.equal(prepared.result.changed, 'prepared-ca');
  assert.ok(prepared.write);
  const ca2 = prepared.pki.nextCaCert!;
  assert.ok(ca2 && fp(ca2) !== fp(ca1));
  assert.equal(prepared.pki.caCert, ca1, 'the current CA still signs');
  assert.equal(prepared.pki.nextCaSince?.getTime(), clock);
  assert.deepEqual(splitPems(prepared.result.caBundle).map(fp), [fp(ca1), fp(ca2)]);
  assert.equal(prepared.result.certPem, created.result.certPem, 'the served certificate stays');
  assert.ok(issuedBy(prepared.result.certPem, ca1));
  const delay = caPromotionDelayMs(ca2);
  assert.equal(delay, 60 * 60_000, 'a 100-day CA waits the 1 h cap');
  assert.equal(prepared.result.renewAt.getTime(), clock + delay, 'looks again at the promotion');

  // Another call within the delay keeps the same next CA.
  clock += delay - 1000;
  const waiting = await planServingCertificate(roundTrip(prepared.pki), opts(100));
  assert.equal(waiting.result.changed, 'unchanged');
  assert.equal(waiting.write, false);
  assert.equal(fp(waiting.pki.nextCaCert!), fp(ca2));
  assert.ok(issuedBy(waiting.result.certPem, ca1));

  // After the delay: promoted; the serving certificate is re-issued by it; both trusted.
  clock += 2000;
  const promoted = await planServingCertificate(roundTrip(waiting.pki), opts(100));
  assert.equal(promoted.result.changed, 'renewed-ca');
  assert.equal(fp(promoted.pki.caCert), fp(ca2));
  assert.equal(promoted.pki.nextCaCert, undefined);
  assert.equal(promoted.pki.nextCaSince, undefined);
  assert.ok(issuedBy(promoted.result.certPem, ca2));
  assert.ok(!issuedBy(promoted.result.certPem, ca1), 'same CA name, different key');
  assert.deepEqual(splitPems(promoted.result.caBundle).map(fp), [fp(ca2), fp(ca1)]);
  assert.equal(promoted.result.renewAt.getTime(), expiry(ca1), 'looks again when ca1 expires');

  // The old CA expires: dropped from the bundle, the rest stays.
  clock = expiry(ca1) + 1000;
  const dropped = await planServingCertificate(roundTrip(promoted.pki), opts(100));
  assert.equal(dropped.result.changed, 'updated-bundle');
  assert.ok(dropped.write);
  assert.deepEqual(splitPems(dropped.result.caBundle).map(fp), [fp(ca2)]);
  assert.equal(dropped.result.certPem, promoted.result.certPem);
});

test('a Secret written by the earlier format (no next CA) loads and is kept as it is', async () => {
  const ca = await createCertificateAuthority('winfleet-webhook-ca', 3650);
  const old = await createCertificateAuthority('winfleet-webhook-ca', 3650);
  const tls = await issueCertificate(ca, { ...names, commonName: 'localhost', usage: 'server' });
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const bundle = `${ca.certPem}\n${old.certPem}`;
  const secret: k8s.V1Secret = {
    metadata: { name: where.secretName, namespace: where.namespace, resourceVersion: '7' },
    data: {
      'ca.crt': b64(ca.certPem),
      'ca.key': b64(ca.keyPem),
      'ca-bundle.crt': b64(bundle),
      'tls.crt': b64(tls.certPem),
      'tls.key': b64(tls.keyPem),
    },
  };
  const stored = readStoredPki(secret);
  assert.ok(stored);
  assert.equal(stored.nextCaCert, undefined);
  const plan = await planServingCertificate(stored, names);
  assert.equal(plan.result.changed, 'unchanged');
  assert.equal(plan.write, false);
  assert.equal(plan.result.certPem, tls.certPem);
  assert.deepEqual(splitPems(plan.result.caBundle).map(fp), [fp(ca.certPem), fp(old.certPem)]);
  // Written back, it keeps the same keys and adds none while no next CA exists.
  assert.deepEqual(
    Object.keys(storedPkiSecret(plan.pki, where).data ?? {}).sort(),
    Object.keys(secret.data ?? {}).sort(),
  );
});

test('the Secret is read strictly: garbage in the bundle is dropped, a malformed time restarts the delay, half a next CA is prepared again', async () => {
  let clock = Date.now();
  const opts = { ...names, caValidityMs: 10 * dayMs, now: () => new Date(clock) };
  const created = await planServingCertificate(undefined, opts);
  clock += 7 * dayMs;
  const prepared = await planServingCertificate(created.pki, opts);
  const secret = storedPkiSecret(prepared.pki, where, '3');
  assert.equal(
    secret.metadata?.annotations?.[nextCaSinceAnnotation],
    new Date(clock).toISOString(),
  );
  secret.data!['ca-bundle.crt'] = Buffer.from(
    `${prepared.result.caBundle}\n-----BEGIN CERTIFICATE-----\nMIIBnotacert\n-----END CERTIFICATE-----\n`,
  ).toString('base64');
  secret.metadata!.annotations![nextCaSinceAnnotation] = '2020-01-01';
  const stored = readStoredPki(secret)!;
  assert.equal(stored.bundle.length, 2, 'the unparsable certificate is dropped');
  assert.equal(stored.nextCaSince, undefined, 'only the exact form written is accepted');
  // Even far beyond the delay, an unknown start time is not taken as "long ago".
  clock += 2 * 60 * 60_000;
  const restarted = await planServingCertificate(stored, opts);
  assert.ok(restarted.write);
  assert.equal(restarted.pki.caCert, prepared.pki.caCert, 'not promoted');
  assert.equal(restarted.pki.nextCaSince?.getTime(), clock);

  const half = readStoredPki(secret)!;
  delete half.nextCaKey;
  const again = await planServingCertificate(half, opts);
  assert.equal(again.result.changed, 'prepared-ca');
  assert.ok(again.pki.nextCaKey);
  assert.notEqual(fp(again.pki.nextCaCert!), fp(prepared.pki.nextCaCert!));
});

test('an expired CA is replaced at once (nothing is left to protect)', async () => {
  let clock = Date.now();
  const opts = { ...names, caValidityMs: 10 * dayMs, now: () => new Date(clock) };
  const created = await planServingCertificate(undefined, opts);
  clock = expiry(created.pki.caCert) + 1000;
  const replaced = await planServingCertificate(created.pki, {
    ...opts,
    caValidityMs: 100 * dayMs,
  });
  assert.equal(replaced.result.changed, 'renewed-ca');
  assert.notEqual(fp(replaced.pki.caCert), fp(created.pki.caCert));
  assert.deepEqual(splitPems(replaced.result.caBundle).map(fp), [fp(replaced.pki.caCert)]);
  assert.ok(issuedBy(replaced.result.certPem, replaced.pki.caCert));
});

test('the promotion delay scales with the CA validity between 3 s and 1 h, within half the renewal window', async () => {
  const ca = async (ms: number) =>
    (await createCertificateAuthority('winfleet-webhook-ca', ms / dayMs)).certPem;
  // 24 s (+2.4 s backdated): a tenth is 2.64 s, below the 3 s minimum.
  assert.equal(caPromotionDelayMs(await ca(24_000)), 3_000);
  // 2 min (+12 s backdated; certificate times are in whole seconds): a tenth, about 13.2 s.
  const twoMinutes = caPromotionDelayMs(await ca(120_000));
  assert.ok(twoMinutes > 12_900 && twoMinutes < 13_500, `${twoMinutes}`);
  assert.equal(caPromotionDelayMs(await ca(3650 * dayMs)), 60 * 60_000);
  // 6 s (+0.6 s): half of a third, about 1.1 s, is less than the minimum; promotion comes first.
  const sixSeconds = caPromotionDelayMs(await ca(6_000));
  assert.ok(sixSeconds > 900 && sixSeconds < 1_300, `${sixSeconds}`);
});
