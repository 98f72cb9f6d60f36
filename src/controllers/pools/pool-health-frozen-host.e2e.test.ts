/**
 * Silence as the cluster sees it (issue 32): a simulated host whose processes are frozen
 * (SIGSTOP of the process that simulates it, a hung machine) leaves its Node to
 * kube-controller-manager's node lifecycle controller, which marks it Ready=Unknown
 * ("NodeStatusUnknown") once its grace period passes without a Lease renewal or a status post;
 * nothing else turns it Ready again while it is frozen (kwok plays the Node's pods only), so
 * winfleet sees a host that stays unhealthy and starts its ladder. Resumed, the kubelet posts
 * Ready itself and the ladder ends. A second host, in-process, stays Ready throughout: its
 * kubelet's own status posts keep it so.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { startHostProcess } from '../../../sim/testkit/host-process.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { nodeConditions } from '../../../sim/testkit/node-conditions.ts';
import { createPool, labelHosts, readPool } from '../../../sim/testkit/pools.ts';
import {
  createWindowsHosts,
  readWindowsHost,
  waitForReadyHosts,
  windowsHostFor,
} from '../../../sim/testkit/windows-hosts.ts';
import { EventReason } from '../../api/reasons.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { hostPaths } from '../../servicesmanifest/host-paths.ts';

/** kube-controller-manager --node-monitor-grace-period here (its default 50 s). */
const graceSeconds = 20;

test('a frozen host: the node controller marks its Node Unknown, it stays so, winfleet starts its ladder; resumed, its kubelet posts Ready', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022'],
    cluster: { scale: { nodeMonitorGracePeriodSeconds: graceSeconds } },
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const frozen = await startHostProcess({ authorizedKey: world.key.publicKey });
  t.after(() => frozen.stop());
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  await objects.create(windowsHostFor(frozen.host, world.namespace));
  const joined = await waitForReadyHosts(kc, world.namespace, 2);
  const hostName = frozen.host.name.toLowerCase();
  const nodeName = joined.find((h) => h.metadata.name === hostName)!.status!.nodeName!;
  const otherNode = joined.find((h) => h.metadata.name !== hostName)!.status!.nodeName!;
  await labelHosts(kc, world.namespace, { pool: 'f' });
  await createPool(kc, world.namespace, 'f', {
    selector: { matchLabels: { pool: 'f' } },
    maxUnavailable: 1,
    health: {
      unhealthyConditions: [
        { type: 'Ready', status: 'Unknown', timeout: '10s' },
        { type: 'Ready', status: 'False', timeout: '10s' },
      ],
      maxUnhealthy: 1,
      remediation: { restartServiceTimeout: '5m', rebootstrapTimeout: '5m', rebootTimeout: '5m' },
    },
  });
  await waitFor(async () => (await readPool(kc, world.namespace, 'f')).status?.readyHosts === 2, {
    description: 'the pool counting its 2 Ready hosts',
  });
  const { condition, until, measured } = nodeConditions(core, nodeName, t);
  const ready = (await condition('Ready'))!;
  assert.deepEqual(
    [ready.status, ready.reason, ready.message],
    ['True', 'KubeletReady', 'kubelet is posting ready status'],
    'the kubelet stand-in posts its own Ready',
  );

  frozen.freeze();
  const frozenAt = Date.now();
  const unknown = await until('Ready', 'Unknown', 180_000);
  measured('host frozen → Ready=Unknown', unknown.seconds);
  // The node lifecycle controller's words (pkg/controller/nodelifecycle tryUpdateNodeHealth),
  // and its field manager on the Node's status: neither winfleet nor the test wrote it.
  assert.deepEqual(
    [unknown.c.reason, unknown.c.message],
    ['NodeStatusUnknown', 'Kubelet stopped posting node status.'],
  );
  const node = await core.readNode({ name: nodeName });
  const statusWriters = (node.metadata?.managedFields ?? [])
    .filter(
      (f) =>
        f.subresource === 'status' &&
        JSON.stringify(f.fieldsV1).includes('"k:{\\"type\\":\\"Ready\\"}"'),
    )
    .map((f) => f.manager);
  assert.ok(
    statusWriters.includes('kube-controller-manager'),
    `Ready written by ${statusWriters.join(', ')}`,
  );
  assert.ok(
    node.spec?.taints?.some((x) => x.key === 'node.kubernetes.io/unreachable'),
    'the node controller tainted it unreachable',
  );

  // winfleet's reaction: Ready=Unknown held past the pool's 10 s, so the host is unhealthy and
  // its ladder starts. (Before issue 32 kwok turned the Node Ready again at once, every time.)
  const ladder = await waitFor(
    async () => (await readWindowsHost(kc, world.namespace, hostName)).status?.remediation?.current,
    { description: 'the ladder started on the frozen host', timeoutMs: 120_000, intervalMs: 500 },
  );
  measured('host frozen → ladder started', (Date.now() - frozenAt) / 1000);
  assert.deepEqual([ladder.problem.type, ladder.problem.status], ['Ready', 'Unknown']);
  assert.equal(ladder.rung, 'RestartService');
  const events = await core.listNamespacedEvent({
    namespace: world.namespace,
    fieldSelector: `involvedObject.name=${hostName},reason=${EventReason.HostUnhealthy}`,
  });
  assert.match(events.items[0]?.message ?? '', /Ready=Unknown/);
  const still = (await condition('Ready'))!;
  assert.equal(still.status, 'Unknown', 'nothing turned the frozen Node Ready');
  assert.equal(
    new Date(still.lastTransitionTime!).getTime(),
    new Date(unknown.c.lastTransitionTime!).getTime(),
    'Unknown since the node controller set it, without a flap',
  );
  const otherConditions = (await core.readNode({ name: otherNode })).status?.conditions ?? [];
  const other = otherConditions.find((c) => c.type === 'Ready');
  assert.equal(other?.status, 'True', 'the other host, whose kubelet posts, stays Ready');
  // Its agent reads the kubelet's client certificate where the kubelet keeps it (--cert-dir)
  // and gives its expiry (issue 32: False with the expiry on every Windows Node).
  const pem = await world.fleet.hosts[0]!.machine.fs.readFile(hostPaths.kubeletClientCertificate);
  const notAfter = new X509Certificate(pem.toString('utf8')).validTo;
  const expiring = otherConditions.find((c) => c.type === 'KubeletCertificateExpiring');
  assert.deepEqual(
    [expiring?.status, expiring?.message],
    [
      'False',
      `The kubelet's client certificate is valid until ${new Date(notAfter).toISOString().replace('.000Z', 'Z')}`,
    ],
  );

  // Resumed: the kubelet sees its Node differ from what it would post, and posts Ready.
  frozen.resume();
  const back = await until('Ready', 'True', 120_000);
  measured('host resumed → Ready=True', back.seconds);
  assert.equal(back.c.reason, 'KubeletReady');
  await waitFor(
    async () => {
      const r = (await readWindowsHost(kc, world.namespace, hostName)).status?.remediation;
      return r && !r.current ? r : undefined;
    },
    { description: 'the ladder ended once the host was back', timeoutMs: 180_000, intervalMs: 500 },
  );
});
