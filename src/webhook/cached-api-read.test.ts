import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cachedApiRead } from './cached-api-read.ts';

const options = { ttlMs: 50, deadlineMs: 30, fallback: [] as string[], maxEntries: 10 };

test('a fresh value is served from the cache; a stale one at once, while it is read again', async () => {
  let reads = 0;
  const read = cachedApiRead(async (key) => [`${key}-${++reads}`], options);
  assert.deepEqual(await read('a'), ['a-1']);
  assert.deepEqual(await read('a'), ['a-1']);
  assert.equal(reads, 1);
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual(await read('a'), ['a-1'], 'the stale value, not a wait');
  assert.equal(reads, 2, 'and a read in the background');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(await read('a'), ['a-2']);
});

test('a stale value never waits on a slow API server; one refresh in flight per key', async () => {
  let reads = 0;
  let slow = false;
  const read = cachedApiRead(async () => {
    reads++;
    if (slow) await new Promise((r) => setTimeout(r, 500));
    return ['cred'];
  }, options);
  assert.deepEqual(await read('a'), ['cred']);
  slow = true;
  await new Promise((r) => setTimeout(r, 60));
  const started = performance.now();
  const answers = await Promise.all(Array.from({ length: 100 }, () => read('a')));
  assert.ok(performance.now() - started < 20, 'answered at once, not after the 0.5 s read');
  assert.ok(answers.every((a) => a[0] === 'cred'));
  assert.equal(reads, 2, 'one refresh for the hundred');
});

test('an API server that never answers: the fallback at the deadline, one read in flight', async () => {
  let reads = 0;
  const read = cachedApiRead(() => {
    reads++;
    return new Promise<string[]>(() => {});
  }, options);
  const started = performance.now();
  assert.deepEqual(await Promise.all([read('a'), read('a'), read('a')]), [[], [], []]);
  assert.ok(performance.now() - started < 1000, 'answered at the deadline, not never');
  assert.equal(reads, 1, 'callers share the read in flight');
});

test('callers after the deadline of a read still in flight do not wait again', async () => {
  const read = cachedApiRead(() => new Promise<string[]>(() => {}), options);
  await read('a');
  const started = performance.now();
  await Promise.all(Array.from({ length: 100 }, () => read('a')));
  assert.ok(performance.now() - started < 20, 'answered at once');
});

test('once it stops answering, the last value read is served (at once)', async () => {
  let hang = false;
  const read = cachedApiRead(
    async (key) => (hang ? new Promise<string[]>(() => {}) : [`${key}-secret`]),
    options,
  );
  assert.deepEqual(await read('a'), ['a-secret']);
  hang = true;
  await new Promise((r) => setTimeout(r, 60));
  const started = performance.now();
  assert.deepEqual(await read('a'), ['a-secret']);
  assert.ok(performance.now() - started < 20);
});

test('a failed read keeps the last value and is not retried until the TTL passes', async () => {
  let reads = 0;
  let fail = false;
  const read = cachedApiRead(async () => {
    reads++;
    if (fail) throw new Error('503');
    return ['cred'];
  }, options);
  assert.deepEqual(await read('a'), ['cred']);
  fail = true;
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual(await read('a'), ['cred']);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(await read('a'), ['cred']);
  assert.equal(reads, 2);
  // Never read successfully: the fallback.
  assert.deepEqual(await read('b'), []);
});
