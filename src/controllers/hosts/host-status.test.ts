import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConditionReason, ConditionType } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { HostStatus } from './host-status.ts';

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
