// @peculiar/x509 needs the Reflect metadata polyfill before it loads.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import * as x509 from '@peculiar/x509';
import { nodeCacheOf } from '../../../sim/testkit/synthetic-nodes.ts';
import { kubeProxySignerName } from '../../api/kube-proxy-identity.ts';
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
  decideKubeProxyCsr,
  isKubeProxyRequest,
  kubeProxyMaxExpirationSeconds,
} from './kube-proxy-csr-policy.ts';
import type { CsrLookup } from './kubelet-csr-policy.ts';
import { nodeHoldingAddress } from './node-addresses.ts';

const host = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsHost',
  metadata: { name: 'win-a', namespace: 'winfleet-system', uid: 'uid-a' },
  spec: { address: '127.0.0.11', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
  status: { nodeName: 'win-a', hostname: 'WIN-A', addresses: ['127.0.0.11'] },
} as WindowsHost;

/** win-a is the joined host's node; win-b another host's; linux-1 not winfleet's. */
const lookup = (identityOnNode = true): CsrLookup => {
  const nodes = ['win-a', 'linux-1'].map(
    (name): k8s.V1Node => ({
      metadata: {
        name,
        annotations:
          name === 'win-a' && identityOnNode ? { [hostAnnotation]: hostIdentity(host) } : {},
      },
    }),
  );
  return {
    hostForToken: async () => undefined,
    hostsForNode: (name) => (name === 'win-a' ? [host] : []),
    node: (name) => nodes.find((n) => n.metadata?.name === name),
    nodeHolding: nodeHoldingAddress(nodeCacheOf(nodes)),
    network: () => ({ serviceCIDR: '10.96.0.0/12', podCIDR: '10.244.0.0/16', clusterDomain: 'c' }),
    apiServerNames: async () => apiServerNamesOf(),
  };
};

const proxyName: NameFields = {
  organizations: ['winfleet:kube-proxies'],
  commonName: 'winfleet:kube-proxy:win-a',
};

const parsedFor = (name: NameFields = proxyName, over: Partial<ParsedCsr> = {}): ParsedCsr => {
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
    publicKey: { type: 'ec', namedCurve: 'prime256v1' },
    ...over,
  };
};

const request = (over: Partial<CsrRequest> = {}): CsrRequest => ({
  name: 'winfleet-kube-proxy-win-a-0123',
  signerName: kubeProxySignerName,
  username: 'system:node:win-a',
  groups: ['system:nodes', 'system:authenticated'],
  usages: ['digital signature', 'client auth'],
  expirationSeconds: 7 * 24 * 3600,
  parsed: parsedFor(),
  ...over,
});

test('the agent’s request, as it sends it, is winfleet’s and is approved', async () => {
  const pem = await createCsrPem(
    { commonName: 'winfleet:kube-proxy:win-a', organizations: ['winfleet:kube-proxies'] },
    await generateKeyPair(),
  );
  const parsed = parseCsrPem(pem);
  assert.deepEqual(parsed.publicKey, { type: 'ec', namedCurve: 'prime256v1' });
  const sent = request({ parsed });
  assert.ok(isKubeProxyRequest(sent, Buffer.from(pem)));
  const decision = decideKubeProxyCsr(sent, lookup());
  assert.equal(decision.action, 'approve', decision.reason);
  assert.equal(decision.action === 'approve' && decision.host, host);
  // The usages in another order are the same set.
  const reordered = request({ usages: ['client auth', 'digital signature'] });
  assert.equal(decideKubeProxyCsr(reordered, lookup()).action, 'approve');
});

test('only requests naming kube-proxy’s user prefix or group, of the API client signer, are winfleet’s', () => {
  const raw = Buffer.from('irrelevant');
  assert.ok(!isKubeProxyRequest(request({ signerName: 'kubernetes.io/kubelet-serving' }), raw));
  const someoneElse = request({
    parsed: parsedFor({ commonName: 'jane', organizations: ['devs'] }),
  });
  assert.ok(!isKubeProxyRequest(someoneElse, raw), 'another tool’s client certificate');
  const groupOnly = request({
    parsed: parsedFor({ commonName: 'jane', organizations: ['winfleet:kube-proxies'] }),
  });
  assert.ok(isKubeProxyRequest(groupOnly, raw), 'asking for winfleet’s group');
  assert.equal(decideKubeProxyCsr(groupOnly, lookup()).action, 'deny');
  const unreadable = request({ parsed: undefined, parseProblem: 'not canonical DER' });
  assert.ok(!isKubeProxyRequest(unreadable, raw));
  assert.ok(isKubeProxyRequest(unreadable, Buffer.from('..winfleet:kube-proxy:win-a..')));
  const decision = decideKubeProxyCsr(unreadable, lookup());
  assert.equal(decision.action === 'deny' && decision.check, 'request');
});

const denied: [string, CsrRequest, string][] = [
  ['a user that is not a node', request({ username: 'jane', groups: ['devs'] }), 'requester'],
  [
    'a node name without the nodes group',
    request({ groups: ['system:authenticated'] }),
    'requester',
  ],
  [
    'a service account',
    request({
      username: 'system:serviceaccount:default:x',
      groups: ['system:serviceaccounts'],
    }),
    'requester',
  ],
  [
    'a node that is no WindowsHost’s',
    request({
      username: 'system:node:linux-1',
      parsed: parsedFor({ ...proxyName, commonName: 'winfleet:kube-proxy:linux-1' }),
    }),
    'node',
  ],
  [
    'another node’s kube-proxy',
    request({ parsed: parsedFor({ ...proxyName, commonName: 'winfleet:kube-proxy:win-b' }) }),
    'subject',
  ],
  [
    'a second O, system:masters',
    request({
      parsed: parsedFor({
        ...proxyName,
        organizations: ['winfleet:kube-proxies', 'system:masters'],
      }),
    }),
    'subject',
  ],
  [
    'the O system:nodes instead',
    request({ parsed: parsedFor({ ...proxyName, organizations: ['system:nodes'] }) }),
    'subject',
  ],
  ['no O', request({ parsed: parsedFor({ commonName: proxyName.commonName }) }), 'subject'],
  [
    'a second CN, the last one another node’s',
    request({
      parsed: parsedFor(proxyName, {
        subjectDer: goNameDer({ commonName: 'winfleet:kube-proxy:win-b' }),
        subject: [
          ...readName(goNameDer(proxyName)),
          ...readName(goNameDer({ commonName: 'winfleet:kube-proxy:win-b' })),
        ],
      }),
    }),
    'subject',
  ],
  [
    'a DNS name',
    request({ parsed: parsedFor(proxyName, { dnsNames: ['win-a'] }) }),
    'subject alternative names',
  ],
  [
    'a URI',
    request({ parsed: parsedFor(proxyName, { uris: ['spiffe://x'] }) }),
    'subject alternative names',
  ],
  [
    'another extension',
    request({ parsed: parsedFor(proxyName, { otherRequests: ['2.5.29.19'] }) }),
    'extensions',
  ],
  [
    'server auth too',
    request({ usages: ['digital signature', 'client auth', 'server auth'] }),
    'usages',
  ],
  [
    'key encipherment too',
    request({ usages: ['digital signature', 'key encipherment', 'client auth'] }),
    'usages',
  ],
  ['no digital signature', request({ usages: ['client auth'] }), 'usages'],
  ['a usage twice', request({ usages: ['client auth', 'client auth'] }), 'usages'],
  ['no expirationSeconds', request({ expirationSeconds: undefined }), 'lifetime'],
  [
    'a lifetime over 30 days',
    request({ expirationSeconds: kubeProxyMaxExpirationSeconds + 1 }),
    'lifetime',
  ],
  [
    'RSA of 1024 bits',
    request({ parsed: parsedFor(proxyName, { publicKey: { type: 'rsa', modulusBits: 1024 } }) }),
    'key',
  ],
  [
    'P-521',
    request({
      parsed: parsedFor(proxyName, { publicKey: { type: 'ec', namedCurve: 'secp521r1' } }),
    }),
    'key',
  ],
  ['Ed25519', request({ parsed: parsedFor(proxyName, { publicKey: { type: 'ed25519' } }) }), 'key'],
  ['an unreadable key', request({ parsed: parsedFor(proxyName, { publicKey: undefined }) }), 'key'],
];

for (const [what, sent, check] of denied) {
  test(`denied, naming the check: ${what}`, () => {
    const decision = decideKubeProxyCsr(sent, lookup());
    assert.equal(decision.action, 'deny', decision.reason);
    assert.equal(decision.action === 'deny' && decision.check, check, decision.reason);
  });
}

/**
 * The forged requests kube-proxy-credentials.e2e.test.ts once sent with a joined node's own
 * credentials, as the agent would (a one-hour lifetime): real PKCS#10 requests, recognised as
 * winfleet's from their bytes as the controller does, then denied with the check leading the
 * reason (the approver's Denied message; the e2e test matched "^Denied: <reason>").
 */
const forged: [string, CsrSubject, string[], RegExp][] = [
  [
    'host A’s node asks for node B’s kube-proxy',
    { commonName: 'winfleet:kube-proxy:win-other', organizations: ['winfleet:kube-proxies'] },
    ['digital signature', 'client auth'],
    /^kube-proxy certificate refused \(subject\): CN is "winfleet:kube-proxy:win-other"/,
  ],
  [
    'the right CN with the extra O system:nodes',
    {
      commonName: 'winfleet:kube-proxy:win-a',
      organizations: ['winfleet:kube-proxies', 'system:nodes'],
    },
    ['digital signature', 'client auth'],
    /^kube-proxy certificate refused \(subject\): O is/,
  ],
  [
    'server auth among the usages',
    { commonName: 'winfleet:kube-proxy:win-a', organizations: ['winfleet:kube-proxies'] },
    ['digital signature', 'client auth', 'server auth'],
    /^kube-proxy certificate refused \(usages\)/,
  ],
];
for (const [what, subject, usages, reason] of forged) {
  test(`forged with the node’s own credentials (${what}): denied, the check first`, async () => {
    const pem = await createCsrPem(subject, await generateKeyPair());
    const sent = request({ parsed: parseCsrPem(pem), usages, expirationSeconds: 3600 });
    assert.ok(isKubeProxyRequest(sent, Buffer.from(pem)), 'winfleet’s to decide');
    const decision = decideKubeProxyCsr(sent, lookup());
    assert.equal(decision.action, 'deny', decision.reason);
    assert.match(decision.reason, reason);
  });
}

test('an extra extension is denied as one kube-proxy never asks for, not a kubelet', () => {
  const decision = decideKubeProxyCsr(
    request({ parsed: parsedFor(proxyName, { otherRequests: ['2.5.29.19'] }) }),
    lookup(),
  );
  assert.equal(decision.action, 'deny');
  assert.match(
    decision.reason,
    /asks for 2\.5\.29\.19, which winfleet's kube-proxy never requests/,
  );
  assert.doesNotMatch(decision.reason, /kubelet/);
});

test('RSA keys of 2048 to 8192 bits and P-384 are accepted', () => {
  for (const publicKey of [
    { type: 'rsa', modulusBits: 2048 },
    { type: 'rsa', modulusBits: 8192 },
    { type: 'ec', namedCurve: 'secp384r1' },
  ]) {
    const decision = decideKubeProxyCsr(
      request({ parsed: parsedFor(proxyName, { publicKey }) }),
      lookup(),
    );
    assert.equal(decision.action, 'approve', JSON.stringify(publicKey));
  }
});

test('parseCsrPem reads the key type and size of an RSA request', async () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  const keys = {
    privateKey: await crypto.subtle.importKey(
      'pkcs8',
      privateKey.export({ type: 'pkcs8', format: 'der' }),
      algorithm,
      true,
      ['sign'],
    ),
    publicKey: await crypto.subtle.importKey(
      'spki',
      publicKey.export({ type: 'spki', format: 'der' }),
      algorithm,
      true,
      ['verify'],
    ),
  };
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: new x509.Name(goNameDer(proxyName)),
    keys,
    signingAlgorithm: algorithm,
  });
  assert.deepEqual(parseCsrPem(csr.toString('pem')).publicKey, { type: 'rsa', modulusBits: 2048 });
});

test('a WindowsHost’s node whose Node does not carry the host’s identity yet is left pending', () => {
  const decision = decideKubeProxyCsr(request(), lookup(false));
  assert.equal(decision.action, 'ignore', decision.reason);
});
