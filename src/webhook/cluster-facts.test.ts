import assert from 'node:assert/strict';
import test from 'node:test';
import * as k8s from '@kubernetes/client-node';
import {
  mixedBuilds,
  offlineInformer,
  offlineNodeInformer,
  syntheticFleet,
  syntheticNode,
} from '../../sim/testkit/synthetic-nodes.ts';
import { parseConfig } from '../config/winfleet-config.ts';
import { resources } from '../controller-runtime/informer-factory.ts';
import { clusterFacts } from './cluster-facts.ts';

function factsOver(nodes: ReturnType<typeof offlineNodeInformer>) {
  return clusterFacts(
    new k8s.KubeConfig(),
    {
      nodes,
      runtimeClasses: offlineInformer<k8s.V1RuntimeClass>(resources.runtimeClasses),
      namespaces: offlineInformer<k8s.V1Namespace>(resources.namespaces),
    },
    () => parseConfig(''),
  );
}

test('the Ready Windows builds come from the aggregate, never from a walk of the nodes', () => {
  const nodes = offlineNodeInformer();
  nodes.replace(syntheticFleet(10_000));
  const facts = factsOver(nodes);
  let reads = 0;
  const list = nodes.list.bind(nodes);
  nodes.list = () => {
    reads++;
    return list();
  };
  for (let i = 0; i < 1000; i++) facts.readyWindowsBuilds();
  assert.deepEqual(facts.readyWindowsBuilds().sort(), [...mixedBuilds].sort());
  assert.equal(reads, 0, 'no admission reads the whole node cache');
  assert.equal(facts.readyWindowsNodeCounts().get(mixedBuilds[0]), 3334);
});

test('each Node event moves the aggregate: not Ready, cordoned, relabelled, deleted', () => {
  const nodes = offlineNodeInformer();
  const facts = factsOver(nodes);
  const build = '10.0.20348';
  nodes.apply('ADDED', syntheticNode('a', { build }));
  nodes.apply('ADDED', syntheticNode('b', { build }));
  nodes.apply('ADDED', syntheticNode('l', { os: 'linux', build }));
  assert.equal(facts.readyWindowsNodeCounts().get(build), 2, 'a Linux node is not counted');
  nodes.apply('MODIFIED', syntheticNode('a', { build, ready: false, resourceVersion: '2' }));
  nodes.apply('MODIFIED', syntheticNode('b', { build, unschedulable: true, resourceVersion: '2' }));
  assert.deepEqual(
    facts.readyWindowsBuilds(),
    [],
    'no Ready schedulable node of the build is left',
  );
  nodes.apply('MODIFIED', syntheticNode('a', { build: '10.0.26100', resourceVersion: '3' }));
  assert.deepEqual(facts.readyWindowsBuilds(), ['10.0.26100']);
  nodes.apply('DELETED', syntheticNode('a', { build: '10.0.26100' }));
  assert.deepEqual(facts.readyWindowsBuilds(), []);
  assert.equal(facts.readyWindowsNodeCounts().size, 0);
});
