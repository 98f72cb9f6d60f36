import assert from 'node:assert/strict';
import test from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  offlineInformer,
  offlineNodeInformer,
  syntheticNode,
} from '../../../sim/testkit/synthetic-nodes.ts';
import { parseConfig } from '../../config/winfleet-config.ts';
import { resources } from '../../controller-runtime/informer-factory.ts';
import { silentLogger } from '../../log/logger.ts';
import { hyperVIsolationLabel } from '../../windows/isolation.ts';
import {
  desiredHyperVRuntimeClass,
  indexNodesByRuntimeClass,
  type RuntimeClassState,
  reconcileRuntimeClass,
  runtimeClassOf,
} from './runtime-class-controller.ts';

const config = parseConfig('');

function hyperVNode(name: string, build: string, arch = 'amd64'): k8s.V1Node {
  const node = syntheticNode(name, { build, arch });
  node.metadata!.labels![hyperVIsolationLabel] = 'true';
  return node;
}

function world(nodes: k8s.V1Node[]) {
  const nodeCache = offlineNodeInformer();
  indexNodesByRuntimeClass(nodeCache);
  nodeCache.replace(nodes);
  const classCache = offlineInformer<k8s.V1RuntimeClass>(resources.runtimeClasses);
  const applied: k8s.V1RuntimeClass[] = [];
  const state: RuntimeClassState = {
    nodes: nodeCache,
    runtimeClasses: classCache,
    config: () => config,
    events: { record: () => {} },
    log: silentLogger,
    now: () => new Date(),
    warnedUserOwned: new Set(),
    writes: {
      apply: async (desired) => applied.push(desired),
      orphanPatch: async () => undefined,
      delete: async () => true,
    },
  };
  return { state, applied };
}

test('a Hyper-V node of 2022 needs the 2019 and 2022 Hyper-V classes; other nodes none', () => {
  assert.deepEqual(runtimeClassOf(hyperVNode('a', '10.0.20348')), [
    'windows-2022',
    'windows-2019-hyperv',
    'windows-2022-hyperv',
  ]);
  assert.deepEqual(runtimeClassOf(hyperVNode('b', '10.0.26100', 'arm64')), [
    'windows-2025-arm64',
    'windows-2019-hyperv-arm64',
    'windows-2022-hyperv-arm64',
    'windows-2025-hyperv-arm64',
  ]);
  assert.deepEqual(runtimeClassOf(syntheticNode('c', { build: '10.0.20348' })), ['windows-2022']);
  const other = syntheticNode('d', { build: '10.0.20348' });
  other.metadata!.labels![hyperVIsolationLabel] = 'yes';
  assert.deepEqual(runtimeClassOf(other), ['windows-2022'], 'only "true" opts in');
});

test('the Hyper-V class: runhcs-wcow-hypervisor, Hyper-V nodes of any build, the Windows toleration', async () => {
  const { state, applied } = world([hyperVNode('a', '10.0.20348')]);
  await reconcileRuntimeClass(state, 'windows-2019-hyperv');
  assert.equal(applied.length, 1);
  const rc = applied[0]!;
  assert.deepEqual(
    rc,
    desiredHyperVRuntimeClass(
      { name: 'windows-2019-hyperv', imageBuild: '10.0.17763', arch: 'amd64' },
      config,
    ),
  );
  assert.equal(rc.handler, 'runhcs-wcow-hypervisor');
  assert.deepEqual(rc.scheduling?.nodeSelector, {
    'kubernetes.io/os': 'windows',
    'kubernetes.io/arch': 'amd64',
    [hyperVIsolationLabel]: 'true',
  });
  assert.equal(rc.scheduling?.tolerations?.[0]?.key, config.placement.windowsTaint.key);
});

test('no Hyper-V class for a newer build than any Hyper-V node, nor without the label', async () => {
  const { state, applied } = world([
    hyperVNode('a', '10.0.20348'),
    syntheticNode('b', { build: '10.0.26100' }),
  ]);
  await reconcileRuntimeClass(state, 'windows-2025-hyperv');
  assert.deepEqual(applied, []);
});
