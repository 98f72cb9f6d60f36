import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TtlLruCache } from './ttl-lru-cache.ts';

function fakeClock() {
  let now = 1_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

test('entries expire after their own TTL', () => {
  const clock = fakeClock();
  const cache = new TtlLruCache<string, number>({ maxEntries: 10, now: clock.now });
  cache.set('tag', 1, 100);
  cache.set('digest', 2, 1_000);
  clock.advance(99);
  assert.equal(cache.get('tag'), 1);
  clock.advance(1);
  assert.equal(cache.get('tag'), undefined, 'expired exactly at its TTL');
  assert.equal(cache.get('digest'), 2);
  clock.advance(900);
  assert.equal(cache.get('digest'), undefined);
  assert.equal(cache.size, 0, 'expired entries are dropped when read');
});

test('the least recently used entry is evicted first', () => {
  const cache = new TtlLruCache<string, number>({ maxEntries: 3 });
  cache.set('a', 1, 60_000);
  cache.set('b', 2, 60_000);
  cache.set('c', 3, 60_000);
  assert.equal(cache.get('a'), 1); // a is now the most recent; b the least
  cache.set('d', 4, 60_000);
  assert.equal(cache.peek('b'), undefined);
  assert.deepEqual(
    ['a', 'c', 'd'].map((k) => cache.peek(k)),
    [1, 3, 4],
  );
  assert.equal(cache.stats().evictions, 1);
  assert.equal(cache.size, 3);
});

test('setting an existing key replaces it without growing the cache', () => {
  const cache = new TtlLruCache<string, number>({ maxEntries: 2 });
  cache.set('a', 1, 60_000);
  cache.set('a', 2, 60_000);
  assert.equal(cache.size, 1);
  assert.equal(cache.get('a'), 2);
});

test('a TTL of zero or less stores nothing and drops the old value', () => {
  const cache = new TtlLruCache<string, number>({ maxEntries: 2 });
  cache.set('a', 1, 60_000);
  cache.set('a', 2, 0);
  assert.equal(cache.peek('a'), undefined);
  cache.set('b', 1, -5);
  assert.equal(cache.size, 0);
});

test('hits and misses are counted by get, not by peek', () => {
  const cache = new TtlLruCache<string, number>({ maxEntries: 2 });
  cache.set('a', 1, 60_000);
  cache.get('a');
  cache.get('a');
  cache.get('x');
  cache.peek('a');
  cache.peek('x');
  assert.deepEqual(cache.stats(), { hits: 2, misses: 1, evictions: 0, size: 1, maxEntries: 2 });
});

test('delete and clear remove entries', () => {
  const cache = new TtlLruCache<string, number>({ maxEntries: 4 });
  cache.set('a', 1, 60_000);
  cache.set('b', 2, 60_000);
  assert.equal(cache.delete('a'), true);
  assert.equal(cache.delete('a'), false);
  cache.clear();
  assert.equal(cache.size, 0);
});

test('maxEntries must be a whole number of at least one', () => {
  for (const maxEntries of [0, -1, 1.5, Number.NaN]) {
    assert.throws(() => new TtlLruCache({ maxEntries }), {
      name: 'WinfleetError',
      code: 'WF_INVARIANT',
      message: /^Cache maxEntries must be a whole number ≥ 1, got "/,
    });
  }
});
