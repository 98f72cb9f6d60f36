import assert from 'node:assert/strict';
import { test } from 'node:test';
import { slimNode } from './informer-factory.ts';

test('a slimmed Node keeps since when each condition holds, not its heartbeat or images', () => {
  const since = new Date('2026-11-23T04:51:28Z');
  const slim = slimNode({
    metadata: { name: 'simwin-1' },
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'Unknown',
          reason: 'NodeStatusUnknown',
          message: 'Kubelet stopped posting node status.',
          lastTransitionTime: since,
          lastHeartbeatTime: new Date('2026-11-23T04:55:00Z'),
        },
      ],
      images: [{ names: ['mcr.microsoft.com/windows/nanoserver:ltsc2022'], sizeBytes: 1 }],
    },
  });
  assert.deepEqual(slim.status?.conditions, [
    {
      type: 'Ready',
      status: 'Unknown',
      reason: 'NodeStatusUnknown',
      message: 'Kubelet stopped posting node status.',
      lastTransitionTime: since,
    },
  ]);
  assert.equal(slim.status?.images, undefined);
});
