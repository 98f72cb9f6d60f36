import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { daemonSetView, shown } from './cluster-view.ts';

const ds = (name: string, spec: k8s.V1PodSpec): k8s.V1DaemonSet => ({
  metadata: { name, namespace: 'kube-system' },
  spec: { selector: {}, template: { spec } },
});

test('a DaemonSet is placed on Windows by nodeSelector or by required affinity in every term', () => {
  const container = { name: 'c', image: 'antrea/antrea-windows:v2.4.0' };
  assert.equal(
    daemonSetView(
      ds('a', { containers: [container], nodeSelector: { 'kubernetes.io/os': 'windows' } }),
    ).os,
    'windows',
  );
  const term = (values: string[]) => ({
    matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values }],
  });
  const affinity = (...terms: ReturnType<typeof term>[]) => ({
    nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } },
  });
  assert.equal(
    daemonSetView(ds('b', { containers: [container], affinity: affinity(term(['windows'])) })).os,
    'windows',
  );
  // Terms are ORed: one term allowing Linux makes it any OS.
  assert.equal(
    daemonSetView(
      ds('c', { containers: [container], affinity: affinity(term(['windows']), term(['linux'])) }),
    ).os,
    'any',
  );
  assert.equal(
    daemonSetView(
      ds('d', { containers: [container], affinity: affinity(term(['windows', 'linux'])) }),
    ).os,
    'any',
  );
  assert.equal(daemonSetView(ds('e', { containers: [container] })).os, 'any');
  assert.equal(
    daemonSetView(
      ds('f', { containers: [container], nodeSelector: { 'kubernetes.io/os': 'linux' } }),
    ).os,
    'linux',
  );
});

test('images, hostPath volumes, mounted ConfigMaps and HostProcess are what the view keeps', () => {
  const view = daemonSetView(
    ds('calico-node-windows', {
      securityContext: { windowsOptions: { hostProcess: true } },
      initContainers: [{ name: 'install-cni', image: 'quay.io/calico/cni-windows:v3.31.0' }],
      containers: [{ name: 'node', image: 'quay.io/calico/node-windows:v3.31.0' }],
      volumes: [
        { name: 'cni-bin-dir', hostPath: { path: '/opt/cni/bin' } },
        { name: 'cni-net-dir', hostPath: { path: '/etc/cni/net.d' } },
        { name: 'cfg', configMap: { name: 'cni-config-windows' } },
      ],
    }),
  );
  assert.deepEqual(view, {
    namespace: 'kube-system',
    name: 'calico-node-windows',
    os: 'any',
    hostProcess: true,
    images: ['quay.io/calico/cni-windows:v3.31.0', 'quay.io/calico/node-windows:v3.31.0'],
    hostPaths: { 'cni-bin-dir': '/opt/cni/bin', 'cni-net-dir': '/etc/cni/net.d' },
    configMaps: ['cni-config-windows'],
  });
  const containerLevel = daemonSetView(
    ds('x', {
      containers: [
        { name: 'c', image: 'i', securityContext: { windowsOptions: { hostProcess: true } } },
      ],
    }),
  );
  assert.equal(containerLevel.hostProcess, true);
});

test('what the cluster holds is quoted short and on one line', () => {
  assert.equal(shown('VXLAN'), 'VXLAN');
  assert.equal(shown('a\nb\u0007c'), 'a?b?c');
  assert.equal(shown('x'.repeat(100)), `${'x'.repeat(40)}…`);
});
