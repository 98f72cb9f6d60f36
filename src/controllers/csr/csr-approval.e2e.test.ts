/**
 * Forged kubelet CSRs against the real API server: each is sent with a real identity (a
 * bootstrap token or a node certificate) and must not be approved. Each waits for the
 * approver's decision (the CSR's Approved or Denied condition), never for a fixed time.
 */
// @peculiar/x509 needs the Reflect metadata polyfill before it loads.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { AsnConvert } from '@peculiar/asn1-schema';
import {
  AttributeTypeAndValue,
  AttributeValue,
  Name,
  RelativeDistinguishedName,
} from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import { stringify } from 'yaml';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { type CsrSubject, createCsrPem, generateKeyPair } from '../../pki/certificates.ts';
import { oidCommonName, oidOrganization } from '../../pki/distinguished-name.ts';
import { ensureBootstrapToken, tokenIdFor } from '../hosts/bootstrap-tokens.ts';

/** The approver's decision on a CSR, "Approved: <reason>" or "Denied: <reason>", once made. */
async function decision(admin: k8s.CertificatesV1Api, name: string): Promise<string> {
  return waitFor(
    async () => {
      const csr = await admin.readCertificateSigningRequest({ name });
      const c = csr.status?.conditions?.find((x) => x.type === 'Approved' || x.type === 'Denied');
      return c ? `${c.type}: ${c.message}` : undefined;
    },
    { description: `a decision on CSR ${name}`, timeoutMs: 30_000 },
  );
}

function tokenKubeConfig(server: string, caData: string, token: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromString(
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': caData } }],
      users: [{ name: 'u', user: { token } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return kc;
}

test('forged kubelet CSRs are not approved', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc } = world;
  const [joined] = world.fleet.hosts;
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const joinedHost = await waitFor(
    async () => {
      const [h] = await listWindowsHosts(kc, world.namespace);
      return h && hostReady(h) ? h : undefined;
    },
    { description: 'the host Ready', timeoutMs: 90_000 },
  );
  const cluster = kc.getCurrentCluster()!;
  const caData = Buffer.from(await readFile(world.cluster.pki.caCert)).toString('base64');
  const admin = kc.makeApiClient(k8s.CertificatesV1Api);
  let n = 0;

  async function submit(
    client: k8s.KubeConfig,
    subject: CsrSubject,
    signerName: string,
    usages: string[],
  ): Promise<string> {
    const name = `forged-${++n}`;
    const request = Buffer.from(await createCsrPem(subject, await generateKeyPair())).toString(
      'base64',
    );
    await client.makeApiClient(k8s.CertificatesV1Api).createCertificateSigningRequest({
      body: { metadata: { name }, spec: { request, signerName, usages } },
    });
    return name;
  }
  const outcome = (name: string) => decision(admin, name);
  const clientUsages = ['digital signature', 'key encipherment', 'client auth'];
  const clientSigner = 'kubernetes.io/kube-apiserver-client-kubelet';
  // The joined host's own (re-issued) token: the right issuer, used the wrong way.
  const joinedToken = await ensureBootstrapToken(kc, {
    uid: joinedHost.metadata.uid!,
    namespace: world.namespace,
    name: joinedHost.metadata.name,
  });
  const asJoinedToken = tokenKubeConfig(cluster.server, caData, joinedToken.token);
  const nodeName = joinedHost.status!.nodeName!;

  await t.test('an unknown token', async () => {
    // A token in winfleet's group that no WindowsHost was given.
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedSecret({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'bootstrap-token-zzzzzz' },
        type: 'bootstrap.kubernetes.io/token',
        stringData: {
          'token-id': 'zzzzzz',
          'token-secret': 'zzzzzzzzzzzzzzzz',
          'usage-bootstrap-authentication': 'true',
          'auth-extra-groups': 'system:bootstrappers:winfleet',
          expiration: new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z'),
        },
      },
    });
    const forger = tokenKubeConfig(cluster.server, caData, 'zzzzzz.zzzzzzzzzzzzzzzz');
    const name = await submit(
      forger,
      { commonName: `system:node:${nodeName}`, organizations: ['system:nodes'] },
      clientSigner,
      clientUsages,
    );
    assert.match(
      await outcome(name),
      /^Denied: bootstrap token zzzzzz belongs to no known WindowsHost/,
    );
  });

  await t.test('a wrong CN', async () => {
    const name = await submit(
      asJoinedToken,
      { commonName: 'system:node:someone-else', organizations: ['system:nodes'] },
      clientSigner,
      clientUsages,
    );
    assert.match(await outcome(name), /^Denied: CN is "system:node:someone-else"/);
  });

  await t.test('extra SANs', async () => {
    const name = await submit(
      asJoinedToken,
      {
        commonName: `system:node:${nodeName}`,
        organizations: ['system:nodes'],
        dnsNames: ['kubernetes.default.svc'],
      },
      clientSigner,
      clientUsages,
    );
    assert.match(
      await outcome(name),
      /^Denied: a client certificate has no subject alternative names/,
    );
  });

  await t.test('a wrong O', async () => {
    const name = await submit(
      asJoinedToken,
      { commonName: `system:node:${nodeName}`, organizations: ['system:masters'] },
      clientSigner,
      clientUsages,
    );
    assert.match(await outcome(name), /^Denied: O is "system:masters"/);
  });

  await t.test('a node that already exists', async () => {
    const name = await submit(
      asJoinedToken,
      { commonName: `system:node:${nodeName}`, organizations: ['system:nodes'] },
      clientSigner,
      clientUsages,
    );
    assert.match(await outcome(name), new RegExp(`^Denied: Node ${nodeName} already exists`));
  });

  await t.test('serving SANs outside the host’s addresses', async () => {
    // As the node itself: its client certificate, written by its kubelet on the host.
    const pem = (await joined!
      .hostOS()
      .readFile('C:\\k\\pki\\kubelet-client-current.pem'))!.toString('utf8');
    const asNode = new k8s.KubeConfig();
    asNode.loadFromString(
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'c', cluster: { server: cluster.server, 'certificate-authority-data': caData } },
        ],
        users: [
          {
            name: 'n',
            user: {
              'client-certificate-data': Buffer.from(pem).toString('base64'),
              'client-key-data': Buffer.from(pem).toString('base64'),
            },
          },
        ],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'n' } }],
        'current-context': 'x',
      }),
    );
    const name = await submit(
      asNode,
      {
        commonName: `system:node:${nodeName}`,
        organizations: ['system:nodes'],
        ipAddresses: ['10.0.0.9'],
      },
      'kubernetes.io/kubelet-serving',
      ['digital signature', 'key encipherment', 'server auth'],
    );
    assert.match(await outcome(name), /^Denied: IP SANs 10\.0\.0\.9 are not addresses of the host/);
  });

  assert.equal(tokenIdFor(joinedHost.metadata.uid!), joinedToken.id);
});

test('a joining host’s bootstrap token cannot get another node’s certificate with a second CN (issue 8)', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc } = world;
  const [joining] = world.fleet.hosts;
  // Hold the join in flight: the host goes down as its kubelet starts, before it asks for a
  // certificate, so its token is live and its Node does not exist yet. The downtime is short
  // because the machine's downtime timer outlives the test.
  joining!.faults.rebootWhen({ when: { serviceStarted: 'kubelet' }, downtimeMs: 20_000 });
  const down = new Promise<void>((resolve) => joining!.machine.onShutdown(() => resolve()));
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  await down;
  const host = await waitFor(
    async () => {
      const [h] = await listWindowsHosts(kc, world.namespace);
      return h?.status?.nodeName && h.status.bootstrapTokenId ? h : undefined;
    },
    { description: 'the joining host’s node name and bootstrap token', timeoutMs: 30_000 },
  );
  const nodeName = host.status!.nodeName!;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  assert.equal(
    (await core.listNode()).items.some((n) => n.metadata?.name === nodeName),
    false,
    'the joining host has no Node yet',
  );
  // The token the operator handed the host, taken as a thief would find it.
  const secret = await core.readNamespacedSecret({
    name: `bootstrap-token-${host.status!.bootstrapTokenId}`,
    namespace: 'kube-system',
  });
  const field = (key: string) => Buffer.from(secret.data![key]!, 'base64').toString('utf8');
  const cluster = kc.getCurrentCluster()!;
  const caData = Buffer.from(await readFile(world.cluster.pki.caCert)).toString('base64');
  const thief = tokenKubeConfig(
    cluster.server,
    caData,
    `${field('token-id')}.${field('token-secret')}`,
  ).makeApiClient(k8s.CertificatesV1Api);
  const admin = kc.makeApiClient(k8s.CertificatesV1Api);
  const victim = 'lab-linux-1';
  const keys = await generateKeyPair();

  const subjects: [string, string[]][] = [
    ['second-cn-last', [nodeName, victim]],
    ['second-cn-first', [victim, nodeName]],
  ];
  for (const [name, [firstNode, lastNode]] of subjects) {
    await t.test(
      `CN=system:node:${firstNode}, O=system:nodes, CN=system:node:${lastNode}`,
      async () => {
        const subject = new Name([
          rdn(oidCommonName, `system:node:${firstNode}`),
          rdn(oidOrganization, 'system:nodes'),
          rdn(oidCommonName, `system:node:${lastNode}`),
        ]);
        const csr = await x509.Pkcs10CertificateRequestGenerator.create({
          name: new x509.Name(AsnConvert.serialize(subject)),
          keys,
          signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
        });
        await thief.createCertificateSigningRequest({
          body: {
            metadata: { name },
            spec: {
              request: Buffer.from(csr.toString('pem')).toString('base64'),
              signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
              usages: ['digital signature', 'key encipherment', 'client auth'],
            },
          },
        });
        assert.match(await decision(admin, name), /^Denied: subject .* has 3 RDNs/);
      },
    );
  }

  // Denied CSRs are never signed; and no CSR in the cluster carries a certificate for the victim.
  for (const csr of (await admin.listCertificateSigningRequest()).items) {
    if (!csr.status?.certificate) continue;
    const cert = new x509.X509Certificate(Buffer.from(csr.status.certificate, 'base64').toString());
    assert.doesNotMatch(cert.subject, new RegExp(`system:node:${victim}`), csr.metadata?.name);
  }
});

function rdn(type: string, value: string): RelativeDistinguishedName {
  return new RelativeDistinguishedName([
    new AttributeTypeAndValue({ type, value: new AttributeValue({ printableString: value }) }),
  ]);
}
