/**
 * Each lab fault with the operator running (issue 13), on a pool of two simulated hosts: the
 * condition (or Event) the agent reports, the rung of the ladder that repairs it, recorded in
 * the WindowsHost's status.remediation, and the Node Ready again. (src/agent/local-repair.e2e
 * runs the same faults against the agent alone; pool-health-limits.e2e the unreachable host.)
 *
 * - a service that stops and stays down: a ServiceRestarted Event, the agent starts it; no
 *   ladder (nothing held long enough to be unhealthy);
 * - the HNS network deleted and the clock skewed: the condition, then the ladder's first rung
 *   (RestartService, the agent's own repair: the network recreated, the clock resynced)
 *   succeeds;
 * - a crash loop: FrequentServiceRestart; the ladder skips RestartService (the agent stopped
 *   restarting it) and re-bootstraps the host over SSH, which rewrites the corrupted config:
 *   Rebootstrap succeeds. Never an endless restart: one rung, then healthy;
 * - a full disk: SystemDiskLow and its Event; not a condition the ladder repairs (a person
 *   frees space), so no rung runs.
 * Times are printed as diagnostics (measurements, not assertions).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { nodeConditions } from '../../../sim/testkit/node-conditions.ts';
import { createWindowsPodOn } from '../../../sim/testkit/nodes.ts';
import { createPool, labelHosts, readPool } from '../../../sim/testkit/pools.ts';
import { testNamespace } from '../../../sim/testkit/test-cluster.ts';
import { writeOperatorConfig } from '../../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  readWindowsHost,
  waitForReadyHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { nodeKubeConfig } from '../../agent/node-client.ts';
import { EventReason, NodeHealthEventReason } from '../../api/reasons.ts';
import { waitFor } from '../../kube/wait-for.ts';

test('each fault with the operator running: the condition, the rung that repairs it, Ready again', async (t) => {
  const world = await joinWorld(t, { releases: ['2022', '2022'] });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  // The test's own limit: a restart loop is over once the service ran 10 s without a restart
  // (the default is a minute), so the re-bootstrapped host is healthy again that much sooner.
  await writeOperatorConfig(kc, world.namespace, {
    hosts: { agentCheckIntervalSeconds: 1, agentHealth: { restartLoop: { stableSeconds: 10 } } },
  });
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const joined = await waitForReadyHosts(kc, world.namespace, 2);
  await labelHosts(kc, world.namespace, { pool: 'h' });
  await createPool(kc, world.namespace, 'h', {
    selector: { matchLabels: { pool: 'h' } },
    maxUnavailable: 1,
    health: {
      unhealthyConditions: [
        { type: 'Ready', status: 'False', timeout: '2m' },
        { type: 'Ready', status: 'Unknown', timeout: '2m' },
        { type: 'KubeletUnhealthy', status: 'True', timeout: '2m' },
        { type: 'FrequentServiceRestart', status: 'True', timeout: '0s' },
        { type: 'HNSNetworkMissing', status: 'True', timeout: '0s' },
        { type: 'ClockSkew', status: 'True', timeout: '0s' },
      ],
      maxUnhealthy: 1,
      remediation: { restartServiceTimeout: '30s', rebootstrapTimeout: '3m', rebootTimeout: '2m' },
    },
  });
  await waitFor(async () => (await readPool(kc, world.namespace, 'h')).status?.readyHosts === 2, {
    description: 'the pool counting its 2 Ready hosts',
  });
  const sim = world.fleet.hosts[0]!;
  const name = sim.name.toLowerCase();
  const nodeName = joined.find((h) => h.metadata.name === name)!.status!.nodeName!;
  const { condition, until, measured } = nodeConditions(core, nodeName, t);
  const actions = async () =>
    ((await readWindowsHost(kc, world.namespace, name)).status?.remediation?.lastActions ?? []).map(
      (a) => `${a.rung}:${a.result}`,
    );
  /** Waits for the ladder to record `count` actions and end; returns them. */
  const ladderEnds = async (count: number, what: string) =>
    waitFor(
      async () => {
        const h = await readWindowsHost(kc, world.namespace, name);
        const r = h.status?.remediation;
        return !r?.current && (r?.lastActions?.length ?? 0) >= count ? await actions() : undefined;
      },
      { description: what, timeoutMs: 240_000, intervalMs: 500 },
    );

  // A pod on the node, so its CNI network exists (the agent watches it from then on).
  const apps = await testNamespace(kc, 'faults');
  await createWindowsPodOn(core, apps, nodeName);
  await waitFor(
    async () => (await condition('HNSNetworkMissing'))?.message === 'HNS network winfleet exists',
    { description: 'the agent to see the HNS network', timeoutMs: 90_000, intervalMs: 500 },
  );

  await t.test('one host’s node credentials cannot mark another host unhealthy', async () => {
    // What the ladder believes is written by each host's agent with its own node credentials;
    // the Node authorizer and NodeRestriction confine those to its own Node.
    const other = joined.find((h) => h.metadata.name !== name)!;
    const asNode = (await nodeKubeConfig(sim.hostOS()))!.makeApiClient(k8s.CoreV1Api);
    const forged = {
      status: {
        conditions: [
          { type: 'KubeletUnhealthy', status: 'True', reason: 'HealthzFailed', message: 'forged' },
        ],
      },
    };
    const refused = await asNode
      .patchNodeStatus(
        { name: other.status!.nodeName!, body: forged },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
      )
      .then(
        () => 0,
        (error: { code?: number }) => error.code ?? -1,
      );
    assert.equal(refused, 403, 'another Node’s status is refused');
    const theirs = (await core.readNode({ name: other.status!.nodeName! })).status?.conditions;
    assert.notEqual(
      theirs?.find((c) => c.type === 'KubeletUnhealthy')?.message,
      'forged',
      'the other Node is unchanged',
    );
    // Its own Node it may write (that is how the agent reports).
    await asNode.patchNodeStatus(
      {
        name: nodeName,
        body: {
          status: {
            conditions: [
              {
                type: 'KubeletUnhealthy',
                status: 'False',
                reason: 'ServiceHealthy',
                message: 'ok',
              },
            ],
          },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
    );
  });

  await t.test('a service that stays down: an Event, the agent starts it, no ladder', async () => {
    const started = Date.now();
    assert.equal(sim.faults.crashService('kubelet', { stayDown: true }), true);
    const event = await waitFor(
      async () =>
        (
          await core.listNamespacedEvent({
            namespace: 'default',
            fieldSelector: `involvedObject.name=${nodeName},reason=${NodeHealthEventReason.ServiceRestarted}`,
          })
        ).items[0],
      { description: 'a ServiceRestarted Event', timeoutMs: 30_000, intervalMs: 200 },
    );
    measured('kubelet stopped → ServiceRestarted Event', (Date.now() - started) / 1000);
    assert.match(event.message!, /^kubelet ended and was started again/);
    assert.equal(sim.machine.scm.query('kubelet')?.state, 'running');
    assert.equal((await condition('Ready'))?.status, 'True');
    assert.deepEqual(await actions(), [], 'nothing held long enough for the ladder');
  });

  await t.test(
    'HNS network deleted: HNSNetworkMissing, rung RestartService (the agent recreates it) succeeds',
    async () => {
      assert.equal(sim.faults.deleteHnsNetwork(), true);
      const missing = await until('HNSNetworkMissing', 'True');
      measured('HNS network deleted → HNSNetworkMissing=True', missing.seconds);
      const back = await until('HNSNetworkMissing', 'False');
      measured('HNSNetworkMissing → False (recreated by the agent)', back.seconds);
      assert.deepEqual(await ladderEnds(1, 'the ladder ended'), ['RestartService:Succeeded']);
      assert.equal((await condition('Ready'))?.status, 'True');
    },
  );

  await t.test(
    'clock skewed: ClockSkew, rung RestartService (the agent resyncs it) succeeds',
    async () => {
      sim.faults.skewClock(10 * 60_000);
      const skewed = await until('ClockSkew', 'True');
      assert.match(skewed.c.message!, /ahead/);
      measured('clock 10 min ahead → ClockSkew=True', skewed.seconds);
      const synced = await until('ClockSkew', 'False');
      measured('ClockSkew → False (resynced by the agent)', synced.seconds);
      assert.deepEqual(await ladderEnds(2, 'the ladder ended'), [
        'RestartService:Succeeded',
        'RestartService:Succeeded',
      ]);
    },
  );

  await t.test(
    'crash loop: FrequentServiceRestart, then a re-bootstrap rewrites the config; one rung',
    async () => {
      const started = Date.now();
      await sim.faults.crashLoop('kubelet');
      const loop = await until('FrequentServiceRestart', 'True', 120_000);
      measured('kubelet crash loop → FrequentServiceRestart=True', loop.seconds);
      await waitFor(
        async () =>
          (
            await core.listNamespacedEvent({
              namespace: world.namespace,
              fieldSelector: `involvedObject.name=${name},reason=${EventReason.RemediationRebootstrap}`,
            })
          ).items.length > 0,
        { description: 'the re-bootstrap', timeoutMs: 60_000, intervalMs: 500 },
      );
      const ended = await ladderEnds(3, 'the ladder to end after the re-bootstrap');
      measured(
        'crash loop → ladder ended (re-bootstrapped, healthy)',
        (Date.now() - started) / 1000,
      );
      assert.deepEqual(ended.slice(2), ['Rebootstrap:Succeeded'], 'RestartService skipped');
      assert.equal((await condition('Ready'))?.status, 'True');
      assert.equal((await condition('FrequentServiceRestart'))?.status, 'False');
    },
  );

  await t.test(
    'disk full: SystemDiskLow and its Event; no rung (a person frees space)',
    async () => {
      sim.faults.diskFull = true;
      const full = await until('SystemDiskLow', 'True');
      measured('disk full → SystemDiskLow=True', full.seconds);
      sim.faults.diskFull = false;
      await until('SystemDiskLow', 'False');
      assert.equal((await actions()).length, 3, 'no rung ran for it');
    },
  );
});
