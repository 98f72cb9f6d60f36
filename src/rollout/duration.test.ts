import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import { errorCode } from '../errors/catalog.ts';
import { formatDuration, parseDuration } from './duration.ts';

const field = 'spec.drainTimeout';

test('durations as Kubernetes objects and Go print them', () => {
  assert.equal(parseDuration('10m', field), 600_000);
  assert.equal(parseDuration('1h30m', field), 5_400_000);
  assert.equal(parseDuration('90s', field), 90_000);
  assert.equal(parseDuration('10m0s', field), 600_000, 'metav1.Duration prints 10m0s');
  assert.equal(parseDuration('1h0m0s', field), 3_600_000);
  assert.equal(parseDuration('250ms', field), 250);
  assert.equal(parseDuration('1m30s500ms', field), 90_500);
  assert.equal(parseDuration('0s', field), 0);
});

test('anything else is refused, naming the field and quoting the value', () => {
  const refused = [
    '',
    '10',
    '1.5h',
    '-1m',
    '+1m',
    ' 10m',
    '10m ',
    '10 m',
    '10M',
    '1d',
    '1us',
    '1µs',
    '1ns',
    '1s1h',
    '1m1m',
    '30s2m',
    '1ms1s',
    '010m',
    'm',
    '1h-1m',
    '10m\n',
    'P1D',
  ];
  for (const value of refused) {
    assert.throws(
      () => parseDuration(value, field),
      (e: Error) =>
        errorCode(e) === 'WF_SCHEMA_INVALID' &&
        e.message.includes(field) &&
        e.message.includes(`"${value}"`) &&
        /10m|each unit once/.test(e.message),
      JSON.stringify(value),
    );
  }
  for (const value of [600, null, undefined, { m: 10 }]) {
    assert.throws(() => parseDuration(value, field), /spec\.drainTimeout must be a duration/);
  }
  assert.throws(() => parseDuration(`${'9'.repeat(30)}h`, field), /too long/);
});

test('bounds are inclusive and the message says the limit', () => {
  const bounds = { minMs: 1000, maxMs: 86_400_000 };
  assert.equal(parseDuration('1s', field, bounds), 1000);
  assert.equal(parseDuration('24h', field, bounds), 86_400_000);
  assert.throws(() => parseDuration('0s', field, bounds), /"0s" is too short: use at least 1s/);
  assert.throws(() => parseDuration('24h1s', field, bounds), /too long: use at most 24h/);
});

test('formatDuration writes what parseDuration reads back, shortest form', (t) => {
  assert.equal(formatDuration(5_400_000), '1h30m');
  assert.equal(formatDuration(600_000), '10m');
  assert.equal(formatDuration(0), '0s');
  assert.equal(formatDuration(90_500), '1m30s500ms');
  assert.throws(() => formatDuration(-1), { code: 'WF_SCHEMA_INVALID' });
  assert.throws(() => formatDuration(1.5), { code: 'WF_SCHEMA_INVALID' });
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 10 * 365 * 86_400_000 }), (ms) => {
      assert.equal(parseDuration(formatDuration(ms), field), ms);
    }),
    { seed: testSeed(t) },
  );
});

test('every h/m/s/ms combination in order parses to the sum of its parts', (t) => {
  fc.assert(
    fc.property(
      fc.record(
        {
          h: fc.nat(1000),
          m: fc.nat(1000),
          s: fc.nat(1000),
          ms: fc.nat(1000),
        },
        { requiredKeys: [] },
      ),
      (parts) => {
        const units = (['h', 'm', 's', 'ms'] as const).filter((u) => parts[u] !== undefined);
        fc.pre(units.length > 0);
        const text = units.map((u) => `${parts[u]}${u}`).join('');
        const expected =
          (parts.h ?? 0) * 3_600_000 +
          (parts.m ?? 0) * 60_000 +
          (parts.s ?? 0) * 1000 +
          (parts.ms ?? 0);
        assert.equal(parseDuration(text, field), expected);
      },
    ),
    { seed: testSeed(t) },
  );
});
