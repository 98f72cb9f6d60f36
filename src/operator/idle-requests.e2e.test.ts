/**
 * No polling: an operator with one joined host, at rest, makes no API requests beyond its open
 * watches and its Lease renewals. The requests are counted by verb, resource and code in the
 * operator's own client and read from its /metrics over an idle window (30 s, or
 * WINFLEET_IDLE_WINDOW_SECONDS).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../sim/cluster/free-port.ts';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import { writeOperatorConfig } from '../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
} from '../../sim/testkit/windows-hosts.ts';
import { loadKubeConfig } from '../kube/client.ts';
import { kubeApiRequestsMetric } from '../kube/request-metrics.ts';
import { userAgents } from '../kube/user-agent.ts';
import { waitFor } from '../kube/wait-for.ts';
import { createLogger, silentLogger } from '../log/logger.ts';
import { startOperator } from './operator.ts';

const windowSeconds = Number(process.env.WINFLEET_IDLE_WINDOW_SECONDS ?? 30);
/** A quiet stretch that says the join's after-effects are over. */
const settleSeconds = 5;
const settleAttempts = 24;

type Counts = Map<string, number>;

/** winfleet_kube_api_requests_total from a /metrics page, keyed `<verb> <resource> <code>`. */
async function scrape(url: string): Promise<Counts> {
  const text = await (await fetch(url)).text();
  const counts: Counts = new Map();
  const line = new RegExp(
    `^${kubeApiRequestsMetric}\\{verb="([^"]*)",resource="([^"]*)",code="([^"]*)"\\} (\\S+)$`,
    'gm',
  );
  for (const [, verb, resource, code, value] of text.matchAll(line)) {
    counts.set(`${verb} ${resource} ${code}`, Number(value));
  }
  return counts;
}

function delta(before: Counts, after: Counts): Counts {
  const out: Counts = new Map();
  for (const [key, value] of after) {
    const d = value - (before.get(key) ?? 0);
    if (d > 0) out.set(key, d);
  }
  return out;
}

/** A watch opening, or this replica renewing its Lease: what an operator at rest may do. */
const atRest = (key: string) => key.startsWith('watch ') || key.startsWith('update leases ');

test('at rest with one joined host, the operator only watches and renews its Lease', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'], startOperator: false });
  const { namespace } = world;
  await writeOperatorConfig(world.kc, namespace, {
    hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 },
  });
  // The operator's own client, as in its process: its counter holds the operator's requests.
  const kc = loadKubeConfig(world.cluster.kubeconfigPath, userAgents.operator);
  const port = await freePort();
  const operator = await startOperator({
    kc,
    namespace,
    log: process.env.WINFLEET_TEST_LOGS ? createLogger({ level: 'debug' }) : silentLogger,
    leaderElection: true,
    payloadDir: world.payloadDir,
    webhook: {
      host: '127.0.0.1',
      port,
      endpoint: { url: `https://127.0.0.1:${port}` },
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
    },
    status: { host: '127.0.0.1', port: 0 },
  });
  t.after(async () => {
    await operator.stop();
    await kc.close();
  });
  const metrics = `http://127.0.0.1:${operator.status!.port}/metrics`;

  await createWindowsHosts(world.kc, namespace, world.fleet.hosts);
  await waitFor(
    async () => {
      const hosts = await listWindowsHosts(world.kc, namespace);
      return hosts.length === 1 && hosts.every(hostReady);
    },
    { description: 'the WindowsHost Ready', timeoutMs: 180_000, intervalMs: 500 },
  );

  // Steady state: a stretch with nothing but watches and renewals (bounded; if it never comes,
  // the window below shows what keeps going).
  for (let attempt = 0; attempt < settleAttempts; attempt++) {
    const before = await scrape(metrics);
    await sleep(settleSeconds * 1000);
    if ([...delta(before, await scrape(metrics)).keys()].every(atRest)) break;
  }

  const before = await scrape(metrics);
  await sleep(windowSeconds * 1000);
  const made = delta(before, await scrape(metrics));
  const report = [...made].map(([key, n]) => `${key}: ${n}`).join(', ') || 'none';
  t.diagnostic(`API requests over a ${windowSeconds} s idle window: ${report}`);

  const polling = [...made.keys()].filter((key) => !atRest(key));
  assert.deepEqual(polling, [], `requests beyond watches and Lease renewals: ${report}`);
  assert.equal(made.get('get leases 200') ?? 0, 0, 'renewals do not read the Lease');
  // The counter is live: the leader renewed its Lease (every 2 s) during the window.
  assert.ok((made.get('update leases 200') ?? 0) > 0, `no Lease renewal counted: ${report}`);
});
