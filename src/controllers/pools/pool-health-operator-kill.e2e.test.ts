/**
 * Remediation survives its operator being killed (issue 13): while two hosts of a pool climb
 * their ladders — one in a kubelet crash loop (re-bootstrapped over SSH), one off the network
 * (RestartService, Rebootstrap, a repair reboot through the rollout, RemediationFailed) — the
 * operator (a separate process) is SIGKILLed ten times at moments drawn from a printed seed and
 * started again. Each host has one ladder, its rungs in order, none twice; no two bootstraps ever run on a
 * host at once; no node stays cordoned except the one whose ladder ended in RemediationFailed,
 * and that one is uncordoned once it is back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import fc from 'fast-check';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { restartableOperator } from '../../../sim/testkit/operator-process.ts';
import { createPool, labelHosts, readPool } from '../../../sim/testkit/pools.ts';
import { writeOperatorConfig } from '../../../sim/testkit/test-operator.ts';
import { testSeed } from '../../../sim/testkit/test-seed.ts';
import {
  createWindowsHosts,
  listWindowsHosts,
  readWindowsHost,
  waitForReadyHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { installCrds } from '../../api/install-crds.ts';
import { cordonedByAnnotation } from '../../api/node-annotations.ts';
import { waitFor } from '../../kube/wait-for.ts';

const hostCount = 4;

test('SIGKILL the operator 10 times during two remediations: each rung once, never two bootstraps at once, no stray cordon', async (t) => {
  const seed = testSeed(t);
  const world = await joinWorld(t, {
    releases: ['2022', '2019', '2022', '2025'],
    startOperator: false,
    machine: { timings: { rebootDowntimeMs: 500, rebootDelayMs: 200 } },
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await writeOperatorConfig(kc, world.namespace, { hosts: { agentCheckIntervalSeconds: 1 } });
  const operator = restartableOperator({
    kubeconfig: world.cluster.kubeconfigPath,
    namespace: world.namespace,
    payloadDir: world.payloadDir,
    logDir: world.cluster.dir,
  });
  t.after(() => operator.kill());
  await installCrds(kc);
  operator.start();
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const joined = await waitForReadyHosts(kc, world.namespace, hostCount);
  const nodeOf = new Map(joined.map((h) => [h.metadata.name, h.status!.nodeName!]));
  await labelHosts(kc, world.namespace, { pool: 'k' });
  await createPool(kc, world.namespace, 'k', {
    selector: { matchLabels: { pool: 'k' } },
    maxUnavailable: 1,
    readyTimeout: '20s',
    health: {
      unhealthyConditions: [
        { type: 'Ready', status: 'Unknown', timeout: '0s' },
        { type: 'FrequentServiceRestart', status: 'True', timeout: '0s' },
      ],
      maxUnhealthy: 2,
      remediation: { restartServiceTimeout: '5s', rebootstrapTimeout: '3m', rebootTimeout: '30s' },
    },
  });
  await waitFor(
    async () => (await readPool(kc, world.namespace, 'k')).status?.readyHosts === hostCount,
    { description: 'the pool counting its hosts' },
  );
  const [looping, gone] = [world.fleet.hosts[0]!, world.fleet.hosts[1]!];
  const loopingName = looping.name.toLowerCase();
  const goneName = gone.name.toLowerCase();

  // Bootstraps running at once on a host, as the machine itself sees its processes.
  let sampling = true;
  t.after(() => {
    sampling = false;
  });
  let worstConcurrent = 0;
  const sampler = (async () => {
    for (let i = 0; sampling && i < 20_000; i++) {
      for (const host of world.fleet.hosts) {
        const bootstraps = host.machine
          .processes()
          .filter(
            (p) => /winfleet-agent/i.test(p.commandLine) && / bootstrap\b/.test(p.commandLine),
          );
        worstConcurrent = Math.max(worstConcurrent, bootstraps.length);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();

  // Diagnostics: the crash-looping host's Ready and FrequentServiceRestart, as they change.
  const seen: string[] = [];
  const watcher = (async () => {
    let last = '';
    for (let i = 0; sampling && i < 5000; i++) {
      const node = await core.readNode({ name: nodeOf.get(loopingName)! }).catch(() => undefined);
      const h = await readWindowsHost(kc, world.namespace, loopingName).catch(() => undefined);
      const c = (type: string) => node?.status?.conditions?.find((x) => x.type === type);
      const now = `Ready=${c('Ready')?.status} FSR=${c('FrequentServiceRestart')?.status} KU=${c('KubeletUnhealthy')?.status} ladder=${h?.status?.remediation?.current?.rung ?? '-'}/${h?.status?.remediation?.current?.problem.type ?? '-'} boot=${h?.status?.bootstrappedAt}`;
      if (now !== last) seen.push(`${new Date().toISOString()} ${now}`);
      last = now;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  t.after(async () => {
    sampling = false;
    await watcher;
    for (const line of seen) t.diagnostic(line);
  });
  await looping.faults.crashLoop('kubelet');
  await gone.faults.setUnreachable(true);
  // The crash loop's ladder starts within seconds and lasts until its kubelet has run a minute
  // after the re-bootstrap; the unreachable host's starts once its Node is Unknown (the node
  // controller's grace period, about 50 s) and lasts through its repair reboot's readyTimeout.
  // The kills are spread over both.
  const delays = fc.sample(fc.integer({ min: 3000, max: 8999 }), { seed, numRuns: 10 });
  t.diagnostic(`kill delays (ms): ${delays.join(', ')}`);
  const laddersAtKill: number[] = [];
  for (const delay of delays) {
    await new Promise((r) => setTimeout(r, delay));
    laddersAtKill.push(
      (await listWindowsHosts(kc, world.namespace)).filter((h) => h.status?.remediation?.current)
        .length,
    );
    await operator.kill();
    operator.start();
  }
  t.diagnostic(`ladders running at each kill: ${laddersAtKill.join(', ')}`);
  assert.ok(
    laddersAtKill.filter((n) => n > 0).length >= 5,
    `at least 5 of the 10 kills hit a ladder: ${laddersAtKill.join(', ')}`,
  );

  const rungs = async (name: string) =>
    ((await readWindowsHost(kc, world.namespace, name)).status?.remediation?.lastActions ?? []).map(
      (a) => `${a.rung}:${a.result}`,
    );
  try {
    await waitFor(
      async () => {
        const g = await readWindowsHost(kc, world.namespace, goneName);
        const l = await readWindowsHost(kc, world.namespace, loopingName);
        return g.status?.remediation?.failed && !l.status?.remediation?.current;
      },
      {
        description: 'the crash loop repaired and the unreachable host failed',
        timeoutMs: 300_000,
      },
    );
  } catch (error) {
    for (const h of await listWindowsHosts(kc, world.namespace))
      t.diagnostic(
        `${h.metadata.name}: ${JSON.stringify({ remediation: h.status?.remediation, rollout: h.status?.rollout })}`,
      );
    t.diagnostic(`operator run ${operator.runs()}, last lines:\n${await operator.lastLog(30)}`);
    throw error;
  }
  for (const name of [loopingName, goneName]) {
    for (const a of (await readWindowsHost(kc, world.namespace, name)).status?.remediation
      ?.lastActions ?? [])
      t.diagnostic(`${name} ${a.time} ${a.rung}:${a.result} ${a.message}`);
  }
  // One ladder each, its rungs in order, none twice. (A re-bootstrap the kill interrupted runs
  // again for the same request; if the interrupted one still broke it, the rung fails and the
  // next one repairs: allowed, as long as no rung repeats.)
  const order = ['RestartService', 'Rebootstrap', 'Reboot'];
  const oneLadder = (records: string[], name: string) => {
    const steps = records.map((r) => order.indexOf(r.split(':')[0]!));
    assert.ok(
      steps.every((step, i) => i === 0 || step > steps[i - 1]!),
      `${name}: rungs in order, none repeated: ${records.join(', ')}`,
    );
  };
  const loopingRungs = await rungs(loopingName);
  oneLadder(loopingRungs, loopingName);
  assert.match(loopingRungs.at(-1)!, /:Succeeded$/, loopingRungs.join(', '));
  assert.equal(loopingRungs.filter((r) => r.endsWith(':Succeeded')).length, 1);
  assert.ok(loopingRungs[0]!.startsWith('Rebootstrap:'), 'a restart loop skips RestartService');
  assert.deepEqual(await rungs(goneName), [
    'RestartService:TimedOut',
    'Rebootstrap:Failed',
    'Reboot:Failed',
  ]);
  const cordoned = async () =>
    (await core.listNode()).items
      .filter((n) => n.spec?.unschedulable)
      .map((n) => `${n.metadata?.name}:${n.metadata?.annotations?.[cordonedByAnnotation]}`);
  await waitFor(async () => (await cordoned()).join() === `${nodeOf.get(goneName)}:remediation`, {
    description: 'only the failed host cordoned, by remediation',
    timeoutMs: 60_000,
  });

  // Back by hand: its cordon is lifted, nothing else is cordoned.
  await gone.faults.setUnreachable(false);
  await waitFor(async () => (await cordoned()).length === 0, {
    description: 'no node cordoned once the host is back',
    timeoutMs: 120_000,
  });
  assert.equal(
    (await readWindowsHost(kc, world.namespace, goneName)).status?.remediation?.failed,
    undefined,
  );
  sampling = false;
  await sampler;
  assert.equal(worstConcurrent <= 1, true, `bootstraps at once on a host: ${worstConcurrent}`);
  t.diagnostic(`operator runs: ${operator.runs()}`);
});
