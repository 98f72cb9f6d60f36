import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { createLogger } from '../log/logger.ts';
import { shouldCollect, startMemorySettle } from './memory-settle.ts';

const MiB = 2 ** 20;
const quiet = createLogger({ level: 'error' });

test('shouldCollect: only when idle and grown by the threshold since the last collection', () => {
  const base = { rssAfterLastCollection: 110 * MiB, idleBelow: 0.05, growthBytes: 16 * MiB };
  assert.equal(shouldCollect({ ...base, utilization: 0.01, rss: 155 * MiB }), true);
  assert.equal(shouldCollect({ ...base, utilization: 0.01, rss: 126 * MiB }), true);
  assert.equal(shouldCollect({ ...base, utilization: 0.01, rss: 125 * MiB }), false, 'grown 15');
  assert.equal(shouldCollect({ ...base, utilization: 0.5, rss: 155 * MiB }), false, 'busy');
  assert.equal(shouldCollect({ ...base, utilization: 0.05, rss: 155 * MiB }), false, 'at the bar');
});

test('after a burst: one collection once idle, none while busy, none again until it grows again', async () => {
  let rss = 110 * MiB;
  let utilization = 0;
  let collected = 0;
  const registry = new Registry();
  const settle = startMemorySettle(quiet, {
    intervalMs: 3_600_000,
    gc: () => {
      collected++;
      rss = 128 * MiB; // what a full collection gave back after 200 joins
    },
    rss: () => rss,
    utilization: () => utilization,
    registry,
  });
  assert.ok(settle);
  try {
    assert.equal(settle.check(), false, 'nothing grew');
    rss = 155 * MiB;
    utilization = 0.4;
    assert.equal(settle.check(), false, 'the joins are still running');
    utilization = 0.01;
    assert.equal(settle.check(), true);
    assert.equal(collected, 1);
    // Idle at 128 MiB: the new floor; no second collection for the same memory.
    assert.equal(settle.check(), false);
    rss = 140 * MiB;
    assert.equal(settle.check(), false, '12 MiB over the floor');
    rss = 145 * MiB;
    assert.equal(settle.check(), true, '17 MiB over it');
    assert.equal(collected, 2);
    const counted = await registry
      .getSingleMetric('winfleet_memory_settle_collections_total')
      ?.get();
    assert.equal(counted?.values[0]?.value, 2);
  } finally {
    settle.stop();
  }
});

test('without gc() (no --expose-gc) it does nothing', () => {
  const had = (globalThis as { gc?: unknown }).gc;
  delete (globalThis as { gc?: unknown }).gc;
  try {
    assert.equal(startMemorySettle(quiet), undefined);
  } finally {
    if (had) (globalThis as { gc?: unknown }).gc = had;
  }
});
