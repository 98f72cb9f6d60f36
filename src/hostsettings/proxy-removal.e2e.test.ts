/**
 * Removing the proxy (issue 32, defect 6), end to end on one simulated host of a pool: the
 * proxy is set and the host has rebooted since, so the machine environment services.exe read at
 * boot holds it (KB 821761). Once the proxy leaves the configuration, the services restart with
 * the old value still in their environment (a service's Environment value cannot unset a
 * variable), the agent restarts itself once for its new service environment and then reports a
 * pending reboot instead of restarting after every pass; the pool's rollout reboots the host,
 * and after that no service runs with the old proxy.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { joinWorld } from '../../sim/testkit/join-fixture.ts';
import { createPool, labelHosts, readPool } from '../../sim/testkit/pools.ts';
import { writeOperatorConfig } from '../../sim/testkit/test-operator.ts';
import { createWindowsHosts, waitForReadyHosts } from '../../sim/testkit/windows-hosts.ts';
import { servicesVersionAnnotation, windowsUpdatesAnnotation } from '../api/node-annotations.ts';
import { waitFor } from '../kube/wait-for.ts';

const proxyUrl = 'http://proxy.corp.example:3128';
const proxyVariables = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY'];
const services = ['containerd', 'kubelet', 'kube-proxy', 'winfleet-agent'];

test('removing the proxy leaves no service with the old proxy and the agent in no restart loop', async (t) => {
  const baseHosts = { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 };
  const world = await joinWorld(t, {
    releases: ['2022'],
    config: { hosts: baseHosts },
    machine: { timings: { rebootDowntimeMs: 500, rebootDelayMs: 200 } },
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const sim = world.fleet.hosts[0]!;
  const machine = sim.machine;
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const [joined] = await waitForReadyHosts(kc, world.namespace, 1);
  const nodeName = joined!.status!.nodeName!;
  await labelHosts(kc, world.namespace, { pool: 'p' });
  await createPool(kc, world.namespace, 'p', {
    selector: { matchLabels: { pool: 'p' } },
    maxUnavailable: 1,
    drainTimeout: '1m',
    readyTimeout: '2m',
  });
  await waitFor(async () => (await readPool(kc, world.namespace, 'p')).status?.readyHosts === 1, {
    description: 'the pool counting its Ready host',
  });
  const node = () => core.readNode({ name: nodeName });
  const running = (service: string) =>
    machine.processes().find((p) => p.alive && p.imageName.toLowerCase() === `${service}.exe`);
  /** Waits for the node on a services version other than `before`, the pool's rollout done. */
  const rolledOut = async (before: string | undefined, what: string) =>
    waitFor(
      async () => {
        const n = await node();
        const version = n.metadata?.annotations?.[servicesVersionAnnotation];
        const pool = await readPool(kc, world.namespace, 'p');
        return version !== before && !n.spec?.unschedulable && pool.status?.updatedHosts === 1
          ? version
          : undefined;
      },
      { description: what, timeoutMs: 240_000 },
    );

  // The proxy set, and the host rebooted since (a patch reboot, say): the machine environment
  // Windows read at boot has it now.
  const noProxyVersion = (await node()).metadata?.annotations?.[servicesVersionAnnotation];
  await writeOperatorConfig(kc, world.namespace, {
    hosts: { ...baseHosts, proxy: { httpProxy: proxyUrl, httpsProxy: proxyUrl } },
  });
  await rolledOut(noProxyVersion, 'the proxy rolled out');
  await waitFor(() => running('winfleet-agent')?.environment.HTTPS_PROXY === proxyUrl, {
    description: 'the agent running with the proxy',
    timeoutMs: 60_000,
  });
  await sim.faults.reboot();
  assert.equal(machine.bootEnvironment.HTTPS_PROXY, proxyUrl, 'the boot snapshot has the proxy');
  await waitFor(() => services.every((s) => running(s)?.environment.HTTPS_PROXY === proxyUrl), {
    description: 'every service running again, with the proxy',
    timeoutMs: 120_000,
  });
  const bootBefore = (await node()).status?.nodeInfo?.bootID;
  const proxyVersion = (await node()).metadata?.annotations?.[servicesVersionAnnotation];

  // The proxy leaves the configuration.
  const removedAt = Date.now();
  await writeOperatorConfig(kc, world.namespace, { hosts: baseHosts });
  // The agent restarts once for its new service environment, finds the proxy still in it (the
  // boot snapshot), and reports a pending reboot rather than restarting again.
  const report = await waitFor(
    async () => {
      const text = (await node()).metadata?.annotations?.[windowsUpdatesAnnotation];
      const parsed = text ? (JSON.parse(text) as { rebootPending?: boolean }) : undefined;
      return parsed?.rebootPending ? parsed : undefined;
    },
    { description: 'the agent reporting a pending reboot', timeoutMs: 180_000, intervalMs: 500 },
  );
  assert.equal(report.rebootPending, true);
  // The pool's rollout carries the reboot out.
  await rolledOut(proxyVersion, 'the proxy removal rolled out');
  await waitFor(
    async () => {
      const n = await node();
      const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      return n.status?.nodeInfo?.bootID !== bootBefore && ready && !n.spec?.unschedulable;
    },
    { description: 'the host rebooted by the rollout, Ready and uncordoned', timeoutMs: 240_000 },
  );
  await waitFor(() => services.every((s) => running(s) !== undefined), {
    description: 'every service running after the reboot',
    timeoutMs: 120_000,
  });
  for (const service of services) {
    const env = running(service)!.environment;
    for (const name of proxyVariables)
      assert.equal(env[name], undefined, `${service} runs without ${name}`);
    const configured = machine.scm.config(service)?.environment ?? {};
    assert.equal(configured.HTTPS_PROXY, undefined, `${service}'s configuration has no proxy`);
  }
  assert.equal(machine.bootEnvironment.HTTPS_PROXY, undefined);
  // No restart loop: the agent's process ended on its own (exit 3, restarted by its recovery
  // action) once for the new configuration, and not again.
  const agentRestarts = machine.scm.failureTimes('winfleet-agent', removedAt);
  assert.equal(
    agentRestarts.length,
    1,
    `agent restarts since the removal: ${agentRestarts.length}`,
  );
  // The agent reports again after the boot; until then the Node keeps the report from before.
  await waitFor(
    async () => {
      const report2 = JSON.parse(
        (await node()).metadata?.annotations?.[windowsUpdatesAnnotation] ?? '{}',
      ) as { rebootPending?: boolean };
      return report2.rebootPending !== true ? true : undefined;
    },
    { description: 'no reboot pending reported after the reboot', timeoutMs: 120_000 },
  );
});
