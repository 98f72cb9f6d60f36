/**
 * The operator's clock in a test (OperatorOptions.rolloutClock, which the pools' rollouts and
 * their health and remediation passes read): the system clock plus an offset the test moves
 * forward, so that a case proving "after 20 s unhealthy, X" moves the clock 20 s instead of
 * waiting. Everything else keeps real time (the control plane, the simulated hosts), which is
 * what such a case wants: only the operator's judgement of elapsed time moves.
 */
export class TestClock {
  #offsetMs = 0;

  /** The clock to hand the operator. */
  readonly now = (): Date => new Date(Date.now() + this.#offsetMs);

  /** Moves the clock forward by `ms` (never back: a deadline once passed stays passed). */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`Cannot move the test clock by ${ms} ms; give a duration of 0 or more`);
    }
    this.#offsetMs += ms;
  }

  /** How far the clock is ahead of the system clock, ms. */
  get offsetMs(): number {
    return this.#offsetMs;
  }
}
