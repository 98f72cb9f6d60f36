/**
 * An admin's cordon is never lifted by winfleet (security review 3, item 6), tried from the
 * attacker's side: a person cordons a pool's node (kubectl cordon), then a principal that may
 * only patch Nodes marks that cordon as winfleet's own — the rollout's
 * (winfleet.io/cordoned-by=winfleet) and then remediation's (=remediation) — as the node
 * itself also could. The pool controller, run pass by pass, leaves the node cordoned: what
 * says winfleet cordoned a node is its record in the WindowsHost's status, which neither can
 * write.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { controllerPass } from '../../../sim/testkit/controller-pass.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { nodePatcher } from '../../../sim/testkit/node-patcher.ts';
import { createPool, labelHosts } from '../../../sim/testkit/pools.ts';
import { createWindowsHosts, waitForReadyHosts } from '../../../sim/testkit/windows-hosts.ts';
import { cordonedByAnnotation } from '../../api/node-annotations.ts';

test('a cordon a person set stays, whoever marks it as winfleet’s', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const [host] = await waitForReadyHosts(kc, world.namespace, 1);
  const nodeName = host!.status!.nodeName!;
  await labelHosts(kc, world.namespace, { pool: 'web' });
  await createPool(kc, world.namespace, 'web', {
    selector: { matchLabels: { pool: 'web' } },
    maxUnavailable: 1,
  });
  const pass = () => controllerPass(world.operator!, 'windowsnodepools', `${world.namespace}/web`);
  await pass();

  // The admin: kubectl cordon.
  await core.patchNode(
    { name: nodeName, body: { spec: { unschedulable: true } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
  const patcher = await nodePatcher(t, kc, world.namespace);
  for (const by of ['winfleet', 'remediation']) {
    await patcher.annotate(nodeName, { [cordonedByAnnotation]: by });
    // Passes against the state as it is now (controllerPass): the annotation included.
    await pass();
    await pass();
    const node = await core.readNode({ name: nodeName });
    assert.equal(node.spec?.unschedulable, true, `the admin's cordon marked ${by} is kept`);
  }
});
