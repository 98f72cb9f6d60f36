import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SharedValues } from '../controller-runtime/shared-values.ts';

test('equal strings and values come back as one copy; values frozen', () => {
  const shared = new SharedValues();
  const a = shared.string(JSON.parse('"kubelet is posting ready status"') as string);
  assert.equal(shared.string(`kubelet is posting ${'ready'} status`), a);
  const first = shared.frozen([{ type: 'InternalIP', address: '127.0.0.1' }]);
  const second = shared.frozen([{ type: 'InternalIP', address: '127.0.0.1' }]);
  assert.equal(second, first);
  assert.ok(Object.isFrozen(first) && Object.isFrozen(first[0]));
  assert.equal(shared.string(undefined), undefined);
  assert.equal(shared.frozen(undefined), undefined);
});

test('it remembers at most its capacity, then starts over; what it handed out stays valid', () => {
  const shared = new SharedValues(3);
  const kept = shared.string('a');
  for (const s of ['b', 'c', 'd', 'e']) shared.string(s);
  assert.ok(shared.size <= 3);
  assert.equal(kept, 'a');
  const value = shared.frozen({ n: 1 });
  for (let n = 2; n < 10; n++) shared.frozen({ n });
  assert.deepEqual(value, { n: 1 });
  assert.ok(shared.size <= 6);
});
