import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { hasCode } from '../errors/catalog.ts';
import { trustClusterInfo, verifyDetachedJws } from './cluster-info.ts';

const fixture = (name: string) =>
  readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

const token = { id: 'abcdef', secret: '0123456789abcdef' };
const pinA = 'sha256:779e02b29905ad34c557aa7f17466bf3c1c70d308712a146151e4fc51d0d2768';
const pinB = 'sha256:5de12c820cf003f1f0e0baa527a32f39cdbe321ad46a285a69a3154f8ebc0aaf';
// Detached JWS computed with OpenSSL (fixtures/README.md) for token abcdef.0123456789abcdef.
const header = 'eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9';
const signed = {
  a: `${header}..LP6rXo4zFZ9n7qG8fJkBIbMudF3jQHf1b29L25YdF84`,
  b: `${header}..yZU5rfnESmDPbRkIo_I3uzp9JIinBMorGwiSKVkARY4`,
  twoClusters: `${header}..61Zxy1PaWim_chfLUiJFH16kApIDpuBywZzkuoAUeY8`,
  // cluster-info-a signed with another token's secret (zyxwvu9876543210), same key id.
  aOtherSecret: `${header}..QZeIFOGGpgzTT9KWvCVPxTdtBOndSD7t5CCGJR86_GY`,
};
const kubeconfigA = fixture('cluster-info-a.kubeconfig');

function data(kubeconfig: string, jws: string, id = token.id): Record<string, string> {
  return { kubeconfig, [`jws-kubeconfig-${id}`]: jws };
}

function refusedWith(pattern: RegExp) {
  return (error: unknown) => {
    assert.ok(hasCode(error, 'WF_JOIN_REFUSED'), String(error));
    assert.match((error as Error).message, pattern);
    assert.ok(!(error as Error).message.includes(token.secret), 'no secret in the message');
    return true;
  };
}

test("the upstream vector of k8s.io/cluster-bootstrap's jws_test.go verifies", () => {
  const content = 'Hello from the other side. I must have called a thousand times.';
  const upstream = { id: 'joshua', secret: 'my voice is my passcode' };
  verifyDetachedJws(
    'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8',
    content,
    upstream,
  );
  assert.throws(
    () =>
      verifyDetachedJws(
        'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8foo',
        content,
        upstream,
      ),
    refusedWith(/does not match its kubeconfig/),
  );
});

test('a cluster-info signed for the token with the pinned CA is trusted', () => {
  const trusted = trustClusterInfo(data(kubeconfigA, signed.a), token, pinA);
  assert.equal(trusted.server, 'https://127.0.0.1:6443');
  assert.equal(trusted.kubeconfig, kubeconfigA);
  assert.equal(trusted.caPem.trim(), fixture('ca-a.crt').trim());
});

test('attacker: a cluster-info signed with another token secret is refused', () => {
  assert.throws(
    () => trustClusterInfo(data(kubeconfigA, signed.aOtherSecret), token, pinA),
    refusedWith(/signature jws-kubeconfig-abcdef does not match its kubeconfig for the join token/),
  );
});

test('attacker: a changed kubeconfig under a valid signature is refused', () => {
  const changed = kubeconfigA.replace('https://127.0.0.1:6443', 'https://127.0.0.9:6443');
  assert.throws(
    () => trustClusterInfo(data(changed, signed.a), token, pinA),
    refusedWith(/does not match its kubeconfig/),
  );
});

test('attacker: another CA with a valid signature (the token leaked) fails the pin', () => {
  const kubeconfigB = fixture('cluster-info-b.kubeconfig');
  assert.throws(
    () => trustClusterInfo(data(kubeconfigB, signed.b), token, pinA),
    refusedWith(
      new RegExp(
        `cluster CA's public key does not match --ca-cert-hash ${pinA} \\(cluster-info's CA has ${pinB}\\)`,
      ),
    ),
  );
});

test('attacker: a header with alg none, another kid or extra members is refused', () => {
  const hs = (text: string) => Buffer.from(text).toString('base64url');
  const sign = (h: string) =>
    createHmac('sha256', token.secret)
      .update(`${h}.${Buffer.from(kubeconfigA).toString('base64url')}`)
      .digest('base64url');
  const cases: [string, RegExp][] = [
    [hs('{"alg":"none","kid":"abcdef"}'), /names algorithm "none", not HS256/],
    [hs('{"alg":"HS512","kid":"abcdef"}'), /names algorithm "HS512", not HS256/],
    [hs('{"alg":"HS256","kid":"zzzzzz"}'), /names key id "zzzzzz", not the token's id "abcdef"/],
    [hs('{"alg":"HS256","kid":"abcdef","b64":false}'), /members other than alg and kid/],
    [hs('{"kid":"abcdef","alg":"HS256"}'), /members other than alg and kid|header/],
    [hs('[1]'), /not a JSON object/],
    ['%%%', /header is not base64url/],
  ];
  for (const [h, pattern] of cases) {
    // Signed correctly over the hostile header: only the header check can refuse it.
    assert.throws(
      () => trustClusterInfo(data(kubeconfigA, `${h}..${sign(h)}`), token, pinA),
      refusedWith(pattern),
      h,
    );
  }
  // alg none with an empty signature, the classic.
  assert.throws(
    () =>
      trustClusterInfo(data(kubeconfigA, `${hs('{"alg":"none","kid":"abcdef"}')}..`), token, pinA),
    refusedWith(/alg|algorithm/),
  );
  // Not detached (the payload present), or not three parts.
  const full = `${header}.${Buffer.from(kubeconfigA).toString('base64url')}.${signed.a.split('..')[1]}`;
  assert.throws(
    () => trustClusterInfo(data(kubeconfigA, full), token, pinA),
    refusedWith(/not a detached JWS/),
  );
  assert.throws(
    () => trustClusterInfo(data(kubeconfigA, 'abc'), token, pinA),
    refusedWith(/not a detached JWS/),
  );
});

test('a padded or re-encoded signature is refused (canonical base64url only)', () => {
  assert.throws(
    () => trustClusterInfo(data(kubeconfigA, `${signed.a}=`), token, pinA),
    refusedWith(/does not match/),
  );
  const standard = signed.a.replace(/-/g, '+').replace(/_/g, '/');
  if (standard !== signed.a) {
    assert.throws(
      () => trustClusterInfo(data(kubeconfigA, standard), token, pinA),
      refusedWith(/does not match/),
    );
  }
});

test('attacker: extra clusters in the kubeconfig are refused even when signed and pinned', () => {
  assert.throws(
    () =>
      trustClusterInfo(
        data(fixture('cluster-info-two-clusters.kubeconfig'), signed.twoClusters),
        token,
        pinA,
      ),
    refusedWith(/names 2 clusters; a cluster-info kubeconfig names exactly one/),
  );
});

test('a kubeconfig without inline CA data or https server is refused', () => {
  const sign = (kubeconfig: string) => {
    const h = header;
    return `${h}..${createHmac('sha256', token.secret)
      .update(`${h}.${Buffer.from(kubeconfig).toString('base64url')}`)
      .digest('base64url')}`;
  };
  const fileCa = kubeconfigA.replace(
    /certificate-authority-data: \S+/,
    'certificate-authority: /etc/ca.crt',
  );
  assert.throws(
    () => trustClusterInfo(data(fileCa, sign(fileCa)), token, pinA),
    refusedWith(/no certificate-authority-data/),
  );
  const http = kubeconfigA.replace('https://', 'http://');
  assert.throws(
    () => trustClusterInfo(data(http, sign(http)), token, pinA),
    refusedWith(/no https:\/\/ server/),
  );
  const notYaml = 'clusters: [\n';
  assert.throws(
    () => trustClusterInfo(data(notYaml, sign(notYaml)), token, pinA),
    refusedWith(/not YAML/),
  );
  const alias = 'a: &x [1]\nclusters: *x\n';
  assert.throws(
    () => trustClusterInfo(data(alias, sign(alias)), token, pinA),
    refusedWith(/not plain YAML \(Alias/),
  );
  const junkCa = kubeconfigA.replace(
    /certificate-authority-data: \S+/,
    `certificate-authority-data: ${Buffer.from('hello').toString('base64')}`,
  );
  assert.throws(
    () => trustClusterInfo(data(junkCa, sign(junkCa)), token, pinA),
    refusedWith(/holds text other than PEM|no PEM/),
  );
});

test('a bundle of the pinned CA and another keeps only the pinned one', () => {
  const both = Buffer.from(fixture('ca-a.crt') + fixture('ca-b.crt')).toString('base64');
  const kubeconfig = kubeconfigA.replace(
    /certificate-authority-data: \S+/,
    `certificate-authority-data: ${both}`,
  );
  const jws = `${header}..${createHmac('sha256', token.secret)
    .update(`${header}.${Buffer.from(kubeconfig).toString('base64url')}`)
    .digest('base64url')}`;
  const trusted = trustClusterInfo(data(kubeconfig, jws), token, pinA);
  assert.equal(trusted.caPem.trim(), fixture('ca-a.crt').trim());
});

test('missing keys are refused', () => {
  assert.throws(
    () => trustClusterInfo({ 'jws-kubeconfig-abcdef': signed.a }, token, pinA),
    refusedWith(/has no kubeconfig/),
  );
  assert.throws(
    () => trustClusterInfo({ kubeconfig: kubeconfigA }, token, pinA),
    refusedWith(/has no signature jws-kubeconfig-abcdef/),
  );
});
