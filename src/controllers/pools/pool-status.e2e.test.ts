/**
 * The pool controller against the real control plane, through the operator (no payload, no
 * webhook): WindowsNodePools selecting WindowsHosts get their status numbers and conditions;
 * a host two pools select makes both Degraded, naming it, and a label change that ends the
 * overlap clears it. Nodes are kwok's, tied to their hosts by the winfleet.io/host identity.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { createWindowsNode } from '../../../sim/testkit/nodes.ts';
import { freshCluster, uniqueSuffix } from '../../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import { createUnreachableHost } from '../../../sim/testkit/windows-hosts.ts';
import { apiVersion } from '../../api/group-version.ts';
import { hostAnnotation, hostIdentity } from '../../api/node-annotations.ts';
import { ConditionReason, PoolConditionType } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool, WindowsNodePoolStatus } from '../../api/windows-node-pool.ts';
import { findCondition } from '../../controller-runtime/conditions.ts';
import { waitFor } from '../../kube/wait-for.ts';

const [group, version] = apiVersion.split('/') as [string, string];

test('pool status: counts per pool; a host in two pools makes both Degraded', async (t) => {
  // Its own cluster: an operator acts on the whole cluster (test-cluster.ts refuseSharedCluster).
  const { kc } = await freshCluster(t);
  const operator = await startTestOperator(kc, { webhook: false });
  t.after(() => operator.stop());
  const namespace = operator.namespace;
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const suffix = uniqueSuffix();
  const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

  const createHost = (name: string, labels: Record<string, string>) =>
    createUnreachableHost(kc, namespace, name, labels);
  /** A Ready kwok node carrying the host's identity, named in the host's status. */
  const giveNode = async (host: WindowsHost) => {
    const nodeName = `pool-${host.metadata.name}-${suffix}`;
    await createWindowsNode(kc, { name: nodeName, release: '2022' });
    t.after(() => core.deleteNode({ name: nodeName }).catch(() => undefined));
    await core.patchNode(
      {
        name: nodeName,
        body: { metadata: { annotations: { [hostAnnotation]: hostIdentity(host) } } },
      },
      merge,
    );
    await custom.patchNamespacedCustomObjectStatus(
      {
        group,
        version,
        namespace,
        plural: 'windowshosts',
        name: host.metadata.name,
        body: { status: { nodeName } },
      },
      merge,
    );
  };
  const createPool = (name: string, spec: WindowsNodePool['spec']) =>
    custom.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: 'windowsnodepools',
      body: { apiVersion, kind: 'WindowsNodePool', metadata: { name, namespace }, spec },
    });
  const readPool = async (name: string) =>
    (await custom.getNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: 'windowsnodepools',
      name,
    })) as WindowsNodePool;
  /** Waits until the pool's status satisfies `check`; the last status is in the error. */
  const poolStatus = async (
    name: string,
    description: string,
    check: (status: WindowsNodePoolStatus, pool: WindowsNodePool) => boolean,
  ) => {
    let last: unknown;
    try {
      return await waitFor(
        async () => {
          const pool = await readPool(name);
          last = pool.status;
          return pool.status && check(pool.status, pool) ? pool.status : undefined;
        },
        { description: `pool ${name}: ${description}`, timeoutMs: 30_000, intervalMs: 200 },
      );
    } catch (error) {
      throw new Error(`${String(error)}; last status: ${JSON.stringify(last)}`);
    }
  };

  // web: a (Ready node) and b (no node yet: NotReady). db: c (Ready node).
  const a = await createHost('a', { pool: 'web' });
  await createHost('b', { pool: 'web' });
  const c = await createHost('c', { pool: 'db' });
  await giveNode(a);
  await giveNode(c);
  await createPool('web', { selector: { matchLabels: { pool: 'web' } }, maxUnavailable: 1 });
  await createPool('db', { selector: { matchLabels: { pool: 'db' } } });

  const web = await poolStatus(
    'web',
    '2 hosts, 1 Ready',
    (s) => s.hosts === 2 && s.readyHosts === 1,
  );
  assert.equal(web.unavailableHosts, 1, 'b has no Node: unavailable');
  assert.equal(web.updatedHosts, 2, 'no change is pending (none is wired yet)');
  assert.equal(web.observedGeneration, (await readPool('web')).metadata.generation);
  const webAvailable = findCondition(web.conditions, PoolConditionType.Available);
  assert.equal(webAvailable?.status, 'True', JSON.stringify(webAvailable));
  assert.equal(webAvailable?.reason, ConditionReason.MinimumHostsAvailable);
  assert.match(webAvailable!.message, new RegExp(`${namespace}/b \\(NotReady\\)`));
  assert.equal(findCondition(web.conditions, PoolConditionType.Degraded)?.status, 'False');
  assert.ok(webAvailable!.lastTransitionTime, 'conditions carry a transition time');

  const db = await poolStatus('db', '1 Ready host', (s) => s.hosts === 1 && s.readyHosts === 1);
  assert.equal(db.unavailableHosts, 0);
  assert.equal(findCondition(db.conditions, PoolConditionType.Degraded)?.status, 'False');

  // b's Node registers: web has both Ready.
  await giveNode(
    (await custom.getNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: 'windowshosts',
      name: 'b',
    })) as WindowsHost,
  );
  await poolStatus('web', 'both Ready', (s) => s.readyHosts === 2 && s.unavailableHosts === 0);

  // canary selects c too (by a label c gets later): c is in db and canary, both Degraded.
  await createPool('canary', { selector: { matchLabels: { canary: 'true' } } });
  await poolStatus('canary', 'no hosts', (s) => s.hosts === 0);
  await custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace,
      plural: 'windowshosts',
      name: 'c',
      body: { metadata: { labels: { canary: 'true' } } },
    },
    merge,
  );
  for (const [pool, other] of [
    ['db', 'canary'],
    ['canary', 'db'],
  ] as const) {
    const status = await poolStatus(
      pool,
      'Degraded',
      (s) => findCondition(s.conditions, PoolConditionType.Degraded)?.status === 'True',
    );
    const degraded = findCondition(status.conditions, PoolConditionType.Degraded)!;
    assert.equal(degraded.reason, ConditionReason.HostInMultiplePools);
    assert.ok(
      degraded.message.includes(`${namespace}/c (also in ${namespace}/${other})`),
      degraded.message,
    );
    assert.equal(status.hosts, 1, `${pool} counts the shared host`);
  }
  const webNow = await readPool('web');
  assert.equal(
    findCondition(webNow.status?.conditions, PoolConditionType.Degraded)?.status,
    'False',
    'a pool without shared hosts stays as it was',
  );

  // The overlap ends (c leaves db): both pools recover.
  await custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace,
      plural: 'windowshosts',
      name: 'c',
      body: { metadata: { labels: { pool: null } } },
    },
    merge,
  );
  await poolStatus(
    'db',
    'no hosts, not Degraded',
    (s) =>
      s.hosts === 0 && findCondition(s.conditions, PoolConditionType.Degraded)?.status === 'False',
  );
  await poolStatus(
    'canary',
    'c alone, not Degraded',
    (s) =>
      s.hosts === 1 && findCondition(s.conditions, PoolConditionType.Degraded)?.status === 'False',
  );
});
