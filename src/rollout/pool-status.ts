/**
 * A pool's status from its hosts: the counts kubectl shows and the three conditions, each
 * with a reason from the catalog and a message that names the hosts, the step or the field.
 * Pure: the caller merges the conditions with setCondition (controller/conditions.ts), which
 * keeps lastTransitionTime, and writes the result through /status.
 */

import { ConditionReason, PoolConditionType } from '../api/reasons.ts';
import type { PoolHostInProgress, WindowsNodePoolStatus } from '../api/windows-node-pool.ts';
import type { ConditionInput } from '../controller-runtime/conditions.ts';
import type { PoolMembers } from './pool-membership.ts';
import { isUnavailable, type PlannerHost, type RolloutPlan } from './slot-planner.ts';

/** @package */
export interface PoolStatusHost extends PlannerHost {
  /** The step of its change, when in one. */
  step?: string;
  /** When it entered that step. */
  since?: string;
  /** Why it is set aside, when it is (set-aside.ts). */
  setAsideMessage?: string;
}

/** @package */
export interface PoolStatusInput {
  generation?: number;
  /** The pool's hosts as they are after this pass (hosts just started are in a change). */
  hosts: readonly PoolStatusHost[];
  /** The plan of this pass: why hosts wait. */
  plan: RolloutPlan;
  /** Hosts another pool selects too (pool-membership). */
  shared: PoolMembers['shared'];
  /** checkPoolSpec's problems. */
  specProblems: readonly string[];
  /** Why the payload is refused (checkKubeletSkew), if it is. */
  skew?: string;
  paused: boolean;
  /** When the pool has a maintenance window and is outside it: when it opens next. */
  nextWindowStart?: Date;
}

/** At most this many hosts are named in a message; the rest are counted. */
const namedHosts = 5;

function names(keys: readonly string[]): string {
  const shown = keys.slice(0, namedHosts).join(', ');
  return keys.length > namedHosts ? `${shown} and ${keys.length - namedHosts} more` : shown;
}

function hostsWord(n: number): string {
  return n === 1 ? '1 host' : `${n} hosts`;
}

function hostsWait(n: number): string {
  return n === 1 ? '1 host waits' : `${n} hosts wait`;
}

/** The status numbers and conditions (without transition times) of a pool. */
export function poolStatus(
  input: PoolStatusInput,
): Omit<WindowsNodePoolStatus, 'conditions'> & { conditions: ConditionInput[] } {
  const hosts = [...input.hosts].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const unavailable = hosts.filter(isUnavailable);
  const inProgress: PoolHostInProgress[] = hosts
    .filter((h) => h.inProgress && h.step)
    .map((h) => ({ name: h.key, step: h.step!, since: h.since ?? '' }));
  const generation = input.generation;
  const withGeneration = (c: Omit<ConditionInput, 'observedGeneration'>): ConditionInput =>
    generation === undefined ? c : { ...c, observedGeneration: generation };
  return {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    hosts: hosts.length,
    readyHosts: hosts.filter((h) => h.ready).length,
    updatedHosts: hosts.filter((h) => !h.pending && !h.inProgress).length,
    unavailableHosts: unavailable.length,
    hostsInProgress: inProgress,
    conditions: [
      withGeneration(available(hosts, unavailable, input.plan.maxUnavailable)),
      withGeneration(progressing(input, hosts)),
      withGeneration(degraded(input, hosts)),
    ],
  };
}

function available(
  hosts: readonly PoolStatusHost[],
  unavailable: readonly PoolStatusHost[],
  maxUnavailable: number,
): Omit<ConditionInput, 'observedGeneration'> {
  const down = unavailable.map(
    (h) => `${h.key} (${h.inProgress ? (h.step ?? 'changing') : 'NotReady'})`,
  );
  if (unavailable.length <= maxUnavailable) {
    return {
      type: PoolConditionType.Available,
      status: 'True',
      reason: ConditionReason.MinimumHostsAvailable,
      message: `${hosts.length - unavailable.length} of ${hostsWord(hosts.length)} available; maxUnavailable ${maxUnavailable}${down.length ? `; unavailable: ${names(down)}` : ''}`,
    };
  }
  return {
    type: PoolConditionType.Available,
    status: 'False',
    reason: ConditionReason.MinimumHostsUnavailable,
    message: `${hostsWord(unavailable.length)} unavailable, more than maxUnavailable ${maxUnavailable}: ${names(down)}; no change starts until enough are back`,
  };
}

/** A condition as the pool's status functions make it (the caller adds the generation). */
type PoolCondition = Omit<ConditionInput, 'observedGeneration'>;

/** The hosts as the Progressing condition names and counts them. */
interface ProgressHosts {
  /** "key (step)" of the hosts in a change. */
  changing: string[];
  /** Keys of waiting hosts two pools select: they wait for a person. */
  stuck: string[];
  /** Waiting hosts the others wait for the budget, window or Ready ("key (NotReady)"). */
  waiting: string[];
  /** The stuck and set-aside hosts, as the message's tail ("" when none). */
  stuckNote: string;
  /** Hosts with nothing pending and not in a change. */
  updated: number;
  /** All hosts. */
  total: number;
  /** Hosts whose change stopped. */
  failed: PoolStatusHost[];
}

/** Sorts the pool's hosts into what the Progressing condition says of them. */
function progressHosts(input: PoolStatusInput, hosts: readonly PoolStatusHost[]): ProgressHosts {
  const changing = hosts
    .filter((h) => h.inProgress)
    .map((h) => `${h.key} (${h.step ?? 'changing'})`);
  const waitingKeys = new Set(input.plan.waiting);
  const waitingHosts = hosts.filter((h) => waitingKeys.has(h.key));
  // Hosts two pools select wait for a person; the others for the budget, window or Ready.
  const stuck = waitingHosts.filter((h) => h.shared).map((h) => h.key);
  const waiting = waitingHosts
    .filter((h) => !h.shared)
    .map((h) => (h.ready ? h.key : `${h.key} (NotReady)`));
  const aside = hosts.filter((h) => h.setAside).map((h) => h.key);
  const stuckNote = `${
    stuck.length
      ? `; no change can start on ${names(stuck)}: in more than one pool (see Degraded)`
      : ''
  }${aside.length ? `; set aside: ${names(aside)} (see Degraded)` : ''}`;
  const updated = hosts.filter((h) => !h.pending && !h.inProgress).length;
  const failed = hosts.filter((h) => h.failed);
  return { changing, stuck, waiting, stuckNote, updated, total: hosts.length, failed };
}

/** The Progressing condition: stopped or held, settled, or moving. */
function progressing(input: PoolStatusInput, hosts: readonly PoolStatusHost[]): PoolCondition {
  const p = progressHosts(input, hosts);
  const held = heldProgress(input, p);
  if (held) return held;
  if (p.changing.length === 0 && p.waiting.length === 0) return settledProgress(input, p);
  return movingProgress(input, p);
}

/** Progressing when nothing may start: a stopped change, a bad spec, or spec.paused. */
function heldProgress(input: PoolStatusInput, p: ProgressHosts): PoolCondition | undefined {
  const type = PoolConditionType.Progressing;
  const { changing, stuck, waiting, failed } = p;
  if (failed.length > 0) {
    return {
      type,
      status: 'False',
      reason: ConditionReason.RolloutStopped,
      message: `Stopped at ${names(failed.map((h) => `${h.key} (${h.failed!.step})`))}; no other host starts a change until it goes on (see Degraded)`,
    };
  }
  if (input.specProblems.length > 0) {
    return {
      type,
      status: 'False',
      reason: ConditionReason.InvalidSpec,
      message: `No change starts until the spec is fixed (see Degraded)${changing.length ? `; finishing: ${names(changing)}` : ''}`,
    };
  }
  if (input.paused) {
    const count = waiting.length + stuck.length;
    return {
      type,
      status: 'Unknown',
      reason: ConditionReason.Paused,
      message: `spec.paused is true: no change starts${count ? `; ${hostsWait(count)}` : ''}${changing.length ? `; finishing: ${names(changing)}` : ''}`,
    };
  }
  return undefined;
}

/** Progressing with no host changing or waiting: skew, complete, or stuck on shared hosts. */
function settledProgress(input: PoolStatusInput, p: ProgressHosts): PoolCondition {
  const type = PoolConditionType.Progressing;
  const { stuck, stuckNote, updated, total } = p;
  if (input.skew && stuck.length === 0) {
    return {
      type,
      status: 'False',
      reason: ConditionReason.KubeletVersionSkew,
      message: 'No host gets the payload (see Degraded); nothing else is pending',
    };
  }
  if (stuck.length === 0) {
    return {
      type,
      status: 'False',
      reason: ConditionReason.RolloutComplete,
      message:
        updated === total
          ? `All ${hostsWord(total)} up to date${stuckNote}`
          : `${updated} of ${hostsWord(total)} up to date${stuckNote}`,
    };
  }
  return {
    type,
    status: 'False',
    reason: ConditionReason.RolloutStopped,
    message: `${updated} of ${hostsWord(total)} updated${stuckNote}`,
  };
}

/** Progressing with hosts changing or waiting: waiting for the window, or rolling out. */
function movingProgress(input: PoolStatusInput, p: ProgressHosts): PoolCondition {
  const type = PoolConditionType.Progressing;
  const { changing, waiting, stuckNote, updated, total } = p;
  if (changing.length === 0 && input.plan.blockedBy === 'window') {
    const next = input.nextWindowStart
      ? `; it opens next at ${input.nextWindowStart.toISOString()}`
      : '';
    return {
      type,
      status: 'False',
      reason: ConditionReason.WaitingForWindow,
      message: `${hostsWait(waiting.length)} for the maintenance window${next}${stuckNote}`,
    };
  }
  const why =
    input.plan.blockedBy === 'window'
      ? ' (outside the maintenance window)'
      : input.plan.blockedBy === 'budget'
        ? ` (maxUnavailable ${input.plan.maxUnavailable})`
        : '';
  return {
    type,
    status: 'True',
    reason: ConditionReason.RollingOut,
    message: `${updated} of ${hostsWord(total)} updated${changing.length ? `; changing: ${names(changing)}` : ''}${waiting.length ? `; waiting: ${names(waiting)}${why}` : ''}${stuckNote}`,
  };
}

function degraded(
  input: PoolStatusInput,
  hosts: readonly PoolStatusHost[],
): Omit<ConditionInput, 'observedGeneration'> {
  const problems: { reason: ConditionReason; message: string }[] = [];
  if (input.specProblems.length > 0) {
    problems.push({ reason: ConditionReason.InvalidSpec, message: input.specProblems.join('; ') });
  }
  if (input.skew) {
    problems.push({
      reason: ConditionReason.KubeletVersionSkew,
      message: `${input.skew}; no host gets this payload`,
    });
  }
  for (const h of hosts) {
    if (h.failed)
      problems.push({ reason: h.failed.reason as ConditionReason, message: h.failed.message });
  }
  for (const h of hosts) {
    if (h.setAside && h.setAsideMessage)
      problems.push({ reason: ConditionReason.HostSetAside, message: h.setAsideMessage });
  }
  if (input.shared.length > 0) {
    const list = input.shared.map((s) => `${s.host} (also in ${s.otherPools.join(', ')})`);
    problems.push({
      reason: ConditionReason.HostInMultiplePools,
      message: `Selected by more than one pool, so no change starts on them: ${names(list)}; change their labels or the pools' selectors so that one pool selects each`,
    });
  }
  const first = problems[0];
  if (!first) {
    return {
      type: PoolConditionType.Degraded,
      status: 'False',
      reason: ConditionReason.AsExpected,
      message: '',
    };
  }
  return {
    type: PoolConditionType.Degraded,
    status: 'True',
    reason: first.reason,
    message: problems.map((p) => p.message).join('; '),
  };
}
