/**
 * Remediation's persisted shapes: WindowsHost status.remediation (the ladder under way, its
 * rungs' results). The ladder that moves them is src/remediation (ladder.ts); this file owns
 * only what is written to the API.
 */

export const RemediationRung = {
  RestartService: 'RestartService',
  Rebootstrap: 'Rebootstrap',
  Reboot: 'Reboot',
} as const;
export type RemediationRung = (typeof RemediationRung)[keyof typeof RemediationRung];

export const RungResult = {
  /** The host was healthy again during the rung. */
  Succeeded: 'Succeeded',
  /** The rung's timeout passed with the host still unhealthy. */
  TimedOut: 'TimedOut',
  /** The rung's action failed (the re-bootstrap's error; the repair change stopped). */
  Failed: 'Failed',
  /** The host cannot take the rung (Rebootstrap needs SSH; a Pull-mode host has none). */
  Skipped: 'Skipped',
} as const;
export type RungResult = (typeof RungResult)[keyof typeof RungResult];

/** Why no rung moves on this host now. */
export type HoldReason =
  | 'TooManyUnhealthy'
  | 'SkipAnnotation'
  | 'Disabled'
  | 'InvalidSpec'
  | 'InRollout';

/** How many past actions status.remediation.lastActions keeps (the CRD's maxItems). */
export const lastActionsLimit = 10;

/** A finished rung, as status.remediation.lastActions records it. */
export interface RemediationRecord {
  time: string;
  rung: RemediationRung;
  result: RungResult;
  message: string;
}

/** The ladder under way, as status.remediation.current records it. */
export interface RemediationLadder {
  /** What made the host unhealthy when the ladder started. */
  problem: { type: string; status: string; since: string };
  startedAt: string;
  rung: RemediationRung;
  rungStartedAt: string;
  /** Rung 2's request, recorded before the host controller is asked. */
  rebootstrap?: { requestedAt: string };
  /** Rung 3's request to the pool's rollout; doneAt once its reboot is seen done. */
  reboot?: { requestedAt: string; doneAt?: string };
  /** No rung moves on while held; the rung's clock restarts when the hold ends. */
  held?: { reason: HoldReason; since: string };
}

/** WindowsHost status.remediation. */
export interface HostRemediationStatus {
  current?: RemediationLadder;
  /** The ladder ended without repairing the host (RemediationFailed); the node stays cordoned. */
  failed?: { since: string; message: string };
  /** The last rungs' results, newest last, at most lastActionsLimit. */
  lastActions?: RemediationRecord[];
  /**
   * The ladder cordoned the Node (recorded before the cordon, where the node cannot write): it
   * uncordons only then, never a cordon a node or patch-nodes principal marked as its own.
   */
  cordoned?: true;
}
