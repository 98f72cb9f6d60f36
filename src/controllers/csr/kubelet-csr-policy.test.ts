import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { ParsedCsr } from '../../pki/certificates.ts';
import {
  type CsrLookup,
  type CsrRequest,
  clientSigner,
  decideKubeletCsr,
  servingSigner,
} from './kubelet-csr-policy.ts';

const host = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsHost',
  metadata: { name: 'win-a', namespace: 'winfleet-system', uid: 'uid-a' },
  spec: { address: '127.0.0.11', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
  status: { nodeName: 'win-a', hostname: 'WIN-A', addresses: ['127.0.0.11'] },
} as WindowsHost;

const lookup = (nodes: string[] = []): CsrLookup => ({
  hostForToken: async (id) => (id === 'abcdef' ? host : undefined),
  hostForNode: (name) => (name === 'win-a' ? host : undefined),
  nodeExists: (name) => nodes.includes(name),
});

const subject = (over: Partial<ParsedCsr> = {}): ParsedCsr => ({
  commonName: 'system:node:win-a',
  organizations: ['system:nodes'],
  dnsNames: [],
  ipAddresses: [],
  emailAddresses: [],
  uris: [],
  ...over,
});

const client = (over: Partial<CsrRequest> = {}): CsrRequest => ({
  name: 'csr-1',
  signerName: clientSigner,
  username: 'system:bootstrap:abcdef',
  groups: ['system:bootstrappers', 'system:bootstrappers:winfleet', 'system:authenticated'],
  usages: ['digital signature', 'key encipherment', 'client auth'],
  parsed: subject(),
  ...over,
});

const serving = (over: Partial<CsrRequest> = {}): CsrRequest => ({
  name: 'csr-2',
  signerName: servingSigner,
  username: 'system:node:win-a',
  groups: ['system:nodes', 'system:authenticated'],
  usages: ['digital signature', 'key encipherment', 'server auth'],
  parsed: subject({ ipAddresses: ['127.0.0.11'], dnsNames: ['WIN-A'] }),
  ...over,
});

test('a well-formed client CSR from a known host token is approved', async () => {
  const d = await decideKubeletCsr(client(), lookup());
  assert.equal(d.action, 'approve');
});

const clientCases: [string, CsrRequest, RegExp][] = [
  [
    'an unknown winfleet token',
    client({ username: 'system:bootstrap:zzzzzz' }),
    /belongs to no known WindowsHost/,
  ],
  [
    'a wrong CN',
    client({ parsed: subject({ commonName: 'system:node:other' }) }),
    /CN is "system:node:other", expected "system:node:win-a"/,
  ],
  [
    'a wrong O',
    client({ parsed: subject({ organizations: ['system:nodes', 'system:masters'] }) }),
    /O is \[system:nodes, system:masters\], expected exactly \[system:nodes\]/,
  ],
  [
    'extra SANs',
    client({ parsed: subject({ dnsNames: ['evil.example.com'] }) }),
    /no subject alternative names, got evil\.example\.com/,
  ],
  [
    'extra usages',
    client({ usages: ['digital signature', 'client auth', 'server auth'] }),
    /usages .* are not within/,
  ],
  ['an unparsable request', client({ parsed: undefined }), /not a valid PKCS#10 CSR/],
];
for (const [name, request, reason] of clientCases) {
  test(`a client CSR with ${name} is denied with the reason`, async () => {
    const d = await decideKubeletCsr(request, lookup());
    assert.equal(d.action, 'deny');
    assert.match(d.reason, reason);
  });
}

test('a client CSR for a node that already exists is denied', async () => {
  const d = await decideKubeletCsr(client(), lookup(['win-a']));
  assert.equal(d.action, 'deny');
  assert.match(d.reason, /Node win-a already exists/);
});

test('CSRs that are not winfleet’s are left alone', async () => {
  for (const request of [
    client({ username: 'system:bootstrap:abcdef', groups: ['system:bootstrappers'] }), // kubeadm's token
    client({ username: 'system:node:linux-1', groups: ['system:nodes'] }), // a renewal
    serving({ username: 'system:node:linux-1' }), // another node
    serving({ groups: ['system:authenticated'] }),
    client({ signerName: 'kubernetes.io/kube-apiserver-client' }),
  ]) {
    assert.equal(
      (await decideKubeletCsr(request, lookup())).action,
      'ignore',
      JSON.stringify(request),
    );
  }
});

test('serving CSRs: approved for the host’s own addresses and names, denied outside them', async () => {
  assert.equal((await decideKubeletCsr(serving(), lookup(['win-a']))).action, 'approve');
  const badIp = await decideKubeletCsr(
    serving({ parsed: subject({ ipAddresses: ['10.0.0.9'] }) }),
    lookup(),
  );
  assert.equal(badIp.action, 'deny');
  assert.match(badIp.reason, /IP SANs 10\.0\.0\.9 are not addresses of the host \(127\.0\.0\.11\)/);
  const badName = await decideKubeletCsr(
    serving({ parsed: subject({ dnsNames: ['kubernetes.default.svc'] }) }),
    lookup(),
  );
  assert.equal(badName.action, 'deny');
  assert.match(badName.reason, /DNS SANs kubernetes\.default\.svc are not names of the host/);
  const clientUsage = await decideKubeletCsr(
    serving({ usages: ['digital signature', 'client auth'] }),
    lookup(),
  );
  assert.equal(clientUsage.action, 'deny');
});
