/**
 * Forged kubelet CSRs against the real API server: each is sent with a real identity (a
 * bootstrap token or a node certificate) and must not be approved. Each waits for the
 * approver's decision (the CSR's Approved or Denied condition), never for a fixed time. What a
 * joined host's own credentials get for a request forged only in its subject, SANs or usages is
 * the policy's alone, and is unit-tested (kubelet-csr-policy.test.ts); what needs the API
 * server or a host (a token's record read from the API, a joining host's live token,
 * NodeRestriction, addresses pinned through the WindowsHost) stays here.
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
import type { SimulatedHosts } from '../../../sim/hosts/fleet.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  csrDecision,
  hostReady,
  listWindowsHosts,
  readWindowsHost,
} from '../../../sim/testkit/windows-hosts.ts';
import { hostAnnotation, hostIdentity, managedNodeLabel } from '../../api/node-annotations.ts';
import { ConditionReason, EventReason } from '../../api/reasons.ts';
import { servingAddressesAnnotation, type WindowsHost } from '../../api/windows-host.ts';
import { ensureBootstrapToken, tokenIdFor } from '../../join/bootstrap-tokens.ts';
import { waitFor } from '../../kube/wait-for.ts';
import {
  type CsrSubject,
  createCsrPem,
  generateKeyPair,
  issueCertificate,
  loadCertificateAuthority,
} from '../../pki/certificates.ts';
import { oidCommonName, oidOrganization } from '../../pki/distinguished-name.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';

/** The node's own identity: the client certificate its kubelet wrote on the host. */
async function nodeKubeConfig(
  host: SimulatedHosts['hosts'][number],
  server: string,
  caData: string,
): Promise<k8s.KubeConfig> {
  const pem = (await host.hostOS().readFile(kubeletClientCertificate))!.toString('utf8');
  const kc = new k8s.KubeConfig();
  kc.loadFromString(
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': caData } }],
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
  return kc;
}

const kubeletClientCertificate = `${hostPaths.certDir}\\kubelet-client-current.pem`;
const kubeletServingCertificate = `${hostPaths.certDir}\\kubelet-server-current.pem`;

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
  const outcome = (name: string) => csrDecision(admin, name);
  const clientUsages = ['digital signature', 'key encipherment', 'client auth'];
  const clientSigner = 'kubernetes.io/kube-apiserver-client-kubelet';
  // The joined host's own token, issued again: its id is the one the approver derives from the
  // host's UID. (What CSRs forged with it get: kubelet-csr-policy.test.ts, "forged with the
  // joined host's own credentials".)
  const joinedToken = await ensureBootstrapToken(kc, {
    uid: joinedHost.metadata.uid!,
    namespace: world.namespace,
    name: joinedHost.metadata.name,
  });
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
      /^Denied: join by command refused \(token\): bootstrap token zzzzzz belongs to no known WindowsHost and has no join-token record/,
    );
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
        assert.match(await csrDecision(admin, name), /^Denied: subject .* has 3 RDNs/);
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

test('a joined node gets serving certificates only for its pinned addresses, and renews only its own identity (issue 8)', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc } = world;
  const [joined] = world.fleet.hosts;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  // Another node, as a Linux node would register: its address and name are not the host's.
  const other = 'e2e-linux-1';
  await core.createNode({
    body: {
      metadata: { name: other, labels: { 'kubernetes.io/os': 'linux' } },
      status: {
        addresses: [
          { type: 'InternalIP', address: '10.1.9.9' },
          { type: 'Hostname', address: other },
        ],
      },
    },
  });
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const host = await waitFor(
    async () => {
      const [h] = await listWindowsHosts(kc, world.namespace);
      return h && hostReady(h) ? h : undefined;
    },
    { description: 'the host Ready', timeoutMs: 90_000 },
  );
  const nodeName = host.status!.nodeName!;
  assert.deepEqual(host.status!.servingAddresses, [
    host.spec.address,
    host.status!.hostname!.toLowerCase(),
  ]);
  // The kubelet's own serving CSR at join (its node IP, a loopback address that is the host's
  // spec.address, and its name) was approved once its Node carried the host's identity.
  await waitFor(() => joined!.hostOS().readFile(kubeletServingCertificate), {
    description: 'the kubelet’s serving certificate on the host',
    timeoutMs: 30_000,
  });

  const cluster = kc.getCurrentCluster()!;
  const caData = Buffer.from(await readFile(world.cluster.pki.caCert)).toString('base64');
  const asNode = (await nodeKubeConfig(joined!, cluster.server, caData)).makeApiClient(
    k8s.CertificatesV1Api,
  );
  const admin = kc.makeApiClient(k8s.CertificatesV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const keys = await generateKeyPair();
  const servingUsages = ['digital signature', 'key encipherment', 'server auth'];
  let n = 0;
  /** A CSR made with the node's own credentials, as its kubelet (or its host admin) would. */
  async function asTheNode(
    subject: Omit<CsrSubject, 'organizations'>,
    signerName: string,
    usages: string[],
  ): Promise<string> {
    const name = `node-own-${++n}`;
    const request = await createCsrPem({ ...subject, organizations: ['system:nodes'] }, keys);
    await asNode.createCertificateSigningRequest({
      body: {
        metadata: { name },
        spec: { request: Buffer.from(request).toString('base64'), signerName, usages },
      },
    });
    return name;
  }
  const serving = (ipAddresses: string[]) =>
    asTheNode(
      { commonName: `system:node:${nodeName}`, ipAddresses, dnsNames: [nodeName] },
      'kubernetes.io/kubelet-serving',
      servingUsages,
    );
  const signed = (name: string) =>
    waitFor(
      async () => {
        const csr = await admin.readCertificateSigningRequest({ name });
        const approved = csr.status?.conditions?.find((c) => c.type === 'Approved');
        return approved && csr.status?.certificate
          ? {
              reason: approved.reason,
              cert: new x509.X509Certificate(
                Buffer.from(csr.status.certificate, 'base64').toString(),
              ),
            }
          : undefined;
      },
      { description: `CSR ${name} approved and signed`, timeoutMs: 30_000 },
    );
  const events = async (reason: string) =>
    (
      await core.listNamespacedEvent({
        namespace: world.namespace,
        fieldSelector: `involvedObject.name=${host.metadata.name},reason=${reason}`,
      })
    ).items;
  const annotate = (value: string) =>
    custom.patchNamespacedCustomObject(
      {
        group: 'winfleet.io',
        version: 'v1alpha1',
        namespace: world.namespace,
        plural: 'windowshosts',
        name: host.metadata.name,
        body: { metadata: { annotations: { [servingAddressesAnnotation]: value } } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  /** The host once the operator has removed the annotation. */
  const annotationHandled = () =>
    waitFor(
      async () => {
        const [h] = await listWindowsHosts(kc, world.namespace);
        return h && h.metadata.annotations?.[servingAddressesAnnotation] === undefined
          ? (h as WindowsHost)
          : undefined;
      },
      { description: `the operator handling ${servingAddressesAnnotation}`, timeoutMs: 30_000 },
    );

  await t.test('the Service IP, added to a NIC on the host, is refused', async () => {
    // What a re-bootstrap records once the host admin has added the Service IP and another
    // node's IP to a NIC (the simulated host reports one address, so it is written here).
    await custom.patchNamespacedCustomObjectStatus(
      {
        group: 'winfleet.io',
        version: 'v1alpha1',
        namespace: world.namespace,
        plural: 'windowshosts',
        name: host.metadata.name,
        body: { status: { addresses: [host.spec.address, '10.96.0.1', '10.1.9.9'] } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await waitFor(
      async () => {
        const [h] = await listWindowsHosts(kc, world.namespace);
        return h?.status?.addresses?.includes('10.96.0.1');
      },
      { description: 'the refreshed report on the WindowsHost', timeoutMs: 10_000 },
    );
    assert.match(
      await csrDecision(admin, await serving([host.spec.address!, '10.96.0.1'])),
      /^Denied: serving certificate SANs refused: 10\.96\.0\.1 is in the service CIDR 10\.96\.0\.0\/12/,
    );
  });

  await t.test('another node’s address or name is refused', async () => {
    assert.match(
      await csrDecision(admin, await serving(['10.1.9.9'])),
      new RegExp(
        `^Denied: serving certificate SANs refused: 10\\.1\\.9\\.9 is held by Node ${other}`,
      ),
    );
    const name = await asTheNode(
      { commonName: `system:node:${nodeName}`, dnsNames: [other] },
      'kubernetes.io/kubelet-serving',
      servingUsages,
    );
    assert.match(await csrDecision(admin, name), new RegExp(`${other} is held by Node ${other}`));
  });

  await t.test('an admin annotation naming a refused address changes nothing', async () => {
    await annotate('10.1.2.3,10.96.0.1');
    const after = await annotationHandled();
    assert.deepEqual(after.status?.servingAddresses, host.status!.servingAddresses);
    const [refused] = await waitFor(
      async () => {
        const found = await events(EventReason.ServingAddressesRefused);
        return found.length > 0 ? found : undefined;
      },
      { description: 'the ServingAddressesRefused Event', timeoutMs: 10_000 },
    );
    assert.equal(refused!.type, 'Warning');
    assert.match(refused!.message!, /10\.96\.0\.1 is in the service CIDR/);
    assert.match(
      await csrDecision(admin, await serving(['10.1.2.3'])),
      /^Denied: .*10\.1\.2\.3 is not among the host's serving addresses/,
    );
  });

  await t.test('an admin annotation naming a new address lets the node have it', async () => {
    await annotate(`${host.spec.address},10.1.2.3`);
    const after = await annotationHandled();
    assert.deepEqual(after.status?.servingAddresses, [host.spec.address, '10.1.2.3']);
    const [changed] = await waitFor(
      async () => {
        const found = await events(EventReason.ServingAddressesChanged);
        return found.length > 0 ? found : undefined;
      },
      { description: 'the ServingAddressesChanged Event', timeoutMs: 10_000 },
    );
    assert.match(changed!.message!, /to 127\.[\d.]+, 10\.1\.2\.3/);
    const { reason, cert } = await signed(await serving(['10.1.2.3']));
    assert.equal(reason, ConditionReason.WinfleetApproved);
    const sans = cert.getExtension(x509.SubjectAlternativeNameExtension)!.names.toJSON();
    assert.deepEqual(sans.map((s) => s.value).sort(), ['10.1.2.3', nodeName].sort());
  });

  await t.test('the node renews its own client certificate with its current one', async () => {
    const name = await asTheNode(
      { commonName: `system:node:${nodeName}` },
      'kubernetes.io/kube-apiserver-client-kubelet',
      ['digital signature', 'client auth'],
    );
    const { reason, cert } = await signed(name);
    assert.equal(reason, ConditionReason.WinfleetApproved, 'approved by winfleet');
    assert.match(cert.subject, new RegExp(`CN=system:node:${nodeName}`));
  });

  await t.test('the node cannot renew into another node’s name', async () => {
    // The API server's NodeRestriction refuses a node CSR whose CN (as Go reads it) is not
    // the requester's own.
    await assert.rejects(
      asTheNode(
        { commonName: `system:node:${other}` },
        'kubernetes.io/kube-apiserver-client-kubelet',
        ['digital signature', 'client auth'],
      ),
      (error: unknown) => (error as { code?: number }).code === 403,
    );
    // Go reads the last CN (its own name), so this passes NodeRestriction; readers that take the
    // first CN see the other node. winfleet accepts only the canonical subject.
    const csr = await x509.Pkcs10CertificateRequestGenerator.create({
      name: new x509.Name(
        AsnConvert.serialize(
          new Name([
            rdn(oidCommonName, `system:node:${other}`),
            rdn(oidOrganization, 'system:nodes'),
            rdn(oidCommonName, `system:node:${nodeName}`),
          ]),
        ),
      ),
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    });
    const name = 'node-own-second-cn';
    await asNode.createCertificateSigningRequest({
      body: {
        metadata: { name },
        spec: {
          request: Buffer.from(csr.toString('pem')).toString('base64'),
          signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
          usages: ['digital signature', 'client auth'],
        },
      },
    });
    assert.match(
      await csrDecision(admin, name),
      new RegExp(`^Denied: renewal by Node ${nodeName}: subject .* has 3 RDNs`),
    );
  });
});

function rdn(type: string, value: string): RelativeDistinguishedName {
  return new RelativeDistinguishedName([
    new AttributeTypeAndValue({ type, value: new AttributeValue({ printableString: value }) }),
  ]);
}

test('attacker: a node cannot get a serving certificate naming the API server, whatever its Node reported or an annotation pinned (issue 33)', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'], startOperator: false });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const admin = kc.makeApiClient(k8s.CertificatesV1Api);
  const caPem = await readFile(world.cluster.pki.caCert, 'utf8');
  const caData = Buffer.from(caPem).toString('base64');
  const server = kc.getCurrentCluster()!.server;
  // kube-public/cluster-info as kubeadm writes it, naming its controlPlaneEndpoint (a name no
  // Node holds): the operator leaves a cluster-info that is not its own alone.
  const endpoint = 'k8s-api.winfleet-e2e.test';
  await core.createNamespacedConfigMap({
    namespace: 'kube-public',
    body: {
      metadata: { name: 'cluster-info' },
      data: {
        kubeconfig: stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [
            {
              name: '',
              cluster: { server: `https://${endpoint}:6443`, 'certificate-authority-data': caData },
            },
          ],
        }),
      },
    },
  });
  const operator = await startTestOperator(kc, {
    namespace: world.namespace,
    payloadDir: world.payloadDir,
    config: { hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 } },
  });
  t.after(() => operator.stop());
  // The test API server's own address: its URL's host, and an IP SAN of its certificate.
  const apiAddress = new URL(server).hostname;
  assert.equal(apiAddress, '127.0.0.1');

  // A machine that joined by command (here: its WindowsHost and Node made as the operator's
  // approval and the kubelet's registration would make them) and wrote its own Node's
  // addresses: the API server's address as its InternalIP, the endpoint as its Hostname.
  const nodeName = 'api-spoof';
  await custom.createNamespacedCustomObject({
    group: 'winfleet.io',
    version: 'v1alpha1',
    namespace: world.namespace,
    plural: 'windowshosts',
    body: {
      apiVersion: 'winfleet.io/v1alpha1',
      kind: 'WindowsHost',
      metadata: { name: nodeName },
      spec: { mode: 'Pull', nodeName },
    },
  });
  await core.createNode({
    body: {
      metadata: { name: nodeName, labels: { [managedNodeLabel]: 'true' } },
      status: {
        addresses: [
          { type: 'InternalIP', address: apiAddress },
          { type: 'Hostname', address: endpoint },
        ],
      },
    },
  });
  const host = await waitFor(
    async () => {
      const h = (await readWindowsHost(kc, world.namespace, nodeName)) as WindowsHost;
      return h.status?.servingAddresses ? h : undefined;
    },
    { description: 'the Pull host’s pinned serving addresses', timeoutMs: 60_000 },
  );
  // The IP is pinned (trust on first use); the Hostname the machine wrote is not.
  assert.deepEqual(host.status!.servingAddresses, [apiAddress]);
  await waitFor(
    async () =>
      (await core.readNode({ name: nodeName })).metadata?.annotations?.[hostAnnotation] ===
      hostIdentity(host),
    { description: 'the Node adopted (the host’s identity on it)', timeoutMs: 30_000 },
  );

  // The node's own credentials, as its kubelet holds them.
  const ca = await loadCertificateAuthority({
    certPem: caPem,
    keyPem: await readFile(world.cluster.pki.caKey, 'utf8'),
  });
  const nodeCert = await issueCertificate(ca, {
    commonName: `system:node:${nodeName}`,
    organizations: ['system:nodes'],
    usage: 'client',
  });
  const asNode = new k8s.KubeConfig();
  asNode.loadFromOptions({
    clusters: [{ name: 'c', server, caData }],
    users: [
      {
        name: 'n',
        certData: Buffer.from(nodeCert.certPem).toString('base64'),
        keyData: Buffer.from(nodeCert.keyPem).toString('base64'),
      },
    ],
    contexts: [{ name: 'x', cluster: 'c', user: 'n' }],
    currentContext: 'x',
  });
  const keys = await generateKeyPair();
  let n = 0;
  const serving = async (ipAddresses: string[], dnsNames: string[]) => {
    const name = `api-spoof-${++n}`;
    const request = await createCsrPem(
      {
        commonName: `system:node:${nodeName}`,
        organizations: ['system:nodes'],
        ipAddresses,
        dnsNames,
      },
      keys,
    );
    await asNode.makeApiClient(k8s.CertificatesV1Api).createCertificateSigningRequest({
      body: {
        metadata: { name },
        spec: {
          request: Buffer.from(request).toString('base64'),
          signerName: 'kubernetes.io/kubelet-serving',
          usages: ['digital signature', 'key encipherment', 'server auth'],
        },
      },
    });
    return csrDecision(admin, name);
  };

  await t.test('the API server’s address its Node reported is denied, naming why', async () => {
    assert.match(
      await serving([apiAddress], [nodeName]),
      /^Denied: serving certificate SANs refused: 127\.0\.0\.1 is the API server's \(the server of the operator’s kubeconfig\)/,
    );
  });

  await t.test('the controlPlaneEndpoint it reported as its Hostname is denied', async () => {
    assert.match(
      await serving([], [nodeName, endpoint]),
      /^Denied: serving certificate SANs refused: k8s-api\.winfleet-e2e\.test is the API server's \(the server of kube-public\/cluster-info\)/,
    );
  });

  await t.test('an annotation cannot pin them either', async () => {
    await custom.patchNamespacedCustomObject(
      {
        group: 'winfleet.io',
        version: 'v1alpha1',
        namespace: world.namespace,
        plural: 'windowshosts',
        name: nodeName,
        body: {
          metadata: { annotations: { [servingAddressesAnnotation]: `${apiAddress},${endpoint}` } },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const [refused] = await waitFor(
      async () => {
        const found = (
          await core.listNamespacedEvent({
            namespace: world.namespace,
            fieldSelector: `involvedObject.name=${nodeName},reason=${EventReason.ServingAddressesRefused}`,
          })
        ).items;
        return found.length > 0 ? found : undefined;
      },
      { description: 'the ServingAddressesRefused Event', timeoutMs: 30_000 },
    );
    assert.match(refused!.message!, /127\.0\.0\.1 is the API server's/);
    assert.match(refused!.message!, /k8s-api\.winfleet-e2e\.test is the API server's/);
    const after = (await readWindowsHost(kc, world.namespace, nodeName)) as WindowsHost;
    assert.deepEqual(after.status?.servingAddresses, [apiAddress]);
    // And the node's CSR stays denied.
    assert.match(await serving([apiAddress], [nodeName]), /127\.0\.0\.1 is the API server's/);
  });
});
