/**
 * One host's change as a small state machine: Cordon → Drain → Apply → Reboot (when needed) →
 * WaitReady → Uncordon. Pure: `advanceHost` takes the host's recorded rollout state
 * (WindowsHost status.rollout), what is observed now (Node, pods, agent reports) and the
 * pool's target, and returns the state to record and the one action to take.
 *
 * Surviving an operator restart (the caller's part):
 * - Write the returned status BEFORE taking the action. A change is recorded (the host takes
 *   its slot) before its node is cordoned; a reboot's boot id and token are recorded before the
 *   agent is asked. A restart then finds every action it might have taken in the record.
 * - Every action is idempotent and read back from the world, not from memory:
 *   cordon sets spec.unschedulable and the winfleet.io/cordoned-by annotation in one patch;
 *   uncordon removes both, and only where the annotation says winfleet cordoned (a node a
 *   person cordoned stays cordoned); drain only evicts (never deletes, never forces); apply sets
 *   the desired version and asks for the patch policy (levels, not commands); reboot sets the
 *   recorded token as a level the agent acts on once — the agent stores the token before it
 *   calls shutdown and never reboots twice for one token — and the reboot counts as done once
 *   the Node's bootID differs from the one recorded before it.
 * - A node that carries winfleet's cordon while its host records no change (status lost, a
 *   change cleared by hand) is uncordoned: no node is left cordoned by a lost operator.
 *
 * What a restart does at each recorded step:
 * | step      | finds                                   | does                                     |
 * |-----------|-----------------------------------------|------------------------------------------|
 * | (none)    | node cordoned by winfleet               | uncordon                                 |
 * | Cordon    | node schedulable / unschedulable        | cordon again / go on to Drain            |
 * | Drain     | pods left / none                        | evict again / go on to Apply             |
 * | Apply     | agent not on the target / on it         | set the target again / Reboot or Wait    |
 * | Reboot    | bootID as recorded / changed            | same token again (no new one) / WaitReady |
 * | WaitReady | Node not Ready on the target / Ready    | wait / Uncordon                          |
 * |           | (spec.prePull) pulls of this boot and   | wait / Uncordon                          |
 * |           | version running / ended or wait passed  |                                          |
 * | Uncordon  | winfleet's cordon still there / gone    | uncordon / finish (record cleared)       |
 *
 * Deadlines: Cordon and Drain share spec.drainTimeout from the step's start; Apply, Reboot and
 * WaitReady each have spec.readyTimeout. A step past its deadline stops (failure recorded, a
 * Warning Event, the pool Degraded naming host and step) and takes no further action — nothing
 * is forced. It goes on by itself when its goal is met after all (the host came back), or when
 * someone sets the host's winfleet.io/retry-rollout annotation to a new value (its clock
 * restarts). Uncordon has no deadline: it is retried until it succeeds.
 *
 * Images before pods (a pool with spec.prePull, timeouts.prePullWaitMs): WaitReady also waits
 * for the agent's pulls of the Node's current boot and services version to end (ObservedNode
 * prePull, however they ended), or for prePullWaitMs (the spec's timeout and a grace) to pass
 * since the Node was both Ready and in WaitReady. That wait never fails the step: a Node Ready
 * on the target is uncordoned once it ends, pulled or not. A pool without spec.prePull waits
 * for Ready alone.
 *
 * A target that changes mid-way: before anything is applied (Cordon, Drain) the host takes the
 * new one, or is uncordoned when nothing is left to do; in Apply it applies the new one; in
 * WaitReady it goes back to Apply; a Reboot in flight is finished first and Uncordon goes on.
 * A change reboots at most once: a reboot still wanted after it is the next change's.
 *
 * Retirement (the pool is replaced, spec.replaces of another pool): the target is `retire` and
 * nothing else; the change is Cordon → Drain and ends there, recorded as status.rollout.retired,
 * the node left cordoned (no Apply, Reboot or Uncordon). While the target says retire the host
 * stays so; once it no longer does (the migration stopped) the host is uncordoned first.
 */
import { isDeepStrictEqual } from 'node:util';
import { ConditionReason, EventReason } from '../api/reasons.ts';
import type {
  ChangeKind,
  HostChange,
  HostRolloutStatus,
  RolloutStep,
  RolloutTarget,
  StepFailureReason,
} from '../api/rollout-status.ts';
import { retryRolloutAnnotation } from '../api/windows-node-pool.ts';
import { apiTime } from '../kube/api-time.ts';
import { formatDuration } from './duration.ts';
import type { ObservedNode } from './observed-node.ts';
import {
  changesNeedReboot,
  type HostFacts,
  pendingChanges,
  updatesFor,
} from './pending-changes.ts';
import {
  backInAnotherBoot,
  changeFailedMessage,
  rebootPendingMessage,
  rebootPendingPersists,
} from './set-aside.ts';

export interface HostObservation {
  /** The host's own Node (carrying its identity), if there is one. */
  node?: ObservedNode;
  /** Only DaemonSet and mirror pods (and finished ones) are left on the node. */
  drained: boolean;
  /** Pods the drain could not evict yet ("namespace/name"), for the timeout message. */
  drainBlockers?: readonly string[];
  facts: HostFacts;
  /** The agent's last error applying the target, for the timeout message. */
  agentError?: string;
  /** The value of the host's winfleet.io/retry-rollout annotation, if it has one. */
  retryAnnotation?: string;
  /** The WindowsHost is being deleted: its removal owns the node now. */
  deleting: boolean;
}

/** @package */
export interface StepInput {
  /** "namespace/name" of the WindowsHost, for messages. */
  host: string;
  status: HostRolloutStatus;
  observed: HostObservation;
  /** The pool's target now. */
  target: RolloutTarget;
  /** The planner picked this host to start a change now. */
  start: boolean;
  /**
   * prePullWaitMs: the pool has spec.prePull, and a Node Ready on the target waits this long at
   * most for its pulls (the spec's timeout and a grace) before WaitReady is met.
   */
  timeouts: { drainTimeoutMs: number; readyTimeoutMs: number; prePullWaitMs?: number };
  now: Date;
  /**
   * The pool may set this host aside if its change stops (fewer than its cap are set aside
   * after a failure, see pool-pass.ts): the change then ends and the host is uncordoned,
   * instead of holding back the pool. False (the default): the change stops and stays, as
   * before.
   */
  mayAside?: boolean;
}

export type StepAction =
  | { kind: 'none' }
  /** Patch the Node: spec.unschedulable true and winfleet.io/cordoned-by, one patch. */
  | { kind: 'cordon' }
  /** Evict what can be evicted (Eviction API: PodDisruptionBudgets decide; never forced). */
  | { kind: 'drain' }
  /** Bring the host to `target`: payload and desired services version, patch policy. */
  | { kind: 'apply'; target: RolloutTarget }
  /** Make sure the agent's reboot request carries `token` (the agent reboots once per token). */
  | { kind: 'reboot'; token: string }
  /** Remove spec.unschedulable and winfleet.io/cordoned-by, only where that annotation is. */
  | { kind: 'uncordon' };

/** @package */
export interface StepEvent {
  type: 'Normal' | 'Warning';
  reason: EventReason;
  message: string;
}

export interface StepResult {
  /** The state to record, before the action is taken (the same object when unchanged). */
  status: HostRolloutStatus;
  action: StepAction;
  /** Events to record on the WindowsHost. */
  events: StepEvent[];
  /** When the current step's deadline passes: look again then at the latest. */
  recheckAt?: Date;
  /** A new retry annotation was handled (and recorded): the caller may remove it. */
  retryConsumed?: boolean;
}

const stepFailure: Record<RolloutStep, StepFailureReason | undefined> = {
  Cordon: ConditionReason.DrainTimedOut,
  Drain: ConditionReason.DrainTimedOut,
  Apply: ConditionReason.ApplyTimedOut,
  Reboot: ConditionReason.RebootTimedOut,
  WaitReady: ConditionReason.ReadyTimedOut,
  Uncordon: undefined,
};

const failureEvent: Record<StepFailureReason, EventReason> = {
  DrainTimedOut: EventReason.DrainTimedOut,
  ApplyTimedOut: EventReason.ApplyTimedOut,
  RebootTimedOut: EventReason.RebootTimedOut,
  ReadyTimedOut: EventReason.ReadyTimedOut,
};

function sameTarget(a: RolloutTarget, b: RolloutTarget): boolean {
  return (
    a.servicesVersion === b.servicesVersion &&
    a.patchPolicy === b.patchPolicy &&
    a.rebootRequestedAt === b.rebootRequestedAt &&
    a.repairRequestedAt === b.repairRequestedAt &&
    (a.retire ?? false) === (b.retire ?? false)
  );
}

/** The agent runs the target's services and has no updates of its policy left to install. */
function applied(target: RolloutTarget, facts: HostFacts): boolean {
  return (
    (target.servicesVersion === undefined || facts.servicesVersion === target.servicesVersion) &&
    updatesFor(target.patchPolicy, facts.availableUpdates).length === 0
  );
}

/** What a change brings, for messages: "services v1.36.6-wf.1, Security updates, a reboot". */
export function describeChange(target: RolloutTarget, changes: readonly ChangeKind[]): string {
  const parts: string[] = [];
  if (changes.includes('services')) parts.push(`services ${target.servicesVersion}`);
  if (changes.includes('patches'))
    parts.push(`${target.patchPolicy === 'All' ? 'all' : 'Security'} updates`);
  if (changesNeedReboot(changes))
    parts.push(changes.includes('repair') ? 'a repair reboot' : 'a reboot');
  if (changes.includes('retire')) parts.push('retirement (drained, then left cordoned)');
  return parts.join(', ') || 'nothing';
}

function deadlineOf(
  change: HostChange,
  timeouts: StepInput['timeouts'],
  observed: HostObservation,
): number | undefined {
  const started = Date.parse(change.stepStartedAt);
  switch (change.step) {
    case 'Cordon':
    case 'Drain':
      return started + timeouts.drainTimeoutMs;
    case 'Apply':
    case 'Reboot':
      return started + timeouts.readyTimeoutMs;
    case 'WaitReady':
      // Ready on the target, waiting for its pulls alone: met (never failed) when the wait ends.
      return readyOnTarget(change, observed)
        ? (prePullDeadline(change, timeouts, observed) ?? started + timeouts.readyTimeoutMs)
        : started + timeouts.readyTimeoutMs;
    case 'Uncordon':
      return undefined;
  }
}

/**
 * WaitReady's readiness: the Node Ready, the target applied and, after patches, a report made
 * in the new boot saying they stayed installed (an update Windows rolled back at boot is offered
 * again: the step then times out, named, instead of the host going round cordon, drain and
 * reboot for ever).
 */
function readyOnTarget(change: HostChange, observed: HostObservation): boolean {
  return (
    observed.node?.ready === true &&
    applied(change.target, observed.facts) &&
    (!change.changes.includes('patches') || observed.facts.updatesReported !== false)
  );
}

/**
 * When a Node Ready on the target stops waiting for its pulls: prePullWaitMs after it was both
 * Ready and in WaitReady. Undefined for a pool without spec.prePull.
 */
function prePullDeadline(
  change: HostChange,
  timeouts: StepInput['timeouts'],
  observed: HostObservation,
): number | undefined {
  if (timeouts.prePullWaitMs === undefined) return undefined;
  const started = Date.parse(change.stepStartedAt);
  const ready = observed.node?.readySince ? Date.parse(observed.node.readySince) : Number.NaN;
  return (Number.isNaN(ready) ? started : Math.max(started, ready)) + timeouts.prePullWaitMs;
}

/** The pulls of this boot and version ended, or the wait for them passed (or none to wait for). */
function prePullEnded(change: HostChange, input: StepInput, observed: HostObservation): boolean {
  const deadline = prePullDeadline(change, input.timeouts, observed);
  return (
    deadline === undefined || observed.node?.prePull === 'ended' || input.now.getTime() >= deadline
  );
}

/** True when the step's goal holds now, so the change may move past it. */
function goalMet(change: HostChange, input: StepInput, observed: HostObservation): boolean {
  const node = observed.node;
  switch (change.step) {
    case 'Cordon':
      return node?.unschedulable === true;
    case 'Drain':
      return observed.drained;
    case 'Apply':
      return applied(change.target, observed.facts);
    case 'Reboot':
      return (
        change.reboot !== undefined &&
        node?.bootId !== undefined &&
        node.bootId !== change.reboot.bootIdBefore
      );
    case 'WaitReady':
      return readyOnTarget(change, observed) && prePullEnded(change, input, observed);
    case 'Uncordon':
      return node?.cordonedByWinfleet !== true;
  }
}

function failureMessage(input: StepInput, change: HostChange): string {
  const { host, observed, timeouts } = input;
  const node = observed.node ? `Node ${observed.node.name}` : 'its Node';
  const [namespace, name] = host.split('/');
  const retry = `then retry the step: kubectl annotate --overwrite windowshost -n ${namespace} ${name} ${retryRolloutAnnotation}=$(date +%s)`;
  const drain = `spec.drainTimeout ${formatDuration(timeouts.drainTimeoutMs)}`;
  const ready = `spec.readyTimeout ${formatDuration(timeouts.readyTimeoutMs)}`;
  switch (change.step) {
    case 'Cordon':
      return `${host}: ${node} could not be cordoned within ${drain}; check that the Node exists, ${retry}`;
    case 'Drain': {
      const left = observed.drainBlockers?.length
        ? `; pods left: ${observed.drainBlockers.join(', ')}`
        : '';
      return `${host}: draining ${node} did not finish within ${drain}${left}. Nothing was forced: let the PodDisruptionBudgets allow the evictions (or move the pods), ${retry}`;
    }
    case 'Apply': {
      const error = observed.agentError ? `; the agent says: ${observed.agentError}` : '';
      return `${host}: the agent did not apply ${describeChange(change.target, change.changes)} within ${ready}${error}. Check the agent's log on the host, ${retry}`;
    }
    case 'Reboot':
      return change.reboot
        ? `${host}: ${node} did not come back from its reboot within ${ready} (its boot id did not change). Check the host's console, ${retry}`
        : `${host}: ${node} reported no boot id within ${ready}, so no reboot was asked for. Check that the Node exists and its kubelet reports, ${retry}`;
    case 'WaitReady':
      return `${host}: ${node} was not Ready on ${describeChange(change.target, change.changes)} within ${ready}. Check the node's conditions and the agent's log, ${retry}`;
    case 'Uncordon':
      return `${host}: uncordon of ${node} failed`;
  }
}

/**
 * What one call of `advanceHost` works on: its input (with the recorded last reboot in the
 * facts), and the parts of the record it decides on so far, written into the result.
 */
interface StepContext {
  input: StepInput;
  /** `input.observed`, with the recorded last reboot in its facts. */
  observed: HostObservation;
  /** Events to record on the WindowsHost (the result's `events`). */
  events: StepEvent[];
  /** A retry annotation not acted on before is acted on in this call. */
  retry: boolean;
  retryHandled: string | undefined;
  lastRebootAt: HostRolloutStatus['lastRebootAt'];
  lastChange: HostRolloutStatus['lastChange'];
  setAside: HostRolloutStatus['setAside'];
  retired: HostRolloutStatus['retired'];
}

/** A step's outcome: go on with the (moved) change, or stop with this result. */
type StepOutcome = { next: HostChange } | { done: StepResult };

/**
 * Advances one host's change as far as what is observed allows, and says what to do next.
 * See the module comment for the steps, the deadlines and what a restart does.
 * @package
 */
export function advanceHost(input: StepInput): StepResult {
  const { status } = input;
  // The removal of the host owns its node: never cordon, uncordon or reboot it from here.
  if (input.observed.deleting) return { status, action: { kind: 'none' }, events: [] };
  const ctx = stepContext(input);
  let change = status.current;
  if (!change) {
    const started = startChange(ctx);
    if ('done' in started) return started.done;
    change = started.next;
  }
  // Each pass of the loop either moves to the next step (its goal holds) or returns the action
  // the current step needs. Six steps, and a new target can send WaitReady back to Apply once:
  // the loop ends within ten passes.
  for (let pass = 0; pass < 10; pass++) {
    const outcome = advanceOnce(ctx, change);
    if ('done' in outcome) return outcome.done;
    change = outcome.next;
  }
  return stepResult(ctx, { kind: 'none' }, change);
}

/** Builds the context: the recorded reboot in the facts, the retry, and set-asides it clears. */
function stepContext(input: StepInput): StepContext {
  const { status } = input;
  // What winfleet recorded about the last reboot (and a retirement) is the truth about it,
  // whatever the caller read.
  const observed: HostObservation =
    status.lastRebootAt || status.retired
      ? {
          ...input.observed,
          facts: {
            ...input.observed.facts,
            ...(status.lastRebootAt ? { lastRebootAt: status.lastRebootAt } : {}),
            ...(status.retired ? { retired: true } : {}),
          },
        }
      : input.observed;
  // A retry is a value not acted on before; acted on, it is recorded (and used up even when
  // nothing had stopped), and forgotten once the annotation is gone.
  const retryValue = observed.retryAnnotation;
  const retry = retryValue !== undefined && retryValue !== status.retryHandled;
  const retryHandled = retry
    ? retryValue
    : retryValue === undefined
      ? undefined
      : status.retryHandled;
  const ctx: StepContext = {
    input,
    observed,
    events: [],
    retry,
    retryHandled,
    lastRebootAt: status.lastRebootAt,
    lastChange: status.lastChange,
    setAside: status.setAside,
    retired: status.retired,
  };
  clearSetAside(ctx);
  return ctx;
}

/** Clears a set-aside a retry or a new boot ends (set-aside.ts), with its event. */
function clearSetAside(ctx: StepContext): void {
  const { input, observed, events } = ctx;
  // A retry also clears a set-aside, and the reboot-pending it was set aside for is served once
  // more (set-aside.ts).
  if (ctx.retry && (ctx.setAside || ctx.lastChange?.servedRebootPending)) {
    if (ctx.setAside) {
      events.push({
        type: 'Normal',
        reason: EventReason.RolloutResumed,
        message: `${input.host} is no longer set aside: ${retryRolloutAnnotation} was set; it starts again in turn`,
      });
    }
    ctx.setAside = undefined;
    if (ctx.lastChange) ctx.lastChange = { endedAt: ctx.lastChange.endedAt };
  }
  if (ctx.setAside && backInAnotherBoot(ctx.setAside, observed.node)) {
    events.push({
      type: 'Normal',
      reason: EventReason.RolloutResumed,
      message: `${input.host} is no longer set aside: Node ${observed.node?.name} is Ready in a new boot; it starts again in turn`,
    });
    ctx.setAside = undefined;
  }
}

/** The change moved into `step`, its clock started now and any failure cleared. */
function enterStep(c: HostChange, step: RolloutStep, now: Date): HostChange {
  const { failure: _failure, ...rest } = c;
  return { ...rest, step, stepStartedAt: apiTime(now) };
}

/** The result: the record (the same object when unchanged), the action and the deadline. */
function stepResult(ctx: StepContext, action: StepAction, c: HostChange | undefined): StepResult {
  const { input, observed, lastRebootAt, retryHandled, lastChange, setAside, retired } = ctx;
  const { status } = input;
  // The record of winfleet's own cordon: set with the cordon, kept while the Node shows it.
  const cordoned =
    action.kind === 'cordon'
      ? observed.node?.name
      : observed.node?.cordonedByWinfleet
        ? status.cordoned
        : undefined;
  const next: HostRolloutStatus = {
    ...(c ? { current: c } : {}),
    ...(lastRebootAt ? { lastRebootAt } : {}),
    ...(retryHandled !== undefined ? { retryHandled } : {}),
    ...(cordoned ? { cordoned } : {}),
    ...(lastChange ? { lastChange } : {}),
    ...(setAside ? { setAside } : {}),
    ...(retired ? { retired } : {}),
  };
  const deadline = c && !c.failure ? deadlineOf(c, input.timeouts, observed) : undefined;
  return {
    status: isDeepStrictEqual(next, status) ? status : next,
    action,
    events: ctx.events,
    ...(deadline !== undefined ? { recheckAt: new Date(deadline) } : {}),
    ...(ctx.retry ? { retryConsumed: true } : {}),
  };
}

/**
 * Out of any change, a cordon of winfleet's is a lost operator's (or a set-aside change's): undo
 * it — except on a retired host while its pool is still being replaced, which stays cordoned.
 * A retirement the pool no longer wants (the migration stopped) ends here: uncordoned.
 */
function idle(ctx: StepContext): StepResult {
  if (ctx.retired && ctx.input.target.retire) return stepResult(ctx, { kind: 'none' }, undefined);
  if (ctx.retired) {
    ctx.events.push({
      type: 'Normal',
      reason: EventReason.RolloutFinished,
      message: `${ctx.input.host} is no longer retired (its pool is not being replaced now): Node ${ctx.observed.node?.name ?? '(gone)'} is uncordoned`,
    });
    ctx.retired = undefined;
  }
  return stepResult(
    ctx,
    ctx.observed.node?.cordonedByWinfleet ? { kind: 'uncordon' } : { kind: 'none' },
    undefined,
  );
}

/** Ends the change here and sets the host aside (set-aside.ts). */
function putAside(ctx: StepContext, failure: string): StepResult {
  const { input, observed } = ctx;
  const bootId = observed.node?.bootId;
  ctx.setAside = {
    cause: 'ChangeFailed',
    message: changeFailedMessage(input.host, failure),
    since: apiTime(input.now),
    ...(bootId ? { bootId } : {}),
  };
  ctx.lastChange = { endedAt: apiTime(input.now) };
  ctx.events.push({
    type: 'Warning',
    reason: EventReason.HostSetAside,
    message: ctx.setAside.message,
  });
  return idle(ctx);
}

/** Sets the host aside because a reboot did not clear its pending reboot (set-aside.ts). */
function asideRebootPending(ctx: StepContext): void {
  const { input, observed } = ctx;
  ctx.setAside = {
    cause: 'RebootPendingPersists',
    message: rebootPendingMessage(input.host, observed.node?.name),
    since: apiTime(input.now),
  };
  ctx.events.push({
    type: 'Warning',
    reason: EventReason.HostSetAside,
    message: ctx.setAside.message,
  });
}

/** With no change recorded: starts one at Cordon when the planner says so, else stays idle. */
function startChange(ctx: StepContext): StepOutcome {
  const { input, observed } = ctx;
  const { now } = input;
  if (ctx.setAside) return { done: idle(ctx) };
  // A retirement the pool no longer wants is undone (uncordoned) before anything else starts.
  if (ctx.retired && !input.target.retire) return { done: idle(ctx) };
  const pending = pendingChanges(
    input.target,
    { ...observed.facts, retired: ctx.retired !== undefined },
    now,
  );
  if (rebootPendingPersists({ ...input.status, lastChange: ctx.lastChange }, pending)) {
    asideRebootPending(ctx);
    return { done: idle(ctx) };
  }
  const changes = input.start ? pending : [];
  if (changes.length === 0) return { done: idle(ctx) };
  const change: HostChange = {
    target: input.target,
    changes,
    step: 'Cordon',
    startedAt: apiTime(now),
    stepStartedAt: apiTime(now),
  };
  ctx.events.push({
    type: 'Normal',
    reason: EventReason.RolloutStarted,
    message: `Cordoning Node ${observed.node?.name ?? '(none yet)'} for ${describeChange(change.target, changes)}`,
  });
  return { next: change };
}

/** One pass: retarget, resume or stop a failed step, stop at a deadline, then the step itself. */
function advanceOnce(ctx: StepContext, recorded: HostChange): StepOutcome {
  const { input, observed } = ctx;
  let change = retarget(recorded, { ...input, observed });
  const met = goalMet(change, input, observed);
  if (change.failure) {
    const resumed = resumeFailed(ctx, change, met);
    if ('done' in resumed) return resumed;
    change = resumed.next;
  }
  if (!met) {
    const stopped = stopAtDeadline(ctx, change);
    if (stopped) return { done: stopped };
  }
  return stepHandlers[change.step](ctx, change, met);
}

/** A stopped step goes on when its goal is met or on a retry; otherwise it stays (or is set aside). */
function resumeFailed(ctx: StepContext, change: HostChange, met: boolean): StepOutcome {
  const { input } = ctx;
  const { now } = input;
  if (!ctx.retry && !met) {
    if (input.mayAside) return { done: putAside(ctx, change.failure!.message) };
    return { done: stepResult(ctx, { kind: 'none' }, change) };
  }
  ctx.events.push({
    type: 'Normal',
    reason: EventReason.RolloutResumed,
    message: `${change.step} goes on: ${met ? 'the host got there after all' : `${retryRolloutAnnotation} was set`}`,
  });
  const { failure: _cleared, ...rest } = change;
  if (met) return { next: rest };
  if (rest.step === 'Reboot') {
    // The boot id never changed: that token did not reboot the host (the agent may have
    // recorded it and failed to shut down). A retry asks again with a new token.
    const { reboot: _unused, ...withoutReboot } = rest;
    return { next: { ...withoutReboot, stepStartedAt: apiTime(now) } };
  }
  return { next: { ...rest, stepStartedAt: apiTime(now) } };
}

/** A step past its deadline stops: failure recorded, a Warning Event (or the host set aside). */
function stopAtDeadline(ctx: StepContext, change: HostChange): StepResult | undefined {
  const { input } = ctx;
  const deadline = deadlineOf(change, input.timeouts, ctx.observed);
  if (deadline === undefined || input.now.getTime() < deadline) return undefined;
  const reason = stepFailure[change.step]!;
  const message = failureMessage(input, change);
  const failed: HostChange = {
    ...change,
    failure: { step: change.step, reason, message, since: apiTime(input.now) },
  };
  ctx.events.push({ type: 'Warning', reason: failureEvent[reason], message });
  if (input.mayAside) return putAside(ctx, message);
  return stepResult(ctx, { kind: 'none' }, failed);
}

/** One step's handler: the action while its goal does not hold, the next step once it does. */
type StepHandler = (ctx: StepContext, change: HostChange, met: boolean) => StepOutcome;

/** Cordon: cordon the Node (once there is one), then Drain. */
function cordonStep(ctx: StepContext, change: HostChange, met: boolean): StepOutcome {
  if (!met) {
    return {
      done: stepResult(ctx, ctx.observed.node ? { kind: 'cordon' } : { kind: 'none' }, change),
    };
  }
  return { next: enterStep(change, 'Drain', ctx.input.now) };
}

/** Drain: evict until drained, then Apply; a retirement ends here, the node left cordoned. */
function drainStep(ctx: StepContext, change: HostChange, met: boolean): StepOutcome {
  if (!met) return { done: stepResult(ctx, { kind: 'drain' }, change) };
  if (change.changes.includes('retire')) return { done: retireEnd(ctx) };
  return { next: enterStep(change, 'Apply', ctx.input.now) };
}

/** The end of a retirement: recorded, the node left cordoned for the admin to remove. */
function retireEnd(ctx: StepContext): StepResult {
  const { input, observed } = ctx;
  const at = apiTime(input.now);
  ctx.retired = { at, ...(observed.node ? { node: observed.node.name } : {}) };
  ctx.lastChange = { endedAt: at };
  ctx.events.push({
    type: 'Normal',
    reason: EventReason.RolloutFinished,
    message: `Node ${observed.node?.name ?? '(gone)'} is drained and stays cordoned: its pool is replaced (spec.replaces of another pool); remove the host when the migration is complete`,
  });
  return stepResult(ctx, { kind: 'none' }, undefined);
}

/** Apply: set the target until the agent runs it, then Reboot (when needed) or WaitReady. */
function applyStep(ctx: StepContext, change: HostChange, met: boolean): StepOutcome {
  if (!met) return { done: stepResult(ctx, { kind: 'apply', target: change.target }, change) };
  // One reboot per change at most: a reboot still pending after it is the next change's.
  const next =
    !change.reboot && (changesNeedReboot(change.changes) || ctx.observed.facts.rebootPending)
      ? 'Reboot'
      : 'WaitReady';
  return { next: enterStep(change, next, ctx.input.now) };
}

/** Reboot: record a token and the boot id, ask until the boot id changes, then WaitReady. */
function rebootStep(ctx: StepContext, change: HostChange, met: boolean): StepOutcome {
  const { observed } = ctx;
  const { now } = ctx.input;
  if (met) {
    // The reboot happened: it serves every reboot request made before it was asked for.
    ctx.lastRebootAt = change.reboot!.requestedAt;
    return { next: enterStep(change, 'WaitReady', now) };
  }
  let asked = change;
  if (!asked.reboot) {
    const bootId = observed.node?.bootId;
    // Without the current boot id the reboot could not be told from none: wait for it.
    if (!bootId) return { done: stepResult(ctx, { kind: 'none' }, asked) };
    asked = {
      ...asked,
      reboot: {
        // A token the Node annotation can carry (rebootTokenPattern): the time in ms.
        token: `reboot-${now.getTime()}`,
        bootIdBefore: bootId,
        requestedAt: apiTime(now),
      },
    };
    ctx.events.push({
      type: 'Normal',
      reason: EventReason.Rebooting,
      message: `Asking the agent to reboot Node ${observed.node?.name}`,
    });
  }
  return { done: stepResult(ctx, { kind: 'reboot', token: asked.reboot!.token }, asked) };
}

/** WaitReady: wait for the Node Ready on the target, then Uncordon. */
function waitReadyStep(ctx: StepContext, change: HostChange, met: boolean): StepOutcome {
  if (!met) return { done: stepResult(ctx, { kind: 'none' }, change) };
  return { next: enterStep(change, 'Uncordon', ctx.input.now) };
}

/** Uncordon: uncordon until winfleet's cordon is gone, then end the change (record cleared). */
function uncordonStep(ctx: StepContext, change: HostChange, met: boolean): StepOutcome {
  const { input, observed } = ctx;
  if (!met) return { done: stepResult(ctx, { kind: 'uncordon' }, change) };
  const lastChange = {
    endedAt: apiTime(input.now),
    ...(change.changes.includes('reboot-pending') && change.reboot
      ? { servedRebootPending: true }
      : {}),
  };
  ctx.lastChange = lastChange;
  // Still pending in the boot the change's reboot made: set aside at once.
  if (
    lastChange.servedRebootPending &&
    rebootPendingPersists({ lastChange }, pendingChanges(input.target, observed.facts, input.now))
  ) {
    asideRebootPending(ctx);
  }
  ctx.events.push({
    type: 'Normal',
    reason: EventReason.RolloutFinished,
    message:
      change.changes.length > 0
        ? `Node ${observed.node?.name ?? '(gone)'} is Ready with ${describeChange(change.target, change.changes)} and uncordoned`
        : `Nothing is left to change on Node ${observed.node?.name ?? '(gone)'}; it is uncordoned`,
  });
  return { done: stepResult(ctx, { kind: 'none' }, undefined) };
}

/** The dispatcher's table: each step's handler. */
const stepHandlers: Record<RolloutStep, StepHandler> = {
  Cordon: cordonStep,
  Drain: drainStep,
  Apply: applyStep,
  Reboot: rebootStep,
  WaitReady: waitReadyStep,
  Uncordon: uncordonStep,
};

/** Takes a new pool target where that costs no extra disruption (see the module comment). */
function retarget(change: HostChange, input: StepInput): HostChange {
  const enter = (c: HostChange, step: RolloutStep) => enterStep(c, step, input.now);
  if (sameTarget(change.target, input.target)) return change;
  const pending = pendingChanges(input.target, input.observed.facts, input.now);
  switch (change.step) {
    case 'Cordon':
    case 'Drain':
      if (pending.length === 0)
        return enter({ ...change, target: input.target, changes: [] }, 'Uncordon');
      return { ...change, target: input.target, changes: pending };
    case 'Apply':
      return {
        ...change,
        target: input.target,
        changes: [...new Set([...change.changes, ...pending])],
      };
    case 'WaitReady': {
      const moved =
        change.target.servicesVersion !== input.target.servicesVersion ||
        change.target.patchPolicy !== input.target.patchPolicy;
      if (!moved) return change;
      return enter({ ...change, target: input.target, changes: pending }, 'Apply');
    }
    case 'Reboot':
      // A repair alone whose request was withdrawn (remediation gave up on the host, or it is
      // healthy again): nothing is left to reboot for, so the change ends, stopped or not.
      if (
        change.changes.length === 1 &&
        change.changes[0] === 'repair' &&
        input.target.repairRequestedAt === undefined &&
        pending.length === 0
      ) {
        return enter({ ...change, target: input.target, changes: [] }, 'Uncordon');
      }
      return change;
    case 'Uncordon':
      return change;
  }
}
