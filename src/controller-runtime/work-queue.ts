/**
 * The work queue every controller shares the semantics of (controller-runtime's, in
 * TypeScript): keys are de-duplicated while waiting, the same key is never processed twice at
 * once (a key added while it is processed is run again after), failures back off per key
 * exponentially, and a bounded number of workers run concurrently. Whether a failure is
 * retried is the error catalog's call (`isRetryable`): an error whose code retrying cannot fix
 * (a bad spec, a permission the user must grant) waits until the key is added again.
 */
import { isRetryable } from '../errors/catalog.ts';

/** The longest requeue delay; anything longer would overflow a Node.js timer. */
const longestTimerMs = 24 * 60 * 60_000;

/** What a reconcile asks of the queue. */
export interface ReconcileResult {
  /** Run this key again after this many milliseconds, even if nothing changes. */
  requeueAfterMs?: number;
}

export interface WorkQueueOptions {
  /** Workers running at once (default 1). */
  concurrency?: number;
  /** First retry delay after a failure (default 200 ms); doubles per failure. */
  baseDelayMs?: number;
  /** Longest retry delay (default 5 minutes). */
  maxDelayMs?: number;
  /** Called with each failure, after the retry is scheduled (`retryInMs` undefined: not retried). */
  onError?: (key: string, error: unknown, retryInMs: number | undefined) => void;
}

/** A de-duplicating, per-key serialised, rate-limited queue of keys. */
export class WorkQueue {
  readonly #handler: (key: string) => Promise<ReconcileResult | undefined>;
  readonly #concurrency: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #onError: WorkQueueOptions['onError'];
  /** Keys waiting to run, in order. */
  readonly #pending: string[] = [];
  readonly #pendingSet = new Set<string>();
  /** Keys being processed now. */
  readonly #active = new Set<string>();
  /** Keys added while being processed: run again when the current run ends. */
  readonly #dirty = new Set<string>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #failures = new Map<string, number>();
  #stopped = false;
  #idleWaiters: (() => void)[] = [];
  /** Callers of `passAfterNow`, per key, waiting for a run that has not started yet. */
  readonly #passWaiters = new Map<string, (() => void)[]>();

  constructor(
    handler: (key: string) => Promise<ReconcileResult | undefined>,
    options: WorkQueueOptions = {},
  ) {
    this.#handler = handler;
    this.#concurrency = Math.max(1, options.concurrency ?? 1);
    this.#baseDelayMs = options.baseDelayMs ?? 200;
    this.#maxDelayMs = options.maxDelayMs ?? 5 * 60_000;
    this.#onError = options.onError;
  }

  /** Keys waiting or running. */
  get length(): number {
    return this.#pendingSet.size + this.#active.size;
  }

  /** Consecutive failures of `key` so far (0 after a success). */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Queues `key` now; a no-op when it is already waiting. */
  add(key: string): void {
    if (this.#stopped) return;
    const timer = this.#timers.get(key);
    if (timer) {
      clearTimeout(timer);
      this.#timers.delete(key);
    }
    if (this.#active.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#pendingSet.has(key)) return;
    this.#pendingSet.add(key);
    this.#pending.push(key);
    this.#pump();
  }

  /** Queues `key` after `delayMs` (at most a day: timers overflow past 2^31 ms), unless it is added sooner. */
  addAfter(key: string, requestedMs: number): void {
    if (this.#stopped) return;
    const delayMs = Math.min(requestedMs, longestTimerMs);
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const existing = this.#timers.get(key);
    if (existing) clearTimeout(existing);
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.#timers.set(key, timer);
  }

  /** Stops taking keys and cancels timers; running handlers finish. */
  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#pending.length = 0;
    this.#pendingSet.clear();
    for (const waiters of this.#passWaiters.values()) for (const resolve of waiters) resolve();
    this.#passWaiters.clear();
    this.#notifyIdle();
  }

  /** Resolves when nothing is waiting or running (timers may still be armed). */
  whenIdle(): Promise<void> {
    if (this.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Queues `key` and resolves once a run of it that started after this call has ended (its
   * reconcile returned or threw), or once the queue stops. What a caller learns: the reconcile
   * has looked at the state as it was when the promise was made. A test that must show that
   * nothing happens (no change started, no rung taken) waits for this instead of sleeping.
   */
  passAfterNow(key: string): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    const promise = new Promise<void>((resolve) => {
      const waiters = this.#passWaiters.get(key) ?? [];
      waiters.push(resolve);
      this.#passWaiters.set(key, waiters);
    });
    this.add(key);
    return promise;
  }

  #notifyIdle(): void {
    if (this.length !== 0 && !this.#stopped) return;
    if (this.#active.size !== 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  #backoff(key: string): number {
    const failures = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    const delay = Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** (failures - 1));
    // Up to 10% jitter so that many keys failing together do not retry together.
    return Math.round(delay * (1 + Math.random() * 0.1));
  }

  #pump(): void {
    while (!this.#stopped && this.#active.size < this.#concurrency && this.#pending.length > 0) {
      const key = this.#pending.shift()!;
      this.#pendingSet.delete(key);
      this.#active.add(key);
      void this.#run(key);
    }
  }

  async #run(key: string): Promise<void> {
    // Those waiting now are answered by this run; later callers wait for the next one.
    const passWaiters = this.#passWaiters.get(key);
    this.#passWaiters.delete(key);
    try {
      const result = await this.#handler(key);
      this.#failures.delete(key);
      if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
    } catch (error) {
      const retryIn = isRetryable(error) ? this.#backoff(key) : undefined;
      if (retryIn !== undefined) this.addAfter(key, retryIn);
      this.#onError?.(key, error, retryIn);
    } finally {
      for (const resolve of passWaiters ?? []) resolve();
      this.#active.delete(key);
      if (this.#dirty.delete(key)) this.add(key);
      this.#pump();
      this.#notifyIdle();
    }
  }
}
