import assert from 'node:assert/strict';
import test from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  offlineInformer,
  offlineNodeInformer,
  recordEnqueues,
  syntheticFleet,
  syntheticNode,
  unusedKubeConfig,
} from '../../../sim/testkit/synthetic-nodes.ts';
import {
  hostAnnotation,
  hostIdentity,
  windowsUpdatesAnnotation,
} from '../../api/node-annotations.ts';
import { EventReason } from '../../api/reasons.ts';
import { type WindowsHost, windowsHostResource } from '../../api/windows-host.ts';
import { type WindowsNodePool, windowsNodePoolResource } from '../../api/windows-node-pool.ts';
import { silentLogger } from '../../log/logger.ts';
import { defaultPoolKey } from '../../rollout/pool-membership.ts';
import { createPoolController } from './pool-controller.ts';

function host(name: string, nodeName: string, labels?: Record<string, string>): WindowsHost {
  return {
    apiVersion: windowsHostResource.apiVersion,
    kind: 'WindowsHost',
    metadata: { name, namespace: 'win', resourceVersion: '1', ...(labels ? { labels } : {}) },
    spec: { address: '127.0.0.1', username: 'admin', sshKeySecretRef: { name: 'key' } },
    status: { nodeName },
  } as WindowsHost;
}

const webPool: WindowsNodePool = {
  apiVersion: windowsNodePoolResource.apiVersion,
  kind: 'WindowsNodePool',
  metadata: { name: 'web', namespace: 'win', generation: 1 },
  spec: { selector: { matchLabels: { pool: 'web' } } },
} as WindowsNodePool;

function setUp() {
  const nodes = offlineNodeInformer();
  nodes.replace([
    ...syntheticFleet(10_000),
    syntheticNode('win-1', { build: '10.0.20348' }),
    syntheticNode('win-2', { build: '10.0.20348' }),
  ]);
  const hosts = offlineInformer<WindowsHost>(windowsHostResource);
  hosts.replace([host('web-1', 'win-1', { pool: 'web' }), host('plain', 'win-2')]);
  const pools = offlineInformer<WindowsNodePool>(windowsNodePoolResource);
  pools.replace([webPool]);
  const controller = createPoolController({
    kc: unusedKubeConfig(),
    pools,
    hosts,
    nodes,
    events: { record: () => {} },
    log: silentLogger,
    apiServerVersion: async () => 'v1.34.0',
  });
  return { nodes, hosts, keys: recordEnqueues(controller) };
}

test('a Node no host names enqueues no pool, among 10,000', () => {
  const { nodes, keys } = setUp();
  nodes.apply(
    'MODIFIED',
    syntheticNode('node-42', { build: '10.0.20348', ready: false, resourceVersion: '2' }),
  );
  nodes.apply('ADDED', syntheticNode('node-new', { build: '10.0.20348' }));
  nodes.apply('DELETED', syntheticNode('node-7', { build: '10.0.20348' }));
  assert.deepEqual(keys, []);
});

test("a host's Node enqueues exactly its host's pool", () => {
  const { nodes, keys } = setUp();
  nodes.apply(
    'MODIFIED',
    syntheticNode('win-1', { build: '10.0.20348', ready: false, resourceVersion: '2' }),
  );
  assert.deepEqual(keys.splice(0), ['win/web']);
  nodes.apply(
    'MODIFIED',
    syntheticNode('win-2', { build: '10.0.20348', ready: false, resourceVersion: '2' }),
  );
  assert.deepEqual(
    keys.splice(0),
    [defaultPoolKey],
    'a host no pool selects is in the default pool',
  );
});

test('a host moving between pools enqueues the pool it left and the one it joined', () => {
  const { hosts, keys } = setUp();
  const moved = host('web-1', 'win-1');
  moved.metadata.resourceVersion = '2';
  hosts.apply('MODIFIED', moved);
  assert.deepEqual(keys.splice(0).sort(), [defaultPoolKey, 'win/web'].sort());
  hosts.apply('DELETED', moved);
  assert.deepEqual(keys.splice(0), [defaultPoolKey]);
});

test('a pass over one pool reads its own hosts, not the 10,000 others', async () => {
  const nodes = offlineNodeInformer();
  nodes.replace([syntheticNode('win-1', { build: '10.0.20348' })]);
  const hosts = offlineInformer<WindowsHost>(windowsHostResource);
  hosts.replace([
    host('web-1', 'win-1', { pool: 'web' }),
    ...Array.from({ length: 10_000 }, (_, i) => host(`plain-${i}`, `node-${i}`)),
  ]);
  const pools = offlineInformer<WindowsNodePool>(windowsNodePoolResource);
  pools.replace([webPool]);
  // Every API call answers {} and is recorded: the pass writes the pool's status.
  const calls: string[] = [];
  const api = new Proxy(
    {},
    {
      get: (_, method) => async () => {
        calls.push(String(method));
        return {};
      },
    },
  );
  const controller = createPoolController({
    kc: { makeApiClient: () => api } as unknown as k8s.KubeConfig,
    pools,
    hosts,
    nodes,
    events: { record: () => {} },
    log: silentLogger,
    apiServerVersion: async () => 'v1.34.0',
  });
  let reads = 0;
  const list = hosts.list.bind(hosts);
  hosts.list = () => {
    reads++;
    return list();
  };
  controller.queue.add('win/web');
  await controller.queue.whenIdle();
  controller.stop();
  assert.ok(
    calls.includes('patchNamespacedCustomObjectStatus'),
    'the pass ran to the status write',
  );
  assert.equal(reads, 0, 'no pass walks every host');
});

test('nothing is kept for a host that goes: the same host again is told its problem again', async () => {
  const joined = host('plain', 'win-2');
  joined.metadata.uid = 'uid-plain';
  const nodes = offlineNodeInformer();
  nodes.replace([
    syntheticNode('win-2', {
      build: '10.0.20348',
      annotations: {
        [hostAnnotation]: hostIdentity(joined),
        [windowsUpdatesAnnotation]: 'not a report',
      },
    }),
  ]);
  const hosts = offlineInformer<WindowsHost>(windowsHostResource);
  hosts.replace([joined]);
  const pools = offlineInformer<WindowsNodePool>(windowsNodePoolResource);
  const told: string[] = [];
  const api = new Proxy({}, { get: () => async () => ({}) });
  const controller = createPoolController({
    kc: { makeApiClient: () => api } as unknown as k8s.KubeConfig,
    pools,
    hosts,
    nodes,
    events: { record: (_o, _t, reason) => told.push(reason) },
    log: silentLogger,
    apiServerVersion: async () => 'v1.34.0',
  });
  const pass = async () => {
    controller.queue.add(defaultPoolKey);
    await controller.queue.whenIdle();
  };
  await pass();
  await pass();
  assert.deepEqual(told, [EventReason.InvalidEntry], 'told once while the host stays');
  hosts.apply('DELETED', joined);
  hosts.apply('ADDED', { ...joined, metadata: { ...joined.metadata, resourceVersion: '3' } });
  await pass();
  controller.stop();
  assert.deepEqual(told, [EventReason.InvalidEntry, EventReason.InvalidEntry]);
});
