/**
 * One reconcile pass of one pool, pure: from the pool's policy, its hosts' recorded rollout
 * state and what is observed of them, the payload and the API server version, it works out
 * each host's target, plans who starts, advances every host that is (or starts) in a change,
 * and computes the pool's status. The controller reads the world, calls this, then for each
 * host writes the returned rollout status and takes the returned action, and writes the
 * pool's status (see index.ts).
 */

import type { HostRolloutStatus, RolloutTarget } from '../api/rollout-status.ts';
import { rebootRequestedAnnotation } from '../api/windows-node-pool.ts';
import { parseApiTime } from '../kube/api-time.ts';
import { advanceHost, type HostObservation, type StepResult } from './host-steps.ts';
import { checkKubeletSkew } from './kubelet-skew.ts';
import { isInWindow, nextWindowStart } from './maintenance-window.ts';
import { resolveMaxUnavailable } from './max-unavailable.ts';
import { pendingChanges, rebootRequestFor } from './pending-changes.ts';
import type { PoolPolicy } from './pool-spec.ts';
import { type PoolStatusHost, poolStatus } from './pool-status.ts';
import { isSetAside } from './set-aside.ts';
import { type PlannerHost, planRollout, type RolloutPlan } from './slot-planner.ts';

export interface PoolPassHost {
  /** "namespace/name". */
  key: string;
  /** Keys of the other pools that select it too (a conflict), if any. */
  otherPools?: readonly string[];
  /** WindowsHost status.rollout. */
  status: HostRolloutStatus;
  observed: HostObservation;
  /** The host's winfleet.io/reboot-requested annotation, if set. */
  rebootRequested?: string;
  /** Remediation's repair reboot request for the host (src/remediation), RFC 3339. */
  repairRequestedAt?: string;
  /**
   * The host has not finished joining (its agent has not yet reported a services version): the
   * join path brings it to the current payload, and no change starts on it until it has.
   */
  joining?: boolean;
}

/** @package */
export interface PoolPassInput {
  generation?: number;
  /** checkPoolSpec's policy and problems (defaultPoolPolicy and [] for the default pool). */
  policy: PoolPolicy;
  specProblems: readonly string[];
  hosts: readonly PoolPassHost[];
  /** The payload the operator runs: its services version and its kubelet's version. */
  payload?: { servicesVersion: string; kubeletVersion: string };
  /** The (oldest) API server's gitVersion, e.g. "v1.36.5". */
  apiServerVersion: string;
  now: Date;
  /**
   * Another pool replaces this one and its migration says go (spec.replaces): every host's
   * target is retirement (drained, left cordoned) and nothing else.
   */
  retire?: boolean;
}

/** @package */
export interface PoolPassResult {
  /** Per host: the rollout status to write first, then the action to take. */
  hosts: Map<string, StepResult>;
  plan: RolloutPlan;
  status: ReturnType<typeof poolStatus>;
  /** The earliest time something is due (a step's deadline, the window opening). */
  recheckAt?: Date;
  /** Problems to report as Warning Events on the host (a bad reboot annotation). */
  hostProblems: Map<string, string[]>;
}

/** Runs one pass for one pool. */
export function poolPass(input: PoolPassInput): PoolPassResult {
  const { policy, now } = input;
  const skew = input.payload
    ? checkKubeletSkew(input.payload.kubeletVersion, input.apiServerVersion)
    : ({ ok: true } as const);
  const servicesVersion = input.payload && skew.ok ? input.payload.servicesVersion : undefined;
  const { targets, views, hostProblems } = hostTargets(input, servicesVersion);
  const windowOpen = !policy.window || isInWindow(policy.window, now);
  const maxUnavailable = resolveMaxUnavailable(policy.maxUnavailable, input.hosts.length);
  const plan = planRollout({
    hosts: views,
    maxUnavailable,
    paused: policy.paused,
    windowOpen,
    held: input.specProblems.length > 0,
  });
  const results = advanceHosts(input, targets, new Set(plan.start), maxUnavailable);
  const nextOpen = policy.window && !windowOpen ? nextWindowStart(policy.window, now) : undefined;
  const status = poolStatus({
    ...(input.generation !== undefined ? { generation: input.generation } : {}),
    hosts: statusHosts(input, targets, results),
    plan,
    shared: input.hosts
      .filter((h) => h.otherPools?.length)
      .map((h) => ({ host: h.key, otherPools: [...h.otherPools!] })),
    specProblems: input.specProblems,
    ...(skew.ok ? {} : { skew: skew.message }),
    paused: policy.paused,
    ...(nextOpen ? { nextWindowStart: nextOpen } : {}),
  });
  const soonest = soonestDue(results, nextOpen);
  return {
    hosts: results,
    plan,
    status,
    ...(soonest !== undefined ? { recheckAt: soonest } : {}),
    hostProblems,
  };
}

/** Each host's target (and the planner's view of it), and the problems of its reboot annotation. */
function hostTargets(
  input: PoolPassInput,
  servicesVersion: string | undefined,
): {
  targets: Map<string, RolloutTarget>;
  views: PlannerHost[];
  hostProblems: Map<string, string[]>;
} {
  const { policy, now } = input;
  const hostProblems = new Map<string, string[]>();
  const targets = new Map<string, RolloutTarget>();
  const views: PlannerHost[] = input.hosts.map((h) => {
    const reboot = rebootRequestFor(
      policy.rebootRequestedAt,
      h.rebootRequested,
      `${h.key}: annotation ${rebootRequestedAnnotation}`,
    );
    if (reboot.problems.length > 0) hostProblems.set(h.key, reboot.problems);
    // A NotReady host's repair is a reboot and nothing more: an upgrade or patches pending
    // for the pool cannot be applied to a host that does not answer, and would stop the change
    // at Apply. They follow in a change of their own once the host is back (a host that comes
    // back mid-repair takes them in the same change: its target is the pool's again).
    if (input.retire) {
      const target: RolloutTarget = { patchPolicy: 'None', retire: true };
      targets.set(h.key, target);
      return view(h, target, now);
    }
    const onlyRepair = repairOnly(h);
    const keep = onlyRepair ? h.observed.facts.servicesVersion : servicesVersion;
    const target: RolloutTarget = {
      ...(keep !== undefined ? { servicesVersion: keep } : {}),
      patchPolicy: onlyRepair ? 'None' : policy.patchPolicy,
      ...(reboot.requestedAt ? { rebootRequestedAt: reboot.requestedAt } : {}),
      ...(h.repairRequestedAt ? { repairRequestedAt: h.repairRequestedAt } : {}),
    };
    targets.set(h.key, target);
    return view(h, target, now);
  });
  return { targets, views, hostProblems };
}

/** A stopped change set this host aside (set-aside.ts). */
function failedAside(s: PoolPassHost['status']): boolean {
  return s.setAside?.cause === 'ChangeFailed';
}

/** Advances every host, in key order, those in `starting` starting a change. */
function advanceHosts(
  input: PoolPassInput,
  targets: ReadonlyMap<string, RolloutTarget>,
  starting: ReadonlySet<string>,
  maxUnavailable: number,
): Map<string, StepResult> {
  const { policy, now } = input;
  const results = new Map<string, StepResult>();
  // At most maxUnavailable hosts are set aside after a stopped change (set-aside.ts); beyond
  // that a stopped change stops the pool as before. Counted in key order, so a restarted
  // operator sets the same hosts aside.
  let aside = input.hosts.filter((h) => failedAside(h.status)).length;
  for (const h of [...input.hosts].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) {
    const result = advanceHost({
      host: h.key,
      status: h.status,
      observed: h.observed,
      // A host another pool selects too (it became shared mid-change) finishes the change it
      // has, as recorded: each pool's pass would otherwise retarget it to its own policy, and
      // the one with less to do would end the change half-done.
      target:
        h.otherPools?.length && h.status.current ? h.status.current.target : targets.get(h.key)!,
      start: starting.has(h.key),
      timeouts: policy,
      now,
      mayAside: aside < maxUnavailable,
    });
    if (failedAside(result.status) && !failedAside(h.status)) aside++;
    results.set(h.key, result);
  }
  return results;
}

/** The hosts as the pool's status sees them after the pass (their newly recorded state). */
function statusHosts(
  input: PoolPassInput,
  targets: ReadonlyMap<string, RolloutTarget>,
  results: ReadonlyMap<string, StepResult>,
): PoolStatusHost[] {
  return input.hosts.map((h) => {
    const recorded = results.get(h.key)!.status;
    const current = recorded.current;
    return {
      ...view({ ...h, status: recorded }, targets.get(h.key)!, input.now),
      ...(current ? { step: current.step, since: current.stepStartedAt } : {}),
      ...(recorded.setAside ? { setAsideMessage: recorded.setAside.message } : {}),
    };
  });
}

/** The earliest time something is due: a host's recheck or the window's next opening. */
export function soonestDue(
  results: ReadonlyMap<string, StepResult>,
  nextOpen: Date | undefined,
): Date | undefined {
  const due = [...results.values()].map((r) => r.recheckAt?.getTime()).concat(nextOpen?.getTime());
  const soonest = Math.min(...due.filter((t): t is number => t !== undefined));
  return Number.isFinite(soonest) ? new Date(soonest) : undefined;
}

/**
 * The host is NotReady and its change (or the one it is about to start) is a repair: only
 * reboots ('repair', and a reboot someone asked for), none of the pool's other changes.
 */
function repairOnly(h: PoolPassHost): boolean {
  if (h.observed.node?.ready === true) return false;
  const current = h.status.current;
  if (!current) return h.repairRequestedAt !== undefined;
  return (
    current.changes.includes('repair') &&
    current.changes.every((c) => c === 'repair' || c === 'reboot-requested')
  );
}

function view(h: PoolPassHost, target: RolloutTarget, now: Date): PlannerHost {
  const current = h.status.current;
  const facts = {
    ...h.observed.facts,
    ...(h.status.lastRebootAt ? { lastRebootAt: h.status.lastRebootAt } : {}),
    ...(h.status.retired ? { retired: true } : {}),
  };
  const changes = h.joining ? [] : pendingChanges(target, facts, now);
  const ended = h.status.lastChange?.endedAt;
  return {
    key: h.key,
    ready: h.observed.node?.ready === true,
    pending: changes.length > 0,
    ...(isSetAside(h.status, h.observed.retryAnnotation, changes, h.observed.node)
      ? { setAside: true }
      : {}),
    ...(ended !== undefined ? { lastChangeEndedAt: changeTime(ended) } : {}),
    ...(changes.includes('repair') ? { repair: true } : {}),
    inProgress: current !== undefined,
    ...(current?.failure
      ? {
          failed: {
            step: current.failure.step,
            reason: current.failure.reason,
            message: current.failure.message,
          },
        }
      : {}),
    ...(h.otherPools?.length ? { shared: true } : {}),
  };
}

/** A recorded time as ms; one that cannot be read counts as long ago (it goes first). */
function changeTime(text: string): number {
  try {
    return parseApiTime(text, 'status.rollout.lastChange.endedAt');
  } catch {
    return 0;
  }
}
