/**
 * The policy for hosts joining by command, from the attacker's side: a CSR sent with a join
 * token must be refused for each way it or the token is wrong (each denial naming its check),
 * and of CSRs racing for one node name only one gets through.
 */
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { AsnConvert } from '@peculiar/asn1-schema';
import {
  AttributeTypeAndValue,
  AttributeValue,
  Name,
  RelativeDistinguishedName,
} from '@peculiar/asn1-x509';
import { createAwsIdentitySigner, identityDocument } from '../../../sim/hosts/instance-metadata.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import type { JoinTokenRecord } from '../../join/join-token-record.ts';
import type { ParsedCsr } from '../../pki/certificates.ts';
import { goNameDer, type NameFields, readName } from '../../pki/distinguished-name.ts';
import type { AwsInstanceIdentity } from '../../pki/instance-identity.ts';
import { apiServerNamesOf } from './api-server-names.ts';
import type { CsrDecision, CsrRequest } from './csr-request.ts';
import { type CsrLookup, clientSigner, decideKubeletCsr } from './kubelet-csr-policy.ts';
import { NodeNameReservations } from './node-name-reservations.ts';
import { joinCsrAnnotation, type PullJoinLookup } from './pull-join-policy.ts';

const now = new Date('2026-11-27T10:00:00Z');

const record = (over: Partial<JoinTokenRecord> = {}): JoinTokenRecord => ({
  tokenId: 'tok123',
  pool: 'web',
  namespace: 'team-a',
  uses: 3,
  usesLeft: 3,
  expires: '2026-11-27T12:00:00Z',
  labels: { pool: 'web' },
  joined: [],
  ...over,
});

const pool = (spec: Partial<WindowsNodePool['spec']> = {}): WindowsNodePool => ({
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsNodePool',
  metadata: { name: 'web', namespace: 'team-a' },
  spec: {
    selector: { matchLabels: { pool: 'web' } },
    join: { nodeNamePattern: '^web-[0-9]+$' },
    ...spec,
  },
});

const sshHost = (name: string, namespace: string, over: Partial<WindowsHost> = {}) =>
  ({
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name, namespace, uid: `uid-${name}` },
    spec: { address: '10.1.1.1', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
    ...over,
  }) as WindowsHost;

interface World {
  retired?: Record<string, { until: string; host: string } | { problem: string }>;
  identities?: AwsInstanceIdentity[];
  trust?: { certificates: X509Certificate[]; accountIds: string[] };
  records?: Record<string, JoinTokenRecord | Error>;
  pools?: WindowsNodePool[];
  nodes?: string[];
  hosts?: WindowsHost[];
  reservations?: NodeNameReservations;
  network?: PullJoinLookup['network'];
}

function lookup(world: World = {}): CsrLookup {
  const records = world.records ?? { tok123: record() };
  const pools = world.pools ?? [pool()];
  const reservations = world.reservations ?? new NodeNameReservations();
  const pullJoin: PullJoinLookup = {
    record: async (id) => {
      const found = records[id];
      if (found instanceof Error) throw found;
      return found;
    },
    pool: (namespace, name) =>
      pools.find((p) => p.metadata.namespace === namespace && p.metadata.name === name),
    node: (name) =>
      (world.nodes ?? []).includes(name) ? ({ metadata: { name } } as k8s.V1Node) : undefined,
    hosts: () => world.hosts ?? [],
    reserve: (name, uid) => reservations.reserve(name, uid),
    now: () => now,
    ...(world.network ? { network: world.network } : {}),
    instanceIdentities: (requester) =>
      requester === 'system:bootstrap:tok123' ? (world.identities ?? []) : [],
    ...(world.trust ? { identityTrust: () => world.trust! } : {}),
    retired: async (name) => world.retired?.[name],
  };
  return {
    hostForToken: async () => undefined,
    hostsForNode: () => [],
    node: pullJoin.node,
    nodeHolding: () => undefined,
    network: () => ({ serviceCIDR: '10.96.0.0/12', podCIDR: '10.244.0.0/16', clusterDomain: 'c' }),
    apiServerNames: async () => apiServerNamesOf(),
    pullJoin,
  };
}

const kubelet = (node: string): NameFields => ({
  organizations: ['system:nodes'],
  commonName: `system:node:${node}`,
});

function parsedFor(name: NameFields | Uint8Array, over: Partial<ParsedCsr> = {}): ParsedCsr {
  const subjectDer = name instanceof Uint8Array ? name : goNameDer(name);
  return {
    subjectDer,
    subject: readName(subjectDer),
    dnsNames: [],
    ipAddresses: [],
    emailAddresses: [],
    uris: [],
    otherNames: [],
    otherRequests: [],
    ...over,
  };
}

let csrs = 0;
const csr = (node = 'web-1', over: Partial<CsrRequest> = {}): CsrRequest => {
  csrs += 1;
  return {
    name: `csr-${csrs}`,
    uid: `csr-uid-${csrs}`,
    signerName: clientSigner,
    username: 'system:bootstrap:tok123',
    groups: ['system:bootstrappers', 'system:bootstrappers:winfleet', 'system:authenticated'],
    usages: ['digital signature', 'key encipherment', 'client auth'],
    parsed: parsedFor(kubelet(node)),
    ...over,
  };
};

/** "<check>: <reason>" of a denial (its reason names the check too); fails for anything else. */
function deniedBy(decision: CsrDecision): string {
  assert.equal(decision.action, 'deny', decision.reason);
  if (decision.action !== 'deny') return '';
  const prefix = `join by command refused (${decision.check}): `;
  assert.ok(decision.reason.startsWith(prefix), decision.reason);
  return `${decision.check}: ${decision.reason.slice(prefix.length)}`;
}

test('a CSR with a live token for a fresh name is claimed: a Pull host in the pool, selected', async () => {
  const decision = await decideKubeletCsr(csr('web-1'), lookup());
  assert.equal(decision.action, 'claim', decision.reason);
  if (decision.action !== 'claim') return;
  const { host } = decision.claim;
  assert.deepEqual(host.spec, { mode: 'Pull', pool: 'web', nodeName: 'web-1' });
  assert.equal(host.metadata.name, 'web-1');
  assert.equal(host.metadata.namespace, 'team-a');
  assert.deepEqual(host.metadata.labels, { pool: 'web' });
  assert.equal(host.metadata.annotations?.[joinCsrAnnotation], decision.claim.csrUid);
  assert.match(decision.reason, /new Node web-1 joining WindowsNodePool team-a\/web/);
});

test('refused: the token revoked, never issued, expired, used up or its record unreadable', async () => {
  const cases: [string, World, RegExp][] = [
    ['revoked (record gone)', { records: {} }, /^token: .*revoked .* or never issued/],
    [
      'expired',
      { records: { tok123: record({ expires: '2026-11-27T09:59:59Z' }) } },
      /^expiry: .*expired at 2026-11-27T09:59:59Z/,
    ],
    [
      'expiring this very second',
      { records: { tok123: record({ expires: '2026-11-27T10:00:00Z' }) } },
      /^expiry: /,
    ],
    [
      'used up',
      {
        records: {
          tok123: record({
            uses: 1,
            usesLeft: 0,
            joined: [{ nodeName: 'web-0', csr: 'x', at: '2026-11-27T09:00:00Z' }],
          }),
        },
      },
      /^uses: join token tok123 is used up/,
    ],
    [
      'an unreadable record',
      { records: { tok123: new Error('Invalid ConfigMap winfleet-join-token-tok123') } },
      /^token: .*Invalid ConfigMap/,
    ],
  ];
  for (const [name, world, check] of cases) {
    assert.match(deniedBy(await decideKubeletCsr(csr(), lookup(world))), check, name);
  }
});

test('refused: a name a Node, a WindowsHost (its name, spec.nodeName, status.nodeName) holds', async () => {
  const cases: [string, World][] = [
    ['a Node', { nodes: ['web-1'] }],
    ['spec.nodeName in another namespace', { hosts: [sshHost('a', 'other', {})] }],
    ['status.nodeName', { hosts: [sshHost('b', 'team-a', { status: { nodeName: 'web-1' } })] }],
    ['a WindowsHost of that name in the pool namespace', { hosts: [sshHost('web-1', 'team-a')] }],
  ];
  cases[1]![1].hosts![0]!.spec.nodeName = 'web-1';
  for (const [name, world] of cases) {
    assert.match(
      deniedBy(await decideKubeletCsr(csr('web-1'), lookup(world))),
      /^name-taken: node name web-1 is taken/,
      name,
    );
  }
});

test('refused: a name the pool’s pattern does not match, or a pool whose pattern is bad', async () => {
  const patterned = { pools: [pool({ join: { nodeNamePattern: '^web-[0-9]+$' } })] };
  assert.equal((await decideKubeletCsr(csr('web-7'), lookup(patterned))).action, 'claim');
  for (const node of ['db-1', 'web-x', 'xweb-1', 'web-1-evil']) {
    assert.match(
      deniedBy(await decideKubeletCsr(csr(node), lookup(patterned))),
      /^name-pattern: node name .* does not match WindowsNodePool team-a\/web's spec\.join\.nodeNamePattern "\^web-\[0-9\]\+\$"/,
      node,
    );
  }
  const bad = { pools: [pool({ join: { nodeNamePattern: '^(?=x)web$' } })] };
  assert.match(
    deniedBy(await decideKubeletCsr(csr('web'), lookup(bad))),
    /^name-pattern: .*not an RE2 regular expression/,
  );
});

test('refused: a pool with no name pattern, whatever the name (no claim on names of nodes to come)', async () => {
  const open = { pools: [pool({ join: {} })] };
  for (const node of ['web-1', 'ip-10-0-0-7', 'aks-nodepool1-12345678-vmss000000']) {
    assert.match(
      deniedBy(await decideKubeletCsr(csr(node), lookup(open))),
      /^name-pattern: WindowsNodePool team-a\/web sets no spec\.join\.nodeNamePattern, which a pool that takes join tokens must: .* kubectl patch windowsnodepool -n team-a web --type merge -p '\{"spec":\{"join":\{"nodeNamePattern":"\^web-\[0-9\]\{1,4\}\$"\}\}\}'$/,
      node,
    );
  }
});

test('refused before any certificate: a token of a pool that joins Active Directory', async () => {
  const corp = {
    pools: [
      pool({
        activeDirectory: { domain: 'corp.example.com', credentialsSecretRef: { name: 'ad' } },
      }),
    ],
  };
  assert.match(
    deniedBy(await decideKubeletCsr(csr('web-1'), lookup(corp))),
    /^active-directory: WindowsNodePool team-a\/web joins its hosts to Active Directory domain "corp\.example\.com", .*add such hosts over SSH/,
  );
});

test('refused: the pool gone, or its selector no longer selecting the token’s labels', async () => {
  assert.match(deniedBy(await decideKubeletCsr(csr(), lookup({ pools: [] }))), /^pool: /);
  const moved = { pools: [pool({ selector: { matchLabels: { pool: 'api' } } })] };
  assert.match(deniedBy(await decideKubeletCsr(csr(), lookup(moved))), /^pool-selector: /);
});

/** A subject DER with any string type, as an attacker's own encoder writes it. */
function rawName(rdns: { oid: string; type: 'printableString' | 'utf8String'; value: string }[][]) {
  return new Uint8Array(
    AsnConvert.serialize(
      new Name(
        rdns.map(
          (rdn) =>
            new RelativeDistinguishedName(
              rdn.map(
                (a) =>
                  new AttributeTypeAndValue({
                    type: a.oid,
                    value: new AttributeValue({ [a.type]: a.value }),
                  }),
              ),
            ),
        ),
      ),
    ),
  );
}

test('refused: every subject but the kubelet’s exact one, SANs, other usages and extensions', async () => {
  const O = '2.5.4.10';
  const CN = '2.5.4.3';
  const cases: [string, Partial<CsrRequest>, RegExp][] = [
    [
      'a second CN naming another node',
      {
        parsed: parsedFor(
          rawName([
            [{ oid: O, type: 'printableString', value: 'system:nodes' }],
            [{ oid: CN, type: 'printableString', value: 'system:node:web-1' }],
            [{ oid: CN, type: 'printableString', value: 'system:node:master-1' }],
          ]),
        ),
      },
      /^subject: the subject names no node/,
    ],
    [
      'system:masters as O',
      { parsed: parsedFor({ organizations: ['system:masters'], commonName: 'system:node:web-1' }) },
      /^subject: O is "system:masters"/,
    ],
    [
      'a UTF8String CN',
      {
        parsed: parsedFor(
          rawName([
            [{ oid: O, type: 'printableString', value: 'system:nodes' }],
            [{ oid: CN, type: 'utf8String', value: 'system:node:web-1' }],
          ]),
        ),
      },
      /^subject: CN is a UTF8String/,
    ],
    [
      'a CN that is no node',
      { parsed: parsedFor({ organizations: ['system:nodes'], commonName: 'admin' }) },
      /^subject: the subject names no node/,
    ],
    [
      'a DNS SAN',
      { parsed: parsedFor(kubelet('web-1'), { dnsNames: ['kubernetes.default'] }) },
      /^client-certificate: a client certificate has no subject alternative names, got kubernetes\.default/,
    ],
    [
      'an IP SAN',
      { parsed: parsedFor(kubelet('web-1'), { ipAddresses: ['10.96.0.1'] }) },
      /^client-certificate: .*got 10\.96\.0\.1/,
    ],
    [
      'server auth',
      { usages: ['digital signature', 'key encipherment', 'client auth', 'server auth'] },
      /^client-certificate: usages /,
    ],
    ['no client auth', { usages: ['digital signature'] }, /^client-certificate: usages /],
    [
      'a basic-constraints extension',
      { parsed: parsedFor(kubelet('web-1'), { otherRequests: ['2.5.29.19'] }) },
      /^extensions: the CSR asks for 2\.5\.29\.19/,
    ],
    [
      'an unparsable request',
      { parsed: undefined, parseProblem: 'not DER' },
      /^subject: the request is not a valid PKCS#10 CSR: not DER/,
    ],
  ];
  for (const [name, over, check] of cases) {
    assert.match(deniedBy(await decideKubeletCsr(csr('web-1', over), lookup())), check, name);
  }
});

test('refused: node names no WindowsHost can carry', async () => {
  for (const node of ['Web-1', 'web_1', 'web.example.com', `w${'e'.repeat(63)}`, '-web']) {
    assert.match(
      deniedBy(await decideKubeletCsr(csr(node), lookup())),
      /^node-name: node name .* is not a lowercase RFC 1123 label/,
      node,
    );
  }
});

test('left alone: tokens of another group, and requesters that are no bootstrap token', async () => {
  for (const over of [
    { groups: ['system:bootstrappers', 'system:authenticated'] }, // kubeadm's own tokens
    { groups: ['system:bootstrappers:other', 'system:authenticated'] },
    { username: 'system:bootstrap:tok123x' },
    { username: 'system:serviceaccount:team-a:default', groups: ['system:serviceaccounts'] },
  ]) {
    const decision = await decideKubeletCsr(csr('web-1', over), lookup());
    assert.equal(decision.action, 'ignore', JSON.stringify(over));
  }
});

test('two CSRs racing for one name: exactly one is claimed, whatever token or pool they use', async () => {
  const reservations = new NodeNameReservations();
  const records = {
    tok123: record(),
    tok456: record({ tokenId: 'tok456', pool: 'api', namespace: 'team-b', labels: {} }),
  };
  const pools = [
    pool(),
    {
      ...pool({ selector: {}, join: { nodeNamePattern: '^web-[0-9]+$' } }),
      metadata: { name: 'api', namespace: 'team-b' },
    },
  ];
  const world = lookup({ reservations, records, pools });
  // Same token, same name.
  const sameToken = await Promise.all([
    decideKubeletCsr(csr('web-9'), world),
    decideKubeletCsr(csr('web-9'), world),
  ]);
  assert.deepEqual(sameToken.map((d) => d.action).sort(), ['claim', 'deny']);
  assert.match(deniedBy(sameToken.find((d) => d.action === 'deny')!), /^name-taken: .*another CSR/);
  // Two tokens of pools in two namespaces: a WindowsHost create alone would let both through.
  const otherToken = { username: 'system:bootstrap:tok456' };
  const twoPools = await Promise.all([
    decideKubeletCsr(csr('web-10'), world),
    decideKubeletCsr(csr('web-10', otherToken), world),
  ]);
  assert.deepEqual(twoPools.map((d) => d.action).sort(), ['claim', 'deny']);
});

test('the CSR whose own host an earlier pass created goes on; a released name is free again', async () => {
  const first = csr('web-3');
  const own = sshHost('web-3', 'team-a', {
    spec: { mode: 'Pull', pool: 'web', nodeName: 'web-3' },
  });
  own.metadata.annotations = { [joinCsrAnnotation]: first.uid! };
  assert.equal((await decideKubeletCsr(first, lookup({ hosts: [own] }))).action, 'claim');
  assert.match(
    deniedBy(await decideKubeletCsr(csr('web-3'), lookup({ hosts: [own] }))),
    /^name-taken: .*WindowsHost team-a\/web-3 holds it in spec\.nodeName/,
  );
  const reservations = new NodeNameReservations();
  assert.ok(reservations.reserve('web-4', 'a'));
  assert.ok(!reservations.reserve('web-4', 'b'));
  reservations.release('web-4', 'b');
  assert.ok(!reservations.reserve('web-4', 'b'), 'only its holder releases a name');
  reservations.release('web-4', 'a');
  assert.ok(reservations.reserve('web-4', 'b'));
});

test('a reservation lapses after its time (the host is in the cache by then)', () => {
  let clock = 0;
  const reservations = new NodeNameReservations({ ttlMs: 1000, now: () => clock });
  assert.ok(reservations.reserve('web-5', 'a'));
  clock = 999;
  assert.ok(!reservations.reserve('web-5', 'b'));
  clock = 1000;
  assert.ok(reservations.reserve('web-5', 'b'));
});

test('refused: no node joins while the pod network refuses it; nothing is claimed, no use taken', async () => {
  const records = { tok123: record() };
  const refused = lookup({
    records,
    network: () => ({
      ok: false,
      reason: 'NetworkModeMismatch',
      message: 'network.mode is flannel-vxlan, but Flannel does not run in the cluster',
    }),
  });
  assert.equal(
    deniedBy(await decideKubeletCsr(csr(), refused)),
    'network: no node joins the pod network now: network.mode is flannel-vxlan, but Flannel does not run in the cluster',
  );
  assert.equal(records.tok123.usesLeft, record().usesLeft, 'the token keeps its uses');
  const allowed = lookup({
    records,
    network: () => ({ ok: true, network: { mode: 'routed' }, detected: 'none', warnings: [] }),
  });
  assert.equal((await decideKubeletCsr(csr('web-5'), allowed)).action, 'claim');
});

test('instance identity, from the attacker’s side: a token admits only the instance it was made for, named for itself', async () => {
  const aws = await createAwsIdentitySigner();
  const forger = await createAwsIdentitySigner();
  const trust = { certificates: [new X509Certificate(aws.certificatePem)], accountIds: [] };
  const instance = (instanceId: string, accountId = '123456789012', signer = aws) => {
    const document = identityDocument({
      instanceId,
      accountId,
      region: 'eu-west-1',
      privateIp: '10.0.0.7',
      signer,
    });
    return { document, signature: signer.sign(document) };
  };
  const a = 'i-0aaaaaaaaaaaaaaa1';
  const b = 'i-0bbbbbbbbbbbbbbb2';
  const iidPool = pool({ join: { nodeNamePattern: '^i-[0-9a-f]+$', instanceIdentity: 'AWS' } });
  const world = (over: World = {}) => lookup({ pools: [iidPool], trust, ...over });
  // The instance itself, named for itself: claimed.
  assert.equal(
    (await decideKubeletCsr(csr(a), world({ identities: [instance(a)] }))).action,
    'claim',
  );
  const cases: [string, string, World, RegExp][] = [
    [
      'no certificate configured',
      a,
      { identities: [instance(a)], trust: { certificates: [], accountIds: [] } },
      /^instance-identity: WindowsNodePool team-a\/web requires instance identity, but hosts\.instanceIdentity\.aws\.certificates in winfleet-config holds no certificate/,
    ],
    [
      'the user data replayed from a machine with no identity',
      a,
      { identities: [] },
      /^instance-identity: no instance identity was presented with join token tok123 for node i-0aaaaaaaaaaaaaaa1/,
    ],
    [
      'a forged document (signed with the attacker’s own key)',
      a,
      { identities: [instance(a, '123456789012', forger)] },
      /^instance-identity: the document's signature does not verify with any certificate in hosts\.instanceIdentity\.aws\.certificates/,
    ],
    [
      'an altered document (another instance id, the original signature)',
      b,
      {
        identities: [
          { document: instance(a).document.replace(a, b), signature: instance(a).signature },
        ],
      },
      /^instance-identity: the document's signature does not verify/,
    ],
    [
      'a real document of instance A, replayed for another node name',
      'i-0ccccccccccccccc3',
      { identities: [instance(a)] },
      /^instance-identity: node name i-0ccccccccccccccc3 is not the instance id i-0aaaaaaaaaaaaaaa1 the identity document names/,
    ],
    [
      'a token made for instance A, presented from instance B',
      b,
      { identities: [instance(b)], records: { tok123: record({ instanceId: a }) } },
      /^instance-identity: the identity document names instance i-0bbbbbbbbbbbbbbb2, but join token tok123 was made for instance i-0aaaaaaaaaaaaaaa1 .*replayed on another instance/,
    ],
    [
      'an instance of another AWS account',
      a,
      {
        identities: [instance(a, '999999999999')],
        trust: { certificates: trust.certificates, accountIds: ['123456789012'] },
      },
      /^instance-identity: instance i-0aaaaaaaaaaaaaaa1 belongs to AWS account 999999999999, which is not in hosts\.instanceIdentity\.aws\.accountIds/,
    ],
  ];
  for (const [name, node, over, check] of cases) {
    assert.match(deniedBy(await decideKubeletCsr(csr(node), world(over))), check, name);
  }
  // A token made for one instance asks for its identity even in a pool that does not.
  const plain = lookup({
    pools: [pool({ join: { nodeNamePattern: '^i-[0-9a-f]+$' } })],
    trust,
    records: { tok123: record({ instanceId: a }) },
  });
  assert.match(
    deniedBy(await decideKubeletCsr(csr(a), plain)),
    /^instance-identity: no instance identity was presented/,
  );
});

test('refused: a removed host’s name while its certificate may be valid; an unreadable entry fails closed', async () => {
  const retired = {
    'web-5': { until: '2027-11-27T10:00:00Z', host: 'team-a/web-5' },
    'web-6': { problem: 'not JSON' },
  };
  assert.match(
    deniedBy(await decideKubeletCsr(csr('web-5'), lookup({ retired }))),
    /^name-retired: node name web-5 belonged to WindowsHost team-a\/web-5, removed; the node certificate it was given may be valid until 2027-11-27T10:00:00Z/,
  );
  assert.match(
    deniedBy(await decideKubeletCsr(csr('web-6'), lookup({ retired }))),
    /^name-retired: node name web-6 has an entry in winfleet-retired-node-names that does not parse/,
  );
  assert.equal((await decideKubeletCsr(csr('web-8'), lookup({ retired }))).action, 'claim');
});
