import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { sharedCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { waitFor } from '../kube/wait-for.ts';
import { silentLogger } from '../log/logger.ts';
import { acquireLeadership } from './leader-election.ts';

test('one replica leads; the other takes over once the leader stops renewing', async () => {
  const { kc } = await sharedCluster();
  const namespace = await testNamespace(kc, 'lease');
  const timing = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 200 };
  const first = new AbortController();
  await acquireLeadership(
    kc,
    {
      namespace,
      name: 'winfleet-operator',
      identity: 'a',
      log: silentLogger,
      signal: first.signal,
      ...timing,
    },
    () => {},
  );
  const second = new AbortController();
  const secondStartedAt = Date.now();
  let secondLeads = false;
  const secondTry = acquireLeadership(
    kc,
    {
      namespace,
      name: 'winfleet-operator',
      identity: 'b',
      log: silentLogger,
      signal: second.signal,
      ...timing,
    },
    () => {},
  ).then(() => {
    secondLeads = true;
  });
  // The positive signal: the lease is renewed past the moment b, retrying every 200 ms, would
  // have taken over a lease that nobody renewed — and its holder is still a.
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const lease = await waitFor(
    async () => {
      const l = await coordination.readNamespacedLease({ name: 'winfleet-operator', namespace });
      const renewed = l.spec?.renewTime ? new Date(l.spec.renewTime).getTime() : 0;
      return renewed > secondStartedAt + timing.leaseDurationMs + timing.retryPeriodMs && l;
    },
    { description: 'the lease to be renewed after b could have taken it over', intervalMs: 100 },
  );
  assert.equal(lease.spec?.holderIdentity, 'a', 'b waits while a keeps renewing');
  assert.equal(secondLeads, false, 'b waits while a keeps renewing');
  first.abort(); // a stops renewing (as a killed replica would)
  await secondTry;
  assert.equal(secondLeads, true, 'b leads after the lease expired');
  second.abort();
});
