import assert from 'node:assert/strict';
import test from 'node:test';
import { offlineInformer } from '../../../sim/testkit/synthetic-nodes.ts';
import { type WindowsHost, windowsHostResource } from '../../api/windows-host.ts';
import { type WindowsNodePool, windowsNodePoolResource } from '../../api/windows-node-pool.ts';
import { poolMembership } from '../../fleet/pool-observe.ts';
import { defaultPoolKey } from '../../rollout/pool-membership.ts';
import { poolIndex } from './pool-index.ts';

function host(name: string, labels: Record<string, string>, rv = '1'): WindowsHost {
  return {
    apiVersion: windowsHostResource.apiVersion,
    kind: 'WindowsHost',
    metadata: { name, namespace: 'win', resourceVersion: rv, labels },
    spec: { address: '127.0.0.1', username: 'admin', sshKeySecretRef: { name: 'key' } },
  } as WindowsHost;
}

function pool(name: string, matchLabels: Record<string, string>, generation = 1): WindowsNodePool {
  return {
    apiVersion: windowsNodePoolResource.apiVersion,
    kind: 'WindowsNodePool',
    metadata: { name, namespace: 'win', generation, resourceVersion: String(generation) },
    spec: { selector: { matchLabels } },
  } as WindowsNodePool;
}

/** The index's answer for every pool, against poolMembership over the whole caches. */
function assertSameAsWholeList(
  index: ReturnType<typeof poolIndex>,
  pools: { list(): WindowsNodePool[] },
  hosts: { list(): WindowsHost[] },
): void {
  const whole = poolMembership(pools.list(), hosts.list());
  for (const [key, members] of whole.pools) assert.deepEqual(index.members(key), members, key);
  for (const h of hosts.list()) {
    const expected = [...whole.pools]
      .filter(([, m]) => m.hosts.includes(`win/${h.metadata.name}`))
      .map(([k]) => k);
    assert.deepEqual(index.poolsOf(h), expected, h.metadata.name);
  }
}

test('the index keeps poolMembership’s answer through host and pool changes', () => {
  const hosts = offlineInformer<WindowsHost>(windowsHostResource);
  const pools = offlineInformer<WindowsNodePool>(windowsNodePoolResource);
  hosts.replace([
    host('a', { pool: 'web' }),
    host('b', { pool: 'web', tier: 'front' }),
    host('c', {}),
    host('d', { tier: 'front' }),
  ]);
  pools.replace([pool('web', { pool: 'web' })]);
  const index = poolIndex(pools, hosts);
  const poolChanged = () => index.refresh();
  pools.on('add', poolChanged).on('delete', poolChanged).on('update', poolChanged);
  assertSameAsWholeList(index, pools, hosts);
  // A second pool selecting b too: a conflict, shared in both.
  pools.apply('ADDED', pool('front', { tier: 'front' }));
  assertSameAsWholeList(index, pools, hosts);
  assert.deepEqual(index.members('win/front').shared, [{ host: 'win/b', otherPools: ['win/web'] }]);
  // A host relabelled moves; a host deleted leaves.
  hosts.apply('MODIFIED', host('a', { tier: 'front' }, '2'));
  hosts.apply('DELETED', host('c', {}));
  hosts.apply('ADDED', host('e', {}));
  assertSameAsWholeList(index, pools, hosts);
  // A selector changed, then a pool deleted.
  pools.apply('MODIFIED', pool('web', { tier: 'back' }, 2));
  assertSameAsWholeList(index, pools, hosts);
  pools.apply('DELETED', pool('front', { tier: 'front' }));
  assertSameAsWholeList(index, pools, hosts);
  assert.deepEqual(index.members(defaultPoolKey).hosts, ['win/a', 'win/b', 'win/d', 'win/e']);
});
