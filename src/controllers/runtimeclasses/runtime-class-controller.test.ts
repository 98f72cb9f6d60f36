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
import { parseConfig } from '../../config/winfleet-config.ts';
import { resources } from '../../controller-runtime/informer-factory.ts';
import { silentLogger } from '../../log/logger.ts';
import {
  createRuntimeClassController,
  runtimeClassIndex,
  runtimeClassName,
  runtimeClassOf,
} from './runtime-class-controller.ts';

function controllerOver(nodes: ReturnType<typeof offlineNodeInformer>) {
  const runtimeClasses = offlineInformer<k8s.V1RuntimeClass>(resources.runtimeClasses);
  const controller = createRuntimeClassController({
    kc: unusedKubeConfig(),
    nodes,
    runtimeClasses,
    config: () => parseConfig(''),
    events: { record: () => {} },
    log: silentLogger,
  });
  const keys = recordEnqueues(controller);
  return { controller, runtimeClasses, keys };
}

test('names follow the release, with a fallback for unknown builds', () => {
  assert.equal(runtimeClassName({ build: '10.0.17763', arch: 'amd64' }), 'windows-2019');
  assert.equal(runtimeClassName({ build: '10.0.26100', arch: 'amd64' }), 'windows-2025');
  assert.equal(runtimeClassName({ build: '10.0.25398', arch: 'amd64' }), 'windows-10-0-25398');
  assert.equal(runtimeClassName({ build: '10.0.26100', arch: 'arm64' }), 'windows-2025-arm64');
});

test('a node is filed under the RuntimeClass of its flavor; other nodes nowhere', () => {
  assert.deepEqual(runtimeClassOf(syntheticNode('a', { build: '10.0.20348' })), ['windows-2022']);
  assert.deepEqual(runtimeClassOf(syntheticNode('b', { build: '10.0.26100', arch: 'arm64' })), [
    'windows-2025-arm64',
  ]);
  assert.deepEqual(runtimeClassOf(syntheticNode('l', { os: 'linux', build: '10.0.20348' })), []);
  assert.deepEqual(runtimeClassOf(syntheticNode('n', {})), [], 'no build label, no class');
});

test('among 10,000 nodes, one Node event enqueues only the class it affects', () => {
  const nodes = offlineNodeInformer();
  nodes.replace(syntheticFleet(10_000));
  const { keys } = controllerOver(nodes);
  assert.equal(nodes.countByIndex(runtimeClassIndex, 'windows-2019'), 3334);

  nodes.apply('ADDED', syntheticNode('new', { build: '10.0.20348' }));
  assert.deepEqual(keys.splice(0), ['windows-2022']);

  nodes.apply(
    'MODIFIED',
    syntheticNode('new', { build: '10.0.20348', ready: false, resourceVersion: '2' }),
  );
  assert.deepEqual(keys.splice(0), [], 'a status change does not move the node between classes');

  nodes.apply('MODIFIED', syntheticNode('new', { build: '10.0.26100', resourceVersion: '3' }));
  assert.deepEqual(keys.splice(0).sort(), ['windows-2022', 'windows-2025'], 'old and new class');

  nodes.apply('DELETED', syntheticNode('new', { build: '10.0.26100' }));
  assert.deepEqual(keys.splice(0), ['windows-2025']);

  nodes.apply('ADDED', syntheticNode('linux', { os: 'linux' }));
  assert.deepEqual(keys.splice(0), [], 'a Linux node enqueues nothing');
});

test('a RuntimeClass event enqueues that class by name', () => {
  const { runtimeClasses, keys } = controllerOver(offlineNodeInformer());
  runtimeClasses.apply('ADDED', {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name: 'windows-2019' },
    handler: 'runhcs-wcow-process',
  });
  assert.deepEqual(keys, ['windows-2019']);
});
