import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type LoadResult, mergeLoads, percentile } from './admission-load.ts';

const run = (latencies: number[], seconds: number, errors = 0): LoadResult => {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (p: number) => percentile(sorted, p);
  return {
    count: sorted.length,
    errors,
    seconds,
    throughput: sorted.length / seconds,
    p50: at(50),
    p90: at(90),
    p99: at(99),
    max: sorted.at(-1)!,
    latencies: sorted,
  };
};

test('mergeLoads pools the rounds: a tail from one round shows in the pooled p99 and in that round', () => {
  // Two quiet rounds of 1 ms and one round whose last 10 % waited 100 ms (a burst).
  const quiet = Array.from({ length: 1000 }, () => 1);
  const burst = [
    ...Array.from({ length: 900 }, () => 1),
    ...Array.from({ length: 100 }, () => 100),
  ];
  const merged = mergeLoads([run(quiet, 1), run(burst, 1, 2), run(quiet, 1)]);
  assert.equal(merged.count, 3000);
  assert.equal(merged.errors, 2);
  assert.equal(merged.seconds, 3);
  assert.equal(merged.throughput, 1000);
  assert.equal(merged.p50, 1);
  // 100 of 3,000 are slow (3.3 %): the pooled p99 is slow, the p90 is not.
  assert.equal(merged.p99, 100);
  assert.equal(merged.p90, 1);
  assert.equal(merged.max, 100);
  assert.deepEqual(merged.roundP99s, [1, 100, 1]);
});

test('mergeLoads refuses a run without its latencies and an empty list', () => {
  const { latencies: _, ...bare } = run([1, 2, 3], 1);
  assert.throws(() => mergeLoads([run([1], 1), bare]), /raw: true/);
  assert.throws(() => mergeLoads([]), /no runs/);
});
