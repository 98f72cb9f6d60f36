/**
 * reconcilePool over a stated cache: offline informers filled with given pools, hosts and
 * Nodes, a fixed clock, and recorders for the pass's writes (PoolWrites) and Events. No watch,
 * no work queue, no API client: the test asserts on what the pass writes and asks, in order.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  offlineInformer,
  offlineNodeInformer,
  syntheticNode,
} from '../../../sim/testkit/synthetic-nodes.ts';
import {
  cordonedByAnnotation,
  cordonedByValues,
  hostAnnotation,
  hostIdentity,
  servicesVersionAnnotation,
} from '../../api/node-annotations.ts';
import type { HostRolloutStatus } from '../../api/rollout-status.ts';
import { type WindowsHost, windowsHostResource } from '../../api/windows-host.ts';
import {
  type WindowsNodePool,
  type WindowsNodePoolSpec,
  type WindowsNodePoolStatus,
  windowsNodePoolResource,
} from '../../api/windows-node-pool.ts';
import { silentLogger } from '../../log/logger.ts';
import { defaultPoolKey } from '../../rollout/pool-membership.ts';
import type { HostRecord } from './pool-actions.ts';
import { poolIndex } from './pool-index.ts';
import {
  inChangeRecheckMs,
  newPoolMemory,
  type PoolReconcileState,
  type PoolWrites,
  reconcilePool,
} from './pool-reconcile.ts';

const now = new Date('2026-06-07T01:00:00Z');

/** A joined host on services v1 whose Node (named like it) carries its identity. */
function joinedHost(name: string, rollout?: HostRolloutStatus): WindowsHost {
  return {
    apiVersion: windowsHostResource.apiVersion,
    kind: 'WindowsHost',
    metadata: {
      name,
      namespace: 'win',
      uid: `uid-${name}`,
      resourceVersion: '1',
      labels: { pool: 'web' },
      creationTimestamp: new Date('2026-06-01T00:00:00Z'),
    },
    spec: { address: '127.0.0.1', username: 'admin', sshKeySecretRef: { name: 'key' } },
    status: { nodeName: name, servicesVersion: 'v1', ...(rollout ? { rollout } : {}) },
  } as WindowsHost;
}

/** The host's own Node, Ready, reporting services v1. */
function nodeOf(host: WindowsHost, annotations: Record<string, string> = {}): k8s.V1Node {
  return syntheticNode(host.metadata.name, {
    build: '10.0.20348',
    annotations: {
      [hostAnnotation]: hostIdentity(host),
      [servicesVersionAnnotation]: 'v1',
      ...annotations,
    },
  });
}

function webPool(spec: Partial<WindowsNodePoolSpec> = {}): WindowsNodePool {
  return {
    apiVersion: windowsNodePoolResource.apiVersion,
    kind: 'WindowsNodePool',
    metadata: { name: 'web', namespace: 'win', generation: 1 },
    spec: { selector: { matchLabels: { pool: 'web' } }, ...spec },
  } as WindowsNodePool;
}

/** Every write and request, in order: [what, host or node or pool name, detail]. */
type Call = [string, string, unknown];

/** A stated world: the caches hold `pools`, `hosts`, `nodes`; writes go to `calls`. */
function world(
  pools: WindowsNodePool[],
  hosts: WindowsHost[],
  nodes: k8s.V1Node[],
  options: { conflict?: boolean } = {},
) {
  const poolCache = offlineInformer<WindowsNodePool>(windowsNodePoolResource);
  poolCache.replace(pools);
  const hostCache = offlineInformer<WindowsHost>(windowsHostResource);
  hostCache.replace(hosts);
  const nodeCache = offlineNodeInformer();
  nodeCache.replace(nodes);
  const calls: Call[] = [];
  const events: [string, string, string][] = [];
  const writes: PoolWrites = {
    writeHostRecord: async (host, record: HostRecord) => {
      calls.push(['writeHostRecord', host.metadata.name, record]);
      return options.conflict ? undefined : '2';
    },
    removeHostAnnotation: async (host, key) => {
      calls.push(['removeHostAnnotation', host.metadata.name, key]);
    },
    takeAction: async (host, _node, action) => {
      calls.push(['takeAction', host.metadata.name, action.kind]);
      return undefined;
    },
    dropLevels: async (node) => {
      calls.push(['dropLevels', node.metadata!.name!, undefined]);
    },
    patchNode: async (name, body) => {
      calls.push(['patchNode', name, body]);
    },
    copyReport: async (host, summary) => {
      calls.push(['copyReport', host.metadata.name, summary]);
    },
    writePoolStatus: async (pool, status: WindowsNodePoolStatus) => {
      calls.push(['writePoolStatus', pool.metadata.name, status]);
    },
  };
  const state: PoolReconcileState = {
    pools: poolCache,
    hosts: hostCache,
    nodes: nodeCache,
    membership: poolIndex(poolCache, hostCache),
    memory: newPoolMemory(),
    writes,
    events: {
      record: (object, type, reason) => events.push([object.metadata?.name ?? '', type, reason]),
    },
    log: silentLogger,
    now: () => now,
    payload: async () => ({ servicesVersion: 'v2', kubeletVersion: 'v1.34.0' }),
    apiServerVersion: async () => 'v1.34.0',
  };
  return { state, calls, events, hostCache };
}

/** The calls of one kind. */
const of = (calls: Call[], what: string) => calls.filter(([w]) => w === what);

test('a pool whose target changed starts at most maxUnavailable hosts: the record first, then the cordon', async () => {
  const hosts = ['a', 'b', 'c'].map((n) => joinedHost(n));
  const { state, calls } = world(
    [webPool({ maxUnavailable: 1 })],
    hosts,
    hosts.map((h) => nodeOf(h)),
  );
  const result = await reconcilePool(state, 'win/web');

  const records = of(calls, 'writeHostRecord');
  assert.equal(records.length, 1, 'one host starts');
  const [, started, record] = records[0]!;
  const current = (record as HostRecord).rollout?.current;
  assert.equal(current?.target.servicesVersion, 'v2');
  assert.equal(current?.step, 'Cordon');
  const recordAt = calls.indexOf(records[0]!);
  const cordonAt = calls.findIndex(
    ([w, h, a]) => w === 'takeAction' && h === started && a === 'cordon',
  );
  assert.ok(cordonAt > recordAt, 'status.rollout is recorded before the cordon');
  assert.deepEqual(
    of(calls, 'takeAction')
      .filter(([, h]) => h !== started)
      .map(([, , a]) => a),
    ['none', 'none'],
    'the others are not touched',
  );
  const [pool] = of(calls, 'writePoolStatus');
  assert.equal(calls.at(-1), pool, 'the pool status is written last');
  const status = pool![2] as WindowsNodePoolStatus;
  assert.equal(status.observedGeneration, 1);
  assert.equal(status.hosts, 3);
  assert.equal(status.updatedHosts, 0);
  assert.equal(status.conditions?.find((c) => c.type === 'Progressing')?.status, 'True');
  assert.deepEqual(
    result,
    { requeueAfterMs: inChangeRecheckMs },
    'a pool in a change is looked at again',
  );
});

test('a lagging cache does not start more than maxUnavailable: the pass reads its own record', async () => {
  const hosts = ['a', 'b', 'c'].map((n) => joinedHost(n));
  const { state, calls } = world(
    [webPool({ maxUnavailable: 1 })],
    hosts,
    hosts.map((h) => nodeOf(h)),
  );
  await reconcilePool(state, 'win/web');
  const [first] = of(calls, 'writeHostRecord');
  calls.length = 0;
  // The cache still shows every host at resourceVersion 1, with no rollout.
  await reconcilePool(state, 'win/web');
  const starts = of(calls, 'writeHostRecord').filter(
    ([h, , r]) => h !== first![1] && (r as HostRecord).rollout?.current !== undefined,
  );
  assert.deepEqual(starts, [], 'no second host starts');
});

test('a paused pool starts nothing and acts on no Node', async () => {
  const hosts = ['a', 'b'].map((n) => joinedHost(n));
  const { state, calls } = world(
    [webPool({ paused: true })],
    hosts,
    hosts.map((h) => nodeOf(h)),
  );
  await reconcilePool(state, 'win/web');
  assert.deepEqual(of(calls, 'writeHostRecord'), []);
  assert.deepEqual(
    of(calls, 'takeAction').map(([, , a]) => a),
    ['none', 'none'],
  );
  assert.deepEqual(of(calls, 'patchNode'), []);
  assert.equal(of(calls, 'writePoolStatus').length, 1, 'its status is still written');
});

test('a host whose change stopped at a step is set aside and uncordoned; the pool goes on', async () => {
  const at = '2026-06-06T00:00:00Z';
  const stopped = joinedHost('a', {
    current: {
      target: { servicesVersion: 'v2', patchPolicy: 'None' },
      changes: ['services'],
      step: 'Drain',
      startedAt: at,
      stepStartedAt: at,
      failure: { step: 'Drain', reason: 'DrainTimedOut', message: 'a pod would not go', since: at },
    },
    cordoned: 'a',
  });
  const other = joinedHost('b');
  const cordoned = nodeOf(stopped, { [cordonedByAnnotation]: cordonedByValues.rollout });
  cordoned.spec = { unschedulable: true };
  const { state, calls } = world(
    [webPool({ maxUnavailable: 1 })],
    [stopped, other],
    [cordoned, nodeOf(other)],
  );
  await reconcilePool(state, 'win/web');
  const aside = of(calls, 'writeHostRecord').find(([, h]) => h === 'a');
  const rollout = (aside?.[2] as HostRecord | undefined)?.rollout;
  assert.equal(rollout?.setAside?.cause, 'ChangeFailed');
  assert.equal(rollout?.current, undefined, 'its change ends');
  assert.ok(
    calls.some(([w, h, a]) => w === 'takeAction' && h === 'a' && a === 'uncordon'),
    'its Node is uncordoned',
  );
});

test('a record refused (stale read) takes no action and writes no pool status: read again', async () => {
  const hosts = ['a', 'b'].map((n) => joinedHost(n));
  const { state, calls } = world(
    [webPool()],
    hosts,
    hosts.map((h) => nodeOf(h)),
    {
      conflict: true,
    },
  );
  const result = await reconcilePool(state, 'win/web');
  assert.deepEqual(result, { requeueAfterMs: 500 });
  assert.deepEqual(
    calls.map(([w]) => w),
    ['writeHostRecord'],
  );
  assert.equal(state.memory.written.size, 0, 'nothing remembered of a refused write');
});

test('a pool gone does nothing; the default pool writes no pool status', async () => {
  const plain = joinedHost('plain');
  plain.metadata.labels = {};
  const { state, calls } = world([], [plain], [nodeOf(plain)]);
  assert.equal(await reconcilePool(state, 'win/gone'), undefined);
  assert.deepEqual(calls, []);
  await reconcilePool(state, defaultPoolKey);
  assert.equal(of(calls, 'writeHostRecord').length, 1, 'the default pool rolls its host too');
  assert.deepEqual(of(calls, 'writePoolStatus'), []);
});

/** A pool of namespace `namespace` that replaces `replaces`, with a status that says go. */
function replacer(
  namespace: string,
  name: string,
  replaces: string,
  phase: 'Migrating' | 'Blocked' = 'Migrating',
): WindowsNodePool {
  return {
    apiVersion: windowsNodePoolResource.apiVersion,
    kind: 'WindowsNodePool',
    metadata: { name, namespace, generation: 1 },
    spec: { selector: { matchLabels: { pool: name } }, replaces },
    status: {
      migration: {
        replaces,
        phase,
        observedGeneration: 1,
        oldHosts: 2,
        retiredHosts: 0,
        message: '',
      },
    },
  } as WindowsNodePool;
}

test('attacker: a pool in another namespace that "replaces" web never gets web’s hosts cordoned', async () => {
  // tenant-a may write WindowsNodePools (even their status, as if the operator had) in its own
  // namespace only; web and its hosts are in win.
  const hosts = ['a', 'b'].map((n) => joinedHost(n));
  const old = webPool({ maxUnavailable: 1 });
  const evil = replacer('tenant-a', 'evil', 'web');
  const { state, calls } = world(
    [old, evil],
    hosts,
    hosts.map((h) => nodeOf(h)),
  );
  await reconcilePool(state, 'win/web');
  const started = of(calls, 'writeHostRecord').map(
    ([, , r]) => (r as HostRecord).rollout?.current?.target,
  );
  assert.ok(
    started.every((target) => target?.retire !== true),
    'no host of win/web is retired for a pool of tenant-a',
  );
  // Its own pass reports the field and leads nowhere.
  calls.length = 0;
  await reconcilePool(state, 'tenant-a/evil');
  const [, , status] = of(calls, 'writePoolStatus')[0]!;
  const migration = (status as WindowsNodePoolStatus).migration!;
  assert.equal(migration.phase, 'Invalid');
  assert.match(migration.message, /^spec\.replaces: no WindowsNodePool web in namespace tenant-a/);
  assert.equal(migration.oldHosts, 0);
});

test('a pool replaced by one of its namespace retires its hosts, maxUnavailable at a time', async () => {
  const hosts = ['a', 'b'].map((n) => joinedHost(n));
  const { state, calls } = world(
    [webPool({ maxUnavailable: 1 }), replacer('win', 'web2022', 'web')],
    hosts,
    hosts.map((h) => nodeOf(h)),
  );
  await reconcilePool(state, 'win/web');
  const records = of(calls, 'writeHostRecord');
  assert.equal(records.length, 1, 'one host at a time');
  const current = (records[0]![2] as HostRecord).rollout?.current;
  assert.deepEqual(current?.changes, ['retire']);
  assert.deepEqual(current?.target, { patchPolicy: 'None', retire: true });
  assert.ok(of(calls, 'takeAction').some(([, , a]) => a === 'cordon'));
});

test('the new pool blocks on a workload that cannot move, naming it; the old pool then uncordons', async () => {
  const oldHost = joinedHost('old-1', {
    retired: { at: '2026-06-07T00:00:00Z', node: 'old-1' },
    cordoned: 'old-1',
  });
  const newHost = {
    ...joinedHost('new-1'),
    metadata: { ...joinedHost('new-1').metadata, labels: { pool: 'web2022' } },
  } as WindowsHost;
  const oldNode = syntheticNode('old-1', {
    build: '10.0.17763',
    unschedulable: true,
    annotations: {
      [hostAnnotation]: hostIdentity(oldHost),
      [servicesVersionAnnotation]: 'v1',
      [cordonedByAnnotation]: cordonedByValues.rollout,
    },
  });
  const newPool = {
    ...replacer('win', 'web2022', 'web'),
    status: {},
  } as WindowsNodePool;
  const { state, calls } = world(
    [webPool({ maxUnavailable: 1 }), newPool],
    [oldHost, newHost],
    [oldNode, nodeOf(newHost)],
  );
  const asked: string[][] = [];
  state.migrationReads = {
    async workloadsOnNodes(names) {
      asked.push([...names]);
      return [
        {
          kind: 'Deployment',
          namespace: 'apps',
          name: 'legacy',
          pod: { spec: { containers: [{ name: 'c', image: 'servercore:ltsc2019' }] } },
        },
      ];
    },
    async planWorkload(workload, target) {
      assert.equal(target.build, '10.0.20348');
      return {
        kind: workload.kind,
        namespace: workload.namespace,
        name: workload.name,
        verdict: 'blocked',
        images: [
          {
            container: 'spec.containers[0]',
            image: 'servercore:ltsc2019',
            verdict: 'none',
            variants: ['10.0.17763.6054'],
          },
        ],
        blockers: [
          'spec.containers[0] image servercore:ltsc2019 is for 10.0.17763.6054, newer than 2022',
        ],
        notes: [],
      };
    },
  };
  await reconcilePool(state, 'win/web2022');
  assert.deepEqual(asked, [], 'a retired host’s node is drained already: not asked');
  const [, , status] = of(calls, 'writePoolStatus')[0]!;
  const written = status as WindowsNodePoolStatus;
  // Every old host is retired: the migration is complete, nothing to check.
  assert.equal(written.migration?.phase, 'Complete');

  // The old host un-retired (the cache as a blocked migration leaves it): the gate asks.
  const fresh = joinedHost('old-1');
  const again = world(
    [webPool({ maxUnavailable: 1 }), newPool],
    [fresh, newHost],
    [
      // Its Node is a 2019 one.
      syntheticNode('old-1', {
        build: '10.0.17763',
        annotations: { [hostAnnotation]: hostIdentity(fresh), [servicesVersionAnnotation]: 'v1' },
      }),
      nodeOf(newHost),
    ],
  );
  again.state.migrationReads = state.migrationReads;
  await reconcilePool(again.state, 'win/web2022');
  assert.deepEqual(asked, [['old-1']]);
  const blocked = (of(again.calls, 'writePoolStatus')[0]![2] as WindowsNodePoolStatus).migration!;
  assert.equal(blocked.phase, 'Blocked');
  assert.deepEqual(
    blocked.blockedWorkloads?.map((w) => `${w.namespace}/${w.kind}/${w.name}`),
    ['apps/Deployment/legacy'],
  );
  const condition = (
    of(again.calls, 'writePoolStatus')[0]![2] as WindowsNodePoolStatus
  ).conditions?.find((c) => c.type === 'Migrated');
  assert.equal(condition?.reason, 'MigrationBlocked');

  // The old pool, its replacer Blocked: a host retired before is uncordoned.
  const blockedPool = replacer('win', 'web2022', 'web', 'Blocked');
  const old = world([webPool({ maxUnavailable: 1 }), blockedPool], [oldHost], [oldNode]);
  await reconcilePool(old.state, 'win/web');
  assert.ok(of(old.calls, 'takeAction').some(([, h, a]) => h === 'old-1' && a === 'uncordon'));
  const record = of(old.calls, 'writeHostRecord')[0]![2] as HostRecord;
  assert.equal(record.rollout?.retired, undefined);
});
