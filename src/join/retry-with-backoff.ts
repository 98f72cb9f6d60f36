/**
 * Retrying a step of a join while the world is not ready yet (the API server or the registry
 * unreachable, cluster-info not yet signed): capped exponential backoff, bounded both in
 * attempts and in time, ended at once by an AbortSignal. Only retryable errors (the catalog
 * says, errors.isRetryable) are tried again: a refusal (a forged cluster-info, a bad digest) ends
 * the step on its first occurrence, since waiting would not change it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isRetryable } from '../errors/catalog.ts';

export interface BackoffPolicy {
  /** Delay after the first failure, ms. Default 2000. */
  initialDelayMs?: number;
  /** Largest delay between attempts, ms. Default 60000. */
  maxDelayMs?: number;
  /** Attempts in all (the first included). Default 30. */
  maxAttempts?: number;
  /** No new attempt starts after this long since the first, ms. Default 30 minutes. */
  maxElapsedMs?: number;
}

/** @package */
export interface RetryOptions extends BackoffPolicy {
  signal?: AbortSignal;
  /** Told of each failure that will be retried, before the wait. */
  onRetry?: (failure: { error: unknown; attempt: number; delayMs: number }) => void | Promise<void>;
  /** The clock (tests). Default Date.now. */
  now?: () => number;
}

/** The delay after failed attempt `attempt` (1-based): initial × 2^(attempt-1), capped. */
export function backoffDelayMs(attempt: number, policy: BackoffPolicy = {}): number {
  const initial = policy.initialDelayMs ?? 2000;
  const max = policy.maxDelayMs ?? 60_000;
  return Math.min(max, initial * 2 ** Math.min(attempt - 1, 30));
}

/**
 * Runs `work(attempt)` until it resolves, a non-retryable error ends it, or the bounds are
 * reached (then the last error is thrown). An abort ends the wait at once with the signal's
 * reason.
 */
export async function retryWithBackoff<T>(
  work: (attempt: number) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const now = options.now ?? Date.now;
  const maxAttempts = options.maxAttempts ?? 30;
  const maxElapsedMs = options.maxElapsedMs ?? 30 * 60_000;
  const started = now();
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await work(attempt);
    } catch (error) {
      options.signal?.throwIfAborted();
      const delayMs = backoffDelayMs(attempt, options);
      const outOfTime = now() + delayMs - started > maxElapsedMs;
      if (!isRetryable(error) || attempt >= maxAttempts || outOfTime) throw error;
      await options.onRetry?.({ error, attempt, delayMs });
      await sleep(delayMs, undefined, { signal: options.signal }).catch((error: unknown) => {
        options.signal?.throwIfAborted();
        throw error;
      });
    }
  }
}
