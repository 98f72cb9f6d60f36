/**
 * Node health and remediation, the pure core (issue 13, section 2): is a host unhealthy, may
 * its pool repair it now (maxUnhealthy), and which rung of the ladder runs. Nothing here
 * touches the cluster; the pool controller reads the world, calls healthPass and does what it
 * says (health-pass.ts says how, ladder.ts what survives a restart).
 *
 *   health-spec  a pool's spec.health checked, with defaults (HealthPolicy, problems)
 *   host-health  one host: which conditions hold, since when, past their timeout
 *   ladder       one host's ladder: RestartService → Rebootstrap → Reboot → RemediationFailed
 *   health-pass  all of it for one pool, maxUnhealthy included
 *   metrics      metric names and labels
 *
 * The reboot rung goes through the rollout engine: a host's repairRebootRequestedAt becomes
 * PoolPassHost.repairRequestedAt, pending as the 'repair' ChangeKind (src/rollout/).
 */

export {
  type HealthPassHost,
  type HealthPassInput,
  type HealthPassResult,
  type HostHealthResult,
  healthPass,
  outcomeSamples,
} from './health-pass.ts';
export {
  checkHealthSpec,
  defaultHealthPolicy,
  type HealthPolicy,
  type MaxUnhealthy,
  parseMaxUnhealthy,
  resolveMaxUnhealthy,
  type UnhealthyRule,
} from './health-spec.ts';
export {
  assessHealth,
  type HealthAssessment,
  type HealthProblem,
  type NodeCondition,
  nodeStartupProblem,
} from './host-health.ts';
export {
  advanceRemediation,
  type LadderResult,
  type RemediationAction,
} from './ladder.ts';
export { type MetricSample, metricLabels, metricNames } from './metrics.ts';
