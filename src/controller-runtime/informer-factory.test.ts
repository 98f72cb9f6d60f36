import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { slimNode } from '../controller-runtime/informer-factory.ts';

test('a slimmed Node keeps since when each condition holds (as the API writes times), not its heartbeat or images', () => {
  const since = new Date('2026-11-23T04:51:28Z');
  const slim = slimNode({
    metadata: { name: 'simwin-1' },
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'Unknown',
          reason: 'NodeStatusUnknown',
          message: 'Kubelet stopped posting node status.',
          lastTransitionTime: since,
          lastHeartbeatTime: new Date('2026-11-23T04:55:00Z'),
        },
      ],
      images: [{ names: ['mcr.microsoft.com/windows/nanoserver:ltsc2022'], sizeBytes: 1 }],
    },
  });
  assert.deepEqual(slim.status?.conditions, [
    {
      type: 'Ready',
      status: 'Unknown',
      reason: 'NodeStatusUnknown',
      message: 'Kubelet stopped posting node status.',
      lastTransitionTime: '2026-11-23T04:51:28Z',
    },
  ]);
  assert.equal(slim.status?.images, undefined);
});

/** A kwok Windows Node as the watch brings it (times as text) or the list (times as Date). */
function kwokNode(name: string, times: (text: string) => string | Date): k8s.V1Node {
  const at = times('2026-11-27T08:40:15Z');
  return {
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion: '7',
      creationTimestamp: at as Date,
      labels: { 'kubernetes.io/hostname': name, 'node.kubernetes.io/windows-build': '10.0.20348' },
      annotations: { 'kwok.x-k8s.io/node': 'fake' },
      managedFields: [{ manager: 'kwok' }],
    },
    spec: {
      podCIDR: '100.64.0.0/24',
      taints: [{ key: 'os', value: 'windows', effect: 'NoSchedule' }],
    },
    status: {
      addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'kubelet is posting ready status',
          lastTransitionTime: at as Date,
          lastHeartbeatTime: at as Date,
        },
      ],
      nodeInfo: {
        architecture: 'amd64',
        bootID: '',
        containerRuntimeVersion: 'containerd://2.1.0',
        kernelVersion: '10.0.20348.1',
        kubeProxyVersion: 'v1.36.5',
        kubeletVersion: 'v1.36.5',
        machineID: '',
        operatingSystem: 'windows',
        osImage: 'Windows Server 2022 Datacenter',
        systemUUID: '',
      },
    },
  };
}

test('Nodes alike share their repeated parts, frozen; from a list or a watch they slim alike', () => {
  // JSON.parse gives each Node its own copies, as the informer receives them.
  const watched = (name: string) =>
    slimNode(JSON.parse(JSON.stringify(kwokNode(name, (t) => t))) as k8s.V1Node);
  const a = watched('scale-00001');
  const b = watched('scale-00002');
  const listed = slimNode(kwokNode('scale-00003', (t) => new Date(t)));
  assert.equal(a.status?.conditions, b.status?.conditions, 'one conditions array for both');
  assert.equal(a.status?.nodeInfo, b.status?.nodeInfo);
  assert.equal(a.metadata?.annotations, b.metadata?.annotations);
  assert.equal(
    a.status?.conditions,
    listed.status?.conditions,
    'a Date is written as the API writes it',
  );
  assert.ok(
    Object.isFrozen(a.status?.conditions?.[0]),
    'what is shared cannot be changed by one holder',
  );
  assert.throws(() => {
    (a.status!.conditions![0] as { status: string }).status = 'False';
  }, TypeError);
  assert.deepEqual(a.metadata?.labels, {
    'kubernetes.io/hostname': 'scale-00001',
    'node.kubernetes.io/windows-build': '10.0.20348',
  });
  assert.equal(a.metadata?.creationTimestamp, '2026-11-27T08:40:15Z');
  assert.deepEqual(a.spec, {}, 'taints and pod CIDR are not read from the cache');
  assert.equal(a.metadata?.managedFields, undefined);
  assert.deepEqual(a.status?.nodeInfo, {
    bootID: '',
    kernelVersion: '10.0.20348.1',
    kubeletVersion: 'v1.36.5',
    kubeProxyVersion: 'v1.36.5',
    containerRuntimeVersion: 'containerd://2.1.0',
    operatingSystem: 'windows',
  });
  assert.deepEqual(slimNode({ ...kwokNode('c', (t) => t), spec: { unschedulable: true } }).spec, {
    unschedulable: true,
  });
});
