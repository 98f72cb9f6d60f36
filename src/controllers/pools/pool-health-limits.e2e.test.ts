/**
 * Remediation's safety limits end to end (issue 13), with a real control plane and simulated
 * hosts of one pool (maxUnavailable 1, maxUnhealthy 2):
 * - maxUnhealthy: 3 of 5 hosts go off the network at once; no ladder starts, the pool is
 *   Degraded naming maxUnhealthy; when one comes back by itself, the other two are repaired;
 * - never too much down: their repair reboots go through the rollout with a payload upgrade
 *   in progress, and at no moment are more hosts in a change than maxUnavailable;
 * - an unreachable host: RestartService, then Rebootstrap (SSH refused), then a reboot the
 *   host never does: RemediationFailed, the node left cordoned by remediation, Degraded; once
 *   it is back, it is uncordoned and the upgrade finishes;
 * - startup timeout: a host whose kubelet never registers is reported after
 *   nodeStartupTimeout and re-bootstrapped.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { controllerPass } from '../../../sim/testkit/controller-pass.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { samplesOf, scrapeMetrics } from '../../../sim/testkit/metrics-text.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import {
  createPool,
  labelHosts,
  patchPoolSpec,
  poolCondition,
  readPool,
} from '../../../sim/testkit/pools.ts';
import { TestClock } from '../../../sim/testkit/test-clock.ts';
import { writeOperatorConfig } from '../../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  listWindowsHosts,
  readWindowsHost,
  waitForReadyHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { cordonedByAnnotation, servicesVersionAnnotation } from '../../api/node-annotations.ts';
import { ConditionReason, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { waitFor } from '../../kube/wait-for.ts';

const poolHosts = 5;

/** The operator's clock: the last case moves it past nodeStartupTimeout instead of waiting. */
const clock = new TestClock();

test('remediation stops above maxUnhealthy, never takes more than maxUnavailable down, ends cordoned for a host it cannot reach, and reports a host that never starts', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022', '2019', '2022', '2025', '2022', '2022'],
    machine: { timings: { rebootDowntimeMs: 500, rebootDelayMs: 200 } },
    // The Node controller marks a silent host's Node Unknown after this grace period (its own
    // default is 50 s); twice the kubelets' lease renewal (10 s).
    cluster: { scale: { nodeMonitorGracePeriodSeconds: 20 } },
    rolloutClock: clock.now,
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await writeOperatorConfig(kc, world.namespace, {
    hosts: { agentCheckIntervalSeconds: 1 },
  });
  const fleet = world.fleet.hosts;
  const [a, b, c, late] = [fleet[0]!, fleet[1]!, fleet[2]!, fleet[5]!];
  await createWindowsHosts(kc, world.namespace, fleet.slice(0, poolHosts));
  const joined = await waitForReadyHosts(kc, world.namespace, poolHosts);
  const nodeOf = new Map(joined.map((h) => [h.metadata.name, h.status!.nodeName!]));
  await labelHosts(kc, world.namespace, { pool: 'p' });
  await createPool(kc, world.namespace, 'p', {
    selector: { matchLabels: { pool: 'p' } },
    maxUnavailable: 1,
    drainTimeout: '1m',
    readyTimeout: '20s',
    health: {
      unhealthyConditions: [
        { type: 'Ready', status: 'Unknown', timeout: '5s' },
        { type: 'Ready', status: 'False', timeout: '5s' },
      ],
      nodeStartupTimeout: '30s',
      maxUnhealthy: 2,
      // Off until the three hosts below are all due: the Node controller marks Nodes Unknown
      // up to a lease renewal (10 s) apart, so whatever the timeout, the first host is due
      // before the others and, as with a MachineHealthCheck, its ladder rightly starts.
      remediation: {
        enabled: false,
        restartServiceTimeout: '5s',
        rebootstrapTimeout: '30s',
        rebootTimeout: '30s',
      },
    },
  });
  await waitFor(
    async () => (await readPool(kc, world.namespace, 'p')).status?.readyHosts === poolHosts,
    { description: 'the pool counting its 5 Ready hosts' },
  );
  const poolKey = `${world.namespace}/p`;
  const hostName = (h: { name: string }) => h.name.toLowerCase();
  const read = (name: string) => readWindowsHost(kc, world.namespace, name);
  const nodeReady = async (name: string) => {
    const node = await core.readNode({ name: nodeOf.get(name)! });
    return node.status?.conditions?.find((x) => x.type === 'Ready')?.status === 'True';
  };

  const down = [a, b, c];
  const downNames = down.map(hostName);

  /** On a failure, what the hosts recorded (remediation, rollout, conditions) and the pool. */
  const explain = async <T>(what: Promise<T>): Promise<T> => {
    try {
      return await what;
    } catch (error) {
      const hosts = await listWindowsHosts(kc, world.namespace);
      const pool = await readPool(kc, world.namespace, 'p');
      const nodes = (await core.listNode()).items;
      (error as Error).message += `\n${JSON.stringify(
        {
          pool: pool.status,
          hosts: hosts.map((h) => ({
            name: h.metadata.name,
            remediation: h.status?.remediation,
            rollout: h.status?.rollout,
            lastError: h.status?.lastError,
            conditions: h.status?.conditions?.map((x) => `${x.type}=${x.status} ${x.reason}`),
          })),
          nodes: nodes.map((n) => ({
            name: n.metadata?.name,
            unschedulable: n.spec?.unschedulable,
            cordonedBy: n.metadata?.annotations?.[cordonedByAnnotation],
            conditions: n.status?.conditions?.map((x) => `${x.type}=${x.status}`),
          })),
        },
        null,
        1,
      )}`;
      throw error;
    }
  };

  await t.test(
    '3 of 5 unhealthy: no repair starts, the pool is Degraded naming maxUnhealthy',
    async () => {
      await Promise.all(down.map((h) => h.faults.setUnreachable(true)));
      // All three Nodes not Ready, then past their 5 s timeouts (the pool's own count of hosts
      // unhealthy past a timeout, on its /metrics, says 3), then remediation on: its first pass
      // finds three hosts due at once.
      await waitFor(
        async () =>
          (await Promise.all(downNames.map(nodeReady))).every((ready) => !ready) || undefined,
        { description: 'the three Nodes not Ready', timeoutMs: 150_000 },
      );
      await waitFor(
        async () => {
          const samples = await scrapeMetrics(world.operator!.status!.port);
          return samplesOf(samples, 'winfleet_pool_unhealthy_hosts').some(
            (m) => m.labels.pool === poolKey && m.value === 3,
          );
        },
        {
          description: 'the pool counting 3 hosts unhealthy past their timeout',
          timeoutMs: 60_000,
        },
      );
      await patchPoolSpec(kc, world.namespace, 'p', {
        health: { remediation: { enabled: true } },
      } as Parameters<typeof patchPoolSpec>[3]);
      const pool = await waitFor(
        async () => {
          const p = await readPool(kc, world.namespace, 'p');
          return poolCondition(p, 'Degraded')?.reason === ConditionReason.TooManyUnhealthy
            ? p
            : undefined;
        },
        { description: 'Degraded TooManyUnhealthy', timeoutMs: 150_000 },
      );
      const degraded = poolCondition(pool, 'Degraded')!;
      assert.match(degraded.message, /^3 of 5 hosts are unhealthy \(/);
      for (const name of downNames) assert.ok(degraded.message.includes(name), degraded.message);
      assert.match(degraded.message, /spec\.health\.maxUnhealthy 2 \(2 of 5\)/);
      // A pass of the pool after the refusal was recorded: had it started a ladder, the ladder
      // would show now.
      await controllerPass(world.operator!, 'windowsnodepools', poolKey);
      for (const name of downNames) {
        const host = await read(name);
        assert.equal(host.status?.remediation?.current, undefined, `${name}: no ladder while held`);
        assert.equal(host.status?.remediation?.lastActions, undefined, name);
      }
      const events = await core.listNamespacedEvent({
        namespace: world.namespace,
        fieldSelector: `involvedObject.kind=WindowsNodePool,reason=${EventReason.TooManyUnhealthy}`,
      });
      assert.ok(events.items.length >= 1, 'a TooManyUnhealthy Event on the pool');
    },
  );

  const [c0, c1] = [hostName(a), hostName(b)];
  const inChange = new Map<number, string[]>();
  let sampling = true;
  t.after(() => {
    sampling = false;
  });
  const sampler = (async () => {
    for (let i = 0; sampling && i < 5000; i++) {
      const hosts = await listWindowsHosts(kc, world.namespace).catch(() => []);
      inChange.set(
        Date.now(),
        hosts.filter((h) => h.status?.rollout?.current).map((h) => h.metadata.name),
      );
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  })();

  await t.test(
    'one comes back by itself: the other two are repaired, one change at a time, with an upgrade in progress',
    async () => {
      await c.faults.setUnreachable(false);
      await waitFor(() => nodeReady(hostName(c)), {
        description: `${hostName(c)} Ready again`,
        timeoutMs: 90_000,
      });
      // A payload upgrade at the same time: the repairs and the upgrade share maxUnavailable.
      const next = await writeStandInPayload(world.payloadDir, {
        kubernetesVersion: 'v1.36.6',
        version: '1.36.6-wf.1',
      });
      const failed = await explain(
        waitFor(
          async () => {
            const hosts = await Promise.all([c0, c1].map(read));
            return hosts.every((h) => h.status?.remediation?.failed) ? hosts : undefined;
          },
          { description: 'both unreachable hosts at RemediationFailed', timeoutMs: 300_000 },
        ),
      );
      for (const host of failed) {
        const rungs = (host.status!.remediation!.lastActions ?? []).map(
          (x) => `${x.rung}:${x.result}`,
        );
        assert.deepEqual(
          rungs,
          ['RestartService:TimedOut', 'Rebootstrap:Failed', 'Reboot:Failed'],
          host.metadata.name,
        );
        assert.match(host.status!.remediation!.failed!.message, /remediation failed/);
        // The cordon follows the failure, in the next pass.
        await waitFor(
          async () => {
            const node = await core.readNode({ name: nodeOf.get(host.metadata.name)! });
            return (
              node.spec?.unschedulable === true &&
              node.metadata?.annotations?.[cordonedByAnnotation] === 'remediation'
            );
          },
          { description: `${host.metadata.name} left cordoned by remediation`, timeoutMs: 30_000 },
        );
        const degraded = await waitFor(
          async () => {
            const h = await read(host.metadata.name);
            const cond = h.status?.conditions?.find((x) => x.type === 'Degraded');
            return cond?.reason === ConditionReason.RemediationFailed ? cond : undefined;
          },
          { description: `${host.metadata.name} Degraded RemediationFailed` },
        );
        assert.match(degraded.message, /repair the host by hand/);
      }
      const warnings = await core.listNamespacedEvent({
        namespace: world.namespace,
        fieldSelector: `reason=${EventReason.RemediationFailed}`,
      });
      assert.ok(warnings.items.length >= 2, 'a RemediationFailed Event per host');

      // Back by hand: uncordoned, healthy, and the upgrade finishes on all five.
      await Promise.all([a, b].map((h) => h.faults.setUnreachable(false)));
      await waitFor(
        async () => {
          const hosts = await Promise.all([c0, c1].map(read));
          if (hosts.some((h) => h.status?.remediation?.failed)) return false;
          const nodes = await Promise.all(
            [c0, c1].map((n) => core.readNode({ name: nodeOf.get(n)! })),
          );
          return nodes.every(
            (n) => n.metadata?.annotations?.[cordonedByAnnotation] !== 'remediation',
          );
        },
        {
          description: 'the two hosts recovered and no longer cordoned by remediation',
          timeoutMs: 120_000,
        },
      );
      await waitFor(
        async () => {
          const nodes = await Promise.all(
            [...nodeOf.values()].map((name) => core.readNode({ name })),
          );
          return nodes.every(
            (n) =>
              n.metadata?.annotations?.[servicesVersionAnnotation] === next.version &&
              !n.spec?.unschedulable,
          );
        },
        { description: 'the upgrade finished on all 5 hosts', timeoutMs: 300_000 },
      );
      sampling = false;
      await sampler;
      const worst = Math.max(...[...inChange.values()].map((names) => names.length));
      assert.ok(inChange.size > 20, `sampled ${inChange.size} times`);
      assert.ok(
        worst <= 1,
        `at most maxUnavailable (1) hosts in a change at once; saw ${JSON.stringify([...inChange.values()].find((n) => n.length > 1))}`,
      );
    },
  );

  await t.test(
    'a host whose kubelet never registers is reported after nodeStartupTimeout and re-bootstrapped',
    async () => {
      // Its kubelet stops on its own at each start, before its first instruction, so it
      // never registers a Node (held, rather than stopped once started: a start that won
      // the race would register).
      const releaseKubelet = late.machine.holdService('kubelet');
      const [created] = await createWindowsHosts(kc, world.namespace, [late]);
      const name = (created as WindowsHost).metadata.name;
      await labelHosts(kc, world.namespace, { pool: 'p' });
      // Bootstrapped, its kubelet held: not reported before nodeStartupTimeout (a pass of the
      // pool over it starts nothing) ...
      await waitFor(async () => (await read(name)).status?.bootstrappedAt, {
        description: `${name} bootstrapped`,
        timeoutMs: 60_000,
      });
      await controllerPass(world.operator!, 'windowsnodepools', poolKey);
      assert.equal((await read(name)).status?.remediation?.current, undefined, 'not yet due');
      // ... and reported once the operator's clock is past it.
      clock.advance(30_000);
      const started = await explain(
        waitFor(
          async () => {
            const h = await read(name);
            return h.status?.remediation?.current ? h : undefined;
          },
          { description: `${name}'s ladder started for NodeStartup`, timeoutMs: 150_000 },
        ),
      );
      assert.equal(started.status!.remediation!.current!.problem.type, 'NodeStartup');
      assert.equal(started.status!.remediation!.current!.rung, 'Rebootstrap');
      // The pass records its Events after the status it wrote.
      await waitFor(
        async () => {
          const unhealthy = await core.listNamespacedEvent({
            namespace: world.namespace,
            fieldSelector: `involvedObject.name=${name},reason=${EventReason.HostUnhealthy}`,
          });
          return unhealthy.items.length >= 1;
        },
        { description: 'a HostUnhealthy Event', timeoutMs: 30_000 },
      );
      await waitFor(
        async () => {
          const list = await core.listNamespacedEvent({
            namespace: world.namespace,
            fieldSelector: `involvedObject.name=${name},reason=${EventReason.RemediationRebootstrap}`,
          });
          return list.items.length >= 1;
        },
        { description: 'the re-bootstrap the ladder asked for', timeoutMs: 60_000 },
      );
      releaseKubelet();
      await waitFor(
        async () => {
          const h = await read(name);
          return (
            h.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') &&
            !h.status?.remediation?.current
          );
        },
        { description: `${name} Ready, its ladder ended`, timeoutMs: 150_000 },
      );
      const last = (await read(name)).status?.remediation?.lastActions?.at(-1);
      assert.equal(last?.result, 'Succeeded');
    },
  );
});
