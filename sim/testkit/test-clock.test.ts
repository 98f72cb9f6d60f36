import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TestClock } from './test-clock.ts';

test('the test clock runs with the system clock, moved forward by what the test advanced', () => {
  const clock = new TestClock();
  const before = Date.now();
  assert.ok(Math.abs(clock.now().getTime() - before) < 1000);
  clock.advance(25_000);
  clock.advance(0);
  assert.equal(clock.offsetMs, 25_000);
  const ahead = clock.now().getTime() - Date.now();
  assert.ok(ahead > 24_000 && ahead <= 25_000, `${ahead} ms ahead`);
  assert.throws(() => clock.advance(-1), /Cannot move the test clock by -1 ms/);
  assert.throws(() => clock.advance(Number.NaN), /by NaN ms/);
  assert.equal(clock.offsetMs, 25_000, 'a refused move changes nothing');
});
