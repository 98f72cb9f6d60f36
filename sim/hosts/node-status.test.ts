import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kubeletConditions, kubeletConditionsChanged } from './node-status.ts';

const t0 = new Date('2026-11-28T10:00:00Z');
const t1 = new Date('2026-11-28T10:00:10Z');

test('the kubelet’s conditions: pressure False, Ready last, with the kubelet’s reasons', () => {
  const posted = kubeletConditions([], { ready: true }, t0);
  assert.deepEqual(
    posted.map((c) => [c.type, c.status, c.reason]),
    [
      ['MemoryPressure', 'False', 'KubeletHasSufficientMemory'],
      ['DiskPressure', 'False', 'KubeletHasNoDiskPressure'],
      ['PIDPressure', 'False', 'KubeletHasSufficientPID'],
      ['Ready', 'True', 'KubeletReady'],
    ],
  );
  assert.equal(posted[3]!.message, 'kubelet is posting ready status');
  assert.ok(posted.every((c) => c.lastTransitionTime === t0 && c.lastHeartbeatTime === t0));
  const notReady = kubeletConditions(
    [],
    { ready: false, message: 'container runtime is down' },
    t0,
  );
  assert.deepEqual(
    [notReady[3]!.status, notReady[3]!.reason, notReady[3]!.message],
    ['False', 'KubeletNotReady', 'container runtime is down'],
  );
});

test('a heartbeat alone is no change; a status the node controller set Unknown is', () => {
  const posted = kubeletConditions([], { ready: true }, t0);
  const again = kubeletConditions(posted, { ready: true }, t1);
  assert.equal(again[3]!.lastTransitionTime, t0, 'the transition time is kept');
  assert.equal(again[3]!.lastHeartbeatTime, t1);
  assert.equal(kubeletConditionsChanged(posted, again), false);
  // What kube-controller-manager's node lifecycle controller writes for a silent kubelet.
  const unknown = posted.map((c) => ({
    ...c,
    status: 'Unknown',
    reason: 'NodeStatusUnknown',
    message: 'Kubelet stopped posting node status.',
    lastTransitionTime: t1,
  }));
  const back = kubeletConditions(unknown, { ready: true }, t1);
  assert.equal(kubeletConditionsChanged(unknown, back), true);
  assert.deepEqual(
    back.map((c) => [c.type, c.status, c.lastTransitionTime]),
    [
      ['MemoryPressure', 'False', t1],
      ['DiskPressure', 'False', t1],
      ['PIDPressure', 'False', t1],
      ['Ready', 'True', t1],
    ],
  );
  // Times as the API server returns them (strings) compare by instant.
  const fromApi = posted.map((c) => ({
    ...c,
    lastTransitionTime: t0.toISOString() as unknown as Date,
  }));
  assert.equal(
    kubeletConditionsChanged(fromApi, kubeletConditions(fromApi, { ready: true }, t1)),
    false,
  );
});
