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
 * | Uncordon  | winfleet's cordon still there / gone    | uncordon / finish (record cleared)       |
 *
 * Deadlines: Cordon and Drain share spec.drainTimeout from the step's start; Apply, Reboot and
 * WaitReady each have spec.readyTimeout. A step past its deadline stops (failure recorded, a
 * Warning Event, the pool Degraded naming host and step) and takes no further action — nothing
 * is forced. It goes on by itself when its goal is met after all (the host came back), or when
 * someone sets the host's winfleet.io/retry-rollout annotation to a new value (its clock
 * restarts). Uncordon has no deadline: it is retried until it succeeds.
 *
 * A target that changes mid-way: before anything is applied (Cordon, Drain) the host takes the
 * new one, or is uncordoned when nothing is left to do; in Apply it applies the new one; in
 * WaitReady it goes back to Apply; a Reboot in flight is finished first and Uncordon goes on.
 * A change reboots at most once: a reboot still wanted after it is the next change's.
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

export interface StepInput {
  /** "namespace/name" of the WindowsHost, for messages. */
  host: string;
  status: HostRolloutStatus;
  observed: HostObservation;
  /** The pool's target now. */
  target: RolloutTarget;
  /** The planner picked this host to start a change now. */
  start: boolean;
  timeouts: { drainTimeoutMs: number; readyTimeoutMs: number };
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
    a.repairRequestedAt === b.repairRequestedAt
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
  return parts.join(', ') || 'nothing';
}

function deadlineOf(change: HostChange, timeouts: StepInput['timeouts']): number | undefined {
  const started = Date.parse(change.stepStartedAt);
  switch (change.step) {
    case 'Cordon':
    case 'Drain':
      return started + timeouts.drainTimeoutMs;
    case 'Apply':
    case 'Reboot':
    case 'WaitReady':
      return started + timeouts.readyTimeoutMs;
    case 'Uncordon':
      return undefined;
  }
}

/** True when the step's goal holds now, so the change may move past it. */
function goalMet(change: HostChange, observed: HostObservation): boolean {
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
      // After patches, only a report made in the new boot says they stayed installed (an
      // update Windows rolled back at boot is offered again: the step then times out, named,
      // instead of the host going round cordon, drain and reboot for ever).
      return (
        node?.ready === true &&
        applied(change.target, observed.facts) &&
        (!change.changes.includes('patches') || observed.facts.updatesReported !== false)
      );
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
 * Advances one host's change as far as what is observed allows, and says what to do next.
 * See the module comment for the steps, the deadlines and what a restart does.
 */
export function advanceHost(input: StepInput): StepResult {
  const { status, now } = input;
  // What winfleet recorded about the last reboot is the truth about it, whatever the caller read.
  const observed: HostObservation = status.lastRebootAt
    ? { ...input.observed, facts: { ...input.observed.facts, lastRebootAt: status.lastRebootAt } }
    : input.observed;
  const events: StepEvent[] = [];
  // The removal of the host owns its node: never cordon, uncordon or reboot it from here.
  if (observed.deleting) return { status, action: { kind: 'none' }, events };
  let change = status.current;
  let lastRebootAt = status.lastRebootAt;
  let lastChange = status.lastChange;
  let setAside = status.setAside;
  // A retry is a value not acted on before; acted on, it is recorded (and used up even when
  // nothing had stopped), and forgotten once the annotation is gone.
  const retryValue = observed.retryAnnotation;
  const retry = retryValue !== undefined && retryValue !== status.retryHandled;
  const retryHandled = retry
    ? retryValue
    : retryValue === undefined
      ? undefined
      : status.retryHandled;
  // A retry also clears a set-aside, and the reboot-pending it was set aside for is served once
  // more (set-aside.ts).
  if (retry && (setAside || lastChange?.servedRebootPending)) {
    if (setAside) {
      events.push({
        type: 'Normal',
        reason: EventReason.RolloutResumed,
        message: `${input.host} is no longer set aside: ${retryRolloutAnnotation} was set; it starts again in turn`,
      });
    }
    setAside = undefined;
    if (lastChange) lastChange = { endedAt: lastChange.endedAt };
  }
  if (setAside && backInAnotherBoot(setAside, observed.node)) {
    events.push({
      type: 'Normal',
      reason: EventReason.RolloutResumed,
      message: `${input.host} is no longer set aside: Node ${observed.node?.name} is Ready in a new boot; it starts again in turn`,
    });
    setAside = undefined;
  }

  const enter = (c: HostChange, step: RolloutStep): HostChange => {
    const { failure: _failure, ...rest } = c;
    return { ...rest, step, stepStartedAt: apiTime(now) };
  };
  const result = (action: StepAction, c: HostChange | undefined): StepResult => {
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
    };
    const deadline = c && !c.failure ? deadlineOf(c, input.timeouts) : undefined;
    return {
      status: isDeepStrictEqual(next, status) ? status : next,
      action,
      events,
      ...(deadline !== undefined ? { recheckAt: new Date(deadline) } : {}),
      ...(retry ? { retryConsumed: true } : {}),
    };
  };

  // Out of any change, a cordon of winfleet's is a lost operator's (or a set-aside change's): undo it.
  const idle = (): StepResult =>
    result(observed.node?.cordonedByWinfleet ? { kind: 'uncordon' } : { kind: 'none' }, undefined);
  /** Ends the change here and sets the host aside (set-aside.ts). */
  const putAside = (failure: string): StepResult => {
    const bootId = observed.node?.bootId;
    setAside = {
      cause: 'ChangeFailed',
      message: changeFailedMessage(input.host, failure),
      since: apiTime(now),
      ...(bootId ? { bootId } : {}),
    };
    lastChange = { endedAt: apiTime(now) };
    events.push({ type: 'Warning', reason: EventReason.HostSetAside, message: setAside.message });
    return idle();
  };

  if (!change) {
    if (setAside) return idle();
    const pending = pendingChanges(input.target, observed.facts, now);
    if (rebootPendingPersists({ ...status, lastChange }, pending)) {
      setAside = {
        cause: 'RebootPendingPersists',
        message: rebootPendingMessage(input.host, observed.node?.name),
        since: apiTime(now),
      };
      events.push({ type: 'Warning', reason: EventReason.HostSetAside, message: setAside.message });
      return idle();
    }
    const changes = input.start ? pending : [];
    if (changes.length === 0) return idle();
    change = {
      target: input.target,
      changes,
      step: 'Cordon',
      startedAt: apiTime(now),
      stepStartedAt: apiTime(now),
    };
    events.push({
      type: 'Normal',
      reason: EventReason.RolloutStarted,
      message: `Cordoning Node ${observed.node?.name ?? '(none yet)'} for ${describeChange(change.target, changes)}`,
    });
  }

  // Each pass of the loop either moves to the next step (its goal holds) or returns the action
  // the current step needs. Six steps, and a new target can send WaitReady back to Apply once:
  // the loop ends within ten passes.
  for (let pass = 0; pass < 10; pass++) {
    change = retarget(change, { ...input, observed }, enter);
    const met = goalMet(change, observed);
    if (change.failure) {
      if (retry || met) {
        events.push({
          type: 'Normal',
          reason: EventReason.RolloutResumed,
          message: `${change.step} goes on: ${met ? 'the host got there after all' : `${retryRolloutAnnotation} was set`}`,
        });
        const { failure: _cleared, ...rest } = change;
        if (met) change = rest;
        else if (rest.step === 'Reboot') {
          // The boot id never changed: that token did not reboot the host (the agent may have
          // recorded it and failed to shut down). A retry asks again with a new token.
          const { reboot: _unused, ...withoutReboot } = rest;
          change = { ...withoutReboot, stepStartedAt: apiTime(now) };
        } else change = { ...rest, stepStartedAt: apiTime(now) };
      } else if (input.mayAside) {
        return putAside(change.failure.message);
      } else {
        return result({ kind: 'none' }, change);
      }
    }
    if (!met) {
      const deadline = deadlineOf(change, input.timeouts);
      if (deadline !== undefined && now.getTime() >= deadline) {
        const reason = stepFailure[change.step]!;
        const message = failureMessage(input, change);
        change = {
          ...change,
          failure: { step: change.step, reason, message, since: apiTime(now) },
        };
        events.push({ type: 'Warning', reason: failureEvent[reason], message });
        if (input.mayAside) return putAside(message);
        return result({ kind: 'none' }, change);
      }
    }
    switch (change.step) {
      case 'Cordon':
        if (!met) return result(observed.node ? { kind: 'cordon' } : { kind: 'none' }, change);
        change = enter(change, 'Drain');
        break;
      case 'Drain':
        if (!met) return result({ kind: 'drain' }, change);
        change = enter(change, 'Apply');
        break;
      case 'Apply':
        if (!met) return result({ kind: 'apply', target: change.target }, change);
        // One reboot per change at most: a reboot still pending after it is the next change's.
        change = enter(
          change,
          !change.reboot && (changesNeedReboot(change.changes) || observed.facts.rebootPending)
            ? 'Reboot'
            : 'WaitReady',
        );
        break;
      case 'Reboot':
        if (met) {
          // The reboot happened: it serves every reboot request made before it was asked for.
          lastRebootAt = change.reboot!.requestedAt;
          change = enter(change, 'WaitReady');
          break;
        }
        if (!change.reboot) {
          const bootId = observed.node?.bootId;
          // Without the current boot id the reboot could not be told from none: wait for it.
          if (!bootId) return result({ kind: 'none' }, change);
          change = {
            ...change,
            reboot: {
              // A token the Node annotation can carry (rebootTokenPattern): the time in ms.
              token: `reboot-${now.getTime()}`,
              bootIdBefore: bootId,
              requestedAt: apiTime(now),
            },
          };
          events.push({
            type: 'Normal',
            reason: EventReason.Rebooting,
            message: `Asking the agent to reboot Node ${observed.node?.name}`,
          });
        }
        return result({ kind: 'reboot', token: change.reboot!.token }, change);
      case 'WaitReady':
        if (!met) return result({ kind: 'none' }, change);
        change = enter(change, 'Uncordon');
        break;
      case 'Uncordon':
        if (!met) return result({ kind: 'uncordon' }, change);
        lastChange = {
          endedAt: apiTime(now),
          ...(change.changes.includes('reboot-pending') && change.reboot
            ? { servedRebootPending: true }
            : {}),
        };
        // Still pending in the boot the change's reboot made: set aside at once.
        if (
          lastChange.servedRebootPending &&
          rebootPendingPersists({ lastChange }, pendingChanges(input.target, observed.facts, now))
        ) {
          setAside = {
            cause: 'RebootPendingPersists',
            message: rebootPendingMessage(input.host, observed.node?.name),
            since: apiTime(now),
          };
          events.push({
            type: 'Warning',
            reason: EventReason.HostSetAside,
            message: setAside.message,
          });
        }
        events.push({
          type: 'Normal',
          reason: EventReason.RolloutFinished,
          message:
            change.changes.length > 0
              ? `Node ${observed.node?.name ?? '(gone)'} is Ready with ${describeChange(change.target, change.changes)} and uncordoned`
              : `Nothing is left to change on Node ${observed.node?.name ?? '(gone)'}; it is uncordoned`,
        });
        return result({ kind: 'none' }, undefined);
    }
  }
  return result({ kind: 'none' }, change);
}

/** Takes a new pool target where that costs no extra disruption (see the module comment). */
function retarget(
  change: HostChange,
  input: StepInput,
  enter: (c: HostChange, step: RolloutStep) => HostChange,
): HostChange {
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
