import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WinfleetError } from '../errors/catalog.ts';
import { backoffDelayMs, retryWithBackoff } from './retry-with-backoff.ts';

test('delays double from the initial one and stop at the cap', () => {
  const policy = { initialDelayMs: 1000, maxDelayMs: 5000 };
  assert.deepEqual(
    [1, 2, 3, 4, 5, 40].map((n) => backoffDelayMs(n, policy)),
    [1000, 2000, 4000, 5000, 5000, 5000],
  );
});

test('retries retryable errors up to the attempt bound, reporting each', async () => {
  const seen: [number, number][] = [];
  let calls = 0;
  await assert.rejects(
    retryWithBackoff(
      async () => {
        calls++;
        throw new WinfleetError('WF_PAYLOAD_DOWNLOAD', `down ${calls}`);
      },
      {
        initialDelayMs: 1,
        maxDelayMs: 4,
        maxAttempts: 4,
        onRetry: ({ attempt, delayMs }) => {
          seen.push([attempt, delayMs]);
        },
      },
    ),
    /down 4/,
  );
  assert.deepEqual(seen, [
    [1, 1],
    [2, 2],
    [3, 4],
  ]);
});

test('a non-retryable error ends at once; success returns the value', async () => {
  let calls = 0;
  await assert.rejects(
    retryWithBackoff(async () => {
      calls++;
      throw new WinfleetError('WF_JOIN_REFUSED', 'forged');
    }),
    /forged/,
  );
  assert.equal(calls, 1);
  assert.equal(
    await retryWithBackoff(
      async (attempt) => {
        if (attempt < 3) throw new Error('flaky');
        return attempt;
      },
      { initialDelayMs: 1 },
    ),
    3,
  );
});

test('the time bound stops before a wait that would pass it', async () => {
  let now = 0;
  let calls = 0;
  await assert.rejects(
    retryWithBackoff(
      async () => {
        calls++;
        now += 1000;
        throw new Error('slow');
      },
      { initialDelayMs: 1, maxElapsedMs: 2500, now: () => now },
    ),
    /slow/,
  );
  assert.equal(calls, 3);
});
