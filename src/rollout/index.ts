/**
 * The rollout engine's pure core (issue 12): every disruptive change — a new payload (kubelet
 * included), Windows patches, a reboot — goes through one engine, per WindowsNodePool, never
 * more than maxUnavailable hosts down. Nothing here touches the cluster; the pool controller
 * reads the world, calls poolPass and does what it says.
 *
 *   pool-membership  which pool each WindowsHost is in (conflicts, implicit default pool)
 *   pool-spec        a pool's spec checked, with defaults (PoolPolicy, problems)
 *   slot-planner     which hosts may start now (budget, pause, window, failure), least
 *                    recently changed first
 *   set-aside        a host whose change stops, or whose pending reboot survives the reboot
 *                    made for it, is set aside instead of holding back its pool
 *   host-steps       one host's change: Cordon → Drain → Apply → Reboot → WaitReady → Uncordon
 *   pool-status      status numbers and Available/Progressing/Degraded
 *   pool-pass        all of it for one pool in one pass
 *   maintenance-window, duration, max-unavailable, kubelet-skew, pending-changes, label-selector
 *
 * How the pool controller uses it, per reconcile of a pool key ("namespace/name", or
 * defaultPoolKey for hosts no pool selects; one worker per key, as the work queue ensures):
 * 1. assignPools over the cached pools and hosts; checkPoolSpec(pool.spec) (defaultPoolPolicy
 *    for the default pool); the payload's version and kubernetesVersion; the API server's
 *    gitVersion (the oldest, if several).
 * 2. Per member host, a PoolPassHost: status.rollout; its own Node (identity-checked) as
 *    ObservedNode — Ready (and since when), spec.unschedulable, winfleet.io/cordoned-by,
 *    nodeInfo.bootID, the agent's pre-pull of this boot and version; drained
 *    = only DaemonSet, mirror and finished pods left; facts = the Node's services-version, the
 *    agent's available updates and pending reboot, the host's creationTimestamp; the
 *    retry-rollout and reboot-requested annotations; deletionTimestamp.
 * 3. poolPass. Then per host, in key order: when the returned status differs, write
 *    status.rollout first — an update carrying the resourceVersion read, so a stale cache can
 *    never roll it back; on a conflict stop and requeue, and never act after a failed write.
 *    Then act: cordon/uncordon = one Node patch of spec.unschedulable and cordoned-by; drain =
 *    evictions (host-removal's drainNode); apply = copy the payload and set the Node's
 *    desired-services-version (today's upgrade path), plus the patch policy for the agent;
 *    reboot = a level on the Node (e.g. winfleet.io/reboot-request=<token>) that the agent acts
 *    on once per token, storing the token before it calls shutdown. Record the returned Events,
 *    remove a consumed retry annotation, report hostProblems as Warning Events.
 * 4. Write the pool's status through /status, merging conditions with setCondition (the default
 *    pool has no object: its state goes to Events and the dashboard). Requeue at recheckAt, and
 *    every few seconds while a host is in a change.
 * Keep ReplicaSet-style expectations: until the cache shows a rollout status you wrote, use what
 * you wrote, or a lagging cache could start more hosts than maxUnavailable. Joined hosts then
 * get new payloads only through here (the join path keeps giving new hosts the current one).
 * To install: put hostRolloutStatusSchema into windowsHostCrd's status as `rollout` (and
 * `rollout?: HostRolloutStatus` into WindowsHostStatus), add windowsNodePoolCrd to winfleetCrds,
 * grant windowsnodepools (and /status) in the RBAC, and run `npm run chart:generate`.
 */

export { formatDuration, parseDuration } from './duration.ts';
export {
  advanceHost,
  describeChange,
  type HostObservation,
  type StepAction,
  type StepEvent,
  type StepInput,
  type StepResult,
} from './host-steps.ts';
export { checkKubeletSkew, parseKubeVersion } from './kubelet-skew.ts';
export { matchesSelector, selectorProblems } from './label-selector.ts';
export {
  currentWindow,
  isInWindow,
  nextWindowStart,
  parseMaintenanceWindow,
  parseTimeZone,
} from './maintenance-window.ts';
export { parseMaxUnavailable, resolveMaxUnavailable } from './max-unavailable.ts';
export type { ObservedNode } from './observed-node.ts';
export {
  type HostFacts,
  pendingChanges,
  rebootRequestFor,
  updatesFor,
} from './pending-changes.ts';
export {
  assignPools,
  defaultPoolKey,
  type Membership,
  objectKey,
} from './pool-membership.ts';
export {
  type PoolPassHost,
  type PoolPassInput,
  type PoolPassResult,
  poolPass,
} from './pool-pass.ts';
export { checkPoolSpec, defaultPoolPolicy, type PoolPolicy } from './pool-spec.ts';
export { poolStatus } from './pool-status.ts';
export { isUnavailable, planRollout, type RolloutPlan } from './slot-planner.ts';
