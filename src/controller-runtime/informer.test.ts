import assert from 'node:assert/strict';
import test from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { offlineNodeInformer, syntheticNode } from '../../sim/testkit/synthetic-nodes.ts';
import { windowsBuildLabel } from '../windows/builds.ts';

const buildOf = (n: k8s.V1Node) => {
  const build = n.metadata?.labels?.[windowsBuildLabel];
  return build ? [build] : [];
};

function recorder(informer: ReturnType<typeof offlineNodeInformer>) {
  const seen: string[] = [];
  informer
    .on('add', (n) => seen.push(`add ${n.metadata?.name}`))
    .on('update', (n) => seen.push(`update ${n.metadata?.name}`))
    .on('delete', (n) => seen.push(`delete ${n.metadata?.name}`));
  return seen;
}

test('a re-list (replace) tells handlers what changed and re-files the indexes', () => {
  const informer = offlineNodeInformer().addIndex('build', buildOf);
  const seen = recorder(informer);
  informer.replace([
    syntheticNode('a', { build: '10.0.17763' }),
    syntheticNode('b', { build: '10.0.20348' }),
  ]);
  assert.deepEqual(seen.splice(0), ['add a', 'add b']);
  informer.replace([
    syntheticNode('a', { build: '10.0.17763' }),
    syntheticNode('b', { build: '10.0.26100', resourceVersion: '2' }),
    syntheticNode('c', { build: '10.0.26100' }),
  ]);
  assert.deepEqual(seen.splice(0), ['update b', 'add c'], 'an unchanged resourceVersion is quiet');
  assert.equal(informer.countByIndex('build', '10.0.20348'), 0);
  assert.equal(informer.countByIndex('build', '10.0.26100'), 2);
  informer.replace([syntheticNode('c', { build: '10.0.26100' })]);
  assert.deepEqual(seen.splice(0), ['delete a', 'delete b']);
  assert.deepEqual(informer.indexValues('build'), ['10.0.26100']);
  assert.equal(informer.size, 1);
});

test('watch events (apply) keep the cache and the indexes, and objects are slimmed', () => {
  const informer = offlineNodeInformer().addIndex('build', buildOf);
  const seen = recorder(informer);
  const fat = syntheticNode('a', { build: '10.0.17763' });
  fat.status!.images = [{ names: ['big'], sizeBytes: 1 }];
  informer.apply('ADDED', fat);
  assert.equal(informer.get('a')?.status?.images, undefined, 'images are not cached');
  informer.apply('MODIFIED', syntheticNode('a', { build: '10.0.20348', resourceVersion: '2' }));
  assert.equal(informer.countByIndex('build', '10.0.17763'), 0);
  assert.equal(informer.firstByIndex('build', '10.0.20348')?.metadata?.name, 'a');
  informer.apply('DELETED', syntheticNode('a', { build: '10.0.20348' }));
  assert.deepEqual(seen, ['add a', 'update a', 'delete a']);
  assert.deepEqual(informer.indexValues('build'), []);
  assert.equal(informer.get('a'), undefined);
});

test('an index added after objects are cached files them at once', () => {
  const informer = offlineNodeInformer();
  informer.replace([
    syntheticNode('a', { build: '10.0.17763' }),
    syntheticNode('l', { os: 'linux' }),
  ]);
  informer.addIndex('build', buildOf);
  assert.deepEqual(
    informer.byIndex('build', '10.0.17763').map((n) => n.metadata?.name),
    ['a'],
  );
  assert.ok(informer.hasIndex('build'));
});
