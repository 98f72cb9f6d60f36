import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { ParsedCsr } from '../../pki/certificates.ts';
import { goNameDer, type NameFields, readName } from '../../pki/distinguished-name.ts';
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

const kubeletName: NameFields = {
  organizations: ['system:nodes'],
  commonName: 'system:node:win-a',
};

/** A parsed CSR whose subject is `name` as Go writes it. */
const subject = (over: Partial<ParsedCsr> & { name?: NameFields } = {}): ParsedCsr => {
  const { name = kubeletName, ...rest } = over;
  const subjectDer = goNameDer(name);
  return {
    subjectDer,
    subject: readName(subjectDer),
    dnsNames: [],
    ipAddresses: [],
    emailAddresses: [],
    uris: [],
    otherNames: [],
    otherRequests: [],
    ...rest,
  };
};

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
    client({ parsed: subject({ name: { ...kubeletName, commonName: 'system:node:other' } }) }),
    /CN is "system:node:other", expected "system:node:win-a"/,
  ],
  [
    'a second O',
    client({
      parsed: subject({
        name: { ...kubeletName, organizations: ['system:nodes', 'system:masters'] },
      }),
    }),
    /subject O=system:nodes\+O=system:masters, CN=system:node:win-a: RDN 1 holds 2 attributes/,
  ],
  [
    'a CN before the O',
    client({
      parsed: subject({
        subjectDer: goNameDer({ commonName: 'system:node:win-a' }),
        subject: [
          ...readName(goNameDer({ commonName: 'system:node:win-a' })),
          ...readName(goNameDer({ organizations: ['system:nodes'] })),
        ],
      }),
    }),
    /subject CN=system:node:win-a, O=system:nodes is not O then CN/,
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
  [
    'an unparsable request',
    client({
      parsed: undefined,
      parseProblem: 'The CSR asks for extension 2.5.29.17 more than once',
    }),
    /not a valid PKCS#10 CSR: The CSR asks for extension 2\.5\.29\.17 more than once/,
  ],
  [
    'another extension',
    client({ parsed: subject({ otherRequests: ['2.5.29.19'] }) }),
    /asks for 2\.5\.29\.19, which a kubelet never requests/,
  ],
];
for (const [name, request, reason] of clientCases) {
  test(`a client CSR with ${name} is denied with the reason`, async () => {
    const d = await decideKubeletCsr(request, lookup());
    assert.equal(d.action, 'deny');
    assert.match(d.reason, reason);
  });
}

test('a host whose node name is not a lowercase RFC 1123 name gets no certificate', async () => {
  for (const nodeName of ['Win-A', 'win_a', '-win', 'win-а']) {
    const odd = { ...host, status: { ...host.status, nodeName } } as WindowsHost;
    const d = await decideKubeletCsr(
      client({
        parsed: subject({ name: { ...kubeletName, commonName: `system:node:${nodeName}` } }),
      }),
      { ...lookup(), hostForToken: async () => odd },
    );
    assert.equal(d.action, 'deny', nodeName);
    assert.match(d.reason, /is not a lowercase RFC 1123 name/);
  }
});

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
  const odd = await decideKubeletCsr(
    serving({ parsed: subject({ ipAddresses: ['127.0.0.11'], otherNames: ['dn:CN=x'] }) }),
    lookup(),
  );
  assert.equal(odd.action, 'deny');
  assert.match(odd.reason, /dn:CN=x are of kinds a kubelet never requests/);
  const secondCn = await decideKubeletCsr(
    serving({ parsed: subject({ name: { ...kubeletName, commonName: 'system:node:win-b' } }) }),
    lookup(),
  );
  assert.equal(secondCn.action, 'deny');
});
