/**
 * Node names from the attacker's side, against the real control plane and simulated hosts: a
 * WindowsHost naming the Linux node or another host's node (pointed at an SSH server the
 * attacker holds) is refused and leaves those Nodes untouched, before and after it is
 * deleted; a WindowsHost in a namespace the operator does not watch is ignored; a trusted host
 * key is consumed only by a connection made with it; a rebuilt host rejoins only on the
 * administrator's winfleet.io/rejoin.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import type { SimulatedHost } from '../../../sim/hosts/fleet.ts';
import { type JoinWorld, joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { createLinuxNode } from '../../../sim/testkit/nodes.ts';
import { createPool } from '../../../sim/testkit/pools.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
  windowsHostFor,
  writeSshKeySecret,
} from '../../../sim/testkit/windows-hosts.ts';
import { cordonedByAnnotation, hostAnnotation, hostIdentity } from '../../api/node-annotations.ts';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import {
  rejoinAnnotation,
  trustHostKeyAnnotation,
  type WindowsHost,
} from '../../api/windows-host.ts';
import { defaultConfig } from '../../config/winfleet-config.ts';
import { openRemoteHost } from '../../hostaccess/host-session.ts';
import { waitFor } from '../../kube/wait-for.ts';

function condition(host: WindowsHost | undefined, type: string) {
  return host?.status?.conditions?.find((c) => c.type === type);
}

async function readHost(world: JoinWorld, name: string, namespace = world.namespace) {
  return (await listWindowsHosts(world.kc, namespace)).find((h) => h.metadata.name === name);
}

async function annotateHost(world: JoinWorld, name: string, annotations: Record<string, string>) {
  await patchHostMetadata(world, name, { annotations });
}

async function patchHostLabels(world: JoinWorld, name: string, labels: Record<string, string>) {
  await patchHostMetadata(world, name, { labels });
}

async function patchHostMetadata(
  world: JoinWorld,
  name: string,
  metadata: { annotations?: Record<string, string>; labels?: Record<string, string> },
) {
  await k8s.KubernetesObjectApi.makeApiClient(world.kc).patch(
    {
      apiVersion: 'winfleet.io/v1alpha1',
      kind: 'WindowsHost',
      metadata: { name, namespace: world.namespace, ...metadata },
    },
    undefined,
    undefined,
    'test',
    undefined,
    k8s.PatchStrategy.MergePatch,
  );
}

/** Waits for the host's Degraded condition to have `reason`. */
function refusedWith(world: JoinWorld, name: string, reason: string) {
  return waitFor(
    async () => {
      const host = await readHost(world, name);
      return condition(host, ConditionType.Degraded)?.reason === reason ? host : undefined;
    },
    { description: `${name} Degraded with ${reason}`, timeoutMs: 60_000 },
  );
}

/** A Node as the attacker must find it afterwards: not ours to annotate, never cordoned. */
function assertUntouched(node: k8s.V1Node, identity: string | undefined) {
  assert.equal(node.metadata?.annotations?.[hostAnnotation], identity);
  assert.equal(node.metadata?.annotations?.[cordonedByAnnotation], undefined);
  assert.notEqual(node.spec?.unschedulable, true, `${node.metadata?.name} is not cordoned`);
}

test('node-name takeover, unwatched namespaces, trusted keys and rebuilt hosts', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022', '2022'],
    config: { hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 15 } },
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const [victim, attackerSsh] = world.fleet.hosts as [SimulatedHost, SimulatedHost];
  await createLinuxNode(kc, { name: 'lab-linux-1' });
  await core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name: 'bare-pod' },
      spec: { nodeName: 'lab-linux-1', containers: [{ name: 'app', image: 'busybox' }] },
    },
  });
  const [victimHost] = await createWindowsHosts(kc, world.namespace, [victim]);
  const joined = await waitFor(
    async () => {
      const h = await readHost(world, victimHost!.metadata.name);
      return h && hostReady(h) ? h : undefined;
    },
    { description: 'the victim host Ready', timeoutMs: 90_000 },
  );
  const victimNode = joined.status!.nodeName!;
  const victimIdentity = hostIdentity(joined);
  assert.equal(
    (await core.readNode({ name: victimNode })).metadata?.annotations?.[hostAnnotation],
    victimIdentity,
  );

  await t.test(
    'WindowsHosts naming the Linux node or another host’s node are refused',
    async () => {
      // In a namespace the operator does not watch, created first: by the time the attackers
      // below are answered, this one would have been too.
      await writeSshKeySecret(kc, 'other-team', world.key.privateKey);
      await objects.create(
        windowsHostFor({ ...attackerSsh, name: 'stray' }, 'other-team', { nodeName: 'stray-node' }),
      );
      await objects.create(
        windowsHostFor({ ...attackerSsh, name: 'evil-linux' }, world.namespace, {
          nodeName: 'lab-linux-1',
        }),
      );
      await objects.create(
        windowsHostFor({ ...attackerSsh, name: 'evil-win' }, world.namespace, {
          nodeName: victimNode,
        }),
      );
      const linux = await refusedWith(world, 'evil-linux', ConditionReason.NodeNotOwned);
      assert.match(condition(linux, ConditionType.Degraded)!.message, /Node lab-linux-1 exists/);
      assert.equal(linux.status?.nodeName, undefined, 'the name is never on record');
      const win = await refusedWith(world, 'evil-win', ConditionReason.NodeNameTaken);
      assert.match(
        condition(win, ConditionType.Degraded)!.message,
        new RegExp(`held by WindowsHost ${world.namespace}/${victimHost!.metadata.name}`),
      );
      assert.equal(
        condition(win, ConditionType.NodeRegistered)?.reason,
        ConditionReason.NodeNameTaken,
      );
      assertUntouched(await core.readNode({ name: 'lab-linux-1' }), undefined);
      assertUntouched(await core.readNode({ name: victimNode }), victimIdentity);

      const stray = await readHost(world, 'stray', 'other-team');
      assert.equal(stray?.status, undefined, 'a host in an unwatched namespace gets no status');
      assert.deepEqual(stray?.metadata.finalizers ?? [], [], 'and no finalizer');

      for (const name of ['evil-linux', 'evil-win']) {
        await objects.delete((await readHost(world, name))!);
      }
      await waitFor(
        async () =>
          (await readHost(world, 'evil-linux')) === undefined &&
          (await readHost(world, 'evil-win')) === undefined,
        { description: 'the attacking WindowsHosts gone', timeoutMs: 60_000 },
      );
      assertUntouched(await core.readNode({ name: 'lab-linux-1' }), undefined);
      assertUntouched(await core.readNode({ name: victimNode }), victimIdentity);
      const pod = await core.readNamespacedPod({ name: 'bare-pod', namespace: 'default' });
      assert.equal(pod.metadata?.deletionTimestamp, undefined, 'the bare pod is still there');
      assert.ok(
        hostReady((await readHost(world, victimHost!.metadata.name))!),
        'victim still Ready',
      );
    },
  );

  await t.test('a trusted host key is consumed only by a connection made with it', async () => {
    const pinned = (await readHost(world, victimHost!.metadata.name))!.status!.hostKeyFingerprint;
    const fresh = victim.faults.changeHostKey();
    await victim.faults.setRefuseConnections(true);
    await annotateHost(world, victimHost!.metadata.name, { [trustHostKeyAnnotation]: fresh });
    const unreachable = await waitFor(
      async () => {
        const h = await readHost(world, victimHost!.metadata.name);
        return condition(h, ConditionType.Reachable)?.status === 'False' ? h : undefined;
      },
      { description: 'a connection attempted with the trusted key', timeoutMs: 30_000 },
    );
    assert.equal(unreachable.metadata.annotations?.[trustHostKeyAnnotation], fresh, 'it stays');
    assert.equal(unreachable.status?.hostKeyFingerprint, pinned, 'nothing pinned yet');

    await victim.faults.setRefuseConnections(false);
    const consumed = await waitFor(
      async () => {
        const h = await readHost(world, victimHost!.metadata.name);
        return h?.status?.hostKeyFingerprint === fresh &&
          h.metadata.annotations?.[trustHostKeyAnnotation] === undefined
          ? h
          : undefined;
      },
      { description: 'the new key pinned and the annotation removed', timeoutMs: 90_000 },
    );
    assert.equal(condition(consumed, ConditionType.Reachable)?.status, 'True');
  });

  await t.test('a rebuilt host rejoins only on winfleet.io/rejoin', async () => {
    const host = (await readHost(world, victimHost!.metadata.name))!;
    const before = await core.readNode({ name: victimNode });
    // A joined NotReady host is the repair ladder's (issue 13): a pool that repairs quickly,
    // so its rung Rebootstrap meets the rebuilt host within the test's time.
    await patchHostLabels(world, host.metadata.name, { rebuilt: 'yes' });
    await createPool(kc, world.namespace, 'rebuilt', {
      selector: { matchLabels: { rebuilt: 'yes' } },
      health: {
        unhealthyConditions: [{ type: 'Ready', status: 'False', timeout: '0s' }],
        remediation: { restartServiceTimeout: '1s' },
      },
    });
    // The rebuild: everything winfleet put on the host is gone, its kubelet with it.
    const remote = await openRemoteHost(kc, defaultConfig(), host);
    try {
      await remote.removeWinfleet();
    } finally {
      remote.close();
    }
    // The kubelet is gone, so the Node stops being Ready (as the node controller would say).
    const longAgo = new Date(Date.now() - 3600_000);
    await core.patchNodeStatus(
      {
        name: victimNode,
        body: {
          status: {
            conditions: [
              {
                type: 'Ready',
                status: 'False',
                reason: 'KubeletNotRunning',
                message: 'rebuilt',
                lastHeartbeatTime: new Date(),
                lastTransitionTime: longAgo,
              },
            ],
          },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    );
    const rebuilt = await waitFor(
      async () => {
        const h = await readHost(world, host.metadata.name);
        const c = condition(h, ConditionType.NodeRegistered);
        return c?.reason === ConditionReason.NodeExistsRebuilt ? c : undefined;
      },
      { description: 'NodeRegistered NodeExistsRebuilt', timeoutMs: 90_000 },
    );
    assert.match(
      rebuilt.message,
      new RegExp(
        `kubectl annotate windowshost -n ${world.namespace} ${host.metadata.name} winfleet\\.io/rejoin=`,
      ),
    );
    assert.equal((await core.readNode({ name: victimNode })).metadata?.uid, before.metadata?.uid);

    await annotateHost(world, host.metadata.name, { [rejoinAnnotation]: 'true' });
    const back = await waitFor(
      async () => {
        const h = await readHost(world, host.metadata.name);
        return h && hostReady(h) && h.metadata.annotations?.[rejoinAnnotation] === undefined
          ? h
          : undefined;
      },
      { description: 'the rebuilt host Ready again, the annotation used', timeoutMs: 120_000 },
    );
    const node = await core.readNode({ name: victimNode });
    assert.notEqual(node.metadata?.uid, before.metadata?.uid, 'a new Node');
    assert.equal(node.metadata?.annotations?.[hostAnnotation], hostIdentity(back));
  });
});
