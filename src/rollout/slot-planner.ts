/**
 * The slot planner: which of a pool's hosts may start a disruptive change now. Pure and
 * level-triggered: it reads only the hosts' current state (what WindowsHost status and the
 * Nodes say), so an operator that restarts plans the same thing.
 *
 * Rules:
 * - A host is unavailable while its Node is not Ready, or while it is in a change (from the
 *   moment its change is recorded, before its cordon, until it is uncordoned), failed or not.
 *   Each host counts once, so a failed host takes exactly its own slot.
 * - Hosts start only while unavailable + started < maxUnavailable; hosts already NotReady count.
 * - Nothing starts while the pool is paused or held (a spec problem), while any of its hosts'
 *   changes is stopped (failed), or outside its maintenance window. Hosts already in a change
 *   always go on, so no node is left cordoned.
 * - Only Ready hosts start: a change cannot be checked on a host that is already down (its
 *   drain cannot finish, its Ready cannot be awaited), so it would stop the whole pool; it
 *   waits until the host is Ready again (repairing it is the health controller's job).
 * - Hosts that two pools select never start, nor do hosts set aside (set-aside.ts): a host whose
 *   change stopped and was set aside holds back no other host; it counts against the budget only
 *   while it is NotReady, like any host not in a change.
 * - Candidates start least recently changed first (the end of their last change; never changed
 *   first), then in key order ("namespace/name"): a host that is pending again after every
 *   change waits behind every other, and a restarted operator picks the same.
 */
import { WinfleetError } from '../errors/catalog.ts';

/** @package */
export interface PlannerHost {
  /** "namespace/name". */
  key: string;
  /** The host's Node exists and is Ready. */
  ready: boolean;
  /** It has a change to make (pendingChanges is not empty). */
  pending: boolean;
  /** It is in a change (status.rollout.current is set). */
  inProgress: boolean;
  /** Its change stopped at a step (implies inProgress). */
  failed?: { step: string; reason: string; message: string };
  /** Another pool selects it too. */
  shared?: boolean;
  /** Its pending change includes a repair (remediation's reboot rung). */
  repair?: boolean;
  /** It is set aside: no change starts on it (set-aside.ts). */
  setAside?: boolean;
  /** When its last change ended, in ms since the epoch; undefined: never changed. */
  lastChangeEndedAt?: number;
}

/** @package */
export interface PlanInput {
  hosts: readonly PlannerHost[];
  /** Resolved (resolveMaxUnavailable), ≥ 1. */
  maxUnavailable: number;
  paused: boolean;
  /** The pool has no maintenance window or is inside it. */
  windowOpen: boolean;
  /** The pool's spec has a problem: start nothing. */
  held?: boolean;
}

/** Why no (further) host starts. */
export type StartBlock = 'held' | 'paused' | 'failed' | 'window' | 'budget';

/** @package */
export interface RolloutPlan {
  /** Hosts to start now, in order. */
  start: string[];
  /** Hosts in a change: reconcile them (their steps go on whatever the pool's state). */
  inProgress: string[];
  /** Hosts with a change pending that do not start now (set-aside hosts aside). */
  waiting: string[];
  /** Hosts set aside, with a change pending or not. */
  setAside: string[];
  /** Hosts unavailable before this plan. */
  unavailable: number;
  maxUnavailable: number;
  /** Why waiting hosts wait, when it is the pool's doing (NotReady and shared hosts aside). */
  blockedBy?: StartBlock;
}

const byKey = (a: PlannerHost, b: PlannerHost) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** Least recently changed first (never changed before any), then by key. */
const byLastChange = (a: PlannerHost, b: PlannerHost) => {
  const at = a.lastChangeEndedAt ?? Number.NEGATIVE_INFINITY;
  const bt = b.lastChangeEndedAt ?? Number.NEGATIVE_INFINITY;
  return at < bt ? -1 : at > bt ? 1 : byKey(a, b);
};

/** True when the host takes a slot of the pool's budget. */
export function isUnavailable(host: PlannerHost): boolean {
  return !host.ready || host.inProgress || host.failed !== undefined;
}

/** Plans which hosts start a change now. See the module comment for the rules. */
export function planRollout(input: PlanInput): RolloutPlan {
  if (!Number.isInteger(input.maxUnavailable) || input.maxUnavailable < 1) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `maxUnavailable must be resolved to a whole number ≥ 1, got ${input.maxUnavailable}`,
    );
  }
  const hosts = [...input.hosts].sort(byKey);
  const unavailable = hosts.filter(isUnavailable).length;
  const inProgress = hosts.filter((h) => h.inProgress || h.failed).map((h) => h.key);
  const candidates = hosts
    .filter((h) => h.pending && !h.inProgress && !h.failed && !h.setAside)
    .sort(byLastChange);
  const eligible = candidates.filter((h) => h.ready && !h.shared);
  const blockedBy: StartBlock | undefined = input.held
    ? 'held'
    : input.paused
      ? 'paused'
      : hosts.some((h) => h.failed)
        ? 'failed'
        : !input.windowOpen
          ? 'window'
          : undefined;
  const free = blockedBy ? 0 : Math.max(0, input.maxUnavailable - unavailable);
  const start = eligible.slice(0, free).map((h) => h.key);
  // A NotReady host to repair is unavailable already: starting it costs no healthy capacity,
  // so it needs no free slot, but the hosts winfleet has in a change stay within
  // maxUnavailable. The maintenance window does not hold a repair (the host is down anyway);
  // a held, paused or stopped rollout does.
  if (!blockedBy || blockedBy === 'window') {
    let inChange = inProgress.length + start.length;
    for (const h of candidates.filter((c) => !c.ready && c.repair && !c.shared)) {
      if (inChange >= input.maxUnavailable) break;
      start.push(h.key);
      inChange++;
    }
  }
  const started = new Set(start);
  const waiting = candidates.filter((h) => !started.has(h.key)).map((h) => h.key);
  const budgetBound = !blockedBy && eligible.length > start.length;
  return {
    start,
    inProgress,
    waiting,
    setAside: hosts.filter((h) => h.setAside && !h.inProgress).map((h) => h.key),
    unavailable,
    maxUnavailable: input.maxUnavailable,
    ...(blockedBy ? { blockedBy } : budgetBound ? { blockedBy: 'budget' as const } : {}),
  };
}
