import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WindowsHost } from '../../api/windows-host.ts';
import {
  flanneldNodeReaderRole,
  flanneldNodeReadersBinding,
  flanneldReaderNodes,
} from './flanneld-node-readers.ts';

function host(name: string, spec: Partial<WindowsHost['spec']>, nodeName?: string): WindowsHost {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name, namespace: 'winfleet-system' },
    spec: spec as WindowsHost['spec'],
    ...(nodeName ? { status: { nodeName } } : {}),
  } as WindowsHost;
}

const flannel = { mode: 'flannel-vxlan', vni: 4096, netConf: '{}' } as const;

test('the readers are the nodes winfleet joined (SSH: status.nodeName, Pull: spec.nodeName), each once, sorted', () => {
  const hosts = [
    host('b', { address: '10.0.0.2' }, 'win-b'),
    host('a', { mode: 'Pull', nodeName: 'win-a' }),
    host('c', { address: '10.0.0.3' }), // not yet named: not a reader
    host('d', { address: '10.0.0.4' }, 'win-b'),
  ];
  assert.deepEqual(flanneldReaderNodes(hosts, flannel), ['win-a', 'win-b']);
  // flannel-host-gw runs the same flanneld, which lists Nodes the same way.
  assert.deepEqual(
    flanneldReaderNodes(hosts, { mode: 'flannel-host-gw', networkName: 'cbr0', netConf: '{}' }),
    ['win-a', 'win-b'],
  );
  // ovn-hybrid's hybrid-overlay-node lists Nodes with the node's credentials too.
  assert.deepEqual(flanneldReaderNodes(hosts, { mode: 'ovn-hybrid' }), ['win-a', 'win-b']);
});

test('no reader unless the nodes’ network runs flanneld or hybrid-overlay-node', () => {
  const hosts = [host('b', { address: '10.0.0.2' }, 'win-b')];
  assert.deepEqual(flanneldReaderNodes(hosts, undefined), []);
  assert.deepEqual(flanneldReaderNodes(hosts, { mode: 'routed' }), []);
  assert.deepEqual(
    flanneldReaderNodes(hosts, {
      mode: 'external',
      cniConfDir: 'C:\\etc\\cni\\net.d',
      cniBinDir: 'C:\\opt\\cni\\bin',
      kubeProxy: false,
    }),
    [],
  );
});

test('attacker side: a SSH host’s spec (which a host never writes) does not name a reader; only the operator’s status does', () => {
  // spec.nodeName on an SSH host is not where the operator records the node it joined.
  const forged = host('x', { address: '10.0.0.9', nodeName: 'kube-apiserver-node' });
  assert.deepEqual(flanneldReaderNodes([forged], flannel), []);
});

test('the role reads Nodes and nothing else; the binding names node users only', () => {
  const role = flanneldNodeReaderRole({});
  assert.deepEqual(role.rules, [
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
  ]);
  const binding = flanneldNodeReadersBinding(['win-a'], {});
  assert.deepEqual(binding.roleRef, {
    apiGroup: 'rbac.authorization.k8s.io',
    kind: 'ClusterRole',
    name: 'winfleet:flanneld-node-reader',
  });
  assert.deepEqual(binding.subjects, [
    { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'system:node:win-a' },
  ]);
  assert.deepEqual(flanneldNodeReadersBinding([], {}).subjects, []);
});
