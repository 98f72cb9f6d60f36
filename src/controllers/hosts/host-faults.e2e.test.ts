/**
 * Hosts that cannot be joined yet — SSH refused, a full disk, a slow link — are reported with
 * the reason and the fix, and join by themselves once the problem is gone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { waitFor } from '../../kube/wait-for.ts';

test('refused SSH and a full disk are reported, and the hosts join once they are fixed', async (t) => {
  const world = await joinWorld(t, { releases: ['2022', '2019', '2025'] });
  const [refusing, full, slow] = world.fleet.hosts;
  await refusing!.faults.setRefuseConnections(true);
  full!.faults.diskFull = true;
  slow!.faults.slowLinkMs = 20;
  await createWindowsHosts(world.kc, world.namespace, world.fleet.hosts);
  const byAddress = async (address: string): Promise<WindowsHost | undefined> =>
    (await listWindowsHosts(world.kc, world.namespace)).find((h) => h.spec.address === address);
  const condition = (host: WindowsHost | undefined, type: string) =>
    host?.status?.conditions?.find((c) => c.type === type);

  const unreachable = await waitFor(
    async () => {
      const c = condition(await byAddress(refusing!.address), ConditionType.Reachable);
      return c?.status === 'False' ? c : undefined;
    },
    { description: 'Reachable=False for the refusing host', timeoutMs: 30_000 },
  );
  assert.equal(unreachable.reason, ConditionReason.Unreachable);
  assert.match(
    unreachable.message,
    new RegExp(
      `Cannot reach ${refusing!.address.replaceAll('.', '\\.')}:${refusing!.port} over SSH`,
    ),
  );

  const diskFull = await waitFor(
    async () => {
      const c = condition(await byAddress(full!.address), ConditionType.Degraded);
      return c?.reason === ConditionReason.DiskFull ? c : undefined;
    },
    { description: 'Degraded=DiskFull for the full host', timeoutMs: 30_000 },
  );
  assert.match(diskFull.message, /Only 0 bytes are free on C: .* free some space/);

  // The slow link only slows the join down.
  await waitFor(
    async () => {
      const h = await byAddress(slow!.address);
      return h && hostReady(h);
    },
    { description: 'the host behind a slow link Ready', timeoutMs: 60_000 },
  );

  await refusing!.faults.setRefuseConnections(false);
  full!.faults.diskFull = false;
  await waitFor(
    async () => {
      const list = await listWindowsHosts(world.kc, world.namespace);
      return list.length === 3 && list.every(hostReady);
    },
    { description: 'all three Ready once the faults are gone', timeoutMs: 90_000 },
  );
  const healed = await byAddress(full!.address);
  assert.equal(condition(healed, ConditionType.Degraded)?.status, 'False', 'Degraded clears');
});
