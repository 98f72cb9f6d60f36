import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { errorCode, type WinfleetError } from '../../errors/catalog.ts';
import { hostKeyFingerprintFromText } from './host-key.ts';
import {
  buildKeySecret,
  buildWindowsHost,
  checkHostName,
  defaultSecretName,
  redactedSecret,
  sameSpec,
} from './host-spec.ts';

const base = { address: '10.1.42.7', user: 'Administrator', sshKeyFile: 'key' };

const flagOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    assert.equal(errorCode(error), 'WF_FLAG_INVALID', String(error));
    const problem = error as WinfleetError<{ flag: string }>;
    return `${problem.details?.flag} | ${problem.message}`;
  }
  assert.fail('accepted');
};

test('a WindowsHost from the flags, with the default Secret name', () => {
  const { host, secretName } = buildWindowsHost('win-01', 'winfleet-system', {
    ...base,
    port: '2222',
    pool: 'web',
    nodeName: 'win-node-1',
    label: ['zone=a', 'example.com/tier=front'],
    hostLabel: ['pool=web'],
  });
  assert.equal(secretName, 'win-01-ssh-key');
  assert.deepEqual(host, {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name: 'win-01', namespace: 'winfleet-system', labels: { pool: 'web' } },
    spec: {
      address: '10.1.42.7',
      port: 2222,
      username: 'Administrator',
      sshKeySecretRef: { name: 'win-01-ssh-key' },
      nodeName: 'win-node-1',
      labels: { zone: 'a', 'example.com/tier': 'front' },
      pool: 'web',
    },
  });
  const minimal = buildWindowsHost('w', 'ns', {
    address: 'win.example.com',
    user: 'admin',
    sshKeySecret: 'k',
  });
  assert.deepEqual(minimal.host.spec, {
    address: 'win.example.com',
    username: 'admin',
    sshKeySecretRef: { name: 'k' },
  });
});

test('NAME must be a DNS-1123 subdomain', () => {
  for (const bad of [
    'Win01',
    'win_01',
    '-win',
    'win-',
    '',
    'a'.repeat(254),
    'win 01',
    'win\n01',
    '../x',
  ])
    assert.match(
      flagOf(() => checkHostName(bad)),
      /^NAME \| NAME: .* is not a valid WindowsHost name/,
    );
  assert.match(
    flagOf(() => checkHostName('win\n01')),
    /win\\n01/,
    'control characters shown escaped',
  );
  for (const good of ['w', 'win-01', 'win.example.com', 'a'.repeat(253)])
    assert.equal(checkHostName(good), good);
});

test('every bad flag names itself and the fix', () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ address: undefined }, /^--address \| --address: required/],
    [{ address: '10.1.42.7:22' }, /^--address .*use --port/],
    [{ address: '999.1.1.1' }, /^--address /],
    [{ address: '10.01.1.1' }, /^--address /],
    [{ address: 'host;rm -rf' }, /^--address /],
    [{ port: '0' }, /^--port .*1 to 65535/],
    [{ port: '65536' }, /^--port /],
    [{ port: '22abc' }, /^--port /],
    [{ port: '022' }, /^--port /],
    [{ user: '' }, /^--user /],
    [{ user: 'admin\nevil' }, /^--user .*control characters/],
    [{ sshKeyFile: undefined }, /^--ssh-key-file .*--ssh-key-secret/],
    [{ sshKeySecret: 'Bad_Secret' }, /^--ssh-key-secret .*not a Secret name/],
    [{ nodeName: 'Node.1' }, /^--node-name /],
    [{ pool: 'a'.repeat(64) }, /^--pool /],
    [{ label: ['novalue'] }, /^--label .*KEY=VALUE/],
    [{ label: ['bad key=x'] }, /^--label .*not a label key/],
    [{ label: ['k=-x'] }, /^--label .*not a label value/],
    [{ label: ['k=a', 'k=b'] }, /^--label .*twice/],
    [{ hostLabel: ['k=a b'] }, /^--host-label /],
  ];
  for (const [flags, expected] of cases)
    assert.match(
      flagOf(() => buildWindowsHost('win-01', 'ns', { ...base, ...flags } as never)),
      expected,
      JSON.stringify(flags),
    );
});

test('the Secret is kubernetes.io/ssh-auth with key ssh-privatekey, and is printed redacted', () => {
  const secret = buildKeySecret('win-01-ssh-key', 'ns', 'PRIVATE');
  assert.equal(secret.type, 'kubernetes.io/ssh-auth');
  assert.deepEqual(secret.data, { 'ssh-privatekey': Buffer.from('PRIVATE').toString('base64') });
  const shown = JSON.stringify(redactedSecret(secret));
  assert.ok(!shown.includes(Buffer.from('PRIVATE').toString('base64')));
  assert.match(shown, /"ssh-privatekey":"\(redacted\)"/);
  assert.ok(defaultSecretName('a'.repeat(253)).length <= 253);
});

test('sameSpec treats no port as 22 and the default key as ssh-privatekey', () => {
  const a = buildWindowsHost('w', 'ns', { ...base }).host.spec;
  assert.ok(
    sameSpec(a, { ...a, port: 22, sshKeySecretRef: { name: 'w-ssh-key', key: 'ssh-privatekey' } }),
  );
  assert.ok(!sameSpec(a, { ...a, address: '10.1.42.8' }));
  assert.ok(!sameSpec(a, { ...a, labels: { x: 'y' } }));
});

test('--host-key is spec.hostKey, checked strictly; --host-key-from-file reads one public key', () => {
  const fingerprint = `SHA256:${'x'.repeat(43)}`;
  const base = { address: '10.1.42.7', user: 'Administrator', sshKeySecret: 'k' };
  assert.equal(
    buildWindowsHost('win-01', 'ns', { ...base, hostKey: fingerprint }).host.spec.hostKey,
    fingerprint,
  );
  for (const bad of [
    'SHA256:short',
    `sha256:${'x'.repeat(43)}`,
    `MD5:${'x'.repeat(43)}`,
    `${fingerprint}\n`,
  ]) {
    assert.throws(
      () => buildWindowsHost('win-01', 'ns', { ...base, hostKey: bad }),
      /--host-key: /,
    );
  }
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const type = 'ssh-ed25519';
  const blob = Buffer.concat([
    Buffer.from([0, 0, 0, type.length]),
    Buffer.from(type),
    Buffer.from([0, 0, 0, 32]),
    raw,
  ]);
  const expected = `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
  const line = `${type} ${blob.toString('base64')}`;
  for (const text of [
    `${line} root@win-01\n`,
    `# win-01:22 SSH-2.0-OpenSSH_for_Windows_9.5\n10.1.42.7 ${line}\n`,
  ]) {
    assert.deepEqual(hostKeyFingerprintFromText(text, 'f'), { fingerprint: expected });
  }
  const problems = [
    ['', /holds no public key/],
    [`@cert-authority * ${line}`, /marker/],
    [`ssh-rsa ${blob.toString('base64')}`, /is not an ssh-rsa public key/],
    [
      `${line}\n10.1.42.7 ssh-ed25519 ${Buffer.concat([blob.subarray(0, -1), Buffer.from([1])]).toString('base64')}`,
      /2 different keys/,
    ],
    ['ssh-ed25519-cert-v01@openssh.com AAAA', /certificate is not a host key/],
  ] as const;
  for (const [text, why] of problems) {
    const result = hostKeyFingerprintFromText(text, 'f');
    assert.ok('problem' in result, text);
    assert.match(result.problem, why);
  }
});
