import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { nodeCacheOf } from '../../../sim/testkit/synthetic-nodes.ts';
import { hostAnnotation, hostIdentity } from '../../api/node-annotations.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import {
  type CsrSubject,
  createCsrPem,
  generateKeyPair,
  type ParsedCsr,
  parseCsrPem,
} from '../../pki/certificates.ts';
import { goNameDer, type NameFields, readName } from '../../pki/distinguished-name.ts';
import { apiServerNamesOf } from './api-server-names.ts';
import type { CsrRequest } from './csr-request.ts';
import {
  type CsrLookup,
  clientSigner,
  decideKubeletCsr,
  servingSigner,
} from './kubelet-csr-policy.ts';
import { nodeHoldingAddress } from './node-addresses.ts';

const host = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsHost',
  metadata: { name: 'win-a', namespace: 'winfleet-system', uid: 'uid-a' },
  spec: { address: '127.0.0.11', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
  status: {
    nodeName: 'win-a',
    hostname: 'WIN-A',
    addresses: ['127.0.0.11'],
    servingAddresses: ['127.0.0.11', 'win-a'],
  },
} as WindowsHost;

/** Node `name`, with `host`'s identity when it is win-a (the node winfleet joined). */
const nodeNamed = (name: string, addresses: string[] = []): k8s.V1Node => ({
  metadata: {
    name,
    annotations: name === 'win-a' ? { [hostAnnotation]: hostIdentity(host) } : {},
  },
  status: { addresses: addresses.map((address) => ({ type: 'InternalIP', address })) },
});

const network = {
  serviceCIDR: '10.96.0.0/12',
  podCIDR: '10.244.0.0/16',
  clusterDomain: 'cluster.local',
};

/** The API server as a kubeadm cluster behind a load balancer names it. */
const apiServer = apiServerNamesOf({
  'k8s-api.corp.example': 'the server of kube-public/cluster-info',
  '10.1.0.100': 'an address of the default/kubernetes endpoints',
  '10.1.0.50':
    'a name in the certificate the API server presents (at the server of the operator’s kubeconfig)',
  '*.api.corp.example':
    'a name in the certificate the API server presents (at the server of the operator’s kubeconfig)',
});

const lookup = (nodes: (string | k8s.V1Node)[] = [], theHost: WindowsHost = host): CsrLookup => {
  const all = nodes.map((n) => (typeof n === 'string' ? nodeNamed(n) : n));
  return {
    hostForToken: async (id) => (id === 'abcdef' ? theHost : undefined),
    hostsForNode: (name) => (name === 'win-a' ? [theHost] : []),
    node: (name) => all.find((n) => n.metadata?.name === name),
    nodeHolding: nodeHoldingAddress(nodeCacheOf(all)),
    network: () => network,
    apiServerNames: async () => apiServer,
  };
};

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

/**
 * The forged CSRs csr-approval.e2e.test.ts once sent with a joined host's own credentials, as
 * the API server hands them to the approver: real PKCS#10 requests (createCsrPem, read back by
 * parseCsrPem as the controller does), from the host's bootstrap token or its node, while its
 * Node exists. The approver writes the reason as the Denied condition's message, so each must
 * lead with the check that failed (the e2e test matched "^Denied: <reason>").
 */
const keys = await generateKeyPair();
const asToken = { username: 'system:bootstrap:abcdef', groups: client().groups };
const asNode = { username: 'system:node:win-a', groups: serving().groups };
const forged: [string, CsrSubject, Partial<CsrRequest>, RegExp][] = [
  [
    'a wrong CN',
    { commonName: 'system:node:someone-else', organizations: ['system:nodes'] },
    asToken,
    /^CN is "system:node:someone-else"/,
  ],
  [
    'extra SANs',
    {
      commonName: 'system:node:win-a',
      organizations: ['system:nodes'],
      dnsNames: ['kubernetes.default.svc'],
    },
    asToken,
    /^a client certificate has no subject alternative names/,
  ],
  [
    'a wrong O',
    { commonName: 'system:node:win-a', organizations: ['system:masters'] },
    asToken,
    /^O is "system:masters"/,
  ],
  [
    'a node that already exists',
    { commonName: 'system:node:win-a', organizations: ['system:nodes'] },
    asToken,
    /^Node win-a already exists/,
  ],
  [
    'serving SANs outside the host’s addresses',
    { commonName: 'system:node:win-a', organizations: ['system:nodes'], ipAddresses: ['10.0.0.9'] },
    { ...asNode, signerName: servingSigner, usages: serving().usages },
    /^serving certificate SANs refused: 10\.0\.0\.9 is not among the host's serving addresses/,
  ],
];
for (const [name, csrSubject, sentAs, reason] of forged) {
  test(`forged with the joined host’s own credentials (${name}): denied, the reason first`, async () => {
    const parsed = parseCsrPem(await createCsrPem(csrSubject, keys));
    const d = await decideKubeletCsr(client({ ...sentAs, parsed }), lookup(['win-a']));
    assert.equal(d.action, 'deny', d.reason);
    assert.match(d.reason, reason);
  });
}

test('CSRs that are not winfleet’s are left alone', async () => {
  for (const request of [
    client({ username: 'system:bootstrap:abcdef', groups: ['system:bootstrappers'] }), // kubeadm's token
    client({ username: 'system:node:linux-1', groups: ['system:nodes'] }), // a Linux renewal
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

test('serving CSRs: approved for the host’s pinned addresses and names, denied outside them', async () => {
  assert.equal((await decideKubeletCsr(serving(), lookup(['win-a']))).action, 'approve');
  const badIp = await decideKubeletCsr(
    serving({ parsed: subject({ ipAddresses: ['10.0.0.9'] }) }),
    lookup(['win-a']),
  );
  assert.equal(badIp.action, 'deny');
  assert.match(badIp.reason, /10\.0\.0\.9 is not among the host's serving addresses/);
  assert.match(badIp.reason, /allowed: 127\.0\.0\.11, win-a;/);
  const badName = await decideKubeletCsr(
    serving({ parsed: subject({ dnsNames: ['kubernetes.default.svc'] }) }),
    lookup(['win-a']),
  );
  assert.equal(badName.action, 'deny');
  assert.match(badName.reason, /kubernetes\.default\.svc names the cluster's Services/);
  const clientUsage = await decideKubeletCsr(
    serving({ usages: ['digital signature', 'client auth'] }),
    lookup(['win-a']),
  );
  assert.equal(clientUsage.action, 'deny');
  const odd = await decideKubeletCsr(
    serving({ parsed: subject({ ipAddresses: ['127.0.0.11'], otherNames: ['dn:CN=x'] }) }),
    lookup(['win-a']),
  );
  assert.equal(odd.action, 'deny');
  assert.match(odd.reason, /dn:CN=x are of kinds a kubelet never requests/);
  const secondCn = await decideKubeletCsr(
    serving({ parsed: subject({ name: { ...kubeletName, commonName: 'system:node:win-b' } }) }),
    lookup(['win-a']),
  );
  assert.equal(secondCn.action, 'deny');
});

test('serving CSRs: addresses the host reports after its first join are not trusted (issue 8)', async () => {
  // A re-bootstrap refreshed status.addresses with the Service IP the host admin added to a NIC.
  const reported = {
    ...host,
    status: { ...host.status, addresses: ['127.0.0.11', '10.96.0.1', '10.1.2.3'] },
  } as WindowsHost;
  for (const ip of ['10.96.0.1', '10.1.2.3']) {
    const d = await decideKubeletCsr(
      serving({ parsed: subject({ ipAddresses: ['127.0.0.11', ip] }) }),
      lookup(['win-a'], reported),
    );
    assert.equal(d.action, 'deny', ip);
    assert.match(d.reason, new RegExp(ip.replaceAll('.', '\\.')));
  }
});

test('serving CSRs: refused addresses are denied even when pinned, each named with its class', async () => {
  const cases: [string, RegExp][] = [
    ['10.96.0.1', /10\.96\.0\.1 is in the service CIDR 10\.96\.0\.0\/12/],
    ['10.244.3.7', /10\.244\.3\.7 is in the pod CIDR 10\.244\.0\.0\/16/],
    [
      '127.0.0.1',
      /127\.0\.0\.1 is a loopback address, accepted only as the host's own spec\.address/,
    ],
    ['::1', /::1 is a loopback address/],
    ['169.254.169.254', /169\.254\.169\.254 is a link-local address/],
    ['fe80::1', /fe80::1 is a link-local address/],
    ['0.0.0.0', /0\.0\.0\.0 is an unspecified address/],
    ['::', /:: is an unspecified address/],
    ['224.0.0.251', /224\.0\.0\.251 is a multicast address/],
    ['255.255.255.255', /255\.255\.255\.255 is a reserved or broadcast address/],
    ['::ffff:10.1.9.9', /::ffff:a01:909 is an IPv4-mapped IPv6 address/],
    ['10.1.9.9', /10\.1\.9\.9 is held by Node linux-1/],
    ['linux-1', /linux-1 is held by Node linux-1/],
    ['kubernetes', /kubernetes names the cluster's Services/],
    ['api.cluster.local', /api\.cluster\.local names the cluster's Services/],
    ['localhost', /localhost is a loopback name/],
  ];
  const linux = nodeNamed('linux-1', ['10.1.9.9']);
  for (const [address, reason] of cases) {
    const pinned = {
      ...host,
      status: { ...host.status, servingAddresses: ['127.0.0.11', address] },
    } as WindowsHost;
    const isIp = /^[\d.]+$|:/.test(address);
    const d = await decideKubeletCsr(
      serving({
        parsed: subject(isIp ? { ipAddresses: [address] } : { dnsNames: [address] }),
      }),
      lookup(['win-a', linux], pinned),
    );
    assert.equal(d.action, 'deny', address);
    assert.match(d.reason, reason, address);
  }
});

test('serving CSRs: the node name and spec.address are always allowed; loopback only as spec.address', async () => {
  const unpinned = {
    ...host,
    status: { ...host.status, servingAddresses: [] },
  } as WindowsHost;
  const own = await decideKubeletCsr(
    serving({ parsed: subject({ ipAddresses: ['127.0.0.11'], dnsNames: ['win-a'] }) }),
    lookup(['win-a'], unpinned),
  );
  assert.equal(own.action, 'approve', own.reason);
  // A loopback address pinned for a host whose spec.address is another loopback address.
  const other = {
    ...host,
    status: { ...host.status, servingAddresses: ['127.0.0.12'] },
  } as WindowsHost;
  const d = await decideKubeletCsr(
    serving({ parsed: subject({ ipAddresses: ['127.0.0.12'] }) }),
    lookup(['win-a'], other),
  );
  assert.equal(d.action, 'deny');
  assert.match(d.reason, /127\.0\.0\.12 is a loopback address/);
});

test('serving CSRs of a Node without its host’s identity are left alone', async () => {
  const stranger: k8s.V1Node = {
    metadata: { name: 'win-a', annotations: { [hostAnnotation]: 'other-ns/win-a/uid-x' } },
  };
  for (const nodes of [[], [stranger]]) {
    const d = await decideKubeletCsr(serving(), lookup(nodes));
    assert.equal(d.action, 'ignore');
    assert.match(d.reason, /does not carry the identity of a WindowsHost that names it/);
  }
});

const renewal = (over: Partial<CsrRequest> = {}): CsrRequest =>
  client({
    username: 'system:node:win-a',
    groups: ['system:nodes', 'system:authenticated'],
    usages: ['digital signature', 'client auth'],
    ...over,
  });

test('a node’s renewal of its own client certificate is approved when its Node carries its host’s identity', async () => {
  const d = await decideKubeletCsr(renewal(), lookup(['win-a']));
  assert.equal(d.action, 'approve', d.reason);
  assert.match(d.reason, /renewal of Node win-a's own client certificate/);
});

test('a renewal for another node’s name, or with extras, is denied', async () => {
  const cases: [string, CsrRequest, RegExp][] = [
    [
      'another node',
      renewal({ parsed: subject({ name: { ...kubeletName, commonName: 'system:node:linux-1' } }) }),
      /renewal by Node win-a: CN is "system:node:linux-1", expected "system:node:win-a"/,
    ],
    [
      'a second CN',
      renewal({
        parsed: subject({
          subjectDer: goNameDer({
            organizations: ['system:nodes'],
            commonName: 'system:node:linux-1',
          }),
          subject: [
            ...readName(goNameDer(kubeletName)),
            ...readName(goNameDer({ commonName: 'system:node:linux-1' })),
          ],
        }),
      }),
      /renewal by Node win-a: /,
    ],
    [
      'SANs',
      renewal({ parsed: subject({ ipAddresses: ['127.0.0.11'] }) }),
      /no subject alternative names/,
    ],
    ['server auth', renewal({ usages: ['digital signature', 'server auth'] }), /usages/],
  ];
  for (const [name, request, reason] of cases) {
    const d = await decideKubeletCsr(request, lookup(['win-a']));
    assert.equal(d.action, 'deny', name);
    assert.match(d.reason, reason, name);
  }
});

test('renewals of nodes no known WindowsHost owns, or whose Node lacks the identity, are not approved', async () => {
  const stripped: k8s.V1Node = { metadata: { name: 'win-a', annotations: {} } };
  const forged: k8s.V1Node = {
    metadata: { name: 'win-a', annotations: { [hostAnnotation]: 'winfleet-system/win-a/uid-old' } },
  };
  for (const [name, request, nodes] of [
    ['a Linux node', renewal({ username: 'system:node:linux-1' }), ['win-a', 'linux-1']],
    ['a node without a Node', renewal(), []],
    ['a Node without the identity', renewal(), [stripped]],
    ['a Node with an old host’s identity', renewal(), [forged]],
  ] as [string, CsrRequest, (string | k8s.V1Node)[]][]) {
    const d = await decideKubeletCsr(request, lookup(nodes));
    assert.equal(d.action, 'ignore', `${name}: ${d.reason}`);
  }
});

/** A Pull-mode host win-a: no address or SSH, its pin from its Node's first report. */
const pullHost = {
  ...host,
  spec: { mode: 'Pull', nodeName: 'win-a', pool: 'web' },
  status: {
    nodeName: 'win-a',
    hostname: 'win-a',
    addresses: ['127.0.0.11'],
    servingAddresses: ['127.0.0.11', 'win-a'],
  },
} as WindowsHost;

test('serving CSRs of a Pull host: its pinned node IP stands for spec.address (a loopback one too), nothing else does', async () => {
  const own = await decideKubeletCsr(
    serving({ parsed: subject({ ipAddresses: ['127.0.0.11'], dnsNames: ['win-a'] }) }),
    lookup(['win-a'], pullHost),
  );
  assert.equal(own.action, 'approve', own.reason);
  // Addresses the node reports later are not in the pin; another loopback address never passes.
  for (const [ip, reason] of [
    ['127.0.0.12', /127\.0\.0\.12 is a loopback address/],
    ['10.1.2.3', /10\.1\.2\.3 is not among the host's serving addresses/],
    ['10.96.0.1', /10\.96\.0\.1 is in the service CIDR/],
  ] as const) {
    const d = await decideKubeletCsr(
      serving({ parsed: subject({ ipAddresses: [ip] }) }),
      lookup(['win-a'], pullHost),
    );
    assert.equal(d.action, 'deny', ip);
    assert.match(d.reason, reason);
  }
  // Not pinned yet (the operator has not seen its Node): only the node name.
  const unpinned = { ...pullHost, status: { nodeName: 'win-a' } } as WindowsHost;
  const early = await decideKubeletCsr(
    serving({ parsed: subject({ ipAddresses: ['127.0.0.11'] }) }),
    lookup(['win-a'], unpinned),
  );
  assert.equal(early.action, 'deny');
  assert.match(early.reason, /127\.0\.0\.11 is a loopback address/);
});

test('attacker: a node that puts a Pull host’s identity on its own Node gets none of that host’s certificates', async () => {
  // Node win-b (another machine, its own credentials) carries win-a's identity: win-b's CSRs are
  // matched to hosts by status.nodeName, which only win-a's host has for win-a.
  const forger: k8s.V1Node = {
    metadata: { name: 'win-b', annotations: { [hostAnnotation]: hostIdentity(pullHost) } },
  };
  const asB = (over: Partial<CsrRequest>) =>
    serving({
      username: 'system:node:win-b',
      parsed: subject({
        name: { organizations: ['system:nodes'], commonName: 'system:node:win-b' },
        ipAddresses: ['127.0.0.11'],
      }),
      ...over,
    });
  const d = await decideKubeletCsr(asB({}), lookup(['win-a', forger], pullHost));
  assert.equal(d.action, 'ignore', d.reason);
  // Asking in win-a's name with win-b's credentials: the requester is not win-a.
  const named = await decideKubeletCsr(
    asB({ parsed: subject({ ipAddresses: ['127.0.0.11'] }) }),
    lookup(['win-a', forger], pullHost),
  );
  assert.notEqual(named.action, 'approve', named.reason);
});

test('attacker: a serving CSR naming the API server is denied even when the pin holds its names (issue 33)', async () => {
  // What a Pull host's self-reported Node facts, or an annotation, once put in the pin: the
  // API server's VIP, a name its certificate covers and cluster-info's server.
  const pinned = {
    ...host,
    spec: { ...host.spec, address: '10.1.0.50' },
    status: {
      ...host.status,
      servingAddresses: ['10.1.0.50', '10.1.0.100', 'k8s-api.corp.example', 'x.api.corp.example'],
    },
  } as WindowsHost;
  for (const [san, where] of [
    [
      '10.1.0.50',
      /10\.1\.0\.50 is the API server's \(a name in the certificate the API server presents/,
    ],
    [
      '10.1.0.100',
      /10\.1\.0\.100 is the API server's \(an address of the default\/kubernetes endpoints\)/,
    ],
    [
      'k8s-api.corp.example',
      /k8s-api\.corp\.example is the API server's \(the server of kube-public\/cluster-info\)/,
    ],
    ['x.api.corp.example', /x\.api\.corp\.example is the API server's \(a name in the certificate/],
  ] as const) {
    const d = await decideKubeletCsr(
      serving({ parsed: subject({ ipAddresses: [], dnsNames: ['win-a', san] }) }),
      lookup(['win-a'], pinned),
    );
    assert.equal(d.action, 'deny', san);
    assert.match(d.reason, where, san);
  }
  // A DNS name the pin holds, not the node name and under no configured suffix: refused too.
  const d = await decideKubeletCsr(
    serving({ parsed: subject({ ipAddresses: [], dnsNames: ['win-a', 'win-a.corp.example'] }) }),
    lookup(['win-a'], {
      ...pinned,
      status: { ...pinned.status, servingAddresses: ['win-a.corp.example'] },
    } as WindowsHost),
  );
  assert.match(d.reason, /win-a\.corp\.example is a DNS name other than the node name/);
});

test('serving CSRs wait while the API server’s names cannot be read', async () => {
  const failing = {
    ...lookup(['win-a']),
    apiServerNames: async () => {
      throw new Error('no handshake');
    },
  };
  await assert.rejects(decideKubeletCsr(serving(), failing), /no handshake/);
});
