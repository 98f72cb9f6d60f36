import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isConditionTrue, setCondition } from '../controller-runtime/conditions.ts';

test('lastTransitionTime moves only when the status changes', () => {
  const t1 = new Date('2026-01-01T00:00:00Z');
  const t2 = new Date('2026-01-01T00:05:00Z');
  const t3 = new Date('2026-01-01T00:10:00Z');
  let c = setCondition(
    [],
    { type: 'Ready', status: 'False', reason: 'Joining', message: 'copying files' },
    t1,
  );
  c = setCondition(
    c,
    { type: 'Ready', status: 'False', reason: 'Joining', message: 'starting kubelet' },
    t2,
  );
  assert.equal(c[0]!.lastTransitionTime, '2026-01-01T00:00:00Z');
  assert.equal(c[0]!.message, 'starting kubelet');
  c = setCondition(c, { type: 'Ready', status: 'True', reason: 'NodeReady', message: '' }, t3);
  assert.equal(c[0]!.lastTransitionTime, '2026-01-01T00:10:00Z');
  assert.equal(c.length, 1);
  assert.ok(isConditionTrue(c, 'Ready'));
  assert.ok(!isConditionTrue(c, 'Degraded'));
});
