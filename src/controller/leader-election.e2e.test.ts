import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sharedCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
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
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal(secondLeads, false, 'b waits while a keeps renewing');
  first.abort(); // a stops renewing (as a killed replica would)
  await secondTry;
  assert.equal(secondLeads, true, 'b leads after the lease expired');
  second.abort();
});
