/**
 * The payload registry down for everyone while an SSH host joins (issue 15): the real
 * docker-registry is stopped after a first host joined (so the operator has the agent in its
 * cache) and the second host's agent cannot pull; the operator cannot read the registry either,
 * so nothing is pushed: the host's Ready condition says PayloadRegistryUnavailable naming the
 * registry, and the join is retried with the work queue's growing backoff. The registry is
 * started again on the same address with the same store, and the join completes — pulled by
 * the host.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { SimulatedHost } from '../../../sim/hosts/fleet.ts';
import { startTestRegistry } from '../../../sim/registry/registry-process.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  hostReady,
  readWindowsHost,
} from '../../../sim/testkit/windows-hosts.ts';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { createLogger } from '../../log/logger.ts';
import { pushPayload } from '../../payload/oci/push-payload.ts';

test('a join waits with backoff while the payload registry is down, and completes once it is back', {
  timeout: 600_000,
}, async (t) => {
  const world = await joinWorld(t, { releases: ['2022', '2019'], startOperator: false });
  const { kc, namespace } = world;
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-registry-down-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const storageDir = join(dir, 'store');
  let registry = await startTestRegistry({ storageDir });
  t.after(() => registry.stop());
  const port = Number(registry.host.split(':')[1]);
  const payload = await writeStandInPayload(join(dir, 'payload'));
  const { reference } = await pushPayload(
    join(dir, 'payload'),
    { registry: registry.host, repository: 'winfleet/payload', tag: payload.version },
    { plainHttp: true },
  );
  const logLines: string[] = [];
  const operator = await startTestOperator(kc, {
    namespace,
    payloadImage: { reference, plainHttp: true, cacheDir: join(dir, 'cache') },
    config: { hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 } },
    log: createLogger({ level: 'debug', write: (line) => logLines.push(line) }),
  });
  t.after(() => operator.stop());
  const [first, second] = world.fleet.hosts as [SimulatedHost, SimulatedHost];
  const ready = (sim: SimulatedHost) =>
    waitFor(
      async () => {
        const h = await readWindowsHost(kc, namespace, sim.name.toLowerCase());
        return hostReady(h) ? h : undefined;
      },
      { description: `${sim.name} Ready`, timeoutMs: 180_000, intervalMs: 500 },
    );
  await createWindowsHosts(kc, namespace, [first]);
  await ready(first);

  await registry.stop();
  await createWindowsHosts(kc, namespace, [second]);
  const name = second.name.toLowerCase();
  const waiting = await waitFor(
    async () => {
      const h = await readWindowsHost(kc, namespace, name);
      const c = h.status?.conditions?.find((x) => x.type === ConditionType.Ready);
      return c?.reason === ConditionReason.PayloadRegistryUnavailable ? c : undefined;
    },
    { description: 'Ready=False PayloadRegistryUnavailable', timeoutMs: 120_000, intervalMs: 250 },
  );
  assert.equal(waiting.status, 'False');
  assert.match(waiting.message, new RegExp(`127\\.0\\.0\\.1:${port}/winfleet/payload`));
  assert.match(waiting.message, /answers neither the host nor the operator/);
  assert.equal(
    await second.machine.fs.tryReadFile('C:\\k\\kubelet.exe'),
    undefined,
    'nothing pushed meanwhile',
  );

  // The work queue's backoff: each retry of this host waits longer than the one before.
  const retries = await waitFor(
    () => {
      const delays = logLines
        .map((l) => JSON.parse(l) as { msg?: string; key?: string; retryInMs?: number })
        .filter((l) => l.msg === 'reconcile failed' && l.key === `${namespace}/${name}`)
        .map((l) => l.retryInMs!);
      return delays.length >= 4 ? delays : undefined;
    },
    { description: 'four failed passes of the host', timeoutMs: 60_000, intervalMs: 250 },
  );
  t.diagnostic(`retries of ${name} in ${retries.join(', ')} ms`);
  for (let i = 1; i < retries.length; i++)
    assert.ok(retries[i]! > retries[i - 1]!, `backoff grows: ${retries.join(', ')} ms`);

  registry = await startTestRegistry({ storageDir, port });
  const host = await ready(second);
  const bootstrapped = host.status?.conditions?.find((c) => c.type === ConditionType.Bootstrapped);
  assert.match(bootstrapped?.message ?? '', /payload pulled by the host/);
});
