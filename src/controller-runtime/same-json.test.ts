import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalJson, sameJson } from '../controller-runtime/same-json.ts';

test('the same document in another key order is the same; any other value is not', () => {
  const written = { type: 'Ready', status: 'True', reason: 'NodeReady', observedGeneration: 1 };
  const returned = { observedGeneration: 1, reason: 'NodeReady', status: 'True', type: 'Ready' };
  assert.equal(
    sameJson({ conditions: [written], v: 'x' }, { v: 'x', conditions: [returned] }),
    true,
  );
  assert.equal(sameJson({ a: 1, b: undefined }, { a: 1 }), true, 'undefined members are absent');
  assert.equal(sameJson(undefined, undefined), true);
  assert.equal(sameJson({ a: [1, 2] }, { a: [2, 1] }), false, 'array order counts');
  assert.equal(sameJson({ a: 1 }, { a: '1' }), false);
  assert.equal(sameJson({ a: { b: 1 } }, { a: { b: 1, c: null } }), false, 'null is a value');
  assert.equal(sameJson(undefined, {}), false);
  assert.equal(canonicalJson({ b: { d: 1, c: 2 }, a: 0 }), '{"a":0,"b":{"c":2,"d":1}}');
});
