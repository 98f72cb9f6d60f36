/**
 * A WindowsNodePool spec, checked and with its defaults: the policy the planner and the host
 * steps use. The CRD schema refuses most bad values at the API server; this checks everything
 * again (an object stored before a schema change, a time zone the schema cannot know), and
 * reports each problem naming the field and the fix. A field with a problem takes its default
 * in the returned policy, so hosts already in a change can finish; the pool itself starts no
 * change while it has a problem (Degraded, InvalidSpec).
 */
import { activeDirectoryProblems } from '../api/active-directory.ts';
import { compileNodeNamePattern } from '../api/node-name-pattern.ts';
import { prePullProblems, prePullWaitMs } from '../api/pre-pull.ts';
import {
  type LabelSelector,
  type PatchPolicy,
  patchPolicies,
  poolDefaults,
  type WindowsNodePoolSpec,
} from '../api/windows-node-pool.ts';
import { hasCode, WinfleetError } from '../errors/catalog.ts';
import { parseApiTime } from '../kube/api-time.ts';
import { type DurationBounds, parseDuration } from './duration.ts';
import { selectorProblems } from './label-selector.ts';
import { type ParsedWindow, parseMaintenanceWindow } from './maintenance-window.ts';
import { type MaxUnavailable, parseMaxUnavailable } from './max-unavailable.ts';

/** @package */
export interface PoolPolicy {
  /** Undefined for the implicit default pool (it takes what no pool selects) or a bad selector. */
  selector?: LabelSelector;
  maxUnavailable: MaxUnavailable;
  drainTimeoutMs: number;
  readyTimeoutMs: number;
  /** Absent: changes may start at any time. */
  window?: ParsedWindow;
  patchPolicy: PatchPolicy;
  rebootRequestedAt?: string;
  paused: boolean;
  /**
   * A valid spec.prePull: how long WaitReady waits at most for a Ready node's pulls (its
   * timeout and a grace, host-steps.ts). Absent: WaitReady waits for Ready alone.
   */
  prePullWaitMs?: number;
}

/** Both timeouts: at least a second, at most a day. */
export const timeoutBounds: DurationBounds = { minMs: 1000, maxMs: 86_400_000 };

/** The implicit pool of hosts no WindowsNodePool selects: one host at a time, no window. */
export const defaultPoolPolicy: Readonly<PoolPolicy> = Object.freeze({
  maxUnavailable: { kind: 'count' as const, count: poolDefaults.maxUnavailable },
  drainTimeoutMs: parseDuration(poolDefaults.drainTimeout, 'drainTimeout'),
  readyTimeoutMs: parseDuration(poolDefaults.readyTimeout, 'readyTimeout'),
  patchPolicy: poolDefaults.patchPolicy,
  paused: false,
});

/** Runs `parse`; on a WF_SCHEMA_INVALID error records its message and returns `fallback`. */
export function field<T>(problems: string[], fallback: T, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (!hasCode(error, 'WF_SCHEMA_INVALID')) throw error;
    problems.push((error as Error).message);
    return fallback;
  }
}

/**
 * Checks a pool's spec. `problems` lists every bad field ("spec.drainTimeout: …"); the policy
 * has the defaults in their place.
 */
export function checkPoolSpec(spec: unknown): { policy: PoolPolicy; problems: string[] } {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    return {
      policy: { ...defaultPoolPolicy },
      problems: ['spec: missing; a pool needs spec.selector'],
    };
  }
  const s = spec as WindowsNodePoolSpec;
  const problems: string[] = [];
  const selectorIssues =
    s.selector === undefined
      ? ['spec.selector: missing; write {matchLabels: {…}} to choose the pool’s WindowsHosts']
      : selectorProblems(s.selector, 'spec.selector');
  problems.push(...selectorIssues);
  const d = defaultPoolPolicy;
  const policy: PoolPolicy = {
    ...(selectorIssues.length === 0 ? { selector: s.selector } : {}),
    maxUnavailable: field(problems, d.maxUnavailable, () =>
      parseMaxUnavailable(s.maxUnavailable ?? poolDefaults.maxUnavailable, 'spec.maxUnavailable'),
    ),
    drainTimeoutMs: field(problems, d.drainTimeoutMs, () =>
      parseDuration(
        s.drainTimeout ?? poolDefaults.drainTimeout,
        'spec.drainTimeout',
        timeoutBounds,
      ),
    ),
    readyTimeoutMs: field(problems, d.readyTimeoutMs, () =>
      parseDuration(
        s.readyTimeout ?? poolDefaults.readyTimeout,
        'spec.readyTimeout',
        timeoutBounds,
      ),
    ),
    patchPolicy: field(problems, d.patchPolicy, () => parsePatchPolicy(s.patches)),
    paused: field(problems, false, () => {
      if (s.paused === undefined || typeof s.paused === 'boolean') return s.paused ?? false;
      throw new WinfleetError('WF_SCHEMA_INVALID', 'spec.paused: must be true or false');
    }),
  };
  if (s.maintenanceWindow !== undefined && s.maintenanceWindow !== null) {
    const window = field(problems, undefined, () => parseMaintenanceWindow(s.maintenanceWindow));
    if (window) policy.window = window;
  }
  const pattern = s.join?.nodeNamePattern;
  if (pattern !== undefined) {
    const compiled =
      typeof pattern === 'string'
        ? compileNodeNamePattern(pattern)
        : { ok: false as const, problem: 'spec.join.nodeNamePattern: must be a string' };
    if (!compiled.ok) problems.push(compiled.problem);
  }
  problems.push(...activeDirectoryProblems(s.activeDirectory));
  // Images before pods: references parsed, registries given as addresses checked (pre-pull.ts).
  if (s.prePull !== undefined && s.prePull !== null) {
    const prePull = prePullProblems(s.prePull);
    problems.push(...prePull);
    // The rollout waits only for pulls a node is given: a spec with problems never reaches one.
    if (prePull.length === 0) policy.prePullWaitMs = prePullWaitMs(s.prePull);
  }
  problems.push(...isolationProblems(s.isolation));
  if (s.rebootRequestedAt !== undefined && s.rebootRequestedAt !== null) {
    const at = s.rebootRequestedAt;
    const valid = field(problems, false, () => {
      parseApiTime(at, 'spec.rebootRequestedAt');
      return true;
    });
    if (valid) policy.rebootRequestedAt = at;
  }
  return { policy, problems };
}

/** Problems of spec.isolation ("spec.isolation.hyperV: …"). */
function isolationProblems(isolation: unknown): string[] {
  if (isolation === undefined || isolation === null) return [];
  if (typeof isolation !== 'object' || Array.isArray(isolation))
    return ['spec.isolation: must be {hyperV: true | false}'];
  const problems: string[] = [];
  for (const [key, value] of Object.entries(isolation)) {
    if (key !== 'hyperV')
      problems.push(`spec.isolation.${key}: unknown field; the only one is hyperV (true | false)`);
    else if (typeof value !== 'boolean')
      problems.push(
        `spec.isolation.hyperV: must be true or false (got ${JSON.stringify(value)}); true lets the pool run older images under Hyper-V isolation`,
      );
  }
  return problems;
}

function parsePatchPolicy(patches: WindowsNodePoolSpec['patches']): PatchPolicy {
  if (patches === undefined) return poolDefaults.patchPolicy;
  if (typeof patches !== 'object' || patches === null) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      'spec.patches: must be {policy: None | Security | All}',
    );
  }
  const policy = patches.policy ?? poolDefaults.patchPolicy;
  if (!patchPolicies.includes(policy)) {
    throw new WinfleetError(
      'WF_SCHEMA_INVALID',
      `spec.patches.policy: ${JSON.stringify(policy)} is not one of ${patchPolicies.join(', ')}`,
    );
  }
  return policy;
}
