/**
 * A joined host's life: a reboot (and a reboot in the middle of bootstrap), a killed service,
 * a changed host key, a dropped connection, a full disk, and removal — all against simulated
 * hosts over real SSH, the real agent code and the real control plane.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import type { SimulatedHost } from '../../../sim/hosts/fleet.ts';
import { type JoinWorld, joinWorld } from '../../../sim/testkit/join-fixture.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { ConditionReason, ConditionType, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { waitFor } from '../../kube/wait-for.ts';

async function hostNamed(world: JoinWorld, sim: SimulatedHost): Promise<WindowsHost | undefined> {
  return (await listWindowsHosts(world.kc, world.namespace)).find(
    (h) => h.spec.address === sim.address,
  );
}

async function readyHost(
  world: JoinWorld,
  sim: SimulatedHost,
  // A join through a reboot or a dropped connection retries with backoff; on a busy CI
  // machine that took more than 90 s twice (the hosts did join; the wait gave up first).
  timeoutMs = 240_000,
): Promise<WindowsHost> {
  try {
    return await waitFor(
      async () => {
        const host = await hostNamed(world, sim);
        return host && hostReady(host) ? host : undefined;
      },
      { description: `${sim.name} Ready`, timeoutMs, intervalMs: 300 },
    );
  } catch (error) {
    // Say where the host stood, so that a timeout in CI can be read without the run's files.
    const host = await hostNamed(world, sim).catch(() => undefined);
    const conditions = (host?.status?.conditions ?? []).map(
      (c) => `${c.type}=${c.status} ${c.reason}: ${c.message}`,
    );
    throw new Error(
      `${(error as Error).message}; ${sim.name}'s WindowsHost conditions: ${conditions.join(' | ') || 'none'}`,
      { cause: error },
    );
  }
}

function condition(host: WindowsHost | undefined, type: string) {
  return host?.status?.conditions?.find((c) => c.type === type);
}

test('a joined host’s life, against simulated Windows hosts', async (t) => {
  const world = await joinWorld(t, { releases: ['2022', '2019', '2022', '2025'] });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const [rebooter, crasher, rekeyed, removed] = world.fleet.hosts as [
    SimulatedHost,
    SimulatedHost,
    SimulatedHost,
    SimulatedHost,
  ];
  const cleanBefore = await removed.machine.snapshot();

  // Faults during the join: a reboot in the middle of bootstrap (right after the kubelet is
  // started) and a connection dropped during the agent run; both hosts must still join.
  rebooter.faults.rebootWhen({ when: { serviceStarted: 'kubelet' }, downtimeMs: 500 });
  crasher.faults.dropConnection({ when: { agentCommand: 'bootstrap' }, afterMs: 5 });
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  for (const sim of world.fleet.hosts) await readyHost(world, sim);

  await t.test(
    'a simulated reboot brings the node back to Ready without the operator',
    async () => {
      await world.operator!.stop();
      world.operator = undefined;
      const name = (await hostNamed(world, rebooter))!.status!.nodeName!;
      const before = (await core.readNode({ name })).status?.nodeInfo?.bootID;
      await rebooter.faults.reboot({ downtimeMs: 300 });
      const node = await waitFor(
        async () => {
          const n = await core.readNode({ name });
          const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
          return n.status?.nodeInfo?.bootID !== before && ready ? n : undefined;
        },
        { description: 'the node Ready again with a new boot id', timeoutMs: 30_000 },
      );
      assert.notEqual(node.status?.nodeInfo?.bootID, before);
      const services = await rebooter.hostOS().queryService('kubelet');
      assert.equal(services?.state, 'running', 'the kubelet came back as an auto-start service');
      // The operator comes back for the rest of the tests.
      const { startTestOperator } = await import('../../../sim/testkit/test-operator.ts');
      world.operator = await startTestOperator(kc, {
        namespace: world.namespace,
        payloadDir: world.payloadDir,
        config: { hosts: { agentCheckIntervalSeconds: 1 } },
      });
    },
  );

  await t.test('a killed service is restarted by the agent', async () => {
    const os = crasher.hostOS();
    // Take the SCM's own recovery away from kube-proxy, so only the agent can bring it back.
    const installed = (await os.queryService('kube-proxy'))!;
    assert.equal(installed.state, 'running');
    const registration = crasher.machine.scm.config('kube-proxy')!;
    crasher.machine.scm.configure({
      ...registration,
      recovery: { restartDelaysMs: [], resetPeriodSeconds: 0 },
    });
    const pid = installed.pid;
    assert.ok(crasher.faults.crashService('kube-proxy'));
    const back = await waitFor(
      async () => {
        const s = await os.queryService('kube-proxy');
        return s?.state === 'running' && s.pid !== pid ? s : undefined;
      },
      { description: 'kube-proxy running again under a new pid', timeoutMs: 15_000 },
    );
    assert.notEqual(back.pid, pid);
  });

  await t.test('a changed host key makes the controller refuse and report it', async () => {
    const host = (await hostNamed(world, rekeyed))!;
    const pinned = host.status!.hostKeyFingerprint!;
    const fresh = rekeyed.faults.changeHostKey();
    assert.notEqual(fresh, pinned);
    // Removing the node makes the operator want to bootstrap it again, over SSH.
    await core.deleteNode({ name: host.status!.nodeName! });
    const refused = await waitFor(
      async () => {
        const h = await hostNamed(world, rekeyed);
        return condition(h, ConditionType.Degraded)?.reason === ConditionReason.HostKeyChanged
          ? h
          : undefined;
      },
      { description: 'Degraded HostKeyChanged', timeoutMs: 30_000 },
    );
    assert.equal(refused.status?.hostKeyFingerprint, pinned, 'the pinned key is kept');
    assert.match(
      condition(refused, ConditionType.Degraded)!.message,
      new RegExp(`${fresh.replaceAll('+', '\\+')}.*winfleet\\.io/trust-host-key`),
    );
    const events = await core.listNamespacedEvent({
      namespace: world.namespace,
      fieldSelector: `involvedObject.name=${refused.metadata.name},reason=${EventReason.HostKeyChanged}`,
    });
    assert.ok(events.items.length >= 1, 'an Event says so');
    assert.equal(
      (await core.listNode()).items.some((n) => n.metadata?.name === refused.status?.nodeName),
      false,
      'no node while refused',
    );
    // The administrator trusts the new key: the host joins again.
    const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    await objects.patch(
      {
        apiVersion: 'winfleet.io/v1alpha1',
        kind: 'WindowsHost',
        metadata: {
          name: refused.metadata.name,
          namespace: world.namespace,
          annotations: { 'winfleet.io/trust-host-key': fresh },
        },
      },
      undefined,
      undefined,
      'test',
      undefined,
      k8s.PatchStrategy.MergePatch,
    );
    const rejoined = await waitFor(
      async () => {
        const h = await hostNamed(world, rekeyed);
        return h && hostReady(h) && h.status?.hostKeyFingerprint === fresh ? h : undefined;
      },
      { description: 'the host Ready again with the new key pinned', timeoutMs: 60_000 },
    );
    assert.equal(
      rejoined.metadata.annotations?.['winfleet.io/trust-host-key'],
      undefined,
      'the trust annotation is consumed',
    );
  });

  await t.test('removing a WindowsHost deletes the node and leaves the host clean', async () => {
    const host = (await hostNamed(world, removed))!;
    const nodeName = host.status!.nodeName!;
    const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    await objects.delete(host);
    await waitFor(async () => (await hostNamed(world, removed)) === undefined, {
      description: 'the WindowsHost gone',
      timeoutMs: 60_000,
    });
    assert.equal(
      (await core.listNode()).items.some((n) => n.metadata?.name === nodeName),
      false,
      'the Node is deleted',
    );
    const after = await removed.machine.snapshot();
    assert.deepEqual(
      after,
      cleanBefore,
      'no services, files, environment or networks of ours remain',
    );
    // Still reachable over SSH, as before winfleet.
    assert.ok(removed.ssh, 'the SSH server is still up');
  });
});
