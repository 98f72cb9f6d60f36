// joinTiming: when a NotReady Node is left to its agent and when the host is configured again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { HostStatus } from '../../fleet/host-status.ts';
import { joinTiming } from './host-join.ts';

const timeoutMs = 120_000;
const t0 = Date.parse('2026-11-27T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function hostStatus(bootstrappedAt: number | undefined): HostStatus {
  const host: WindowsHost = {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name: 'win-a', namespace: 'winfleet-system', uid: 'u1', generation: 1 },
    spec: { address: '127.0.0.1' },
    status: bootstrappedAt === undefined ? {} : { bootstrappedAt: iso(bootstrappedAt) },
  } as WindowsHost;
  const hs = new HostStatus(host);
  hs.set(ConditionType.NodeRegistered, 'True', ConditionReason.NodeExists, 'Node win-a');
  return hs;
}

function notReadyNode(since: number): k8s.V1Node {
  return {
    metadata: { name: 'win-a', creationTimestamp: new Date(t0 - 3_600_000) },
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'KubeletNotReady',
          lastTransitionTime: new Date(since),
        },
      ],
    },
  };
}

test('a NotReady Node after a bootstrap that succeeded is left to its agent for the join timeout', () => {
  const hs = hostStatus(t0);
  hs.set(ConditionType.Bootstrapped, 'True', ConditionReason.AgentBootstrapped, 'ok');
  const node = notReadyNode(t0 + 10_000);
  assert.equal(joinTiming(hs, node, timeoutMs, t0 + 60_000).leaveToAgent, true);
  // The join timeout counts from the later of the bootstrap and the Node going NotReady.
  assert.equal(joinTiming(hs, node, timeoutMs, t0 + 125_000).leaveToAgent, true);
  assert.equal(joinTiming(hs, node, timeoutMs, t0 + 131_000).leaveToAgent, false);
});

test('after a bootstrap that failed (a reboot dropped the connection), the host is configured again, not waited for', () => {
  const hs = hostStatus(t0);
  hs.set(
    ConditionType.Bootstrapped,
    'False',
    ConditionReason.StepFailed,
    'agent-bootstrap: The connection dropped',
  );
  const timing = joinTiming(hs, notReadyNode(t0 + 10_000), timeoutMs, t0 + 20_000);
  assert.equal(timing.leaveToAgent, false);
  // A Node registered already: nothing to wait for before bootstrapping again.
  assert.equal(timing.waitingForNode, false);
});

test('no Node: nothing is left to an agent; a fresh bootstrap waits for the Node to register', () => {
  const hs = hostStatus(t0);
  hs.set(ConditionType.NodeRegistered, 'False', ConditionReason.Joining, '');
  const timing = joinTiming(hs, undefined, timeoutMs, t0 + 5_000);
  assert.deepEqual(timing, {
    recentlyBootstrapped: true,
    waitingForNode: true,
    leaveToAgent: false,
  });
  const late = joinTiming(hs, undefined, timeoutMs, t0 + 121_000);
  assert.deepEqual(late, {
    recentlyBootstrapped: false,
    waitingForNode: false,
    leaveToAgent: false,
  });
});
