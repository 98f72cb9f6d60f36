/**
 * One host's remediation ladder as a small state machine, pure, recorded in WindowsHost
 * status.remediation: `advanceRemediation` takes the recorded state, the host's health, what is
 * observed of its re-bootstrap and its pool's rollout, and now; it returns the state to record
 * and the one action to take. One rung at a time, each with a timeout and a recorded result:
 *
 * 1. RestartService — the agent's own repair (it restarts the failing service, recreates the
 *    HNS network, …); winfleet only waits restartServiceTimeout. Skipped for a restart loop
 *    (FrequentServiceRestart: the agent has stopped restarting) and a Node that never started.
 * 2. Rebootstrap — the host controller runs the agent bootstrap again over SSH (services and
 *    config re-applied), once for the recorded request time; then waits for health until
 *    rebootstrapTimeout after the rung started. A bootstrap error after the request fails it.
 *    A host winfleet never reaches over SSH (Pull mode) skips it: recorded Skipped, with why,
 *    and an Event; the ladder goes on to Reboot.
 * 3. Reboot — a repair reboot request the pool's rollout engine consumes as a 'repair' change
 *    (cordon, drain, reboot, wait Ready, uncordon) inside maxUnavailable. Queueing for the
 *    budget has no timeout here (the rollout's own timeouts stop a stuck change, which fails
 *    the rung); once the reboot is done, the host has rebootTimeout to be healthy.
 * 4. RemediationFailed — the ladder stops; the node is kept cordoned (a Warning Event, the
 *    host Degraded). It ends when the host is healthy again (fixed by hand), or with the
 *    winfleet.io/skip-remediation annotation (then winfleet neither cordons nor uncordons).
 *
 * A host that is healthy again (none of the policy's conditions holds) ends the ladder at once
 * (result Succeeded). winfleet never deletes a Node or a WindowsHost.
 *
 * Surviving an operator restart (the caller's part), as host-steps: write the returned status
 * BEFORE acting. Every request is a level named by the time recorded with it — the re-bootstrap
 * runs while bootstrappedAt is before its request time, the repair reboot is pending while the
 * rollout's lastRebootAt is before its request time — so a restart finds the same request in the
 * record and never makes a second one for the same rung; a pass whose write failed acted on
 * nothing.
 *
 * Held (maxUnhealthy exceeded, skip annotation, remediation disabled, a spec problem, a rollout
 * change of the pool's own on the host): nothing starts and no rung moves on; a pending repair
 * reboot is withdrawn from the rollout (a change it already started finishes, so no node is left
 * half-done). When the hold ends, the rung goes on with a fresh clock.
 */
import { isDeepStrictEqual } from 'node:util';
import { ConditionReason, EventReason } from '../api/reasons.ts';
import {
  type HoldReason,
  type HostRemediationStatus,
  lastActionsLimit,
  type RemediationLadder,
  type RemediationRung,
  type RungResult,
} from '../api/remediation-status.ts';
import type { HostRolloutStatus } from '../api/rollout-status.ts';
import { apiTime, parseApiTime } from '../kube/api-time.ts';
import { formatDuration } from '../rollout/duration.ts';
import type { HealthPolicy } from './health-spec.ts';
import { describeProblem, type HealthAssessment, type HealthProblem } from './host-health.ts';

/**
 * A re-bootstrap request's time, rounded up to the next whole second: API times are whole
 * seconds, and a bootstrap recorded at or after the request serves it, so one that finished
 * earlier in the same second must not count (rounded down, it would). A bootstrap that ends in
 * the request's own second runs once more (it is idempotent). A reboot request needs no such
 * care: the reboot that serves it is always asked after it.
 */
function requestTime(now: Date): string {
  return apiTime(new Date(Math.ceil(now.getTime() / 1000) * 1000));
}

const rungOrder: readonly RemediationRung[] = ['RestartService', 'Rebootstrap', 'Reboot'];

export interface LadderObservation {
  /** WindowsHost status.bootstrappedAt. */
  bootstrappedAt?: string;
  /** WindowsHost status.lastError of a bootstrap (time and message), if any. */
  bootstrapError?: { time: string; message: string };
  /** WindowsHost status.rollout. */
  rollout?: HostRolloutStatus;
  /**
   * The Node carries winfleet's remediation cordon (winfleet.io/cordoned-by=remediation) and
   * status.remediation.cordoned records it: the annotation alone is not enough.
   */
  cordonedByRemediation: boolean;
}

export interface LadderInput {
  /** "namespace/name". */
  host: string;
  status: HostRemediationStatus;
  health: HealthAssessment;
  policy: HealthPolicy;
  observed: LadderObservation;
  hold?: HoldReason;
  /**
   * Why this host cannot be re-bootstrapped, if it cannot (a Pull-mode host: winfleet never
   * reaches it over SSH): the ladder skips Rebootstrap, recording it Skipped with this reason.
   */
  rebootstrapUnavailable?: string;
  now: Date;
}

/** @package */
export type RemediationAction =
  | { kind: 'none' }
  /** Run the agent bootstrap over SSH for this request (once; bootstrappedAt then passes it). */
  | { kind: 'rebootstrap'; requestedAt: string }
  /** Cordon the Node with winfleet.io/cordoned-by=remediation (never drains, never deletes). */
  | { kind: 'cordon' }
  /** Uncordon, only where winfleet.io/cordoned-by=remediation is. */
  | { kind: 'uncordon' };

/** @package */
export interface LadderEvent {
  type: 'Normal' | 'Warning';
  reason: EventReason;
  message: string;
}

/** @package */
export interface LadderResult {
  /** The state to record before acting (the same object when unchanged). */
  status: HostRemediationStatus;
  action: RemediationAction;
  events: LadderEvent[];
  /** The repair reboot the pool's rollout should carry for this host (RFC 3339), if any. */
  repairRebootRequestedAt?: string;
  /** Rungs that ended in this pass (for the counter by rung and result). */
  outcomes: { rung: RemediationRung; result: RungResult }[];
  /** Look again then at the latest (a rung's or a condition's timeout). */
  recheckAt?: Date;
  /** The host's Degraded condition when remediation failed on it. */
  degraded?: { reason: typeof ConditionReason.RemediationFailed; message: string };
}

const ms = (t: string) => parseApiTime(t, 'status.remediation time');

/** The first rung for these problems: a restart loop or a Node that never started skips rung 1. */
function firstRung(due: readonly HealthProblem[]): RemediationRung {
  return due.some((p) => p.type === 'FrequentServiceRestart' || p.type === 'NodeStartup')
    ? 'Rebootstrap'
    : 'RestartService';
}

function rungTimeoutMs(rung: RemediationRung, policy: HealthPolicy): number {
  switch (rung) {
    case 'RestartService':
      return policy.restartServiceTimeoutMs;
    case 'Rebootstrap':
      return policy.rebootstrapTimeoutMs;
    case 'Reboot':
      return policy.rebootTimeoutMs;
  }
}

/** The host's rollout change that is not this ladder's repair (the pool's own change). */
export function inOtherRolloutChange(rollout: HostRolloutStatus | undefined): boolean {
  const current = rollout?.current;
  return current !== undefined && !(current.changes as readonly string[]).includes('repair');
}

/**
 * What one call of `advanceRemediation` works on: its input, and the parts of the record it
 * decides on so far, written into the result.
 */
interface LadderContext {
  input: LadderInput;
  /** Events to record on the WindowsHost (the result's `events`). */
  events: LadderEvent[];
  /** Rungs that ended in this pass (the result's `outcomes`). */
  outcomes: LadderResult['outcomes'];
  current: HostRemediationStatus['current'];
  failed: HostRemediationStatus['failed'];
  lastActions: HostRemediationStatus['lastActions'];
}

/** What the result may carry besides the record and the action. */
type LadderExtra = Partial<Pick<LadderResult, 'repairRebootRequestedAt' | 'recheckAt'>>;

/** Advances one host's ladder. See the module comment. */
export function advanceRemediation(input: LadderInput): LadderResult {
  const { status, health } = input;
  const ctx: LadderContext = {
    input,
    events: [],
    outcomes: [],
    current: status.current,
    failed: status.failed,
    lastActions: status.lastActions,
  };
  if (health.holding.length === 0) return recovered(ctx);
  if (ctx.failed) return stayStopped(ctx);
  if (!ctx.current) {
    const idle = startLadder(ctx);
    if (idle) return idle;
  }
  const held = holdOrRelease(ctx);
  if (held) return held;
  // A new rung acts in the same pass (its request is in the status written before any action);
  // each rung starts its clock now, so a pass escalates each rung at most once.
  for (let pass = 0; pass < rungOrder.length; pass++) {
    const c: RemediationLadder = ctx.current!;
    const done = rungHandlers[c.rung](ctx, c);
    if (done) return done;
  }
  return ladderResult(ctx, { kind: 'none' });
}

/** Records a rung's end: its outcome, and a line in lastActions (the newest kept). */
function recordRung(
  ctx: LadderContext,
  rung: RemediationRung,
  result: RungResult,
  message: string,
): void {
  ctx.outcomes.push({ rung, result });
  ctx.lastActions = [
    ...(ctx.lastActions ?? []),
    { time: apiTime(ctx.input.now), rung, result, message },
  ].slice(-lastActionsLimit);
}

/** The result: the record (the same object when unchanged), the action, and Degraded if failed. */
function ladderResult(
  ctx: LadderContext,
  action: RemediationAction,
  extra: LadderExtra = {},
): LadderResult {
  const { input, current, failed, lastActions } = ctx;
  const { status, observed } = input;
  // The record of the ladder's own cordon: set with the cordon, kept while the Node shows it.
  const cordoned = action.kind === 'cordon' || observed.cordonedByRemediation;
  const next: HostRemediationStatus = {
    ...(current ? { current } : {}),
    ...(failed ? { failed } : {}),
    ...(lastActions?.length ? { lastActions } : {}),
    ...(cordoned ? { cordoned: true as const } : {}),
  };
  return {
    status: isDeepStrictEqual(next, status) ? status : next,
    action,
    events: ctx.events,
    outcomes: ctx.outcomes,
    ...extra,
    ...(failed
      ? { degraded: { reason: ConditionReason.RemediationFailed, message: failed.message } }
      : {}),
  };
}

/** The host is healthy: the ladder (or its failure) ends, and the ladder's cordon is lifted. */
function recovered(ctx: LadderContext): LadderResult {
  const { input, events } = ctx;
  const { host, observed } = input;
  if (ctx.current) {
    const message = `${host} is healthy again during rung ${ctx.current.rung}`;
    recordRung(ctx, ctx.current.rung, 'Succeeded', message);
    events.push({ type: 'Normal', reason: EventReason.HostRecovered, message });
    ctx.current = undefined;
  }
  if (ctx.failed) {
    events.push({
      type: 'Normal',
      reason: EventReason.HostRecovered,
      message: `${host} is healthy again after RemediationFailed; its remediation cordon is lifted`,
    });
    ctx.failed = undefined;
  }
  // A cordon of the ladder's without a failure behind it (a lost operator's, or the failure
  // just ended) is lifted; the skip annotation leaves the node as a person set it.
  const uncordon = observed.cordonedByRemediation && input.hold !== 'SkipAnnotation';
  return ladderResult(ctx, uncordon ? { kind: 'uncordon' } : { kind: 'none' });
}

/** RemediationFailed and still unhealthy: the node is kept cordoned. */
function stayStopped(ctx: LadderContext): LadderResult {
  const { input } = ctx;
  // Stopped: keep the node cordoned (a level), unless a person asked to be left alone.
  const cordon = !input.observed.cordonedByRemediation && input.hold !== 'SkipAnnotation';
  return ladderResult(ctx, cordon ? { kind: 'cordon' } : { kind: 'none' });
}

/** The rung after `rung` for this host: Rebootstrap is Reboot when it cannot take it. */
function takeable(
  input: LadderInput,
  rung: RemediationRung | undefined,
): RemediationRung | undefined {
  return rung === 'Rebootstrap' && input.rebootstrapUnavailable ? 'Reboot' : rung;
}

/** Records Rebootstrap skipped, with why, when `wanted` was it and this host cannot take it. */
function recordSkip(ctx: LadderContext, wanted: RemediationRung | undefined): void {
  const { input } = ctx;
  if (wanted !== 'Rebootstrap' || !input.rebootstrapUnavailable) return;
  const message = `${input.host}: rung Rebootstrap skipped: ${input.rebootstrapUnavailable}; next: Reboot`;
  recordRung(ctx, 'Rebootstrap', 'Skipped', message);
  ctx.events.push({ type: 'Normal', reason: EventReason.RemediationRungSkipped, message });
}

/** The requests a rung starting now carries. */
function requestsOf(rung: RemediationRung, now: Date) {
  return {
    ...(rung === 'Rebootstrap' ? { rebootstrap: { requestedAt: requestTime(now) } } : {}),
    ...(rung === 'Reboot' ? { reboot: { requestedAt: apiTime(now) } } : {}),
  };
}

/** With no ladder recorded: starts one for the due problems, or returns the idle result. */
function startLadder(ctx: LadderContext): LadderResult | undefined {
  const { input } = ctx;
  const { health, host, now } = input;
  if (health.due.length === 0 || input.hold) {
    return ladderResult(ctx, { kind: 'none' }, health.dueAt ? { recheckAt: health.dueAt } : {});
  }
  const problem = health.due[0]!;
  const wanted = firstRung(health.due);
  const rung = takeable(input, wanted)!;
  ctx.events.push({
    type: 'Warning',
    reason: EventReason.HostUnhealthy,
    message: `${host}: ${health.due.map((p) => describeProblem(p, now)).join(', ')}; remediation starts with ${rung}`,
  });
  recordSkip(ctx, wanted);
  ctx.current = {
    problem: { type: problem.type, status: problem.status, since: problem.since },
    startedAt: apiTime(now),
    rung,
    rungStartedAt: apiTime(now),
    ...requestsOf(rung, now),
  };
  return undefined;
}

/** A hold records itself and stops the rung; a hold that ended restarts the rung's clock. */
function holdOrRelease(ctx: LadderContext): LadderResult | undefined {
  const { input } = ctx;
  const current = ctx.current!;
  if (input.hold) {
    if (current.held?.reason !== input.hold) {
      ctx.current = { ...current, held: { reason: input.hold, since: apiTime(input.now) } };
    }
    return ladderResult(ctx, { kind: 'none' });
  }
  if (current.held) {
    const { held: _released, ...rest } = current;
    ctx.current = { ...rest, rungStartedAt: apiTime(input.now) };
  }
  return undefined;
}

/** Ends the current rung with `rungResult`: on to the next rung, or RemediationFailed. */
function escalate(
  ctx: LadderContext,
  rungResult: RungResult,
  why: string,
): RemediationRung | undefined {
  const { input, events } = ctx;
  const { host, health, now } = input;
  const c = ctx.current!;
  const wanted = rungOrder[rungOrder.indexOf(c.rung) + 1];
  const next = takeable(input, wanted);
  const message = `${host}: rung ${c.rung} ${why}; ${next ? `next: ${next}` : 'no rung is left'}`;
  recordRung(ctx, c.rung, rungResult, message);
  if (next) {
    events.push({ type: 'Warning', reason: EventReason.RemediationEscalated, message });
    recordSkip(ctx, wanted);
    const { rebootstrap: _r, reboot: _b, ...rest } = c;
    ctx.current = { ...rest, rung: next, rungStartedAt: apiTime(now), ...requestsOf(next, now) };
  } else {
    const failure = `${host}: remediation failed: ${health.holding.map((p) => describeProblem(p, now)).join(', ') || 'unhealthy'} after ${rungOrder.join(', ')}. The node stays cordoned; repair the host by hand (winfleet lifts its cordon once the host is healthy), or set winfleet.io/skip-remediation to leave the node as you set it`;
    events.push({ type: 'Warning', reason: EventReason.RemediationFailed, message: failure });
    ctx.failed = { since: apiTime(now), message: failure };
    ctx.current = undefined;
  }
  return next;
}

/** One rung's handler: the result to return now, or undefined when the ladder moved on. */
type RungHandler = (ctx: LadderContext, c: RemediationLadder) => LadderResult | undefined;

/** The rung's timeout, and how messages say it ("within 5m"). */
function rungLimit(c: RemediationLadder, policy: HealthPolicy): { timeout: number; limit: string } {
  const timeout = rungTimeoutMs(c.rung, policy);
  return { timeout, limit: `within ${formatDuration(timeout)}` };
}

/** RestartService: wait for the agent's own repair until the rung's timeout, then escalate. */
function restartServiceRung(ctx: LadderContext, c: RemediationLadder): LadderResult | undefined {
  const { timeout, limit } = rungLimit(c, ctx.input.policy);
  const deadline = ms(c.rungStartedAt) + timeout;
  if (ctx.input.now.getTime() < deadline) {
    return ladderResult(ctx, { kind: 'none' }, { recheckAt: new Date(deadline) });
  }
  escalate(ctx, 'TimedOut', `(the agent's own repair) did not make the host healthy ${limit}`);
  return undefined;
}

/** Rebootstrap: ask for the bootstrap once, then wait; a bootstrap error or the timeout escalates. */
function rebootstrapRung(ctx: LadderContext, c: RemediationLadder): LadderResult | undefined {
  const { observed, now } = ctx.input;
  const { timeout, limit } = rungLimit(c, ctx.input.policy);
  const requestedAt = c.rebootstrap!.requestedAt;
  const requested = ms(requestedAt);
  const deadline = ms(c.rungStartedAt) + timeout;
  const error = observed.bootstrapError;
  if (error && safeMs(error.time) >= requested) {
    escalate(ctx, 'Failed', `failed: ${error.message}`);
    return undefined;
  }
  if (now.getTime() >= deadline) {
    escalate(ctx, 'TimedOut', `(agent bootstrap over SSH) did not make the host healthy ${limit}`);
    return undefined;
  }
  const done =
    observed.bootstrappedAt !== undefined && safeMs(observed.bootstrappedAt) >= requested;
  return ladderResult(ctx, done ? { kind: 'none' } : { kind: 'rebootstrap', requestedAt }, {
    recheckAt: new Date(deadline),
  });
}

/** Reboot: request it of the rollout, then give the host the rung's timeout after the reboot. */
function rebootRung(ctx: LadderContext, c: RemediationLadder): LadderResult {
  const { observed, now } = ctx.input;
  const { timeout, limit } = rungLimit(c, ctx.input.policy);
  const reboot = c.reboot!;
  const change = observed.rollout?.current;
  const lastReboot = observed.rollout?.lastRebootAt;
  const done = lastReboot !== undefined && safeMs(lastReboot) >= ms(reboot.requestedAt);
  if (change?.failure && (change.changes as readonly string[]).includes('repair')) {
    escalate(
      ctx,
      'Failed',
      `(a reboot through the pool's rollout) stopped: ${change.failure.message}`,
    );
    return ladderResult(ctx, { kind: 'none' });
  }
  // The rollout set the host aside (its change stopped, the repair's or another): it
  // starts no change on it, so the reboot will not come.
  const aside = observed.rollout?.setAside;
  if (!done && aside) {
    escalate(ctx, 'Failed', `(a reboot through the pool's rollout) cannot run: ${aside.message}`);
    return ladderResult(ctx, { kind: 'none' });
  }
  if (!done) {
    // Waiting for the rollout to take it, inside maxUnavailable: no deadline of its own.
    return ladderResult(ctx, { kind: 'none' }, { repairRebootRequestedAt: reboot.requestedAt });
  }
  if (!reboot.doneAt) {
    ctx.current = { ...c, reboot: { ...reboot, doneAt: apiTime(now) } };
    return ladderResult(ctx, { kind: 'none' }, { recheckAt: new Date(now.getTime() + timeout) });
  }
  const deadline = ms(reboot.doneAt) + timeout;
  if (now.getTime() < deadline) {
    return ladderResult(ctx, { kind: 'none' }, { recheckAt: new Date(deadline) });
  }
  escalate(
    ctx,
    'TimedOut',
    `(a reboot through the pool's rollout) did not make the host healthy ${limit} of the reboot`,
  );
  return ladderResult(ctx, observed.cordonedByRemediation ? { kind: 'none' } : { kind: 'cordon' });
}

/** The dispatcher's table: each rung's handler. */
const rungHandlers: Record<RemediationRung, RungHandler> = {
  RestartService: restartServiceRung,
  Rebootstrap: rebootstrapRung,
  Reboot: rebootRung,
};

/** A time the caller read from the API: unreadable counts as long ago. */
function safeMs(time: string): number {
  try {
    return ms(time);
  } catch {
    return Number.NEGATIVE_INFINITY;
  }
}
