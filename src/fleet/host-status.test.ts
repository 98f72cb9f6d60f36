import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConditionReason, ConditionType } from '../api/reasons.ts';
import type { WindowsHost } from '../api/windows-host.ts';
import { HostStatus, rebaseConditions } from './host-status.ts';

/** A Ready host as the API server returns it: every object's keys in sorted order. */
function readyHostFromApi(): WindowsHost {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name: 'h', namespace: 'ns', generation: 1 },
    spec: { address: '127.0.0.1' },
    status: {
      conditions: [
        {
          lastTransitionTime: '2026-01-01T00:00:00Z',
          message: 'Node n is Ready with services v1',
          observedGeneration: 1,
          reason: ConditionReason.NodeReady,
          status: 'True',
          type: ConditionType.Ready,
        },
      ],
      nodeName: 'n',
      servicesVersion: 'v1',
    },
  } as unknown as WindowsHost;
}

test('a pass that sets what the API server already holds changes nothing, whatever the key order', () => {
  const hs = new HostStatus(readyHostFromApi());
  hs.set(
    ConditionType.Ready,
    'True',
    ConditionReason.NodeReady,
    'Node n is Ready with services v1',
  );
  hs.status.servicesVersion = 'v1';
  assert.equal(hs.changed(), false);
  hs.set(
    ConditionType.Ready,
    'True',
    ConditionReason.NodeReady,
    'Node n is Ready with services v2',
  );
  assert.equal(hs.changed(), true);
});

test("a pass that read an older copy changes only the condition types it set, over the API server's", () => {
  const at = (type: string, reason: string) =>
    ({
      type,
      status: 'True',
      reason,
      message: '',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    }) as never;
  // The pass read Reachable only; since then an earlier pass wrote Bootstrapped.
  const before = [at('Reachable', 'Connected')];
  const after = [at('Reachable', 'Connected'), at('Ready', 'WaitingForNode')];
  const current = [at('Reachable', 'Connected'), at('Bootstrapped', 'AgentBootstrapped')];
  assert.deepEqual(
    rebaseConditions(before, after, current).map((c) => `${c.type}=${c.reason}`),
    ['Reachable=Connected', 'Bootstrapped=AgentBootstrapped', 'Ready=WaitingForNode'],
  );
  // A type the pass removed goes; one it left alone keeps the API server's value.
  assert.deepEqual(
    rebaseConditions(
      after,
      [at('Reachable', 'Connected')],
      [at('Reachable', 'Unreachable'), at('Ready', 'WaitingForNode')],
    ).map((c) => `${c.type}=${c.reason}`),
    ['Reachable=Unreachable'],
  );
});
