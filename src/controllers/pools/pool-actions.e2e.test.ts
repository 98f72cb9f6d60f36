/**
 * The pool controller's writes against the real API server, from the side of what could go
 * wrong: a rollout record computed from a stale read is refused (never rolls the record back);
 * uncordon leaves a node a person cordoned cordoned. (What it reads of a Node's Windows Update
 * report is a pure function of the cached Node: pool-observe.test.ts.)
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
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
} from '../../api/node-annotations.ts';
import { signatureAnnotation } from '../../api/node-commands.ts';
import type { HostRolloutStatus } from '../../api/rollout-status.ts';
import { CommandSigner, registerCommandSigner } from '../../fleet/command-signer.ts';
import { takeAction, writeHostRecord } from './pool-actions.ts';

const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

test('pool actions: guarded record, a person’s cordon kept', async (t) => {
  const { kc } = await sharedCluster();
  await installCrds(kc);
  // The commands takeAction writes are signed with the operator's key (src/api/node-commands.ts).
  registerCommandSigner(kc, new CommandSigner(generateKeyPairSync('ed25519').privateKey));
  const namespace = await testNamespace(kc, 'pool-actions');
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const suffix = uniqueSuffix();
  const createHost = (name: string) => createUnreachableHost(kc, namespace, name);
  const readHost = (name: string) => readWindowsHost(kc, namespace, name);
  const host = await createHost('a');

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
    for (const key of [
      cordonedByAnnotation,
      rebootRequestAnnotation,
      installUpdatesAnnotation,
      signatureAnnotation(rebootRequestAnnotation),
      signatureAnnotation(installUpdatesAnnotation),
    ])
      assert.equal(node.metadata?.annotations?.[key], undefined, `${key} removed`);
    // A person cordons it (kubectl cordon: no winfleet annotation): uncordon leaves it be.
    await core.patchNode({ name: nodeName, body: { spec: { unschedulable: true } } }, merge);
    node = await core.readNode({ name: nodeName });
    await takeAction({ kc, host: fresh, node }, { kind: 'uncordon' });
    node = await core.readNode({ name: nodeName });
    assert.equal(node.spec?.unschedulable, true, 'a person’s cordon stays');
    await core.patchNode({ name: nodeName, body: { spec: { unschedulable: null } } }, merge);
  });
});
