/**
 * One node must not freeze or monopolise its pool (issue 33, item 5; security review 3), with a
 * real control plane and simulated hosts, from the attacker's side (a compromised node writes
 * its own Windows Update report and its own Node conditions):
 * - a host first by name whose change always fails (a Security update that never installs) is
 *   set aside, and the other hosts of the pool are patched;
 * - a host whose Windows reports a reboot pending after every reboot is rebooted once for it,
 *   then set aside, and the others are patched before it goes again;
 * - a node faking unhealthy conditions in a pool of 4 (maxUnhealthy 40%: 1 host) does not stop
 *   the repair of a host the control plane really lost.
 * On the code before the fix each fails: the pool stops at the first host, restarts it after
 * every change, or holds every repair (TooManyUnhealthy).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { sampleCatalog } from '../../../sim/hosts/windows-update.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import {
  createPool,
  labelHosts,
  poolCondition,
  readPool,
  sampleRollout,
} from '../../../sim/testkit/pools.ts';
import {
  createWindowsHosts,
  readWindowsHost,
  waitForReadyHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { agentServiceName } from '../../agent/converge.ts';
import { ConditionReason, EventReason } from '../../api/reasons.ts';
import { waitFor } from '../../kube/wait-for.ts';

type World = Awaited<ReturnType<typeof joinWorld>>;
type Sim = World['fleet']['hosts'][number];

/** The OS revision each host has once sampleCatalog(patched) is installed (fixed at first use). */
const revisions = new Map<Sim, { ubr: number; kernel: string }>();
function patchedRevision(sim: Sim): { ubr: number; kernel: string } {
  const known = revisions.get(sim);
  if (known) return known;
  const v = sim.machine.osVersion;
  const ubr = v.ubr + 118;
  const revision = { ubr, kernel: `${v.major}.${v.minor}.${v.build}.${ubr}` };
  revisions.set(sim, revision);
  return revision;
}

/** The hosts sorted by name, as the old planner took them. */
function byName(world: World): Sim[] {
  return [...world.fleet.hosts].sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** Joins the fleet into a pool "web" with maxUnavailable 1 and the Security patch policy. */
async function patchedPool(world: World): Promise<Map<string, string>> {
  const { kc, namespace } = world;
  await createWindowsHosts(kc, namespace, world.fleet.hosts);
  const joined = await waitForReadyHosts(kc, namespace, world.fleet.hosts.length);
  await labelHosts(kc, namespace, { pool: 'web' });
  await createPool(kc, namespace, 'web', {
    selector: { matchLabels: { pool: 'web' } },
    maxUnavailable: 1,
    drainTimeout: '1m',
    readyTimeout: '20s',
    patches: { policy: 'Security' },
  });
  return new Map(joined.map((h) => [h.metadata.name, h.status!.nodeName!]));
}

/** Waits until each of `hosts` runs its patched revision, uncordoned. */
async function waitPatched(world: World, nodeOf: Map<string, string>, hosts: Sim[]) {
  const core = world.kc.makeApiClient(k8s.CoreV1Api);
  await waitFor(
    async () => {
      const nodes = await Promise.all(
        hosts.map((h) => core.readNode({ name: nodeOf.get(h.name.toLowerCase())! })),
      );
      return nodes.every(
        (n, i) =>
          n.status?.nodeInfo?.kernelVersion === patchedRevision(hosts[i]!).kernel &&
          !n.spec?.unschedulable,
      );
    },
    {
      description: `${hosts.map((h) => h.name).join(', ')} patched and uncordoned`,
      timeoutMs: 240_000,
    },
  );
}

async function hostEvents(world: World, name: string, reason: string) {
  const core = world.kc.makeApiClient(k8s.CoreV1Api);
  return (
    await core.listNamespacedEvent({
      namespace: world.namespace,
      fieldSelector: `involvedObject.name=${name},reason=${reason}`,
    })
  ).items;
}

test('a host first by name whose change always fails is set aside; the rest of the pool is patched', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022', '2022', '2022'],
    names: ['A-FAILS', 'B-WEB', 'C-WEB'],
    machine: { timings: { rebootDowntimeMs: 500, rebootDelayMs: 200 } },
  });
  const [bad, ...good] = byName(world) as [Sim, ...Sim[]];
  // The compromised (or broken) host: its Security update never installs.
  bad.machine.windowsUpdate.publish({
    kb: 'KB5040437',
    title: '2024-07 Cumulative Update',
    categories: ['Security Updates'],
    rebootRequired: true,
    failsWith: '0x80240022',
  });
  for (const sim of good)
    sim.machine.windowsUpdate.publish(...sampleCatalog(patchedRevision(sim).ubr));
  const nodeOf = await patchedPool(world);
  const badName = bad.name.toLowerCase();
  const sampler = sampleRollout(world.kc, { nodeNames: () => [...nodeOf.values()] });
  try {
    await waitPatched(world, nodeOf, good);
  } finally {
    await sampler.stop();
  }
  const worst = Math.max(...sampler.samples.map((s) => s.unavailable.length));
  assert.ok(worst <= 1, `one host down at a time; saw ${worst}`);
  const host = await readWindowsHost(world.kc, world.namespace, badName);
  const aside = host.status?.rollout?.setAside;
  assert.equal(aside?.cause, 'ChangeFailed');
  assert.match(aside!.message, /did not apply Security updates within spec\.readyTimeout 20s/);
  assert.match(aside!.message, /winfleet\.io\/retry-rollout=/);
  assert.equal(host.status?.rollout?.current, undefined, 'its change ended');
  const core = world.kc.makeApiClient(k8s.CoreV1Api);
  const node = await core.readNode({ name: nodeOf.get(badName)! });
  assert.notEqual(node.spec?.unschedulable, true, 'its node was uncordoned');
  assert.ok((await hostEvents(world, badName, EventReason.HostSetAside)).length >= 1);
  const pool = await waitFor(
    async () => {
      const p = await readPool(world.kc, world.namespace, 'web');
      return poolCondition(p, 'Degraded')?.reason === ConditionReason.HostSetAside ? p : undefined;
    },
    { description: 'the pool Degraded HostSetAside' },
  );
  assert.match(poolCondition(pool, 'Degraded')!.message, new RegExp(`/${badName} is set aside`));
  assert.equal(poolCondition(pool, 'Progressing')?.reason, ConditionReason.RolloutComplete);
  await waitFor(
    async () => {
      const h = await readWindowsHost(world.kc, world.namespace, badName);
      return h.status?.conditions?.find((c) => c.type === 'Degraded')?.reason ===
        ConditionReason.HostSetAside
        ? h
        : undefined;
    },
    { description: `${badName} Degraded HostSetAside` },
  );
});

test('a host whose Windows reports a reboot pending after every reboot is rebooted once for it, then set aside; the rest of the pool is patched', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022', '2022', '2022'],
    names: ['A-PENDING', 'B-WEB', 'C-WEB'],
    machine: { timings: { rebootDowntimeMs: 500, rebootDelayMs: 200 } },
  });
  const [liar, ...others] = byName(world) as [Sim, ...Sim[]];
  for (const sim of world.fleet.hosts)
    sim.machine.windowsUpdate.publish(...sampleCatalog(patchedRevision(sim).ubr));
  // After every boot, Windows on the liar says a reboot is pending again (what a compromised
  // node writes in its report; here the real agent reports the registry's key).
  let liarBoots = 0;
  liar.machine.onBoot(() => {
    liarBoots++;
    liar.machine.windowsUpdate.registry.componentBasedServicingRebootPending = true;
  });
  const nodeOf = await patchedPool(world);
  const liarName = liar.name.toLowerCase();
  await waitPatched(world, nodeOf, others);
  const host = await waitFor(
    async () => {
      const h = await readWindowsHost(world.kc, world.namespace, liarName);
      return h.status?.rollout?.setAside ? h : undefined;
    },
    { description: `${liarName} set aside`, timeoutMs: 120_000 },
  );
  assert.equal(host.status?.rollout?.setAside?.cause, 'RebootPendingPersists');
  assert.match(host.status!.rollout!.setAside!.message, /still reports a reboot pending/);
  assert.equal(liarBoots, 2, 'rebooted for its patches, then once for the pending reboot');
  assert.ok((await hostEvents(world, liarName, EventReason.HostSetAside)).length >= 1);
  // The pass records the host's set-aside first and writes the pool's status last: wait for it.
  await waitFor(
    async () =>
      poolCondition(await readPool(world.kc, world.namespace, 'web'), 'Degraded')?.reason ===
      ConditionReason.HostSetAside,
    { description: 'the pool Degraded with reason HostSetAside', timeoutMs: 30_000 },
  );
});

test('a node faking unhealthy conditions in a pool of 4 does not stop the repair of a host the control plane lost', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022', '2022', '2022', '2022'],
    names: ['A-LIAR', 'B-LOST', 'C-WEB', 'D-WEB'],
    // The Node controller marks a silent host's Node Unknown after this grace period.
    cluster: { scale: { nodeMonitorGracePeriodSeconds: 20 } },
  });
  const { kc, namespace } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const [liar, lost] = byName(world) as [Sim, Sim];
  await createWindowsHosts(kc, namespace, world.fleet.hosts);
  const joined = await waitForReadyHosts(kc, namespace, 4);
  const nodeOf = new Map(joined.map((h) => [h.metadata.name, h.status!.nodeName!]));
  await labelHosts(kc, namespace, { pool: 'p' });
  const conditions = [
    'KubeletUnhealthy',
    'ContainerRuntimeUnhealthy',
    'KubeProxyUnhealthy',
    'HNSNetworkMissing',
    'ClockSkew',
  ];
  await createPool(kc, namespace, 'p', {
    selector: { matchLabels: { pool: 'p' } },
    maxUnavailable: 1,
    health: {
      unhealthyConditions: [
        { type: 'Ready', status: 'Unknown', timeout: '5s' },
        ...conditions.map((type) => ({ type, status: 'True' as const, timeout: '5s' })),
      ],
      // The default, 40%: 1 host of 4.
      maxUnhealthy: '40%',
      remediation: {
        enabled: true,
        restartServiceTimeout: '10m',
        rebootstrapTimeout: '10m',
        rebootTimeout: '10m',
      },
    },
  });
  await waitFor(async () => (await readPool(kc, namespace, 'p')).status?.readyHosts === 4, {
    description: 'the pool counting its 4 Ready hosts',
  });
  // The compromised node: its agent stopped, it writes every condition on its own Node (its
  // credentials may), as it likes.
  const liarName = liar.name.toLowerCase();
  await liar.machine.scm.stop(agentServiceName);
  const since = new Date(Date.now() - 600_000);
  await core.patchNodeStatus(
    {
      name: nodeOf.get(liarName)!,
      body: {
        status: {
          conditions: conditions.map((type) => ({
            type,
            status: 'True',
            reason: 'Faked',
            message: 'faked by the node',
            lastHeartbeatTime: since,
            lastTransitionTime: since,
          })),
        },
      },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
  );
  await waitFor(
    async () => (await readWindowsHost(kc, namespace, liarName)).status?.remediation?.current,
    { description: `${liarName} found unhealthy (its ladder started)`, timeoutMs: 60_000 },
  );
  // A host the control plane really loses: its Node goes Unknown.
  const lostName = lost.name.toLowerCase();
  await lost.faults.setUnreachable(true);
  const repaired = await waitFor(
    async () => {
      const h = await readWindowsHost(kc, namespace, lostName);
      return h.status?.remediation?.current ? h : undefined;
    },
    { description: `${lostName}'s repair started`, timeoutMs: 150_000 },
  );
  assert.equal(repaired.status!.remediation!.current!.problem.type, 'Ready');
  assert.equal(repaired.status!.remediation!.current!.problem.status, 'Unknown');
  const pool = await readPool(kc, namespace, 'p');
  assert.notEqual(poolCondition(pool, 'Degraded')?.reason, ConditionReason.TooManyUnhealthy);
  const held = await hostEvents(world, lostName, EventReason.HostUnhealthy);
  assert.ok(held.length >= 1, 'a HostUnhealthy Event on the lost host');
  await lost.faults.setUnreachable(false);
});
