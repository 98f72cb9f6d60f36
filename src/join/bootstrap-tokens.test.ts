import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { offlineInformer } from '../../sim/testkit/synthetic-nodes.ts';
import { typeScriptFiles } from '../../sim/testkit/typescript-syntax.ts';
import { type WindowsHost, windowsHostResource } from '../api/windows-host.ts';
import { hostByTokenId } from '../fleet/host-indexes.ts';
import {
  bootstrapGroup,
  bootstrapTokenSecret,
  newBootstrapTokenParts,
  ownTokenId,
  randomTokenPart,
  tokenIdFor,
} from './bootstrap-tokens.ts';

const uid = '0b7e4c1a-5d0f-4c59-9a55-1f2b3c4d5e6f';

test('the host behind a token id is the one whose UID it derives from, never a deleting one', () => {
  const hosts = offlineInformer<WindowsHost>(windowsHostResource);
  const host = (
    name: string,
    metadata: Partial<WindowsHost['metadata']>,
    mode: 'SSH' | 'Pull' = 'SSH',
  ) =>
    ({
      metadata: { name, namespace: 'win', ...metadata },
      spec: mode === 'Pull' ? { mode } : { mode, address: '127.0.0.1' },
    }) as WindowsHost;
  hosts.replace([
    host('a', { uid: 'a-uid' }),
    host('win-1', { uid }),
    host('gone', { uid: 'gone-uid', deletionTimestamp: new Date() }),
    host('new', {}),
    host('pulled', { uid: 'pulled-uid' }, 'Pull'),
  ]);
  const hostForTokenId = hostByTokenId(hosts);
  assert.equal(hostForTokenId(tokenIdFor(uid))?.metadata.name, 'win-1');
  assert.equal(hostForTokenId(tokenIdFor('a-uid'))?.metadata.name, 'a');
  assert.equal(hostForTokenId(tokenIdFor('gone-uid')), undefined);
  assert.equal(hostForTokenId('zzzzzz'), undefined);
  // A Pull host joined with a join token: no bootstrap token of its own names it, so a token
  // id derived from its uid (guessable from the WindowsHost) finds nothing.
  assert.equal(hostForTokenId(tokenIdFor('pulled-uid')), undefined);
  assert.equal(hostForTokenId(tokenIdFor('')), undefined);
  assert.equal(ownTokenId({ metadata: {} }), undefined, 'a host not yet created has none');
});

test('new bootstrap token ids and secrets are uniform over [a-z0-9] (chi-square, false failure < 1e-9)', () => {
  // 10,000 draws of 36 characters: 360,000 characters, 10,000 expected per character. The
  // chi-square statistic over the 36 characters has 35 degrees of freedom; it exceeds 120 with
  // probability 3.1e-11 for a uniform generator (upper tail of chi2(35), computed with the
  // regularized incomplete gamma function), so this test fails falsely less than once in 1e9.
  // `byte % 36` (the CLI check's old generator) makes a-d 8/256 likely and the rest 7/256: its
  // statistic is about 35 + 360,000 * 0.00195 = 738, never under 120 in practice.
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const counts = new Map<string, number>([...alphabet].map((c) => [c, 0]));
  let total = 0;
  for (let i = 0; i < 10_000; i++) {
    const { id, secret } = newBootstrapTokenParts();
    assert.match(id, /^[a-z0-9]{6}$/);
    assert.match(secret, /^[a-z0-9]{16}$/);
    for (const c of randomTokenPart(36)) {
      counts.set(c, (counts.get(c) ?? 0) + 1);
      total++;
    }
  }
  assert.equal(counts.size, 36, 'only [a-z0-9]');
  const expected = total / 36;
  let chiSquare = 0;
  for (const n of counts.values()) chiSquare += (n - expected) ** 2 / expected;
  assert.ok(chiSquare < 120, `chi-square ${chiSquare.toFixed(1)} over 35 degrees of freedom`);
});

test('the one bootstrap token Secret builder writes exactly the keys kubeadm writes', () => {
  // kubeadm: cmd/kubeadm/app/apis/bootstraptoken/v1 BootstrapTokenToSecret / encodeTokenSecretData
  // (token-id, token-secret, description, expiration, usage-bootstrap-<usage>, auth-extra-groups).
  const expires = new Date('2030-01-02T03:04:05.678Z');
  const secret = bootstrapTokenSecret({
    id: 'abc123',
    secret: '0123456789abcdef',
    expires,
    signing: true,
    extraGroups: bootstrapGroup,
    description: 'a join token',
    labels: { a: 'b' },
  });
  assert.deepEqual(secret, {
    metadata: { name: 'bootstrap-token-abc123', namespace: 'kube-system', labels: { a: 'b' } },
    type: 'bootstrap.kubernetes.io/token',
    stringData: {
      'token-id': 'abc123',
      'token-secret': '0123456789abcdef',
      expiration: '2030-01-02T03:04:05Z',
      'usage-bootstrap-authentication': 'true',
      'usage-bootstrap-signing': 'true',
      'auth-extra-groups': 'system:bootstrappers:winfleet',
      description: 'a join token',
    },
  });
  // A host's SSH-join token: not signing (written "false", as it always was), winfleet's group.
  assert.equal(
    bootstrapTokenSecret({ ...baseSpec, signing: false, extraGroups: bootstrapGroup }).stringData?.[
      'usage-bootstrap-signing'
    ],
    'false',
  );
  // The CLI check's probe token: authentication only, no extra group, no signing key.
  assert.deepEqual(Object.keys(bootstrapTokenSecret(baseSpec).stringData ?? {}).sort(), [
    'description',
    'expiration',
    'token-id',
    'token-secret',
    'usage-bootstrap-authentication',
  ]);
});

const baseSpec = {
  id: 'abc123',
  secret: '0123456789abcdef',
  expires: new Date('2030-01-02T03:04:05Z'),
  description: 'd',
  labels: {},
};

test('no product file but src/join/bootstrap-tokens.ts builds a bootstrap token Secret', async () => {
  const repo = fileURLToPath(new URL('../..', import.meta.url));
  const builders: string[] = [];
  for (const file of typeScriptFiles(repo, 'src', 'product')) {
    if (file === 'src/join/bootstrap-tokens.ts') continue;
    const text = await readFile(`${repo}/${file}`, 'utf8');
    if (/['"`]bootstrap\.kubernetes\.io\/token['"`]|['"`]token-secret['"`]/.test(text))
      builders.push(file);
  }
  assert.deepEqual(builders, []);
});
