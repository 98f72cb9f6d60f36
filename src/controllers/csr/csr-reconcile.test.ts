/**
 * reconcileCsr driven over a stated cache (offline informers with the CSRs, hosts, Nodes and
 * pools of each case) without watches: the policies read the real lookup (csr-lookup.ts), and
 * the API reads and writes, the claim and the release are the state's function fields, bound to
 * recorders.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  nodeCacheOf,
  offlineInformer,
  syntheticNode,
} from '../../../sim/testkit/synthetic-nodes.ts';
import { hostAnnotation, hostIdentity } from '../../api/node-annotations.ts';
import { ConditionReason, EventReason } from '../../api/reasons.ts';
import { type WindowsHost, windowsHostResource } from '../../api/windows-host.ts';
import { type WindowsNodePool, windowsNodePoolResource } from '../../api/windows-node-pool.ts';
import { parseConfig } from '../../config/winfleet-config.ts';
import { everythingKey } from '../../controller-runtime/controller.ts';
import { resources } from '../../controller-runtime/informer-factory.ts';
import type { JoinTokenRecord } from '../../join/join-token-record.ts';
import { silentLogger } from '../../log/logger.ts';
import { createCsrPem, generateKeyPair } from '../../pki/certificates.ts';
import { apiServerNamesOf } from './api-server-names.ts';
import { type CsrReconcileState, reconcileCsr } from './csr-controller.ts';
import { csrLookup } from './csr-lookup.ts';
import { clientSigner, servingSigner } from './kubelet-csr-policy.ts';
import { NodeNameReservations } from './node-name-reservations.ts';

const host = {
  apiVersion: windowsHostResource.apiVersion,
  kind: 'WindowsHost',
  metadata: { name: 'win-a', namespace: 'win', uid: 'uid-a', resourceVersion: '1' },
  spec: { address: '10.1.2.2', username: 'admin', sshKeySecretRef: { name: 'key' } },
  status: { nodeName: 'win-a', servingAddresses: ['10.1.2.2', 'win-a'] },
} as WindowsHost;

/** A CSR of `signer` from `username` for `subject`, with `sans` (serving) when given. */
async function csrOf(
  name: string,
  signer: string,
  username: string,
  subject: { commonName: string; organizations: string[] },
  usages: string[],
  sans: string[] = [],
): Promise<k8s.V1CertificateSigningRequest> {
  const pem = await createCsrPem(
    {
      ...subject,
      ipAddresses: sans.filter((s) => /^[\d.]+$/.test(s)),
      dnsNames: sans.filter((s) => !/^[\d.]+$/.test(s)),
    },
    await generateKeyPair(),
  );
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name, uid: `uid-${name}`, resourceVersion: '1' },
    spec: {
      request: Buffer.from(pem).toString('base64'),
      signerName: signer,
      username,
      groups: ['system:nodes', 'system:authenticated'],
      usages,
    },
  };
}

const servingCsr = (name: string, sans: string[]) =>
  csrOf(
    name,
    servingSigner,
    'system:node:win-a',
    { commonName: 'system:node:win-a', organizations: ['system:nodes'] },
    ['digital signature', 'server auth'],
    sans,
  );

const tokenRecord: JoinTokenRecord = {
  namespace: 'team-a',
  pool: 'web',
  labels: { pool: 'web' },
  expires: '2099-01-01T00:00:00Z',
  uses: 1,
  usesLeft: 1,
  joined: [],
} as unknown as JoinTokenRecord;

const webPool = {
  apiVersion: windowsNodePoolResource.apiVersion,
  kind: 'WindowsNodePool',
  metadata: { name: 'web', namespace: 'team-a', uid: 'uid-web', resourceVersion: '1' },
  spec: { selector: { matchLabels: { pool: 'web' } }, join: { nodeNamePattern: '^web-[0-9]+$' } },
} as unknown as WindowsNodePool;

/** The state over these CSRs, with win-a's host and Node and the web pool, all API recorded. */
function stated(csrs: k8s.V1CertificateSigningRequest[], fresh?: k8s.V1CertificateSigningRequest) {
  const csrCache = offlineInformer<k8s.V1CertificateSigningRequest>(resources.csrs);
  csrCache.replace(csrs);
  const hosts = offlineInformer<WindowsHost>(windowsHostResource);
  hosts.replace([host]);
  const pools = offlineInformer<WindowsNodePool>(windowsNodePoolResource);
  pools.replace([webPool]);
  const nodes = nodeCacheOf([
    syntheticNode('win-a', {
      addresses: ['10.1.2.2'],
      annotations: { [hostAnnotation]: hostIdentity(host) },
    }),
  ]);
  const reservations = new NodeNameReservations();
  const deps = {
    kc: undefined as unknown as k8s.KubeConfig,
    operatorNamespace: 'winfleet-system',
    csrs: csrCache,
    hosts,
    pools,
    nodes,
    config: () => parseConfig(''),
    apiServerNames: async () => apiServerNamesOf({ '10.1.0.100': 'the server of the test' }),
    events: { record: () => {} },
    log: silentLogger,
  };
  const lookup = csrLookup(deps, reservations, () => new Date('2026-11-27T10:00:00Z'));
  // The join token's record, as the API server would hold it.
  lookup.pullJoin!.record = async (id) => (id === 'tok123' ? tokenRecord : undefined);
  lookup.pullJoin!.retired = async () => undefined;
  const did: string[] = [];
  const written: { name: string; type: string; reason: string }[] = [];
  const events: { reason: string; message: string }[] = [];
  const state: CsrReconcileState = {
    csrs: csrCache,
    lookup,
    enqueue: (csr) => did.push(`enqueue ${csr.metadata?.name}`),
    readCsr: async (name) => {
      did.push(`read ${name}`);
      return fresh ?? { ...csrCache.get(name)!, status: {} };
    },
    writeApproval: async (name, body) => {
      const c = body.status!.conditions!.at(-1)!;
      written.push({ name, type: c.type, reason: c.reason! });
    },
    claim: async (claim) => {
      did.push(`claim ${claim.nodeName}`);
      return { action: 'deny', check: 'uses', reason: 'join token tok123 was used up meanwhile' };
    },
    release: (nodeName, csrUid) => {
      did.push(`release ${nodeName} ${csrUid}`);
      reservations.release(nodeName, csrUid);
    },
    events: { record: (_s, _t, reason, message) => events.push({ reason, message }) },
    log: silentLogger,
  };
  return { state, did, written, events, reservations };
}

test('the everything key queues every CSR in the cache', async () => {
  const { state, did } = stated([await servingCsr('a', ['10.1.2.2'])]);
  await reconcileCsr(state, everythingKey);
  assert.deepEqual(did, ['enqueue a']);
});

test("a serving CSR of win-a's own addresses is approved: written, then an Event", async () => {
  const { state, written, events } = stated([await servingCsr('mine', ['10.1.2.2', 'win-a'])]);
  assert.equal(await reconcileCsr(state, 'mine'), undefined);
  assert.deepEqual(written, [
    { name: 'mine', type: 'Approved', reason: ConditionReason.WinfleetApproved },
  ]);
  assert.deepEqual(
    events.map((e) => e.reason),
    [EventReason.CSRApproved],
  );
});

test('a CSR decided meanwhile on the API server is not written again', async () => {
  const csr = await servingCsr('raced', ['10.1.2.2']);
  const fresh = {
    ...csr,
    status: { conditions: [{ type: 'Denied', status: 'True', reason: 'SomeoneElse' }] },
  } as k8s.V1CertificateSigningRequest;
  const { state, did, written } = stated([csr], fresh);
  await reconcileCsr(state, 'raced');
  assert.deepEqual(did, ['read raced']);
  assert.deepEqual(written, []);
});

test("a CSR of a signer not winfleet's is left alone, not even read", async () => {
  const csr = await servingCsr('other', ['10.1.2.2']);
  csr.spec.signerName = 'example.com/other';
  const { state, did, written } = stated([csr]);
  assert.equal(await reconcileCsr(state, 'other'), undefined);
  assert.deepEqual([did, written], [[], []]);
});

test('a pull join whose claim fails is denied and its node name reservation released', async () => {
  const csr = await csrOf(
    'join',
    clientSigner,
    'system:bootstrap:tok123',
    { commonName: 'system:node:web-1', organizations: ['system:nodes'] },
    ['digital signature', 'key encipherment', 'client auth'],
  );
  csr.spec.groups = ['system:bootstrappers', 'system:bootstrappers:winfleet'];
  const { state, did, written, reservations } = stated([csr]);
  await reconcileCsr(state, 'join');
  assert.deepEqual(did, ['read join', 'claim web-1', 'release web-1 uid-join']);
  assert.deepEqual(written, [
    { name: 'join', type: 'Denied', reason: ConditionReason.WinfleetDenied },
  ]);
  assert.equal(reservations.reserve('web-1', 'another-csr'), true, 'the name is free again');
});
