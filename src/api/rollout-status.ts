/**
 * The rollout's persisted shapes: WindowsHost status.rollout (a host's change in flight, its
 * last change, a set-aside) and the pool's target they record. The engine that moves them is
 * src/rollout (host-steps.ts); this file owns only what is written to the API.
 */
import type { ConditionReason } from './reasons.ts';
import type { PatchPolicy } from './windows-node-pool.ts';

export type ChangeKind =
  /** The services version (payload, kubelet included) differs from the target. */
  | 'services'
  /** Windows updates of the pool's patch policy are available. */
  | 'patches'
  /** A reboot was asked for (pool spec.rebootRequestedAt or the host's annotation). */
  | 'reboot-requested'
  /** Windows itself wants a reboot (a patch, a rename). */
  | 'reboot-pending'
  /** Remediation's reboot rung (src/remediation) asks for a repair reboot. */
  | 'repair'
  /**
   * The pool is replaced by another (spec.replaces): the host is cordoned and drained and the
   * change ends there, the node left cordoned for removal (no Apply, Reboot or Uncordon).
   */
  | 'retire';

/** What a pool wants on each of its hosts. */
export interface RolloutTarget {
  /** The services version to run; undefined leaves the services as they are (a refused payload). */
  servicesVersion?: string;
  patchPolicy: PatchPolicy;
  /** The reboot request in force (the later of the pool's and the host's), RFC 3339. */
  rebootRequestedAt?: string;
  /** Remediation's repair reboot request for this host, RFC 3339 (served like a reboot request). */
  repairRequestedAt?: string;
  /** The pool is being replaced: retire the host (drain it, leave it cordoned), nothing else. */
  retire?: boolean;
}

/** A Windows update the agent found, as the Windows Update Agent categorises it. */
export interface AvailableUpdate {
  /** "KB5040437". */
  kb: string;
  /** WUA category names, e.g. "Security Updates", "Critical Updates", "Updates". */
  categories: readonly string[];
}

export const RolloutStep = {
  Cordon: 'Cordon',
  Drain: 'Drain',
  Apply: 'Apply',
  Reboot: 'Reboot',
  WaitReady: 'WaitReady',
  Uncordon: 'Uncordon',
} as const;
export type RolloutStep = (typeof RolloutStep)[keyof typeof RolloutStep];

export type StepFailureReason =
  | typeof ConditionReason.DrainTimedOut
  | typeof ConditionReason.ApplyTimedOut
  | typeof ConditionReason.RebootTimedOut
  | typeof ConditionReason.ReadyTimedOut;

/** A host's change in flight, as recorded in WindowsHost status.rollout.current. */
export interface HostChange {
  /** What the change brings. */
  target: RolloutTarget;
  /** What was pending when it started (or when it last took a new target). */
  changes: ChangeKind[];
  step: RolloutStep;
  startedAt: string;
  stepStartedAt: string;
  /** The change's one reboot: recorded on entering Reboot, before the agent is asked. */
  reboot?: { token: string; bootIdBefore: string; requestedAt: string };
  /** The step stopped: its deadline passed. The change stays at that step. */
  failure?: { step: RolloutStep; reason: StepFailureReason; message: string; since: string };
}

/**
 * Why a host is set aside (set-aside.ts): its change stopped at a step ('ChangeFailed'), or
 * Windows still wanted a reboot after the reboot winfleet made for that ('RebootPendingPersists').
 */
export type SetAsideCause = 'ChangeFailed' | 'RebootPendingPersists';

/** A host the rollout goes round: no change starts on it until winfleet.io/retry-rollout. */
export interface HostSetAside {
  cause: SetAsideCause;
  /** What happened and how to clear it. */
  message: string;
  since: string;
  /**
   * ChangeFailed: the Node's boot id when it was set aside. Ready in another boot, the host came
   * back (or was rebooted by hand): the set-aside clears itself, as a stopped change went on by
   * itself once its host was back.
   */
  bootId?: string;
}

/** What the host's last change was, for the order hosts start in and the set-aside rule. */
export interface HostLastChange {
  /** When it ended (finished, or ended by setting the host aside). */
  endedAt: string;
  /**
   * It was made for a reboot Windows wanted (reboot-pending) and rebooted the host: the same
   * claim after it sets the host aside.
   */
  servedRebootPending?: boolean;
}

/** WindowsHost status.rollout. */
export interface HostRolloutStatus {
  current?: HostChange;
  /** The last change that ended: the least recently changed hosts start first. */
  lastChange?: HostLastChange;
  /** Set aside: no change starts on the host until winfleet.io/retry-rollout is set anew. */
  setAside?: HostSetAside;
  /** When winfleet last rebooted the host for a change (the request it asked it with). */
  lastRebootAt?: string;
  /**
   * The winfleet.io/retry-rollout value last acted on, so a cache still showing it after its
   * removal does not retry twice; cleared once the annotation is seen gone.
   */
  retryHandled?: string;
  /**
   * The Node this rollout cordoned, recorded before the cordon (status the node cannot write):
   * the rollout uncordons only a Node named here that still carries its annotation, so a node
   * or a patch-nodes principal that writes winfleet.io/cordoned-by=winfleet on an admin's
   * cordon never gets it lifted. Cleared once the Node no longer carries winfleet's cordon.
   */
  cordoned?: string;
  /**
   * The host was retired (its pool is replaced, spec.replaces of another pool): drained and left
   * cordoned. Kept while the migration goes on; if it stops (blocked, or spec.replaces removed)
   * the node is uncordoned and this is cleared.
   */
  retired?: { at: string; node?: string };
}
