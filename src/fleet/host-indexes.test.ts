import assert from 'node:assert/strict';
import test from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  offlineInformer,
  offlineNodeInformer,
  syntheticFleet,
  syntheticNode,
} from '../../sim/testkit/synthetic-nodes.ts';
import { hostAnnotation, hostIdentity } from '../api/node-annotations.ts';
import { ConditionReason } from '../api/reasons.ts';
import { type WindowsHost, windowsHostResource } from '../api/windows-host.ts';
import { parseConfig } from '../config/winfleet-config.ts';
import { reconcileJoin } from '../controllers/hosts/host-join.ts';
import type { JoinContext } from '../controllers/hosts/join-context.ts';
import { silentLogger } from '../log/logger.ts';
import { nameRefusalFromCaches } from './host-indexes.ts';
import { nameRefusal } from './node-claims.ts';

function host(name: string, created: string, nodeName: string, joined = false): WindowsHost {
  return {
    apiVersion: windowsHostResource.apiVersion,
    kind: 'WindowsHost',
    metadata: {
      name,
      namespace: 'win',
      uid: `uid-${name}`,
      resourceVersion: '1',
      creationTimestamp: new Date(created),
    },
    spec: { address: '10.1.2.2', username: 'admin', sshKeySecretRef: { name: 'key' }, nodeName },
    ...(joined ? { status: { nodeName } } : {}),
  } as WindowsHost;
}

/** 10,000 joined hosts with their Nodes, and two hosts after the name win-2 (the older holds it). */
function setUp() {
  const hosts = offlineInformer<WindowsHost>(windowsHostResource);
  const holder = host('holder', '2026-01-01T00:00:00Z', 'win-2');
  const rival = host('rival', '2026-02-01T00:00:00Z', 'win-2');
  const fleet = Array.from({ length: 10_000 }, (_, i) =>
    host(`h-${i}`, '2026-01-01T00:00:00Z', `node-${i}`, true),
  );
  hosts.replace([...fleet, holder, rival]);
  const nodes = offlineNodeInformer();
  nodes.replace([
    ...syntheticFleet(10_000).map((n, i) => ({
      ...n,
      metadata: { ...n.metadata, annotations: { [hostAnnotation]: hostIdentity(fleet[i]!) } },
    })),
    syntheticNode('linux-1', { os: 'linux' }),
  ]);
  let reads = 0;
  const list = hosts.list.bind(hosts);
  hosts.list = () => {
    reads++;
    return list();
  };
  return { hosts, nodes, holder, rival, fleet, reads: () => reads };
}

test('a node name is refused or allowed from the index, as from the whole list, among 10,000 hosts', () => {
  const { hosts, nodes, holder, rival, fleet, reads } = setUp();
  const caches = { hosts, nodes };
  const cases: [WindowsHost, string][] = [
    [holder, 'win-2'],
    [rival, 'win-2'],
    [fleet[42]!, 'node-42'],
    [rival, 'node-42'],
    [holder, 'linux-1'],
    [rival, 'free-name'],
  ];
  const expected = cases.map(([h, name]) =>
    nameRefusal(h, name, [...fleet, holder, rival], nodes.get(name)),
  );
  assert.deepEqual(
    cases.map(([h, name]) => nameRefusalFromCaches(caches, h, name)),
    expected,
  );
  assert.deepEqual(
    expected.map((r) => r?.reason),
    [
      undefined,
      ConditionReason.NodeNameTaken,
      undefined,
      ConditionReason.NodeNameTaken,
      ConditionReason.NodeNotOwned,
      undefined,
    ],
  );
  assert.equal(reads(), 0);
});

test("a join pass refusing a host's node name reads no whole host cache", async () => {
  const { hosts, nodes, rival, reads } = setUp();
  const patches: unknown[] = [];
  const kc = {
    makeApiClient: () => ({
      patchNamespacedCustomObjectStatus: async (request: unknown) => patches.push(request),
      // The status write reads the host's current conditions to rebase its own on them.
      getNamespacedCustomObject: async () => rival,
    }),
  } as unknown as k8s.KubeConfig;
  const ctx = {
    kc,
    operatorNamespace: 'winfleet-system',
    config: () => parseConfig(''),
    hosts,
    nodes,
    payload: async () => ({ manifest: { version: 'v1' } }),
    cluster: { apiServer: 'https://127.0.0.1:6443', caCertificate: '' },
    events: { record: () => {} },
    log: silentLogger,
  } as unknown as JoinContext;
  const result = await reconcileJoin(ctx, rival);
  assert.ok(result.requeueAfterMs, 'looked at again later');
  assert.match(JSON.stringify(patches), /NodeNameTaken/);
  assert.equal(reads(), 0);
});
