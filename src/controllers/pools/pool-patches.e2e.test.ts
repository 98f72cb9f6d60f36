/**
 * Security patches through a pool (issue 12), with a real control plane and simulated hosts
 * carrying a Windows Update catalog: the agents report what Windows Update offers; outside
 * the pool's maintenance window nothing is installed or rebooted; inside it each host in turn
 * is cordoned, drained, gets the Security and Critical updates (not the others), reboots once,
 * and its Node shows the new OS revision. The operator's rollout clock is moved by the test
 * (OperatorOptions.rolloutClock); the hosts' clocks are real.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { sampleCatalog } from '../../../sim/hosts/windows-update.ts';
import { controllerPass } from '../../../sim/testkit/controller-pass.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import {
  createPool,
  labelHosts,
  patchPoolSpec,
  poolCondition,
  readPool,
  sampleRollout,
} from '../../../sim/testkit/pools.ts';
import {
  createWindowsHosts,
  listWindowsHosts,
  waitForReadyHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { waitFor } from '../../kube/wait-for.ts';

/** Wednesday 2025-06-04 12:00 UTC: outside a Saturday-night window. */
const outside = Date.parse('2025-06-04T12:00:00Z');
/** Saturday 2025-06-07 02:00 UTC: inside it. */
const inside = Date.parse('2025-06-07T02:00:00Z');

test('Security patches roll through a pool only inside its maintenance window, one reboot per host', async (t) => {
  let offset = outside - Date.now();
  const world = await joinWorld(t, {
    releases: ['2022', '2019', '2025'],
    machine: { timings: { rebootDowntimeMs: 500, rebootDelayMs: 200 } },
    rolloutClock: () => new Date(Date.now() + offset),
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const boots = new Map<string, number>();
  const expected = new Map<string, string>();
  for (const sim of world.fleet.hosts) {
    const v = sim.machine.osVersion;
    const patched = v.ubr + 118;
    expected.set(sim.name.toLowerCase(), `${v.major}.${v.minor}.${v.build}.${patched}`);
    sim.machine.windowsUpdate.publish(...sampleCatalog(patched));
    boots.set(sim.name.toLowerCase(), 0);
    sim.machine.onBoot(() =>
      boots.set(sim.name.toLowerCase(), boots.get(sim.name.toLowerCase())! + 1),
    );
  }
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const joined = await waitForReadyHosts(kc, world.namespace, 3);
  const nodeNames = joined.map((h) => h.status!.nodeName!);
  await labelHosts(kc, world.namespace, { pool: 'patched' });
  await createPool(kc, world.namespace, 'patched', {
    selector: { matchLabels: { pool: 'patched' } },
    maxUnavailable: 1,
    patches: { policy: 'Security' },
    maintenanceWindow: { days: ['Sat'], start: '01:00', end: '05:00', timeZone: 'UTC' },
  });

  await t.test(
    'the agents report what Windows Update offers, in the WindowsHost status',
    async () => {
      const hosts = await waitFor(
        async () => {
          const list = await listWindowsHosts(kc, world.namespace);
          return list.every((h) => h.status?.windowsUpdates?.available?.length === 3)
            ? list
            : undefined;
        },
        { description: 'every host reporting 3 available updates', timeoutMs: 60_000 },
      );
      for (const h of hosts) {
        assert.deepEqual(h.status?.windowsUpdates?.available, [
          'KB5040437 (Security Updates)',
          'KB5041160 (Critical Updates)',
          'KB890830 (Update Rollups)',
        ]);
        assert.equal(h.status?.windowsUpdates?.rebootPending, false);
      }
    },
  );

  await t.test('outside the window nothing is installed, cordoned or rebooted', async () => {
    const waiting = await waitFor(
      async () => {
        const c = poolCondition(await readPool(kc, world.namespace, 'patched'), 'Progressing');
        return c?.reason === 'WaitingForWindow' ? c : undefined;
      },
      { description: 'the pool WaitingForWindow', timeoutMs: 30_000 },
    );
    assert.match(waiting.message, /2025-06-07T01:00:00/);
    const sampler = sampleRollout(kc, { nodeNames: () => nodeNames });
    // What it must not do it would have started by now: a pass of the pool, then of each host,
    // then of the pool again, after the wait was recorded.
    await controllerPass(world.operator!, 'windowsnodepools', `${world.namespace}/patched`);
    for (const h of await listWindowsHosts(kc, world.namespace))
      await controllerPass(
        world.operator!,
        'windowshosts',
        `${world.namespace}/${h.metadata.name}`,
      );
    await controllerPass(world.operator!, 'windowsnodepools', `${world.namespace}/patched`);
    await sampler.stop();
    assert.ok(
      sampler.samples.every((s) => s.cordoned.length === 0),
      'nothing cordoned',
    );
    assert.deepEqual([...boots.values()], [0, 0, 0], 'no host rebooted');
    for (const h of await listWindowsHosts(kc, world.namespace)) {
      assert.deepEqual(
        h.status?.windowsUpdates?.installed ?? [],
        [],
        `${h.metadata.name}: nothing installed`,
      );
      assert.equal(h.status?.rollout?.current, undefined);
    }
  });

  await t.test(
    'inside the window: Security and Critical updates, one reboot each, the new revision',
    async () => {
      offset = inside - Date.now();
      // A spec edit wakes the controller at once (otherwise it looks again when the window opens
      // by its clock, which the test just moved).
      await patchPoolSpec(kc, world.namespace, 'patched', { drainTimeout: '9m' });
      const sampler = sampleRollout(kc, { nodeNames: () => nodeNames });
      try {
        await waitFor(
          async () => {
            const nodes = (await core.listNode()).items.filter((n) =>
              nodeNames.includes(n.metadata!.name!),
            );
            const hosts = await listWindowsHosts(kc, world.namespace);
            return nodes.every((n) => {
              const host = hosts.find((h) => h.status?.nodeName === n.metadata!.name)!;
              return (
                n.status?.nodeInfo?.kernelVersion === expected.get(host.metadata.name) &&
                !n.spec?.unschedulable
              );
            }) && hosts.every((h) => !h.status?.rollout?.current)
              ? nodes
              : undefined;
          },
          { description: 'every Node on its patched revision, uncordoned', timeoutMs: 180_000 },
        );
      } finally {
        await sampler.stop();
      }
      const worst = Math.max(...sampler.samples.map((s) => s.unavailable.length));
      assert.ok(worst <= 1, `one host down at a time; saw ${worst}`);
      assert.deepEqual([...boots.values()], [1, 1, 1], 'each host rebooted exactly once');
      const hosts = await waitFor(
        async () => {
          const list = await listWindowsHosts(kc, world.namespace);
          return list.every((h) => h.status?.windowsUpdates?.available?.length === 1)
            ? list
            : undefined;
        },
        { description: 'the reports after the reboots', timeoutMs: 60_000 },
      );
      for (const h of hosts) {
        assert.deepEqual(
          [...(h.status?.windowsUpdates?.installed ?? [])].sort(),
          ['KB5040437', 'KB5041160'],
          `${h.metadata.name}: the Security and Critical updates`,
        );
        assert.deepEqual(h.status?.windowsUpdates?.available, ['KB890830 (Update Rollups)']);
        assert.equal(h.status?.windowsUpdates?.rebootPending, false);
      }
      const pool = await readPool(kc, world.namespace, 'patched');
      assert.equal(poolCondition(pool, 'Progressing')?.reason, 'RolloutComplete');
      assert.equal(pool.status?.updatedHosts, 3);
    },
  );
});
