import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import { errorCode } from '../errors/catalog.ts';
import { parseMaxUnavailable, resolveMaxUnavailable } from './max-unavailable.ts';

const field = 'spec.maxUnavailable';

test('whole numbers and percentages', () => {
  assert.deepEqual(parseMaxUnavailable(1, field), { kind: 'count', count: 1 });
  assert.deepEqual(parseMaxUnavailable(10, field), { kind: 'count', count: 10 });
  assert.deepEqual(parseMaxUnavailable('25%', field), { kind: 'percent', percent: 25 });
  assert.deepEqual(parseMaxUnavailable('1%', field), { kind: 'percent', percent: 1 });
  assert.deepEqual(parseMaxUnavailable('100%', field), { kind: 'percent', percent: 100 });
});

test('0 and "0%" are refused with why and what to do instead', () => {
  for (const zero of [0, '0%']) {
    assert.throws(
      () => parseMaxUnavailable(zero, field),
      (e: Error) =>
        errorCode(e) === 'WF_SCHEMA_INVALID' &&
        e.message.startsWith('spec.maxUnavailable is ') &&
        e.message.includes('could never take a host down') &&
        e.message.includes('spec.paused: true'),
    );
  }
});

test('everything else is refused naming the field', () => {
  const refused: unknown[] = [
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    100_001,
    '2',
    '101%',
    '00%',
    '05%',
    '-5%',
    '5.5%',
    ' 5%',
    '5 %',
    '%',
    '',
    null,
    undefined,
    true,
    [1],
  ];
  for (const value of refused) {
    assert.throws(
      () => parseMaxUnavailable(value, field),
      (e: Error) =>
        errorCode(e) === 'WF_SCHEMA_INVALID' &&
        e.message.includes(field) &&
        e.message.includes('"1%"'),
      String(value),
    );
  }
});

test('percentages round down and are at least 1; counts are used as given', () => {
  const percent = (p: number) => ({ kind: 'percent', percent: p }) as const;
  assert.equal(resolveMaxUnavailable(percent(10), 5), 1, '0.5 rounds down to 0, then 1');
  assert.equal(resolveMaxUnavailable(percent(50), 5), 2);
  assert.equal(resolveMaxUnavailable(percent(33), 6), 1, '1.98 rounds down');
  assert.equal(resolveMaxUnavailable(percent(34), 6), 2);
  assert.equal(resolveMaxUnavailable(percent(100), 6), 6);
  assert.equal(resolveMaxUnavailable(percent(25), 0), 1, 'an empty pool still has one slot');
  assert.equal(resolveMaxUnavailable({ kind: 'count', count: 2 }, 6), 2);
  assert.equal(
    resolveMaxUnavailable({ kind: 'count', count: 9 }, 6),
    9,
    'more than the hosts is fine',
  );
  assert.throws(() => resolveMaxUnavailable(percent(10), -1), { code: 'WF_SCHEMA_INVALID' });
  assert.throws(() => resolveMaxUnavailable(percent(10), 1.5), { code: 'WF_SCHEMA_INVALID' });
});

test('a percentage resolves to 1..hosts and never above the exact share (except the floor of 1)', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 0, max: 5000 }), (p, hosts) => {
      const slots = resolveMaxUnavailable(parseMaxUnavailable(`${p}%`, field), hosts);
      assert.ok(slots >= 1);
      assert.ok(slots <= Math.max(1, hosts));
      assert.ok(slots === 1 || slots <= (p * hosts) / 100);
      assert.ok(slots + 1 > (p * hosts) / 100, 'rounded down, not further');
    }),
    { seed: testSeed(t) },
  );
});
