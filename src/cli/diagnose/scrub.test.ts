import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { redacted, scrub } from './scrub.ts';

const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const pemBody = pem.split('\n')[1]!;
const token = 'abcdef.0123456789abcdef';
const jwt = `eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.${randomBytes(32).toString('base64url')}`;

function clean(text: string, ...secrets: string[]): string {
  const { text: out, redactions } = scrub(text);
  for (const secret of secrets) assert.ok(!out.includes(secret), `${secret} left in:\n${out}`);
  assert.ok(redactions > 0);
  return out;
}

test('a PEM private key, whole, in JSON with escaped line breaks, and cut off at the end', () => {
  clean(`key:\n${pem}\nafter`, pemBody);
  clean(JSON.stringify({ key: pem }), pemBody);
  const cut = pem.slice(0, pem.length - 40);
  clean(`log line\n${cut}`, pemBody);
  assert.match(scrub(`a\n${pem}b`).text, /BEGIN PRIVATE KEY-----\[REDACTED\]-----END/);
});

test('the base64 of a key, on one line and wrapped over lines (a secret split across lines)', () => {
  const b64 = Buffer.from(pem).toString('base64');
  clean(`data:\n  tls.key: ${b64}\n`, b64.slice(0, 40));
  const wrapped = b64.match(/.{1,76}/g)!.join('\n');
  const out = clean(`-- dump --\n${wrapped}\n-- end --`, b64.slice(0, 40), b64.slice(76, 140));
  assert.match(out, /-- dump --/);
  const escaped = b64.match(/.{1,64}/g)!.join('\\n');
  clean(`{"blob":"${escaped}"}`, b64.slice(64, 128));
});

test('kubeconfig fields: token, client-key-data, client-certificate-data', () => {
  const keyData = Buffer.from(pem).toString('base64');
  const kubeconfig = [
    'users:',
    '- name: node',
    '  user:',
    `    client-certificate-data: ${Buffer.from('CERT-bytes-that-are-long-enough').toString('base64')}`,
    `    client-key-data: ${keyData}`,
    '    token: s3cr3t-t0ken-value-here',
  ].join('\n');
  const out = clean(kubeconfig, keyData.slice(0, 40), 's3cr3t-t0ken-value-here');
  assert.match(out, /token: \[REDACTED\]/);
  assert.match(out, /client-certificate-data: \[REDACTED\]/);
});

test('bootstrap tokens, bearer tokens and JWTs, in logs and headers', () => {
  clean(`I1123 kubelet --token=${token} started`, token);
  clean(`joining with token ${token}.`, token);
  clean(`Authorization: Bearer ${jwt}`, jwt.split('.')[2]!);
  clean(`{"token":"${jwt}"}`, jwt.split('.')[2]!);
  clean(`audit: user token ${jwt}`, jwt.split('.')[2]!);
});

test('a token in a URL query and a password in URL user info', () => {
  const out = clean(
    'GET https://10.0.0.1:6443/api?watch=1&token=QWxhZGRpbjpvcGVuIHNlc2FtZQ-x&limit=5 and https://admin:hunter2hunter2@proxy:3128/',
    'QWxhZGRpbjpvcGVuIHNlc2FtZQ-x',
    'hunter2hunter2',
  );
  assert.match(out, /watch=1&token=\[REDACTED\]&limit=5/);
});

test('passwords in flags, JSON and INI', () => {
  clean('--password=Winter2026!x --db-password "Summer2026!y"', 'Winter2026!x', 'Summer2026!y');
  clean('{"Password": "P@ssw0rd-long"}', 'P@ssw0rd-long');
  clean('password = hunter2hunter2', 'hunter2hunter2');
});

test('literals the caller knows are secret, also with escaped line breaks', () => {
  const { text } = scrub(`x ${JSON.stringify(pem)} y`, { literals: [pem] });
  assert.ok(!text.includes(pemBody));
});

test('attacker side: registry credentials in containerd’s config, Docker’s config.json and Basic headers (security review 3, §13)', () => {
  const userPass = Buffer.from('robot$ci:Hunter2-registry-pass').toString('base64');
  const containerd = [
    '[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.corp.example".auth]',
    `  auth = "${userPass}"`,
    '  identitytoken = "id-token-0123456789abcdef"',
  ].join('\n');
  const dockerConfig = JSON.stringify({
    auths: { 'registry.corp.example': { auth: userPass, identitytoken: 'refresh-0123456789' } },
  });
  const log = `GET /v2/ HTTP/1.1\nAuthorization: Basic ${userPass}\nauthorization: basic ${Buffer.from('u:p4ssw0rd!').toString('base64')}`;
  for (const input of [containerd, dockerConfig, log]) {
    const { text, redactions } = scrub(input);
    assert.ok(!text.includes(userPass), text);
    assert.ok(!text.includes('Hunter2'), text);
    assert.ok(!/id-token-0123|refresh-0123/.test(text), text);
    assert.ok(redactions >= 1, text);
  }
  assert.match(scrub(log).text, /Authorization: Basic \[REDACTED\]/);
  assert.match(scrub(log).text, /authorization: basic \[REDACTED\]/);
  // Words after "Basic" are not credentials.
  const prose = 'Basic authentication is off; Basic settings were kept';
  assert.deepEqual(scrub(prose), { text: prose, redactions: 0 });
});

test('ordinary diagnostics stay as they are', () => {
  const text = [
    'SERVICE_NAME: kubelet',
    '        BINARY_PATH_NAME   : "C:\\k\\kubelet.exe" --kubeconfig=C:\\k\\kubeconfig --bootstrap-kubeconfig=C:\\k\\bootstrap-kubeconfig',
    'tokenFile: C:\\k\\token',
    '   IPv4 Address. . . . . . . . . . . : 10.0.0.4(Preferred)',
    'sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
    'uid: 6f2b88b9-1895-4c2a-9d1e-3f1e2a1b0c9d',
    'image: registry.k8s.io/kube-proxy:v1.36.5',
  ].join('\n');
  assert.deepEqual(scrub(text), { text, redactions: 0 });
  assert.equal(redacted, '[REDACTED]');
});
