import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { cordonedByAnnotation } from '../../api/node-annotations.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { healthHost, mergeHealthDegraded, remediationNodePatch } from './pool-remediation.ts';

const node = (annotations: Record<string, string> = {}, unschedulable?: boolean): k8s.V1Node => ({
  metadata: { name: 'simwin-1', annotations },
  spec: unschedulable ? { unschedulable } : {},
  status: {
    conditions: [
      {
        type: 'Ready',
        status: 'Unknown',
        lastTransitionTime: new Date('2026-11-23T04:00:00Z'),
        reason: 'NodeStatusUnknown',
      },
    ],
  },
});

const host = (extra: Partial<WindowsHost> = {}): WindowsHost =>
  ({
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { namespace: 'ns', name: 'h1', ...extra.metadata },
    spec: { address: '127.0.0.2' },
    status: {
      bootstrappedAt: '2026-11-23T03:00:00Z',
      lastError: { step: 'AgentBootstrap', message: 'refused', time: '2026-11-23T03:30:00Z' },
      ...extra.status,
    },
  }) as WindowsHost;

test('healthHost reads the Node conditions with their times as text, and the bootstrap error', () => {
  const h = healthHost('ns/h1', host(), node());
  assert.deepEqual(h.node, {
    name: 'simwin-1',
    conditions: [
      {
        type: 'Ready',
        status: 'Unknown',
        lastTransitionTime: '2026-11-23T04:00:00.000Z',
        reason: 'NodeStatusUnknown',
      },
    ],
  });
  assert.deepEqual(h.bootstrapError, { time: '2026-11-23T03:30:00Z', message: 'refused' });
  assert.equal(h.cordonedByRemediation, false);
  assert.equal(h.skipRemediation, false);
  assert.deepEqual(h.status, {});
});

test('only the remediation value of cordoned-by, with the ladder’s record, counts as remediation’s cordon', () => {
  const recorded = host({ status: { remediation: { cordoned: true } } } as never);
  assert.equal(
    healthHost('ns/h1', recorded, node({ [cordonedByAnnotation]: 'remediation' }))
      .cordonedByRemediation,
    true,
  );
  // Attacker's side: the node (or a patch-nodes principal) marks an admin's cordon as
  // remediation's; without the ladder's record in status it is not, and is never lifted.
  assert.equal(
    healthHost('ns/h1', host(), node({ [cordonedByAnnotation]: 'remediation' }, true))
      .cordonedByRemediation,
    false,
  );
  assert.equal(
    healthHost('ns/h1', host(), node({ [cordonedByAnnotation]: 'winfleet' })).cordonedByRemediation,
    false,
  );
  const skip = host({ metadata: { annotations: { 'winfleet.io/skip-remediation': '' } } } as never);
  assert.equal(healthHost('ns/h1', skip, node()).skipRemediation, true);
});

test('remediation lifts only its own cordon, and takes over the rollout’s when it fails', () => {
  assert.equal(
    remediationNodePatch({ kind: 'uncordon' }, node({ [cordonedByAnnotation]: 'winfleet' }, true)),
    undefined,
    'the rollout’s cordon is not remediation’s to lift',
  );
  assert.equal(remediationNodePatch({ kind: 'uncordon' }, node({}, true)), undefined, 'a person’s');
  assert.deepEqual(
    remediationNodePatch(
      { kind: 'uncordon' },
      node({ [cordonedByAnnotation]: 'remediation' }, true),
    ),
    { spec: { unschedulable: null }, metadata: { annotations: { [cordonedByAnnotation]: null } } },
  );
  const rolloutCordoned = host({ status: { rollout: { cordoned: 'simwin-1' } } } as never);
  assert.deepEqual(
    remediationNodePatch(
      { kind: 'cordon' },
      node({ [cordonedByAnnotation]: 'winfleet' }, true),
      rolloutCordoned,
    ),
    {
      spec: { unschedulable: true },
      metadata: { annotations: { [cordonedByAnnotation]: 'remediation' } },
    },
  );
  // A cordon marked "winfleet" without the rollout's record (a node wrote it on an admin's
  // cordon), or a person's: not taken over, so never lifted when the host heals.
  assert.equal(
    remediationNodePatch(
      { kind: 'cordon' },
      node({ [cordonedByAnnotation]: 'winfleet' }, true),
      host(),
    ),
    undefined,
  );
  assert.equal(remediationNodePatch({ kind: 'cordon' }, node({}, true), host()), undefined);
  assert.deepEqual(remediationNodePatch({ kind: 'cordon' }, node({}), host()), {
    spec: { unschedulable: true },
    metadata: { annotations: { [cordonedByAnnotation]: 'remediation' } },
  });
  assert.equal(
    remediationNodePatch({ kind: 'cordon' }, node({ [cordonedByAnnotation]: 'remediation' }, true)),
    undefined,
  );
  assert.equal(remediationNodePatch({ kind: 'rebootstrap', requestedAt: 'x' }, node()), undefined);
});

test('health’s Degraded joins the rollout’s conditions', () => {
  const base = [
    { type: 'Available', status: 'True' as const, reason: 'AsExpected', message: '' },
    { type: 'Degraded', status: 'False' as const, reason: 'AsExpected', message: '' },
  ];
  const health = { reason: 'TooManyUnhealthy', message: '3 of 5 hosts are unhealthy' };
  assert.deepEqual(mergeHealthDegraded(base, undefined), base);
  assert.deepEqual(mergeHealthDegraded(base, health)[1], {
    type: 'Degraded',
    status: 'True',
    reason: 'TooManyUnhealthy',
    message: '3 of 5 hosts are unhealthy',
  });
  const stuck = [
    {
      type: 'Degraded',
      status: 'True' as const,
      reason: 'RebootTimedOut',
      message: 'h2 did not come back',
    },
  ];
  assert.deepEqual(mergeHealthDegraded(stuck, health), [
    {
      type: 'Degraded',
      status: 'True',
      reason: 'RebootTimedOut',
      message: 'h2 did not come back; 3 of 5 hosts are unhealthy',
    },
  ]);
});
