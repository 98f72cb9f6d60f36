/**
 * A controller: a named work queue whose keys are reconciled by one function, with errors
 * logged and counted. Watch events only enqueue keys; reconcile reads current state and
 * writes the difference (level-triggered).
 */

import { type ReconcileResult, WorkQueue } from '../controller-runtime/work-queue.ts';
import type { Logger } from '../log/logger.ts';

/**
 * The key that asks a controller to look at everything it owns (at start, after a
 * configuration change). No object name can be "*".
 */
export const everythingKey = '*';

export interface ControllerOptions {
  name: string;
  /** Keys reconciled at once (default 1). */
  concurrency?: number;
  reconcile: (key: string) => Promise<ReconcileResult | undefined>;
  log: Logger;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Reconcile errors, for metrics. */
  onError?: (key: string, error: unknown) => void;
}

export class Controller {
  readonly name: string;
  readonly queue: WorkQueue;

  constructor(options: ControllerOptions) {
    this.name = options.name;
    const log = options.log.child({ controller: options.name });
    this.queue = new WorkQueue(
      async (key) => {
        log.debug('reconcile', { key });
        return options.reconcile(key);
      },
      {
        concurrency: options.concurrency,
        baseDelayMs: options.baseDelayMs,
        maxDelayMs: options.maxDelayMs,
        onError: (key, error, retryIn) => {
          options.onError?.(key, error);
          log.warn('reconcile failed', { key, error, retryInMs: retryIn ?? 'never (terminal)' });
        },
      },
    );
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  stop(): void {
    this.queue.stop();
  }
}
