/**
 * One health pass of one pool, pure: every member host's health, the pool's maxUnhealthy
 * short-circuit, and each host's ladder advanced. The caller (the pool controller, per pool key,
 * before its rollout pass) then, per host in key order: writes status.remediation when it
 * differs (guarded by the resourceVersion read; on a conflict stop and requeue, never act after a
 * failed write), then acts; passes each host's repairRebootRequestedAt to the rollout pass; sets
 * the host's Degraded condition from `degraded`; records the Events; updates the metrics.
 *
 * maxUnhealthy, as a MachineHealthCheck's: counted over the pool's hosts, hosts in a rollout
 * change of the pool's own left out (they are down on purpose). Above it, no ladder starts or
 * moves on (held, TooManyUnhealthy), the pool is Degraded naming maxUnhealthy and the hosts;
 * once few enough are unhealthy, the held ladders go on.
 *
 * Only what the control plane saw counts towards maxUnhealthy (security review 3, item 5): a
 * host whose Node the node controller marked Ready=Unknown (its heartbeats stopped), or that
 * has had no Ready Node since its bootstrap (NodeStartup). Every other condition — the agent's
 * (KubeletUnhealthy, FrequentServiceRestart, …) and Ready=False, which the kubelet writes — is
 * the node's word about itself, which a compromised node can fake at will: such a host is
 * repaired on its own ladder like any other, but it is not counted, so it cannot stop the
 * repair of other hosts. That is also the mass failure maxUnhealthy is for: a network or
 * control-plane outage silences hosts. A node can still make itself count by going silent (or
 * by writing Ready=Unknown on its own Node while it heartbeats), as one lost host, no more, as
 * a host switched off does.
 */
import { ConditionReason, EventReason, PoolConditionType } from '../api/reasons.ts';
import type { HoldReason, HostRemediationStatus } from '../api/remediation-status.ts';
import type { HostRolloutStatus } from '../api/rollout-status.ts';
import { type HealthPolicy, resolveMaxUnhealthy } from './health-spec.ts';
import {
  assessHealth,
  type HealthAssessment,
  type HealthProblem,
  type NodeCondition,
  nodeStartupProblem,
} from './host-health.ts';
import {
  advanceRemediation,
  inOtherRolloutChange,
  type LadderEvent,
  type LadderResult,
} from './ladder.ts';
import { type MetricSample, metricNames } from './metrics.ts';

/** @package */
export interface HealthPassHost {
  /** "namespace/name". */
  key: string;
  /** WindowsHost status.remediation. */
  status: HostRemediationStatus;
  /** The host's own Node (identity-checked), if any. */
  node?: { name: string; conditions: readonly NodeCondition[] };
  bootstrappedAt?: string;
  bootstrapError?: { time: string; message: string };
  rollout?: HostRolloutStatus;
  /** The Node carries winfleet.io/cordoned-by=remediation. */
  cordonedByRemediation: boolean;
  /** The WindowsHost carries winfleet.io/skip-remediation. */
  skipRemediation: boolean;
  /** The WindowsHost is being deleted: its removal owns the node; nothing is done here. */
  deleting: boolean;
  /** Why the host cannot be re-bootstrapped (a Pull-mode host), if it cannot. */
  rebootstrapUnavailable?: string;
}

/** @package */
export interface HealthPassInput {
  /** The pool key (namespace/name, or the default pool's) for messages and metric labels. */
  pool: string;
  /** checkHealthSpec's policy and problems (defaultHealthPolicy and [] for the default pool). */
  policy: HealthPolicy;
  specProblems: readonly string[];
  hosts: readonly HealthPassHost[];
  now: Date;
}

/** One host's ladder result and the health it was judged on. */
export type HostHealthResult = LadderResult & { health: HealthAssessment };

/** The remediation counter's samples for rungs that ended (one per rung and result). */
export function outcomeSamples(pool: string, outcomes: LadderResult['outcomes']): MetricSample[] {
  return outcomes.map((o) => ({
    name: metricNames.remediationsTotal,
    labels: { pool, rung: o.rung, result: o.result },
    value: 1,
  }));
}

/** @package */
export interface HealthPassResult {
  hosts: Map<string, HostHealthResult>;
  /** Hosts unhealthy now (past a timeout), in key order. */
  unhealthy: string[];
  /**
   * Of them, those only their own Node conditions call unhealthy (not Ready=Unknown, not
   * NodeStartup): repaired, never counted towards maxUnhealthy.
   */
  selfReported: string[];
  /** The resolved maxUnhealthy and whether it stops all remediation. */
  maxUnhealthy: number;
  shortCircuited: boolean;
  /** The pool's Degraded condition when health stops remediation (merge with the rollout's). */
  degraded?: { type: 'Degraded'; status: 'True'; reason: string; message: string };
  /** Events for the pool object. */
  poolEvents: LadderEvent[];
  metrics: MetricSample[];
  recheckAt?: Date;
}

const byKey = <T extends { key: string }>(a: T, b: T) =>
  a.key < b.key ? -1 : a.key > b.key ? 1 : 0;

/** A host and the health it is judged on. */
interface AssessedHost {
  h: HealthPassHost;
  health: HealthAssessment;
}

/** The unhealthy hosts, and which of them count towards maxUnhealthy. */
interface UnhealthyCount {
  /** Keys of the hosts unhealthy now (not deleting, not in a change of the pool's own). */
  unhealthy: string[];
  /** Those the control plane saw fail: counted towards maxUnhealthy. */
  counted: AssessedHost[];
  /** Keys of those only their own Node conditions call unhealthy. */
  selfReported: string[];
}

/** One health pass of one pool; see the module comment. */
export function healthPass(input: HealthPassInput): HealthPassResult {
  const { policy, now, pool } = input;
  const hosts = [...input.hosts].sort(byKey);
  const assessed = hosts.map((h) => ({
    h,
    health: assessHealth({
      ...(h.node ? { node: h.node } : {}),
      ...(h.bootstrappedAt !== undefined ? { bootstrappedAt: h.bootstrappedAt } : {}),
      policy,
      now,
    }),
  }));
  const { unhealthy, counted, selfReported } = countUnhealthy(assessed);
  const maxUnhealthy = resolveMaxUnhealthy(policy.maxUnhealthy, hosts.length);
  const shortCircuited = counted.length > maxUnhealthy;
  const { degraded, poolEvents } = poolDegraded(input, {
    hostCount: hosts.length,
    count: { unhealthy, counted, selfReported },
    maxUnhealthy,
    shortCircuited,
  });
  const results: HealthPassResult['hosts'] = new Map();
  const metrics: MetricSample[] = [
    { name: metricNames.unhealthyHosts, labels: { pool }, value: unhealthy.length },
    {
      name: metricNames.remediationAllowed,
      labels: { pool },
      value: degraded || !policy.remediationEnabled ? 0 : 1,
    },
  ];
  for (const { h, health } of assessed) {
    if (h.deleting) {
      results.set(h.key, {
        status: h.status,
        action: { kind: 'none' },
        events: [],
        outcomes: [],
        health,
      });
      continue;
    }
    const r = advanceHostLadder(input, h, health, holdFor(input, h, shortCircuited));
    results.set(h.key, { ...r, health });
    metrics.push(...hostConditionSamples(pool, h.key, health));
    metrics.push(...outcomeSamples(pool, r.outcomes));
  }
  const due = [...results.values()]
    .map((r) => r.recheckAt?.getTime())
    .filter((t): t is number => t !== undefined);
  return {
    hosts: results,
    unhealthy,
    selfReported,
    maxUnhealthy,
    shortCircuited,
    ...(degraded ? { degraded } : {}),
    poolEvents,
    metrics,
    ...(due.length > 0 ? { recheckAt: new Date(Math.min(...due)) } : {}),
  };
}

/** Sorts out the unhealthy hosts and which of them the control plane saw fail. */
function countUnhealthy(assessed: readonly AssessedHost[]): UnhealthyCount {
  const considered = assessed.filter(
    ({ h, health }) => health.due.length > 0 && !h.deleting && !inOtherRolloutChange(h.rollout),
  );
  const unhealthy = considered.map(({ h }) => h.key);
  const counted = considered.filter(({ health }) => health.due.some(seenByControlPlane));
  const selfReported = considered
    .filter(({ health }) => !health.due.some(seenByControlPlane))
    .map(({ h }) => h.key);
  return { unhealthy, counted, selfReported };
}

/** The pool's Degraded condition from health (a bad spec, or maxUnhealthy exceeded), with its Event. */
function poolDegraded(
  input: HealthPassInput,
  pass: {
    hostCount: number;
    count: UnhealthyCount;
    maxUnhealthy: number;
    shortCircuited: boolean;
  },
): { degraded: HealthPassResult['degraded']; poolEvents: LadderEvent[] } {
  const { policy } = input;
  const { hostCount, maxUnhealthy } = pass;
  const { counted, selfReported } = pass.count;
  const max = policy.maxUnhealthy;
  const maxText = `spec.health.maxUnhealthy ${max.kind === 'count' ? max.count : `${max.percent}%`} (${maxUnhealthy} of ${hostCount})`;
  const poolEvents: LadderEvent[] = [];
  let degraded: HealthPassResult['degraded'];
  if (input.specProblems.length > 0) {
    degraded = {
      type: PoolConditionType.Degraded,
      status: 'True',
      reason: ConditionReason.InvalidSpec,
      message: `No host is repaired until spec.health is fixed: ${input.specProblems.join('; ')}`,
    };
  } else if (pass.shortCircuited && policy.remediationEnabled) {
    const notCounted = selfReported.length
      ? `; not counted, as only their own Node conditions say so: ${selfReported.join(', ')}`
      : '';
    const message = `${counted.length} of ${hostCount} hosts are unhealthy (${counted.map(({ h }) => h.key).join(', ')}), more than ${maxText}: no host is repaired while so many fail at once (usually the network or the control plane). Repair goes on once at most ${maxUnhealthy} are unhealthy${notCounted}`;
    degraded = {
      type: PoolConditionType.Degraded,
      status: 'True',
      reason: ConditionReason.TooManyUnhealthy,
      message,
    };
    poolEvents.push({ type: 'Warning', reason: EventReason.TooManyUnhealthy, message });
  }
  return { degraded, poolEvents };
}

/** Why this host's ladder is held this pass, if it is (the first that applies, in this order). */
export function holdFor(
  input: Pick<HealthPassInput, 'policy' | 'specProblems'>,
  h: Pick<HealthPassHost, 'skipRemediation' | 'rollout'>,
  shortCircuited: boolean,
): HoldReason | undefined {
  return h.skipRemediation
    ? 'SkipAnnotation'
    : !input.policy.remediationEnabled
      ? 'Disabled'
      : input.specProblems.length > 0
        ? 'InvalidSpec'
        : shortCircuited
          ? 'TooManyUnhealthy'
          : inOtherRolloutChange(h.rollout)
            ? 'InRollout'
            : undefined;
}

/** Advances one (not deleting) host's ladder on the health it was judged on. */
function advanceHostLadder(
  input: HealthPassInput,
  h: HealthPassHost,
  health: HealthAssessment,
  hold: HoldReason | undefined,
): LadderResult {
  return advanceRemediation({
    host: h.key,
    status: h.status,
    health,
    policy: input.policy,
    observed: {
      ...(h.bootstrappedAt !== undefined ? { bootstrappedAt: h.bootstrappedAt } : {}),
      ...(h.bootstrapError ? { bootstrapError: h.bootstrapError } : {}),
      ...(h.rollout ? { rollout: h.rollout } : {}),
      cordonedByRemediation: h.cordonedByRemediation,
    },
    ...(hold ? { hold } : {}),
    ...(h.rebootstrapUnavailable ? { rebootstrapUnavailable: h.rebootstrapUnavailable } : {}),
    now: input.now,
  });
}

/** The host-condition gauge's samples: the policy's conditions that hold on the host's Node. */
export function hostConditionSamples(
  pool: string,
  key: string,
  health: Pick<HealthAssessment, 'holding'>,
): MetricSample[] {
  const [namespace = '', name = key] = key.includes('/') ? key.split('/') : ['', key];
  // The policy's conditions that hold on the Node (assessHealth found them, in policy order).
  return health.holding
    .filter((p) => p.type !== nodeStartupProblem)
    .map((p) => ({
      name: metricNames.hostCondition,
      labels: { pool, namespace, host: name, condition: p.type, status: p.status },
      value: 1,
    }));
}

/**
 * A problem the control plane saw, not one the node says about itself: its Node Ready=Unknown
 * (the node controller's mark once heartbeats stop) or no Ready Node since its bootstrap.
 */
function seenByControlPlane(p: HealthProblem): boolean {
  return p.type === nodeStartupProblem || (p.type === 'Ready' && p.status === 'Unknown');
}
