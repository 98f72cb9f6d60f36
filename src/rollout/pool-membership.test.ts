import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import {
  assignPools,
  defaultPoolKey,
  type HostLabels,
  type PoolSelection,
} from './pool-membership.ts';

const web: PoolSelection = {
  namespace: 'windows',
  name: 'web',
  selector: { matchLabels: { pool: 'web' } },
};
const batch: PoolSelection = {
  namespace: 'windows',
  name: 'batch',
  selector: { matchExpressions: [{ key: 'workload', operator: 'Exists' }] },
};

test('hosts go to the pool that selects them, others to the default pool', () => {
  const m = assignPools(
    [web, batch],
    [
      { namespace: 'windows', name: 'w1', labels: { pool: 'web' } },
      { namespace: 'windows', name: 'b1', labels: { workload: 'nightly' } },
      { namespace: 'windows', name: 'x1' },
    ],
  );
  assert.deepEqual(m.pools.get('windows/web'), { hosts: ['windows/w1'], shared: [] });
  assert.deepEqual(m.pools.get('windows/batch'), { hosts: ['windows/b1'], shared: [] });
  assert.deepEqual(m.pools.get(defaultPoolKey), { hosts: ['windows/x1'], shared: [] });
  assert.equal(m.governingPool.get('windows/w1'), 'windows/web');
  assert.equal(m.governingPool.get('windows/x1'), defaultPoolKey);
});

test('a host two pools select is in both, shared, naming the other; the first pool by key governs it', () => {
  const m = assignPools(
    [web, batch],
    [{ namespace: 'windows', name: 'both', labels: { pool: 'web', workload: 'x' } }],
  );
  assert.deepEqual(m.pools.get('windows/web'), {
    hosts: ['windows/both'],
    shared: [{ host: 'windows/both', otherPools: ['windows/batch'] }],
  });
  assert.deepEqual(m.pools.get('windows/batch'), {
    hosts: ['windows/both'],
    shared: [{ host: 'windows/both', otherPools: ['windows/web'] }],
  });
  assert.deepEqual(m.pools.get(defaultPoolKey), { hosts: [], shared: [] });
  assert.equal(m.governingPool.get('windows/both'), 'windows/batch');
});

test('a pool selects only in its own namespace; one default pool spans namespaces', () => {
  const m = assignPools(
    [web],
    [
      { namespace: 'windows', name: 'a', labels: { pool: 'web' } },
      { namespace: 'other', name: 'a', labels: { pool: 'web' } },
      { namespace: 'third', name: 'z' },
    ],
  );
  assert.deepEqual(m.pools.get('windows/web')!.hosts, ['windows/a']);
  assert.deepEqual(m.pools.get(defaultPoolKey)!.hosts, ['other/a', 'third/z']);
});

test('an empty selector takes every host of its namespace; a pool without a usable selector takes none', () => {
  const all: PoolSelection = { namespace: 'windows', name: 'all', selector: {} };
  const broken: PoolSelection = { namespace: 'windows', name: 'broken' };
  const m = assignPools([all, broken], [{ namespace: 'windows', name: 'h' }]);
  assert.deepEqual(m.pools.get('windows/all')!.hosts, ['windows/h']);
  assert.deepEqual(m.pools.get('windows/broken')!.hosts, []);
  assert.deepEqual(
    assignPools([], []).pools,
    new Map([[defaultPoolKey, { hosts: [], shared: [] }]]),
  );
});

test('property: every host is in its pools or the default pool, never both; shared exactly when two pools select it; order does not matter', (t) => {
  const label = fc.constantFrom('web', 'api', 'batch');
  const ns = fc.constantFrom('windows', 'other');
  const pool: fc.Arbitrary<PoolSelection> = fc.record({
    namespace: ns,
    name: fc.constantFrom('p1', 'p2', 'p3', 'p4'),
    selector: fc.record({
      matchLabels: fc.dictionary(fc.constantFrom('pool', 'tier'), label, { maxKeys: 2 }),
    }),
  });
  const host: fc.Arbitrary<HostLabels> = fc.record({
    namespace: ns,
    name: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
    labels: fc.dictionary(fc.constantFrom('pool', 'tier'), label, { maxKeys: 2 }),
  });
  const key = (o: { namespace: string; name: string }) => `${o.namespace}/${o.name}`;
  fc.assert(
    fc.property(
      fc.uniqueArray(pool, { selector: key, maxLength: 5 }),
      fc.uniqueArray(host, { selector: key, maxLength: 10 }),
      (pools, hosts) => {
        const m = assignPools(pools, hosts);
        for (const h of hosts) {
          const inPools = [...m.pools]
            .filter(([k, v]) => k !== defaultPoolKey && v.hosts.includes(key(h)))
            .map(([k]) => k);
          const inDefault = m.pools.get(defaultPoolKey)!.hosts.includes(key(h));
          assert.equal(inDefault, inPools.length === 0, key(h));
          for (const p of inPools) {
            const shared = m.pools.get(p)!.shared.find((s) => s.host === key(h));
            assert.equal(shared !== undefined, inPools.length > 1);
            if (shared)
              assert.deepEqual(
                shared.otherPools,
                inPools.filter((o) => o !== p),
              );
          }
          assert.equal(m.governingPool.get(key(h)), inPools[0] ?? defaultPoolKey);
        }
        assert.deepEqual(assignPools([...pools].reverse(), [...hosts].reverse()), m);
      },
    ),
    { seed: testSeed(t) },
  );
});
