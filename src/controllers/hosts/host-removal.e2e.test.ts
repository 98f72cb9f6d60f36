/**
 * Removal that finishes, and says why when it cannot. A WindowsHost that never got anything
 * from winfleet needs no SSH: a host that was never reachable, or whose key Secret never
 * existed, is deleted at once instead of waiting for a connection that cannot come. A joined
 * host's removal refuses to evict a bare pod (as `kubectl drain` does) and names it until the
 * user opts in, then records the eviction; a joined host that went away (or whose evicted pod
 * never finishes terminating) says, after hosts.removalTimeoutSeconds, which annotation
 * finishes the removal.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { freePort } from '../../../sim/cluster/free-port.ts';
import { joinWorld } from '../../../sim/testkit/join-fixture.ts';
import { testNamespace } from '../../../sim/testkit/test-cluster.ts';
import { startTestOperator } from '../../../sim/testkit/test-operator.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
  windowsHostFor,
} from '../../../sim/testkit/windows-hosts.ts';
import { ConditionReason, ConditionType, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { drainUnmanagedPodsAnnotation } from '../../api/windows-host.ts';
import { isNotFound } from '../../kube/client.ts';
import { waitFor } from '../../kube/wait-for.ts';
import { createLogger } from '../../log/logger.ts';
import { skipDeconfigureAnnotation } from './host-removal.ts';

test('a host that never joined is removed without SSH', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const objects = k8s.KubernetesObjectApi.makeApiClient(world.kc);
  const closedPort = await freePort();
  const unreachable = windowsHostFor(
    { name: 'never-reached', address: '127.0.0.1', port: closedPort },
    world.namespace,
  );
  const noSecret = windowsHostFor(
    { name: 'no-secret', address: '127.0.0.1', port: closedPort },
    world.namespace,
    { sshKeySecretRef: { name: 'does-not-exist' } },
  );
  for (const host of [unreachable, noSecret]) await objects.create(host);

  // The operator has looked at both (each has a Reachable condition), so each carries the
  // finalizer and its join has failed at least once.
  await waitFor(
    async () => {
      const hosts = await listWindowsHosts(world.kc, world.namespace);
      return (
        hosts.length === 2 &&
        hosts.every(
          (h) =>
            h.metadata.finalizers?.length &&
            h.status?.conditions?.some((c) => c.type === ConditionType.Reachable),
        )
      );
    },
    { description: 'both hosts to be tried', timeoutMs: 60_000 },
  );
  for (const host of await listWindowsHosts(world.kc, world.namespace)) {
    assert.equal(host.status?.bootstrapTokenId, undefined);
    await objects.delete(host);
  }
  // SSH backoff is minutes long; without the rule both would still be here.
  await waitFor(
    async () => {
      for (const host of [unreachable, noSecret]) {
        try {
          await objects.read<WindowsHost>(host);
          return false;
        } catch (error) {
          if (!isNotFound(error)) throw error;
        }
      }
      return true;
    },
    { description: 'both hosts to be gone', timeoutMs: 20_000 },
  );
});

test('removal refuses a bare pod until allowed, and says how to finish without a host that went away', async (t) => {
  const world = await joinWorld(t, {
    releases: ['2022', '2022', '2022'],
    config: {
      hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120, removalTimeoutSeconds: 3 },
    },
  });
  const { kc } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const joined = await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, world.namespace);
      return list.length === 3 && list.every(hostReady) ? list : undefined;
    },
    { description: 'the hosts Ready', timeoutMs: 90_000 },
  );
  const byName = (name: string) =>
    listWindowsHosts(kc, world.namespace).then((l) => l.find((h) => h.metadata.name === name));
  const readyCondition = async (name: string, reason: ConditionReason) => {
    const c = (await byName(name))?.status?.conditions?.find((x) => x.type === ConditionType.Ready);
    return c?.reason === reason ? c : undefined;
  };
  const eventsOf = async (name: string, reason: EventReason) =>
    (await core.listNamespacedEvent({ namespace: world.namespace })).items.filter(
      (e) => e.involvedObject.name === name && e.reason === reason,
    );
  const annotate = (host: WindowsHost, key: string) =>
    objects.patch(
      {
        ...host,
        metadata: {
          name: host.metadata.name,
          namespace: host.metadata.namespace,
          annotations: { [key]: 'true' },
        },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      k8s.PatchStrategy.MergePatch,
    );
  const gone = (name: string) =>
    waitFor(async () => (await byName(name)) === undefined, {
      description: `WindowsHost ${name} removed`,
      timeoutMs: 60_000,
    });

  await t.test(
    'a bare pod blocks the drain, named, until the host allows evicting it',
    async () => {
      const host = joined[0]!;
      const name = host.metadata.name;
      const nodeName = host.status!.nodeName!;
      const namespace = await testNamespace(kc, 'bare');
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'bare' },
          spec: {
            nodeSelector: { 'kubernetes.io/hostname': nodeName },
            tolerations: [{ key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' }],
            containers: [{ name: 'app', image: 'mcr.microsoft.com/windows/nanoserver:ltsc2022' }],
          },
        },
      });
      await waitFor(
        async () =>
          (await core.readNamespacedPod({ name: 'bare', namespace })).status?.phase === 'Running',
        { description: 'the bare pod running', timeoutMs: 60_000 },
      );
      await objects.delete(host);
      const blocked = await waitFor(() => readyCondition(name, ConditionReason.UnmanagedPods), {
        description: 'the removal to name the bare pod',
        timeoutMs: 30_000,
      });
      t.diagnostic(`UnmanagedPods: ${blocked.message}`);
      assert.match(blocked.message, new RegExp(`${namespace}/bare`));
      assert.match(
        blocked.message,
        new RegExp(
          `kubectl annotate windowshost ${name} -n ${world.namespace} ${drainUnmanagedPodsAnnotation}=true`,
        ),
      );
      const warning = await waitFor(
        async () => (await eventsOf(name, EventReason.UnmanagedPods))[0],
        { description: 'the UnmanagedPods Event', timeoutMs: 10_000 },
      );
      assert.equal(warning.type, 'Warning');
      assert.match(warning.message ?? '', new RegExp(`${namespace}/bare`));
      const pod = await core.readNamespacedPod({ name: 'bare', namespace });
      assert.equal(pod.metadata?.deletionTimestamp, undefined, 'the bare pod was not evicted');

      await annotate((await byName(name))!, drainUnmanagedPodsAnnotation);
      await gone(name);
      const evicted = await eventsOf(name, EventReason.PodEvicted);
      assert.ok(
        evicted.some((e) => (e.message ?? '').includes(`${namespace}/bare`)),
        `an Event names the evicted pod: ${JSON.stringify(evicted.map((e) => e.message))}`,
      );
    },
  );

  /** Deletes the host (its SSH server stopped) and checks the RemovalBlocked report. */
  const removeUnreachable = async (host: WindowsHost, expected: RegExp) => {
    const name = host.metadata.name;
    await world.fleet.hosts.find((h) => h.name.toLowerCase() === name)!.stop();
    await objects.delete(host);
    const blocked = await waitFor(() => readyCondition(name, ConditionReason.RemovalBlocked), {
      description: 'the removal to say it is blocked',
      timeoutMs: 60_000,
    });
    t.diagnostic(`RemovalBlocked: ${blocked.message}`);
    assert.match(blocked.message, expected);
    assert.match(
      blocked.message,
      new RegExp(
        `kubectl annotate windowshost ${name} -n ${world.namespace} ${skipDeconfigureAnnotation}=true`,
      ),
    );
    const warning = await waitFor(
      async () => (await eventsOf(name, EventReason.RemovalBlocked))[0],
      { description: 'the RemovalBlocked Event', timeoutMs: 10_000 },
    );
    assert.equal(warning.type, 'Warning');
    await annotate((await byName(name))!, skipDeconfigureAnnotation);
    await gone(name);
    assert.equal(
      (await core.listNode()).items.some((n) => n.metadata?.name === host.status!.nodeName),
      false,
      'the Node is deleted too',
    );
  };

  await t.test('a joined host that went away says which annotation finishes its removal', () =>
    removeUnreachable(joined[1]!, /cannot remove winfleet from .*Cannot reach/),
  );

  await t.test(
    'a pod that never finishes terminating does not hold the removal forever',
    async () => {
      const host = joined[2]!;
      const nodeName = host.status!.nodeName!;
      const namespace = await testNamespace(kc, 'stuck');
      await kc.makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({
        namespace,
        body: {
          metadata: { name: 'web' },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: 'web' } },
            template: {
              metadata: { labels: { app: 'web' } },
              spec: {
                nodeSelector: { 'kubernetes.io/hostname': nodeName },
                tolerations: [
                  { key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' },
                ],
                containers: [
                  { name: 'app', image: 'mcr.microsoft.com/windows/nanoserver:ltsc2022' },
                ],
              },
            },
          },
        },
      });
      const pod = await waitFor(
        async () =>
          (await core.listNamespacedPod({ namespace })).items.find(
            (p) => p.status?.phase === 'Running',
          ),
        { description: 'the web pod running', timeoutMs: 60_000 },
      );
      // A finalizer stands in for a kubelet that is gone: the evicted pod stays Terminating.
      const podName = pod.metadata!.name!;
      const hold = (finalizers: string[] | null) =>
        core.patchNamespacedPod(
          { name: podName, namespace, body: { metadata: { finalizers } } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        );
      await hold(['winfleet.io/test-hold']);
      t.after(() => hold(null).catch(() => {}));
      await removeUnreachable(
        host,
        new RegExp(`pods ${namespace}/${podName} have not finished terminating`),
      );
    },
  );
});

test('a session the host drops mid-cleanup (the HNS network removal resets its adapter) is run again, not a failure', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'], startOperator: false });
  const lines: string[] = [];
  const operator = await startTestOperator(world.kc, {
    namespace: world.namespace,
    payloadDir: world.payloadDir,
    config: { hosts: { agentCheckIntervalSeconds: 1, joinTimeoutSeconds: 120 } },
    log: createLogger({ level: 'info', write: (line) => lines.push(line) }),
  });
  t.after(() => operator.stop());
  const simulated = world.fleet.hosts[0]!;
  const before = await simulated.machine.snapshot();
  const [created] = await createWindowsHosts(world.kc, world.namespace, world.fleet.hosts);
  const joined = await waitFor(
    async () => {
      const [host] = await listWindowsHosts(world.kc, world.namespace);
      return host && hostReady(host) ? host : undefined;
    },
    { description: 'the host Ready', timeoutMs: 90_000 },
  ).catch(async (error: unknown) => {
    const [host] = await listWindowsHosts(world.kc, world.namespace);
    throw new Error(
      `${(error as Error).message}; the host's status: ${JSON.stringify(host?.status)}`,
    );
  });
  // The network the CNI creates for the node's pods binds the host's adapter to a switch.
  simulated.machine.hns.ensure('winfleet', 'L2Bridge');
  let drops = 0;
  simulated.machine.onNetworkReset(() => drops++);
  const logged = lines.length;
  await k8s.KubernetesObjectApi.makeApiClient(world.kc).delete(joined);
  await waitFor(
    async () =>
      (await listWindowsHosts(world.kc, world.namespace)).every(
        (h) => h.metadata.name !== created!.metadata.name,
      ),
    { description: 'the WindowsHost removed', timeoutMs: 60_000 },
  );
  assert.equal(drops, 1, 'removing the network reset the adapter and dropped the session');
  const records = lines.slice(logged).map((l) => JSON.parse(l) as { level: string; msg: string });
  assert.deepEqual(
    records.filter((r) => r.level === 'warn' || r.level === 'error').map((r) => r.msg),
    [],
    'a dropped session during cleanup is no failure',
  );
  assert.ok(
    records.some((r) => r.msg === 'host dropped the SSH session during cleanup; running it again'),
    'the cleanup ran again over a new session',
  );
  const events = await world.kc
    .makeApiClient(k8s.CoreV1Api)
    .listNamespacedEvent({ namespace: world.namespace });
  assert.deepEqual(
    events.items
      .filter((e) => e.involvedObject.name === created!.metadata.name && e.type === 'Warning')
      .map((e) => `${e.reason}: ${e.message}`),
    [],
  );
  assert.deepEqual(await simulated.machine.snapshot(), before, 'nothing of winfleet left');
});
