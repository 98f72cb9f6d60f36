/**
 * A pool's rollout end to end, with a real control plane and simulated hosts (issue 12):
 * a payload upgrade rolls through a pool never more than maxUnavailable hosts down and never
 * past a PodDisruptionBudget; a kubelet outside the skew policy is refused before any host is
 * touched; a host that does not come back from its reboot is set aside (maxUnavailable 1: one
 * may be), the next one that does not stops the rollout, Degraded naming both, and no third
 * host goes down.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { controllerPass } from '../../../sim/testkit/controller-pass.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import {
  createPool,
  labelHosts,
  patchPoolSpec,
  poolCondition,
  readPool,
  sampleRollout,
} from '../../../sim/testkit/pools.ts';
import { testNamespace } from '../../../sim/testkit/test-cluster.ts';
import {
  createWindowsHosts,
  listWindowsHosts,
  waitForReadyHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { servicesVersionAnnotation } from '../../api/node-annotations.ts';
import { waitFor } from '../../kube/wait-for.ts';

const hostCount = 6;

test('a pool rolls an upgrade 2 at a time within its PDB, refuses a skewed kubelet, and stops at a host that does not come back', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022', '2019', '2025'].flatMap((r) => [r, r]),
    machine: { timings: { rebootDowntimeMs: 500, rebootDelayMs: 200 } },
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const joined = await waitForReadyHosts(kc, world.namespace, hostCount);
  const nodeNames = joined.map((h) => h.status!.nodeName!);
  /** A pass of the pool controller, then of the host controller over every host, awaited. */
  const passesOverEverything = async () => {
    await controllerPass(world.operator!, 'windowsnodepools', `${world.namespace}/web`);
    for (const host of joined)
      await controllerPass(
        world.operator!,
        'windowshosts',
        `${world.namespace}/${host.metadata.name}`,
      );
    await controllerPass(world.operator!, 'windowsnodepools', `${world.namespace}/web`);
  };
  await labelHosts(kc, world.namespace, { pool: 'web' });
  await createPool(kc, world.namespace, 'web', {
    selector: { matchLabels: { pool: 'web' } },
    maxUnavailable: 2,
    drainTimeout: '2m',
    readyTimeout: '2m',
  });
  await waitFor(
    async () => {
      const pool = await readPool(kc, world.namespace, 'web');
      return pool.status?.hosts === hostCount && pool.status.readyHosts === hostCount;
    },
    { description: 'the pool counting its 6 Ready hosts' },
  );

  // A Windows Deployment spread over the nodes, with a budget of one pod down at a time.
  const apps = await testNamespace(kc, 'web');
  await kc.makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({
    namespace: apps,
    body: {
      metadata: { name: 'web' },
      spec: {
        replicas: hostCount,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            nodeSelector: { 'kubernetes.io/os': 'windows' },
            tolerations: [{ key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' }],
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: 'kubernetes.io/hostname',
                whenUnsatisfiable: 'ScheduleAnyway',
                labelSelector: { matchLabels: { app: 'web' } },
              },
            ],
            containers: [{ name: 'web', image: 'mcr.microsoft.com/windows/nanoserver:ltsc2022' }],
          },
        },
      },
    },
  });
  await kc.makeApiClient(k8s.PolicyV1Api).createNamespacedPodDisruptionBudget({
    namespace: apps,
    body: {
      metadata: { name: 'web' },
      spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } },
    },
  });
  const readyPods = async () =>
    (await core.listNamespacedPod({ namespace: apps, labelSelector: 'app=web' })).items.filter(
      (p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    ).length;
  await waitFor(async () => (await readyPods()) === hostCount, {
    description: `${hostCount} web pods Ready`,
    timeoutMs: 60_000,
  });

  await t.test('an upgrade: never more than 2 hosts down, never past the PDB', async () => {
    const sampler = sampleRollout(kc, {
      nodeNames: () => nodeNames,
      pods: { namespace: apps, labelSelector: 'app=web' },
    });
    const next = await writeStandInPayload(world.payloadDir, {
      kubernetesVersion: 'v1.36.6',
      version: '1.36.6-wf.1',
    });
    try {
      await waitFor(
        async () => {
          const nodes = (await core.listNode()).items.filter((n) =>
            nodeNames.includes(n.metadata!.name!),
          );
          const pool = await readPool(kc, world.namespace, 'web');
          return nodes.every(
            (n) =>
              n.metadata?.annotations?.[servicesVersionAnnotation] === next.version &&
              !n.spec?.unschedulable,
          ) && pool.status?.updatedHosts === hostCount
            ? pool
            : undefined;
        },
        { description: `every node on ${next.version} and uncordoned`, timeoutMs: 300_000 },
      );
    } finally {
      await sampler.stop();
    }
    const samples = sampler.samples;
    assert.ok(samples.length > 10, `sampled ${samples.length} times`);
    const worst = Math.max(...samples.map((s) => s.unavailable.length));
    assert.ok(worst <= 2, `at most 2 hosts down at once; saw ${worst}`);
    assert.equal(worst, 2, 'and 2 at a time: the budget is used, not one host at a time');
    assert.ok(
      samples.some((s) => s.cordoned.length > 0),
      'the rollout cordoned hosts (it went through the engine)',
    );
    // One pod down at a time: the budget. Evictions go through the Eviction API, so the pods
    // Ready never drop below replicas - 1.
    const fewest = Math.min(...samples.map((s) => s.readyPods!));
    assert.ok(fewest >= hostCount - 1, `at least ${hostCount - 1} pods Ready; saw ${fewest}`);
    const pool = await readPool(kc, world.namespace, 'web');
    assert.equal(poolCondition(pool, 'Progressing')?.reason, 'RolloutComplete');
    assert.equal(poolCondition(pool, 'Degraded')?.status, 'False');
    const hosts = await listWindowsHosts(kc, world.namespace);
    for (const host of hosts) {
      assert.equal(
        host.status?.rollout?.current,
        undefined,
        `${host.metadata.name} has no change left`,
      );
      const node = await core.readNode({ name: host.status!.nodeName! });
      assert.equal(node.status?.nodeInfo?.kubeletVersion, 'v1.36.6', 'the new kubelet runs');
    }
  });

  await t.test(
    'a kubelet outside the skew policy is refused before any host is touched',
    async () => {
      const before = await core.listNode();
      const sampler = sampleRollout(kc, { nodeNames: () => nodeNames });
      await writeStandInPayload(world.payloadDir, {
        kubernetesVersion: 'v1.37.0',
        version: '1.37.0-wf.1',
      });
      try {
        const degraded = await waitFor(
          async () => {
            const c = poolCondition(await readPool(kc, world.namespace, 'web'), 'Degraded');
            return c?.status === 'True' ? c : undefined;
          },
          { description: 'the pool Degraded by the skew', timeoutMs: 30_000 },
        );
        assert.match(degraded.message, /1\.37/);
        assert.match(degraded.message, /1\.36/);
        // What it must not do it would have done by now: a pass of the pool and of each host
        // over the skewed payload, after the refusal was recorded.
        await passesOverEverything();
      } finally {
        await sampler.stop();
      }
      assert.ok(
        sampler.samples.every((s) => s.cordoned.length === 0),
        'no node was cordoned',
      );
      const after = await core.listNode();
      for (const node of after.items.filter((n) => nodeNames.includes(n.metadata!.name!))) {
        const was = before.items.find((n) => n.metadata!.name === node.metadata!.name)!;
        assert.equal(
          node.metadata?.annotations?.[servicesVersionAnnotation],
          was.metadata?.annotations?.[servicesVersionAnnotation],
          `${node.metadata!.name} still on its version`,
        );
        assert.equal(node.status?.nodeInfo?.bootID, was.status?.nodeInfo?.bootID, 'not rebooted');
      }
      const hosts = await listWindowsHosts(kc, world.namespace);
      assert.ok(
        hosts.every((h) => !h.status?.rollout?.current),
        'no host in a change',
      );
      // Back to a payload within the policy for what follows (the same version as the hosts run).
      await writeStandInPayload(world.payloadDir, {
        kubernetesVersion: 'v1.36.6',
        version: '1.36.6-wf.1',
      });
      await waitFor(
        async () =>
          poolCondition(await readPool(kc, world.namespace, 'web'), 'Degraded')?.status === 'False',
        { description: 'Degraded cleared with a payload within the policy', timeoutMs: 30_000 },
      );
    },
  );

  await t.test(
    'a host that does not come back from its reboot is set aside; the next one stops the rollout, named',
    async () => {
      for (const host of world.fleet.hosts) host.faults.stayDownOnReboot();
      const before = await core.listNode();
      const bootOf = (name: string) =>
        before.items.find((n) => n.metadata!.name === name)?.status?.nodeInfo?.bootID;
      const sampler = sampleRollout(kc, { nodeNames: () => nodeNames });
      await patchPoolSpec(kc, world.namespace, 'web', {
        maxUnavailable: 1,
        readyTimeout: '15s',
        // A drain the PDB holds (the set-aside host's pods down) stops within the wait below.
        drainTimeout: '20s',
        rebootRequestedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      });
      let failed: string | undefined;
      let aside: string;
      try {
        // The first host that does not come back is set aside (maxUnavailable 1: one may be).
        // While its Node still shows Ready (the node controller has not yet noticed), a second
        // one starts and, not coming back either, stops the pool; once its Node is NotReady, it
        // takes the only slot and nothing else starts. Either way no third host goes down.
        const setAside = await waitFor(
          async () => {
            const list = (await listWindowsHosts(kc, world.namespace)).filter(
              (h) => h.status?.rollout?.setAside,
            );
            return list.length > 0 ? list : undefined;
          },
          { description: 'a host set aside', timeoutMs: 120_000 },
        );
        assert.equal(setAside.length, 1, 'one host set aside');
        aside = setAside[0]!.metadata.name;
        assert.equal(setAside[0]!.status?.rollout?.setAside?.cause, 'ChangeFailed');
        assert.match(
          setAside[0]!.status!.rollout!.setAside!.message,
          /did not come back from its reboot/,
        );
        // The next host either stops (RebootTimedOut, or DrainTimedOut when the PDB counts the
        // set-aside host's pods as down) or never starts (the set-aside host's Node goes
        // NotReady and takes the slot).
        await waitFor(
          async () => {
            const hosts = await listWindowsHosts(kc, world.namespace);
            const stuck = hosts.filter((h) => h.status?.rollout?.current);
            if (stuck.length === 1 && stuck[0]!.status?.rollout?.current?.failure) return true;
            if (stuck.length > 0) return undefined;
            const node = await core.readNode({
              name: hosts.find((h) => h.metadata.name === aside)!.status!.nodeName!,
            });
            return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status !== 'True');
          },
          { description: 'the rollout stopped or held by the budget', timeoutMs: 120_000 },
        );
        const hosts = await listWindowsHosts(kc, world.namespace);
        const stuck = hosts.filter((h) => h.status?.rollout?.current);
        assert.ok(stuck.length <= 1, 'at most one host in a change');
        const degraded = poolCondition(await readPool(kc, world.namespace, 'web'), 'Degraded')!;
        assert.equal(degraded.status, 'True');
        assert.match(degraded.message, new RegExp(`${world.namespace}/${aside} is set aside`));
        if (stuck[0]) {
          failed = stuck[0].metadata.name;
          // It stops at its reboot, or at its drain: once the node controller marks the
          // set-aside host's Node Unknown, its pods are not Ready and the PDB allows no eviction.
          const step = stuck[0].status?.rollout?.current?.failure?.step;
          assert.ok(step === 'Reboot' || step === 'Drain', `stopped at ${step}`);
          // The pool's next pass names the stop (until then Degraded names the set-aside host).
          const stopped = await waitFor(
            async () => {
              const c = poolCondition(await readPool(kc, world.namespace, 'web'), 'Degraded');
              return c?.reason === (step === 'Reboot' ? 'RebootTimedOut' : 'DrainTimedOut')
                ? c
                : undefined;
            },
            { description: 'the pool Degraded naming the stopped host', timeoutMs: 60_000 },
          );
          assert.match(stopped.message, new RegExp(`${world.namespace}/${failed}`));
        }
        // Another host taken down would be by now: passes over the pool and every host after
        // the failure was recorded.
        await passesOverEverything();
      } finally {
        await sampler.stop();
      }
      const nodeOfHost = new Map(
        (await listWindowsHosts(kc, world.namespace)).map((h) => [
          h.metadata.name,
          h.status!.nodeName!,
        ]),
      );
      const down = [nodeOfHost.get(aside)!, ...(failed ? [nodeOfHost.get(failed)!] : [])];
      for (const s of sampler.samples) {
        assert.deepEqual(
          s.cordoned.filter((n) => !down.includes(n)),
          [],
          'no third node cordoned',
        );
        for (const name of nodeNames.filter((n) => !down.includes(n))) {
          if (s.bootIds[name] !== undefined)
            assert.equal(s.bootIds[name], bootOf(name), `${name} not rebooted`);
        }
      }
      const inChange = (await listWindowsHosts(kc, world.namespace)).filter(
        (h) => h.status?.rollout?.current,
      );
      assert.deepEqual(
        inChange.map((h) => h.metadata.name),
        failed ? [failed] : [],
        'after the passes, still only the failed host in a change',
      );
      const pool = await readPool(kc, world.namespace, 'web');
      if (failed) assert.equal(poolCondition(pool, 'Progressing')?.reason, 'RolloutStopped');
      assert.ok((pool.status?.unavailableHosts ?? 0) <= 2, 'the hosts down, no more');
    },
  );
});
