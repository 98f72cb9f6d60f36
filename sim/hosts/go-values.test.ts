import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseGoBool, parseGoDuration, parseQuantity } from './go-values.ts';

test('booleans are read as strconv.ParseBool reads them', () => {
  for (const text of ['1', 't', 'T', 'TRUE', 'true', 'True']) assert.equal(parseGoBool(text), true);
  for (const text of ['0', 'f', 'F', 'FALSE', 'false', 'False'])
    assert.equal(parseGoBool(text), false);
  for (const text of ['', 'yes', 'tRUE', 'on', 'toString', ' true'])
    assert.equal(parseGoBool(text), undefined, text);
});

test('durations are read as time.ParseDuration reads them', () => {
  assert.equal(parseGoDuration('0'), 0);
  assert.equal(parseGoDuration('1m30s'), 90_000);
  assert.equal(parseGoDuration('1.5m'), 90_000);
  assert.equal(parseGoDuration('168h'), 168 * 3_600_000);
  assert.equal(parseGoDuration('-2s'), -2000);
  assert.equal(parseGoDuration('500ms'), 500);
  for (const text of ['', '30', 's', '1d', '1m30', '+', '1 s'])
    assert.equal(parseGoDuration(text), undefined, text);
});

test('quantities are read as resource.ParseQuantity reads them', () => {
  assert.equal(parseQuantity('1.5Gi'), 1.5 * 2 ** 30);
  assert.equal(parseQuantity('100M'), 1e8);
  assert.equal(parseQuantity('500m'), 0.5);
  assert.equal(parseQuantity('2e3'), 2000);
  assert.equal(parseQuantity('-1k'), -1000);
  for (const text of ['', 'two', '1KB', '1e3Ki', 'Gi', '1 Gi'])
    assert.equal(parseQuantity(text), undefined, text);
});
