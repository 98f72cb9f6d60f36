import assert from 'node:assert/strict';
import test from 'node:test';
import {
  offlineInformer,
  offlineNodeInformer,
  recordEnqueues,
  syntheticFleet,
  syntheticNode,
  unusedKubeConfig,
} from '../../../sim/testkit/synthetic-nodes.ts';
import { hostAnnotation } from '../../api/node-annotations.ts';
import { type WindowsHost, windowsHostResource } from '../../api/windows-host.ts';
import { parseConfig } from '../../config/winfleet-config.ts';
import { silentLogger } from '../../log/logger.ts';
import { createHostController } from './host-controller.ts';

function host(name: string, spec: Partial<WindowsHost['spec']>, nodeName?: string): WindowsHost {
  return {
    apiVersion: windowsHostResource.apiVersion,
    kind: 'WindowsHost',
    metadata: { name, namespace: 'win', resourceVersion: '1', uid: `uid-${name}` },
    spec: { address: '127.0.0.1', username: 'admin', sshKeySecretRef: { name: 'key' }, ...spec },
    ...(nodeName ? { status: { nodeName } } : {}),
  } as WindowsHost;
}

function setUp() {
  const nodes = offlineNodeInformer();
  nodes.replace([...syntheticFleet(10_000), syntheticNode('win-1'), syntheticNode('win-2')]);
  const hosts = offlineInformer<WindowsHost>(windowsHostResource);
  hosts.replace([
    host('joined', {}, 'win-1'),
    host('claimant', { nodeName: 'win-2' }),
    host('rival', { nodeName: 'win-2' }),
  ]);
  const controller = createHostController({
    kc: unusedKubeConfig(),
    operatorNamespace: 'winfleet-system',
    config: () => parseConfig(''),
    hosts,
    nodes,
    payload: () => Promise.reject(new Error('not in this test')),
    cluster: { apiServer: 'https://127.0.0.1:6443', caCertificate: '' },
    events: { record: () => {} },
    log: silentLogger,
  });
  // Every read of the whole host cache, to show a Node event finds its hosts by index.
  const reads = { count: 0 };
  const list = hosts.list.bind(hosts);
  hosts.list = () => {
    reads.count++;
    return list();
  };
  return { nodes, hosts, reads, keys: recordEnqueues(controller) };
}

const flip = (name: string, rv: string) =>
  syntheticNode(name, { ready: false, resourceVersion: rv });

test('a Node no host names enqueues no host, among 10,000, and walks no host list', () => {
  const { nodes, keys, reads } = setUp();
  nodes.apply('MODIFIED', flip('node-42', '2'));
  nodes.apply('ADDED', syntheticNode('node-new'));
  nodes.apply('DELETED', syntheticNode('node-7'));
  assert.deepEqual(keys, []);
  assert.equal(reads.count, 0);
});

test('a Node enqueues the host it belongs to and every host claiming its name', () => {
  const { nodes, keys } = setUp();
  nodes.apply('MODIFIED', flip('win-1', '2'));
  assert.deepEqual(keys.splice(0), ['win/joined']);
  nodes.apply('DELETED', syntheticNode('win-2'));
  assert.deepEqual(keys.splice(0).sort(), ['win/claimant', 'win/rival']);
  nodes.apply(
    'ADDED',
    syntheticNode('elsewhere', { annotations: { [hostAnnotation]: 'win/joined/uid-joined' } }),
  );
  assert.deepEqual(keys.splice(0), ['win/joined'], 'the host the Node names');
});

test('a host that goes wakes its rivals for the name, found through the index', () => {
  const { hosts, keys, reads } = setUp();
  hosts.apply('DELETED', host('claimant', { nodeName: 'win-2' }));
  assert.deepEqual(keys.sort(), ['win/claimant', 'win/rival']);
  assert.equal(reads.count, 0);
});
