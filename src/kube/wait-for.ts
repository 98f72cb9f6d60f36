/** Polling until a condition holds, with a clear error naming what did not happen. */
import { setTimeout as sleep } from 'node:timers/promises';
import { WinfleetError } from '../errors/catalog.ts';

export interface WaitOptions {
  /** What is awaited, for the error message. */
  description: string;
  timeoutMs?: number;
  intervalMs?: number;
  signal?: AbortSignal;
}

/**
 * Calls `check` until it returns a value other than undefined/false and returns that value.
 * Errors thrown by `check` are retried; the last one is reported on timeout.
 */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: WaitOptions,
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let lastError: unknown;
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      const result = await check();
      if (result !== undefined && result !== false) return result;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const detail = lastError ? `; last error: ${(lastError as Error).message ?? lastError}` : '';
      throw new WinfleetError(
        'WF_TIMEOUT',
        `Timed out after ${options.timeoutMs ?? 30_000}ms waiting for ${options.description}${detail}`,
      );
    }
    await sleep(options.intervalMs ?? 200, undefined, { signal: options.signal });
  }
}
