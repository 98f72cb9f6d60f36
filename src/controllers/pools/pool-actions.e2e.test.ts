/**
 * The pool controller's writes and reads against the real API server, from the side of what
 * could go wrong: a rollout record computed from a stale read is refused (never rolls the
 * record back); uncordon leaves a node a person cordoned cordoned; a Node's forged or stale
 * Windows Update report counts for nothing; a report names only its own host.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { createWindowsNode } from '../../../sim/testkit/nodes.ts';
import { sharedCluster, testNamespace, uniqueSuffix } from '../../../sim/testkit/test-cluster.ts';
import { createUnreachableHost, readWindowsHost } from '../../../sim/testkit/windows-hosts.ts';
import { installCrds } from '../../api/install-crds.ts';
import {
  cordonedByAnnotation,
  hostAnnotation,
  hostIdentity,
  installUpdatesAnnotation,
  rebootRequestAnnotation,
  windowsUpdatesAnnotation,
} from '../../api/node-annotations.ts';
import { apiVersion } from '../../api/windows-host.ts';
import { formatWindowsUpdateReport } from '../../api/windows-updates.ts';
import type { Informer } from '../../controller/informer.ts';
import type { HostRolloutStatus } from '../../rollout/host-steps.ts';
import { takeAction, writeHostRecord } from './pool-actions.ts';
import { passHost } from './pool-observe.ts';

const [group, version] = apiVersion.split('/') as [string, string];
const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/** An Informer over a fixed set of Nodes (read fresh from the API by the test). */
function nodesOf(nodes: k8s.V1Node[]): Informer<k8s.V1Node> {
  return { get: (name: string) => nodes.find((n) => n.metadata?.name === name) } as never;
}

test('pool actions: guarded record, a person’s cordon kept, reports believed only from their own node and boot', async (t) => {
  const { kc } = await sharedCluster();
  await installCrds(kc);
  const namespace = await testNamespace(kc, 'pool-actions');
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const suffix = uniqueSuffix();
  const createHost = (name: string) => createUnreachableHost(kc, namespace, name);
  const readHost = (name: string) => readWindowsHost(kc, namespace, name);
  const host = await createHost('a');
  const other = await createHost('b');

  await t.test('a rollout record computed from a stale read is refused', async () => {
    const first: HostRolloutStatus = {
      current: {
        target: { servicesVersion: '2', patchPolicy: 'None' },
        changes: ['services'],
        step: 'Drain',
        startedAt: '2025-06-07T01:00:00Z',
        stepStartedAt: '2025-06-07T01:00:00Z',
      },
    };
    const rv = await writeHostRecord(kc, host, { rollout: first });
    assert.ok(rv, 'the write from the current read succeeds');
    // `host` is now stale: a lagging cache writing "no change" over a host in Drain.
    assert.equal(
      await writeHostRecord(kc, host, { rollout: {} }),
      undefined,
      'the stale write is refused',
    );
    const now = await readHost('a');
    assert.deepEqual(now.status?.rollout, first, 'the record was not rolled back');
  });

  const nodeName = `actions-${suffix}`;
  await createWindowsNode(kc, { name: nodeName, release: '2022' });
  t.after(() => core.deleteNode({ name: nodeName }).catch(() => undefined));
  await core.patchNode(
    {
      name: nodeName,
      body: { metadata: { annotations: { [hostAnnotation]: hostIdentity(host) } } },
    },
    merge,
  );
  const fresh = await readHost('a');
  await custom.patchNamespacedCustomObjectStatus(
    {
      group,
      version,
      namespace,
      plural: 'windowshosts',
      name: 'a',
      body: { status: { nodeName } },
    },
    merge,
  );

  await t.test('uncordon undoes only winfleet’s cordon', async () => {
    let node = await core.readNode({ name: nodeName });
    await takeAction({ kc, host: fresh, node }, { kind: 'cordon' });
    node = await core.readNode({ name: nodeName });
    assert.equal(node.spec?.unschedulable, true);
    assert.equal(node.metadata?.annotations?.[cordonedByAnnotation], 'winfleet');
    await takeAction({ kc, host: fresh, node }, { kind: 'reboot', token: 'reboot-1' });
    await takeAction(
      { kc, host: fresh, node },
      { kind: 'apply', target: { patchPolicy: 'Security' } },
    );
    node = await core.readNode({ name: nodeName });
    assert.equal(node.metadata?.annotations?.[rebootRequestAnnotation], 'reboot-1');
    assert.equal(node.metadata?.annotations?.[installUpdatesAnnotation], 'Security');
    await takeAction({ kc, host: fresh, node }, { kind: 'uncordon' });
    node = await core.readNode({ name: nodeName });
    assert.ok(!node.spec?.unschedulable, 'winfleet’s cordon undone');
    for (const key of [cordonedByAnnotation, rebootRequestAnnotation, installUpdatesAnnotation])
      assert.equal(node.metadata?.annotations?.[key], undefined, `${key} removed`);
    // A person cordons it (kubectl cordon: no winfleet annotation): uncordon leaves it be.
    await core.patchNode({ name: nodeName, body: { spec: { unschedulable: true } } }, merge);
    node = await core.readNode({ name: nodeName });
    await takeAction({ kc, host: fresh, node }, { kind: 'uncordon' });
    node = await core.readNode({ name: nodeName });
    assert.equal(node.spec?.unschedulable, true, 'a person’s cordon stays');
    await core.patchNode({ name: nodeName, body: { spec: { unschedulable: null } } }, merge);
  });

  await t.test(
    'a Node’s Windows Update report: only from its own node, its current boot, and well-formed',
    async () => {
      const withHost = await readHost('a');
      // A kwok Node has no boot id; give it one as a kubelet reports it.
      const bootId = 'b5a3a8f2-6d1c-4d8e-9a51-3c1f0e2d4b77';
      await core.patchNodeStatus(
        { name: nodeName, body: { status: { nodeInfo: { bootID: bootId } } } },
        merge,
      );
      let node = await core.readNode({ name: nodeName });
      assert.equal(node.status?.nodeInfo?.bootID, bootId);
      const report = (boot: string) =>
        formatWindowsUpdateReport({
          bootId: boot,
          searchedAt: '2025-06-07T01:00:00Z',
          available: [
            { kb: 'KB5040437', title: 'Cumulative Update', categories: ['Security Updates'] },
          ],
          installed: [],
          failed: [],
          rebootPending: true,
        });
      const setReport = async (text: string) => {
        await core.patchNode(
          {
            name: nodeName,
            body: { metadata: { annotations: { [windowsUpdatesAnnotation]: text } } },
          },
          merge,
        );
        node = await core.readNode({ name: nodeName });
        return passHost(withHost, nodesOf([node]), []);
      };
      // Made in the current boot: believed.
      let seen = await setReport(report(bootId));
      assert.equal(seen.observed.facts.rebootPending, true);
      assert.deepEqual(
        seen.observed.facts.availableUpdates.map((u) => u.kb),
        ['KB5040437'],
      );
      // Made before a reboot (another boot id): a pending reboot from then must not ask again.
      seen = await setReport(report('0f0f0f0f-0000-4000-8000-000000000000'));
      assert.equal(seen.observed.facts.rebootPending, false);
      assert.deepEqual(seen.observed.facts.availableUpdates, []);
      // Forged shape (an extra key the operator does not know): refused whole, and told.
      seen = await setReport(report(bootId).replace('{', '{"rebootNow":true,'));
      assert.equal(seen.observed.facts.rebootPending, false);
      assert.match(seen.reportProblem ?? '', /unknown key "rebootNow"/);
      // The other host (no Node of its own) does not see this Node's report, even named by it.
      const stranger = passHost({ ...other, status: { nodeName } }, nodesOf([node]), []);
      assert.equal(stranger.observed.node, undefined, 'not its node: the identity is a’s');
      assert.deepEqual(stranger.observed.facts.availableUpdates, []);
    },
  );
});
