import assert from 'node:assert/strict';
import test from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  offlineInformer,
  offlineNodeInformer,
  syntheticNode,
} from '../../../sim/testkit/synthetic-nodes.ts';
import { hostAnnotation, hostIdentity } from '../../api/node-annotations.ts';
import { type WindowsHost, windowsHostResource } from '../../api/windows-host.ts';
import { type WindowsNodePool, windowsNodePoolResource } from '../../api/windows-node-pool.ts';
import { parseConfig } from '../../config/winfleet-config.ts';
import { resources } from '../../controller-runtime/informer-factory.ts';
import { silentLogger } from '../../log/logger.ts';
import { createCsrPem, generateKeyPair } from '../../pki/certificates.ts';
import { apiServerNamesOf } from './api-server-names.ts';
import { createCsrController } from './csr-controller.ts';
import { servingSigner } from './kubelet-csr-policy.ts';

const host = {
  apiVersion: windowsHostResource.apiVersion,
  kind: 'WindowsHost',
  metadata: { name: 'win-a', namespace: 'win', uid: 'uid-a', resourceVersion: '1' },
  spec: { address: '10.1.2.2', username: 'admin', sshKeySecretRef: { name: 'key' } },
  status: { nodeName: 'win-a', servingAddresses: ['10.1.2.2', 'win-a'] },
} as WindowsHost;

/** A kubelet serving CSR of win-a naming `sans`. */
async function servingCsr(name: string, sans: string[]): Promise<k8s.V1CertificateSigningRequest> {
  const pem = await createCsrPem(
    {
      commonName: 'system:node:win-a',
      organizations: ['system:nodes'],
      ipAddresses: sans.filter((s) => /^[\d.]+$/.test(s)),
      dnsNames: sans.filter((s) => !/^[\d.]+$/.test(s)),
    },
    await generateKeyPair(),
  );
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name, resourceVersion: '1' },
    spec: {
      request: Buffer.from(pem).toString('base64'),
      signerName: servingSigner,
      username: 'system:node:win-a',
      groups: ['system:nodes', 'system:authenticated'],
      usages: ['digital signature', 'server auth'],
    },
  };
}

/** Counts calls of `list()`: every read of a whole cache. */
function countLists(...informers: { list(): unknown[] }[]): { count: number } {
  const reads = { count: 0 };
  for (const informer of informers) {
    const list = informer.list.bind(informer);
    informer.list = () => {
      reads.count++;
      return list();
    };
  }
  return reads;
}

/**
 * 10,000 kwok-like Nodes (all at kwok's one InternalIP, 127.0.0.1), win-a's Node, 1,000
 * pending CSRs of other nodes; the CSR API recorded, not called.
 */
function setUp() {
  const nodes = offlineNodeInformer();
  nodes.replace([
    ...Array.from({ length: 10_000 }, (_, i) =>
      syntheticNode(`node-${i}`, { addresses: ['127.0.0.1'] }),
    ),
    syntheticNode('win-a', {
      addresses: ['10.1.2.2'],
      annotations: { [hostAnnotation]: hostIdentity(host) },
    }),
  ]);
  const hosts = offlineInformer<WindowsHost>(windowsHostResource);
  hosts.replace([
    host,
    ...Array.from(
      { length: 10_000 },
      (_, i) =>
        ({
          ...host,
          metadata: { ...host.metadata, name: `h-${i}`, uid: `uid-${i}` },
          status: { nodeName: `node-${i}` },
        }) as WindowsHost,
    ),
  ]);
  const csrs = offlineInformer<k8s.V1CertificateSigningRequest>(resources.csrs);
  csrs.replace(
    Array.from({ length: 1000 }, (_, i) => ({
      metadata: { name: `other-${i}`, resourceVersion: '1' },
      spec: { request: '', signerName: servingSigner, username: `system:node:node-${i}` },
    })),
  );
  const decisions: { name: string; type: string; message: string }[] = [];
  const api = {
    readCertificateSigningRequest: async ({ name }: { name: string }) => ({
      ...csrs.get(name)!,
      status: {},
    }),
    replaceCertificateSigningRequestApproval: async ({
      name,
      body,
    }: {
      name: string;
      body: k8s.V1CertificateSigningRequest;
    }) => {
      const condition = body.status!.conditions!.at(-1)!;
      decisions.push({ name, type: condition.type, message: condition.message! });
      return body;
    },
  };
  const controller = createCsrController({
    kc: { makeApiClient: () => api } as unknown as k8s.KubeConfig,
    csrs,
    hosts,
    nodes,
    config: () => parseConfig(''),
    apiServerNames: async () => apiServerNamesOf({ '10.1.0.100': 'the server of the test' }),
    events: { record: () => {} },
    log: silentLogger,
    operatorNamespace: 'winfleet-system',
    pools: offlineInformer<WindowsNodePool>(windowsNodePoolResource),
  });
  return { nodes, hosts, csrs, controller, decisions, reads: countLists(nodes, hosts, csrs) };
}

test('a serving CSR is decided among 10,000 Nodes and hosts without reading a whole cache', async () => {
  const { csrs, controller, decisions, reads } = setUp();
  csrs.apply('ADDED', await servingCsr('mine', ['10.1.2.2', 'win-a']));
  csrs.apply('ADDED', await servingCsr('taken', ['10.1.2.2', 'node-42']));
  // 127.0.0.1 is every kwok Node's address; win-a's own spec.address is not it.
  csrs.apply('ADDED', await servingCsr('shared', ['127.0.0.1']));
  await controller.queue.whenIdle();
  controller.stop();
  const byName = new Map(decisions.map((d) => [d.name, d]));
  assert.equal(byName.get('mine')?.type, 'Approved', byName.get('mine')?.message);
  assert.equal(byName.get('taken')?.type, 'Denied');
  assert.match(byName.get('taken')!.message, /node-42 is held by Node node-42/);
  assert.equal(byName.get('shared')?.type, 'Denied');
  assert.match(byName.get('shared')!.message, /127\.0\.0\.1 is a loopback address/);
  assert.equal(reads.count, 0, 'no whole Node, host or CSR cache was read');
});

test("a Node event looks at that node's pending CSRs only, among 1,000 others", () => {
  const { nodes, controller, reads } = setUp();
  const keys: string[] = [];
  controller.enqueue = (key) => keys.push(key);
  nodes.apply('ADDED', syntheticNode('node-new'));
  nodes.apply(
    'MODIFIED',
    syntheticNode('node-7', { resourceVersion: '2', annotations: { a: 'changed' } }),
  );
  assert.deepEqual(keys, ['other-7']);
  assert.equal(reads.count, 0);
});
