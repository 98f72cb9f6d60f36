/**
 * kube-proxy's own credentials against the real API server (issue 11, item 2). A joined host's
 * agent asks for them with the node's credentials, the operator approves, the controller
 * manager signs: the certificate can list EndpointSlices, which the node's cannot (403 — why
 * kube-proxy with the kubelet's credentials programs no Service). Forged kube-proxy CSRs whose
 * identity is the point (an admin, a node of no WindowsHost) or that the API server refuses
 * itself are sent with a real identity and not approved; those forged only in what the node's
 * own request says (another node's CN, an extra O, server auth) are decided in
 * kube-proxy-csr-policy.test.ts. The agent renews at 70% of the lifetime.
 */
// @peculiar/x509 (behind src/pki) needs the Reflect metadata polyfill before it loads.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import {
  createWindowsHosts,
  csrDecision,
  firstHostWithNode,
} from '../../../sim/testkit/windows-hosts.ts';
import {
  ensureKubeProxyCredentials,
  kubeProxyPendingKeyPath,
  parseKubeProxyKubeconfig,
} from '../../agent/kube-proxy-credentials.ts';
import { nodeKubeConfig } from '../../agent/node-client.ts';
import {
  kubeProxyGroup,
  kubeProxySignerName,
  kubeProxyUserName,
} from '../../api/kube-proxy-identity.ts';
import { httpStatus } from '../../kube/client.ts';
import { waitFor } from '../../kube/wait-for.ts';
import {
  type CsrSubject,
  createCsrPem,
  generateKeyPair,
  issueCertificate,
  loadCertificateAuthority,
} from '../../pki/certificates.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';
import type { ServicesManifest } from '../../servicesmanifest/services-manifest.ts';

/** A client for a certificate and key (PEM), against the test cluster. */
function certificateKubeConfig(server: string, caPem: string, certPem: string, keyPem: string) {
  const base64 = (text: string) => Buffer.from(text).toString('base64');
  const kc = new k8s.KubeConfig();
  kc.loadFromString(
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': base64(caPem) } }],
      users: [
        {
          name: 'u',
          user: { 'client-certificate-data': base64(certPem), 'client-key-data': base64(keyPem) },
        },
      ],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return kc;
}

/** The HTTP status of listing EndpointSlices in every namespace (0: allowed). */
async function listSlicesStatus(kc: k8s.KubeConfig): Promise<number> {
  try {
    await kc.makeApiClient(k8s.DiscoveryV1Api).listEndpointSliceForAllNamespaces();
    return 0;
  } catch (error) {
    const status = httpStatus(error);
    if (status === undefined) throw error;
    return status;
  }
}

test('a joined host’s kube-proxy gets its own certificate, which lists EndpointSlices; forged requests are not approved', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc } = world;
  const admin = kc.makeApiClient(k8s.CertificatesV1Api);
  const [sim] = world.fleet.hosts;
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  // The node registered (it need not be Ready: kube-proxy's credentials do not wait for that).
  const host = await firstHostWithNode(kc, world.namespace);
  const nodeName = host.status!.nodeName!;
  const os = sim!.hostOS();

  // The agent asked for the certificate with the node's credentials and wrote its kubeconfig;
  // kube-proxy, held back until then, runs.
  const text = await waitFor(() => os.readFile(hostPaths.kubeProxyKubeconfig), {
    description: `${hostPaths.kubeProxyKubeconfig} on the host`,
    timeoutMs: 60_000,
  }).catch(async (error: Error) => {
    const logs = (await os.listDirectory(hostPaths.agentLogs)) ?? [];
    const tails = await Promise.all(
      logs.map(async (f) =>
        (await os.readFile(`${hostPaths.agentLogs}\\${f}`))?.toString('utf8').slice(-3000),
      ),
    );
    const csrs = (await admin.listCertificateSigningRequest()).items.map(
      (c) => `${c.metadata?.name} ${c.spec.signerName} ${JSON.stringify(c.status?.conditions)}`,
    );
    throw new Error(`${error.message}\nagent log: ${tails.join('\n')}\nCSRs: ${csrs.join('\n')}`);
  });
  await waitFor(async () => (await os.queryService('kube-proxy'))?.state === 'running', {
    description: 'kube-proxy running',
    timeoutMs: 30_000,
  });
  const proxy = parseKubeProxyKubeconfig(text.toString('utf8'));
  const certificate = new X509Certificate(proxy.certPem);
  assert.deepEqual(certificate.subject.split('\n').sort(), [
    `CN=${kubeProxyUserName(nodeName)}`,
    `O=${kubeProxyGroup}`,
  ]);
  const lifetimeMs =
    new Date(certificate.validTo).getTime() - new Date(certificate.validFrom).getTime();
  assert.ok(lifetimeMs <= (7 * 24 * 3600 + 10 * 60) * 1000, 'the lifetime asked for, 7 days');
  assert.equal(await os.readFile(kubeProxyPendingKeyPath), undefined, 'no pending key left');
  const requests = (await admin.listCertificateSigningRequest()).items.filter(
    (c) => c.spec.signerName === kubeProxySignerName,
  );
  assert.equal(requests.length, 1);
  assert.equal(requests[0]!.spec.username, `system:node:${nodeName}`);
  assert.deepEqual(requests[0]!.spec.usages, ['digital signature', 'client auth']);
  assert.match(
    await csrDecision(admin, requests[0]!.metadata!.name!),
    /^Approved: kube-proxy client/,
  );

  // What the certificate is for: EndpointSlices, which the node's own credentials cannot list.
  const server = kc.getCurrentCluster()!.server;
  const caPem = await readFile(world.cluster.pki.caCert, 'utf8');
  const asProxy = certificateKubeConfig(server, caPem, proxy.certPem, proxy.keyPem);
  const asNode = (await nodeKubeConfig(os))!;
  await waitFor(async () => (await listSlicesStatus(asProxy)) === 0, {
    description: 'kube-proxy’s certificate allowed to list EndpointSlices',
    timeoutMs: 20_000,
  });
  assert.equal(await listSlicesStatus(asNode), 403, 'the kubelet’s node certificate is refused');

  let n = 0;
  /** Creates a kube-apiserver-client CSR as `client`; its name, or the HTTP status refusing it. */
  async function submit(
    client: k8s.KubeConfig,
    subject: CsrSubject,
    usages = ['digital signature', 'client auth'],
  ): Promise<string | number> {
    const name = `forged-kube-proxy-${++n}`;
    const request = Buffer.from(await createCsrPem(subject, await generateKeyPair())).toString(
      'base64',
    );
    try {
      await client.makeApiClient(k8s.CertificatesV1Api).createCertificateSigningRequest({
        body: {
          metadata: { name },
          spec: { request, signerName: kubeProxySignerName, usages, expirationSeconds: 3600 },
        },
      });
      return name;
    } catch (error) {
      const status = httpStatus(error);
      if (status === undefined) throw error;
      return status;
    }
  }
  const proxySubject = (node: string, organizations = [kubeProxyGroup]): CsrSubject => ({
    commonName: kubeProxyUserName(node),
    organizations,
  });
  const outcome = async (sent: string | number) => {
    assert.equal(typeof sent, 'string', `the API server refused the CSR with ${sent}`);
    return csrDecision(admin, sent as string);
  };

  await t.test('the right CN with the extra O system:masters', async () => {
    // The API server itself refuses system:masters for this signer (CertificateSubjectRestriction).
    assert.equal(
      await submit(asNode, proxySubject(nodeName, [kubeProxyGroup, 'system:masters'])),
      403,
    );
  });

  await t.test('a requester that is not a node', async () => {
    assert.match(
      await outcome(await submit(kc, proxySubject(nodeName))),
      /^Denied: kube-proxy certificate refused \(requester\)/,
    );
  });

  await t.test('a node that is not a WindowsHost’s', async () => {
    // A Linux node's credentials, issued by the cluster CA as its kubelet's would be.
    const ca = await loadCertificateAuthority({
      certPem: caPem,
      keyPem: await readFile(world.cluster.pki.caKey, 'utf8'),
    });
    const linux = await issueCertificate(ca, {
      commonName: 'system:node:e2e-linux-1',
      organizations: ['system:nodes'],
      usage: 'client',
    });
    const asLinux = certificateKubeConfig(server, caPem, linux.certPem, linux.keyPem);
    assert.match(
      await outcome(await submit(asLinux, proxySubject('e2e-linux-1'))),
      /^Denied: kube-proxy certificate refused \(node\): Node e2e-linux-1 is not the node of a WindowsHost/,
    );
  });

  // Meanwhile the agent checked again every second: a current certificate is not asked for again.
  const agentRequests = (await admin.listCertificateSigningRequest()).items.filter((c) =>
    c.metadata?.name?.startsWith('winfleet-kube-proxy-'),
  );
  assert.equal(agentRequests.length, 1);

  await t.test(
    'the agent renews at 70% of the lifetime and restarts kube-proxy with the new one',
    async () => {
      const manifest = JSON.parse(
        (await os.readFile(hostPaths.servicesManifest))!.toString('utf8'),
      ) as ServicesManifest;
      const log: string[] = [];
      const renewAt = new Date(certificate.validFrom).getTime() + lifetimeMs * 0.7;
      const result = await ensureKubeProxyCredentials(
        { hostOS: os, stdout: () => {}, stderr: (line) => log.push(line) },
        manifest,
        nodeName,
        asNode,
        { now: () => new Date(renewAt + 1000), waitMs: 30_000 },
      );
      assert.deepEqual([...result.restart], ['kube-proxy'], log.join(''));
      assert.match(log.join(''), /70% of its certificate's lifetime has passed/);
      const renewed = parseKubeProxyKubeconfig(
        (await os.readFile(hostPaths.kubeProxyKubeconfig))!.toString('utf8'),
      );
      assert.notEqual(renewed.certPem, proxy.certPem);
      assert.notEqual(renewed.keyPem, proxy.keyPem, 'a new key');
    },
  );
});
