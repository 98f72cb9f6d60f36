/**
 * SSH hosts pull their payload from the registry (issue 15): a real control plane, the real
 * docker-registry holding the payload artifact (`winfleet payload push`), the operator
 * in-process with --payload-image, and simulated hosts over real SSH. The operator's own count
 * of what it wrote over SFTP (its /metrics, winfleet_host_bytes_sent_total) is about the agent,
 * its service shim and the config for a host that reaches the registry, and the whole payload
 * for one that cannot (the fallback, said by an Event and the Bootstrapped condition). An
 * upgrade takes the same way: the host that reaches the registry pulls the new files with its
 * node's credentials before its Node is told to use them.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import type { SimulatedHost } from '../../../sim/hosts/fleet.ts';
import { startTestRegistry } from '../../../sim/registry/registry-process.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { realPayloadSizes, writeStandInPayload } from '../../../sim/testkit/payload.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
  readWindowsHost,
} from '../../../sim/testkit/windows-hosts.ts';
import { servicesVersionAnnotation } from '../../api/node-annotations.ts';
import { ConditionType, EventReason } from '../../api/reasons.ts';
import { hostBytesSentMetric } from '../../hostaccess/bytes-sent.ts';
import { waitFor } from '../../kube/wait-for.ts';
import type { Operator } from '../../operator/operator.ts';
import { pushPayload } from '../../payload/oci/push-payload.ts';
import type { Payload } from '../../payload/payload.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';

const mib = 1024 * 1024;
/** Payload files of a real payload's proportions, 16 MiB in all (the agent 2.4, its shim 0.16). */
const sizes = realPayloadSizes(16 * mib);
const operatorFiles = ['winfleet-agent.exe', 'winfleet-service.exe'];
const ownBytes = operatorFiles.reduce((sum, name) => sum + sizes[name]!, 0);
const payloadBytes = Object.values(sizes).reduce((sum, n) => sum + n, 0);
/** bootstrap.json (CA, token, manifest) and slack: far below any payload file here. */
const configAllowance = 64 * 1024;

/** The operator's own count of the bytes it wrote to hosts over SFTP, from its /metrics. */
async function bytesSent(operator: Operator): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${operator.status!.port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${hostBytesSentMetric} `));
  assert.ok(line, `${hostBytesSentMetric} is served`);
  return Number(line.split(' ')[1]);
}

test('an SSH host that reaches the registry pulls its payload; one that cannot gets it pushed; both upgrade the same way', {
  timeout: 600_000,
}, async (t) => {
  const world = await joinWorld(t, { releases: ['2022', '2022'], startOperator: false });
  const { kc, namespace } = world;
  const registry = await startTestRegistry();
  t.after(() => registry.stop());
  const registryPort = Number(registry.host.split(':')[1]);
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-ssh-pull-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const push = async (payload: Payload, version: string) =>
    (
      await pushPayload(
        join(dir, version),
        { registry: registry.host, repository: 'winfleet/payload', tag: payload.version },
        { plainHttp: true },
      )
    ).reference;
  const first = await writeStandInPayload(join(dir, 'first'), { sizes });
  const firstReference = await push(first, 'first');
  const cacheDir = join(dir, 'cache');
  const config = { hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 } };
  let operator = await startTestOperator(kc, {
    namespace,
    payloadImage: { reference: firstReference, plainHttp: true, cacheDir },
    config,
  });
  t.after(() => operator.stop());
  const [reaching, cutOff] = world.fleet.hosts as [SimulatedHost, SimulatedHost];
  // The second host's firewall keeps it from the registry; the operator still reaches it.
  cutOff.faults.blockOutbound({ host: '127.0.0.1', port: registryPort });
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const eventsOf = async (name: string) =>
    (
      await core.listNamespacedEvent({
        namespace,
        fieldSelector: `involvedObject.name=${name}`,
      })
    ).items;
  const joinHost = async (sim: SimulatedHost) => {
    const before = await bytesSent(operator);
    await createWindowsHosts(kc, namespace, [sim]);
    const name = sim.name.toLowerCase();
    const host = await waitFor(
      async () => {
        const h = await readWindowsHost(kc, namespace, name);
        return hostReady(h) ? h : undefined;
      },
      { description: `${name} Ready`, timeoutMs: 180_000, intervalMs: 500 },
    );
    return { host, sent: (await bytesSent(operator)) - before };
  };

  await t.test(
    'the host that reaches the registry pulls: the operator sends the agent, its shim and the config',
    async () => {
      const { host, sent } = await joinHost(reaching);
      t.diagnostic(
        `pull join: ${sent} bytes over SFTP (agent + shim ${ownBytes}, payload ${payloadBytes})`,
      );
      assert.ok(
        sent >= ownBytes && sent < ownBytes + configAllowance,
        `sent ${sent} bytes over SFTP; the agent and shim are ${ownBytes}, the payload ${payloadBytes}`,
      );
      const bootstrapped = host.status?.conditions?.find(
        (c) => c.type === ConditionType.Bootstrapped,
      );
      assert.match(
        bootstrapped!.message,
        /payload pulled by the host from 127\.0\.0\.1:\d+\/winfleet\/payload@sha256:/,
      );
      const pulled = (await eventsOf(host.metadata.name)).find(
        (e) => e.reason === EventReason.PayloadPulled,
      );
      assert.match(pulled!.message!, /pulled 14 payload files \(\d+ bytes\)/);
      const kubelet = first.files.find((f) => f.name === 'kubelet.exe')!;
      assert.equal(await reaching.machine.fs.sha256('C:\\k\\kubelet.exe'), kubelet.sha256);
      assert.equal(
        await reaching.machine.fs.sha256(`${hostPaths.payload}\\kubelet.exe`),
        kubelet.sha256,
        'staged by the pull',
      );
    },
  );

  await t.test('the host that cannot reach it gets the payload pushed, and says so', async () => {
    const { host, sent } = await joinHost(cutOff);
    t.diagnostic(`fallback join: ${sent} bytes over SFTP (payload ${payloadBytes})`);
    assert.ok(
      sent >= payloadBytes && sent < payloadBytes + configAllowance,
      `sent ${sent} bytes over SFTP; the payload is ${payloadBytes}`,
    );
    const bootstrapped = host.status?.conditions?.find(
      (c) => c.type === ConditionType.Bootstrapped,
    );
    assert.match(
      bootstrapped?.message ?? JSON.stringify(host.status),
      /payload pushed over SFTP \(14 files\): the host cannot reach/,
    );
    const fallback = (await eventsOf(host.metadata.name)).find(
      (e) => e.reason === EventReason.PayloadPushFallback,
    );
    assert.equal(fallback?.type, 'Warning');
    assert.match(fallback!.message!, /ECONNREFUSED/);
  });

  await t.test(
    'a new payload: the reaching host pulls it with its node credentials, the other gets it pushed',
    async () => {
      const next = await writeStandInPayload(join(dir, 'next'), {
        kubernetesVersion: 'v1.36.6',
        version: '1.36.6-wf.1',
        sizes,
      });
      const nextReference = await push(next, 'next');
      const before = await bytesSent(operator);
      await operator.stop();
      operator = await startTestOperator(kc, {
        namespace,
        payloadImage: { reference: nextReference, plainHttp: true, cacheDir },
        config,
      });
      const upgraded = await waitFor(
        async () => {
          const list = await listWindowsHosts(kc, namespace);
          return list.length === 2 &&
            list.every((h) => hostReady(h) && h.status?.servicesVersion === next.version)
            ? list
            : undefined;
        },
        { description: `both hosts on ${next.version}`, timeoutMs: 240_000, intervalMs: 1000 },
      );
      const sent = (await bytesSent(operator)) - before;
      t.diagnostic(`upgrade of both: ${sent} bytes over SFTP`);
      // The agent and shim to both, the rest to the host that cannot reach the registry only.
      const expected = 2 * ownBytes + (payloadBytes - ownBytes);
      assert.ok(
        sent >= expected && sent < expected + configAllowance,
        `sent ${sent} bytes over SFTP for the upgrade; expected about ${expected}`,
      );
      for (const host of upgraded) {
        const node = await core.readNode({ name: host.status!.nodeName! });
        assert.equal(node.metadata?.annotations?.[servicesVersionAnnotation], next.version);
      }
      const kubelet = next.files.find((f) => f.name === 'kubelet.exe')!;
      for (const sim of [reaching, cutOff])
        assert.equal(await sim.machine.fs.sha256('C:\\k\\kubelet.exe'), kubelet.sha256);
      const pulls = (await eventsOf(reaching.name.toLowerCase())).filter(
        (e) => e.reason === EventReason.PayloadPulled,
      );
      assert.ok(
        pulls.some((e) => e.message?.includes(`of services ${next.version}`)),
        'the upgrade was pulled',
      );
    },
  );
});
