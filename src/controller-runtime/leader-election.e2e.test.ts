import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { sharedCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import {
  acquireLeadership,
  type LeaderElectionOptions,
} from '../controller-runtime/leader-election.ts';
import { loadKubeConfig } from '../kube/client.ts';
import { waitFor } from '../kube/wait-for.ts';
import { silentLogger } from '../log/logger.ts';

const leaseName = 'winfleet-operator';

/** One replica's elector, stopped when the test ends (also when it fails). */
function elector(
  t: TestContext,
  kc: k8s.KubeConfig,
  namespace: string,
  identity: string,
  options: Partial<LeaderElectionOptions> = {},
) {
  const controller = new AbortController();
  t.after(() => controller.abort());
  let leads = false;
  const leadership = acquireLeadership(
    kc,
    {
      namespace,
      name: leaseName,
      identity,
      log: silentLogger,
      signal: controller.signal,
      ...options,
    },
    () => {},
  ).then((l) => {
    leads = true;
    return l;
  });
  return {
    leadership,
    leads: () => leads,
    /** Stops it and waits until renewal stopped (and the lease was released, if it does). */
    async stop() {
      controller.abort();
      await (await leadership).stopped;
    },
  };
}

test('one replica leads; the other takes over once the leader stops renewing', async (t) => {
  const { kc } = await sharedCluster();
  const namespace = await testNamespace(kc, 'lease');
  // releaseOnCancel false: a stops as a killed replica would, leaving the lease to expire.
  const timing = {
    leaseDurationMs: 2000,
    renewDeadlineMs: 1500,
    retryPeriodMs: 200,
    releaseOnCancel: false,
  };
  const first = elector(t, kc, namespace, 'a', timing);
  await first.leadership;
  const secondStartedAt = Date.now();
  const second = elector(t, kc, namespace, 'b', timing);
  // The positive signal: the lease is renewed past the moment b, retrying every 200 ms, would
  // have taken over a lease that nobody renewed — and its holder is still a.
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const lease = await waitFor(
    async () => {
      const l = await coordination.readNamespacedLease({ name: leaseName, namespace });
      const renewed = l.spec?.renewTime ? new Date(l.spec.renewTime).getTime() : 0;
      return renewed > secondStartedAt + timing.leaseDurationMs + timing.retryPeriodMs && l;
    },
    { description: 'the lease to be renewed after b could have taken it over', intervalMs: 100 },
  );
  assert.equal(lease.spec?.holderIdentity, 'a', 'b waits while a keeps renewing');
  assert.equal(second.leads(), false, 'b waits while a keeps renewing');
  await first.stop(); // a stops renewing (as a killed replica would)
  const expired = await coordination.readNamespacedLease({ name: leaseName, namespace });
  assert.equal(expired.spec?.holderIdentity, 'a', 'a did not release the lease');
  await second.leadership;
  assert.equal(second.leads(), true, 'b leads after the lease expired');
  await second.stop();
});

test('a stopped leader releases the lease, and a waiting replica takes it over at once', async (t) => {
  const { kc } = await sharedCluster();
  const namespace = await testNamespace(kc, 'lease-release');
  // An hour-long lease: b can only get it before the test times out through the release.
  const timing = { leaseDurationMs: 3_600_000, renewDeadlineMs: 1_800_000, retryPeriodMs: 200 };
  const first = elector(t, kc, namespace, 'a', timing);
  await first.leadership;

  // Every write to the lease from here on, in order.
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const acquired = await coordination.readNamespacedLease({ name: leaseName, namespace });
  assert.equal(acquired.spec?.holderIdentity, 'a');
  const seen: k8s.V1LeaseSpec[] = [];
  const watch = await new k8s.Watch(kc).watch(
    `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
    {
      resourceVersion: acquired.metadata?.resourceVersion,
      fieldSelector: `metadata.name=${leaseName}`,
    },
    (_phase, lease: k8s.V1Lease) => {
      if (lease.spec) seen.push(lease.spec);
    },
    () => {},
  );
  try {
    const second = elector(t, kc, namespace, 'b', timing);
    await first.stop();

    await waitFor(() => second.leads(), {
      description: 'b to take over the released lease (only a release lets it within an hour)',
      timeoutMs: 30_000,
    });
    await waitFor(() => seen.some((s) => s.holderIdentity === 'b'), {
      description: "the watch to show b's lease",
    });
    const holders = [acquired.spec ?? {}, ...seen]
      .map((s) => s.holderIdentity ?? '')
      .filter((holder, i, all) => i === 0 || holder !== all[i - 1]);
    assert.deepEqual(holders.slice(-3), ['a', '', 'b'], 'a, then nobody, then b held the lease');
    const released = seen.find((s) => (s.holderIdentity ?? '') === '');
    assert.ok(released, 'the lease was released');
    assert.equal(released.leaseDurationSeconds, 1, 'a released lease lasts one second');
    assert.equal(
      released.leaseTransitions,
      acquired.spec?.leaseTransitions,
      'a release is no transition',
    );
    assert.ok(
      new Date(released.renewTime as unknown as string).getTime() >=
        new Date(acquired.spec?.renewTime as unknown as string).getTime(),
      'the release renewed the lease as of its time',
    );
    const taken = seen.find((s) => s.holderIdentity === 'b');
    assert.equal(taken?.leaseTransitions, (acquired.spec?.leaseTransitions ?? 0) + 1);
    assert.equal(taken?.leaseDurationSeconds, 3600);

    await second.stop();
    const last = await coordination.readNamespacedLease({ name: leaseName, namespace });
    assert.equal(last.spec?.holderIdentity, '', 'b released it too');
  } finally {
    watch.abort();
  }
});

test('a stopped replica does not release a lease another replica took over', async (t) => {
  const { kc } = await sharedCluster();
  const namespace = await testNamespace(kc, 'lease-taken');
  const timing = { leaseDurationMs: 3_600_000, renewDeadlineMs: 1_800_000, retryPeriodMs: 200 };
  const first = elector(t, kc, namespace, 'a', timing);
  await first.leadership;
  // c takes the lease over (as after a partition in which a's lease expired).
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  await waitFor(
    async () => {
      const current = await coordination.readNamespacedLease({ name: leaseName, namespace });
      await coordination.replaceNamespacedLease({
        name: leaseName,
        namespace,
        body: {
          metadata: current.metadata,
          spec: { ...current.spec, holderIdentity: 'c' },
        },
      });
      return true;
    },
    { description: 'c to take the lease over (retried on a conflict with a renewal)' },
  );
  await first.stop();
  const after = await coordination.readNamespacedLease({ name: leaseName, namespace });
  assert.equal(after.spec?.holderIdentity, 'c', "a's stop left c's lease alone");
  assert.equal(after.spec?.leaseDurationSeconds, 3600);
});

test('a leader renews by writing the lease it last wrote, without reading it', async (t) => {
  const { kc: shared, kubeconfigPath } = await sharedCluster();
  const namespace = await testNamespace(shared, 'lease-renew');
  // The elector's own client, so that its counter holds its requests only.
  const kc = loadKubeConfig(kubeconfigPath);
  t.after(() => kc.close());
  const timing = { leaseDurationMs: 3_600_000, renewDeadlineMs: 1_800_000, retryPeriodMs: 100 };
  const leader = elector(t, kc, namespace, 'a', timing);
  await leader.leadership;
  const before = await kc.requests.counts();
  const delta = async (key: string) =>
    ((await kc.requests.counts())[key] ?? 0) - (before[key] ?? 0);
  await waitFor(async () => (await delta('update leases 200')) >= 5, {
    description: 'five renewals of the lease',
  });
  assert.equal(await delta('get leases 200'), 0, 'no renewal read the lease');
  await leader.stop();
  const after = await kc.requests.counts();
  assert.equal(
    Object.keys(after).filter((k) => k.startsWith('get leases') && after[k] !== before[k]).length,
    0,
    'the release wrote over the lease as last written, without reading it',
  );
});
