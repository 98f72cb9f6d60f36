/**
 * The rollout survives its operator being killed (issue 12): during a pool's rollout of a new
 * payload with a reboot, the operator (a separate process) is SIGKILLed ten times at moments
 * drawn from a printed seed and started again. The rollout converges; never more than
 * maxUnavailable hosts are down; no node is left cordoned; every host reboots exactly once
 * (the agent's reboot token, recorded before the reboot is asked for, is never asked twice).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import fc from 'fast-check';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { restartableOperator } from '../../../sim/testkit/operator-process.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import {
  createPool,
  labelHosts,
  poolCondition,
  readPool,
  sampleRollout,
} from '../../../sim/testkit/pools.ts';
import { writeOperatorConfig } from '../../../sim/testkit/test-operator.ts';
import { testSeed } from '../../../sim/testkit/test-seed.ts';
import {
  createWindowsHosts,
  listWindowsHosts,
  waitForReadyHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { installCrds } from '../../api/install-crds.ts';
import { servicesVersionAnnotation } from '../../api/node-annotations.ts';
import { waitFor } from '../../kube/wait-for.ts';

const hostCount = 4;
const maxUnavailable = 2;

test('SIGKILL the operator 10 times during a rollout: it converges, never more than maxUnavailable down, nothing left cordoned, one reboot per host', async (t) => {
  const seed = testSeed(t);
  const world = await joinWorld(t, {
    releases: ['2022', '2019', '2025', '2022'],
    startOperator: false,
    machine: { timings: { rebootDowntimeMs: 500, rebootDelayMs: 200 } },
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await writeOperatorConfig(kc, world.namespace, {
    hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 },
  });
  const operator = restartableOperator({
    kubeconfig: world.cluster.kubeconfigPath,
    namespace: world.namespace,
    payloadDir: world.payloadDir,
    logDir: world.cluster.dir,
  });
  const start = () => operator.start();
  t.after(() => operator.kill());
  await installCrds(kc);
  start();
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const joined = await waitForReadyHosts(kc, world.namespace, hostCount);
  const nodeNames = joined.map((h) => h.status!.nodeName!);
  await labelHosts(kc, world.namespace, { pool: 'app' });
  await createPool(kc, world.namespace, 'app', {
    selector: { matchLabels: { pool: 'app' } },
    maxUnavailable,
    readyTimeout: '5m',
  });
  await waitFor(
    async () => (await readPool(kc, world.namespace, 'app')).status?.readyHosts === hostCount,
    { description: 'the pool counting its hosts' },
  );

  // Boots counted by the machines themselves: a second reboot of one host cannot hide.
  const boots = new Map<string, number>();
  for (const host of world.fleet.hosts) {
    boots.set(host.name, 0);
    host.machine.onBoot(() => boots.set(host.name, boots.get(host.name)! + 1));
  }
  const sampler = sampleRollout(kc, { nodeNames: () => nodeNames });
  // One change per host: a new payload and a reboot together (one cordon, one reboot).
  const next = await writeStandInPayload(world.payloadDir, {
    kubernetesVersion: 'v1.36.6',
    version: '1.36.6-wf.1',
  });
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await custom.patchNamespacedCustomObject(
    {
      group: 'winfleet.io',
      version: 'v1alpha1',
      namespace: world.namespace,
      plural: 'windowsnodepools',
      name: 'app',
      body: { spec: { rebootRequestedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z') } },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
  const delays = fc.sample(fc.integer({ min: 300, max: 2999 }), { seed, numRuns: 10 });
  t.diagnostic(`kill delays (ms): ${delays.join(', ')}`);
  // How many hosts were in a change at each kill: the kills must land inside the rollout.
  const inChangeAtKill: number[] = [];
  for (const delay of delays) {
    await new Promise((r) => setTimeout(r, delay));
    inChangeAtKill.push(
      (await listWindowsHosts(kc, world.namespace)).filter((h) => h.status?.rollout?.current)
        .length,
    );
    await operator.kill();
    start();
  }
  try {
    await waitFor(
      async () => {
        const nodes = (await core.listNode()).items.filter((n) =>
          nodeNames.includes(n.metadata!.name!),
        );
        const hosts = await listWindowsHosts(kc, world.namespace);
        return nodes.every(
          (n) =>
            n.metadata?.annotations?.[servicesVersionAnnotation] === next.version &&
            !n.spec?.unschedulable,
        ) &&
          hosts.every((h) => !h.status?.rollout?.current && h.status?.rollout?.lastRebootAt) &&
          [...boots.values()].every((b) => b >= 1)
          ? nodes
          : undefined;
      },
      { description: 'every host upgraded, rebooted and uncordoned', timeoutMs: 240_000 },
    );
  } catch (error) {
    for (const h of await listWindowsHosts(kc, world.namespace))
      t.diagnostic(`${h.metadata.name}: ${JSON.stringify(h.status?.rollout ?? {})}`);
    t.diagnostic(`operator run ${operator.runs()}, last lines:\n${await operator.lastLog(30)}`);
    throw error;
  } finally {
    await sampler.stop();
  }
  t.diagnostic(`hosts in a change at each kill: ${inChangeAtKill.join(', ')}`);
  assert.ok(
    inChangeAtKill.filter((n) => n > 0).length >= 5,
    `at least 5 of the 10 kills hit a rollout in flight: ${inChangeAtKill.join(', ')}`,
  );
  // Still one reboot each a while later: nothing asks again.
  await new Promise((r) => setTimeout(r, 5000));
  const worst = Math.max(...sampler.samples.map((s) => s.unavailable.length));
  assert.ok(worst <= maxUnavailable, `at most ${maxUnavailable} down at once; saw ${worst}`);
  assert.deepEqual(
    [...boots.entries()].filter(([, n]) => n !== 1),
    [],
    'every host rebooted exactly once',
  );
  const nodes = (await core.listNode()).items;
  assert.deepEqual(
    nodes.filter((n) => n.spec?.unschedulable).map((n) => n.metadata?.name),
    [],
    'no node left cordoned',
  );
  const pool = await readPool(kc, world.namespace, 'app');
  assert.equal(poolCondition(pool, 'Progressing')?.reason, 'RolloutComplete');
  assert.equal(pool.status?.updatedHosts, hostCount);
  t.diagnostic(
    `operator runs: ${operator.runs()}; samples: ${sampler.samples.length}; worst down: ${worst}`,
  );
});
