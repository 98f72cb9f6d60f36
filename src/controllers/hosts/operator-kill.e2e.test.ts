/**
 * The operator survives being killed at any moment: during a 5-host join it is SIGKILLed at
 * random points ten times and restarted; every host still ends Ready, each Node is created
 * once (its UID never changes), and nothing is left cordoned or half-done.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import fc from 'fast-check';
import { serviceLog } from '../../../sim/hosts/service-logs.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { restartableOperator } from '../../../sim/testkit/operator-process.ts';
import { writeOperatorConfig } from '../../../sim/testkit/test-operator.ts';
import { testSeed } from '../../../sim/testkit/test-seed.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../../sim/testkit/windows-hosts.ts';
import { installCrds } from '../../api/install-crds.ts';
import { waitFor } from '../../kube/wait-for.ts';

test('SIGKILL at random points during a 5-host join, 10 times: every host ends Ready exactly once', async (t) => {
  const seed = testSeed(t);
  const world = await joinWorld(t, {
    releases: ['2019', '2022', '2022', '2025', '2022'],
    startOperator: false,
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await writeOperatorConfig(kc, world.namespace, {
    hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 60 },
  });
  const operator = restartableOperator({
    kubeconfig: world.cluster.kubeconfigPath,
    namespace: world.namespace,
    payloadDir: world.payloadDir,
    logDir: world.cluster.dir,
  });
  const start = () => operator.start();
  t.after(() => operator.kill());

  // Watch every Node: a UID that changes means a Node was deleted and created again.
  const uids = new Map<string, string>();
  const recreated: string[] = [];
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      for (const node of (await core.listNode().catch(() => ({ items: [] as k8s.V1Node[] })))
        .items) {
        const name = node.metadata!.name!;
        const uid = node.metadata!.uid!;
        if (uids.has(name) && uids.get(name) !== uid) recreated.push(name);
        uids.set(name, uid);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  t.after(async () => {
    watching = false;
    await watcher;
  });
  await installCrds(kc);
  start();
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  // Spread the kills over the join: early (connecting, copying) to late (waiting for Ready).
  // The delays are the test's input, drawn from a printed seed so that a failure replays.
  const delays = fc.sample(fc.integer({ min: 200, max: 1399 }), { seed, numRuns: 10 });
  t.diagnostic(`kill delays (ms): ${delays.join(', ')}`);
  const killTimes: number[] = [];
  for (const delay of delays) {
    await new Promise((r) => setTimeout(r, delay));
    killTimes.push(delay);
    await operator.kill();
    start();
  }
  const hosts = await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, world.namespace);
      return list.length === 5 && list.every(hostReady) ? list : undefined;
    },
    { description: 'all five hosts Ready after ten kills', timeoutMs: 180_000, intervalMs: 500 },
  ).catch(async (error: unknown) => {
    // Say where each host got stuck, and what the operator said last.
    for (const h of await listWindowsHosts(kc, world.namespace)) {
      t.diagnostic(
        `${h.metadata.name}: ${JSON.stringify(h.status?.conditions?.map((c) => `${c.type}=${c.status} ${c.reason}`))} ${JSON.stringify(h.status?.lastError ?? {})}`,
      );
    }
    for (const csr of (
      await kc.makeApiClient(k8s.CertificatesV1Api).listCertificateSigningRequest()
    ).items) {
      t.diagnostic(
        `CSR ${csr.metadata?.name} ${csr.spec.username} ${csr.spec.signerName} ${JSON.stringify(csr.status?.conditions?.map((c) => `${c.type}: ${c.message}`))} cert=${Boolean(csr.status?.certificate)}`,
      );
    }
    for (const sim of world.fleet.hosts)
      t.diagnostic(
        `${sim.name} kubelet: ${(await serviceLog(sim.machine, 'kubelet')).slice(-6).join(' | ')}`,
      );
    t.diagnostic(`operator run ${operator.runs()}, last lines:\n${await operator.lastLog(40)}`);
    throw error;
  });
  watching = false;
  await watcher;

  const nodes = (await core.listNode()).items;
  assert.equal(
    nodes.length,
    5,
    `exactly five Nodes: ${nodes.map((n) => n.metadata?.name).join(', ')}`,
  );
  assert.deepEqual(new Set(hosts.map((h) => h.status?.nodeName)).size, 5, 'one node per host');
  assert.deepEqual(recreated, [], 'no Node was created twice');
  assert.deepEqual(
    nodes.filter((n) => n.spec?.unschedulable).map((n) => n.metadata?.name),
    [],
    'no node left cordoned',
  );
  const tokens = await core.listNamespacedSecret({
    namespace: 'kube-system',
    fieldSelector: 'type=bootstrap.kubernetes.io/token',
  });
  assert.equal(tokens.items.length, 0, 'no bootstrap token left behind');
  t.diagnostic(`killed after (ms): ${killTimes.join(', ')}; operator runs: ${operator.runs()}`);
});
